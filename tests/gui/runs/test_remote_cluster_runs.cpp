// The SSH target across every node of a cluster: a 2-rank CPU run across two "nodes" — two work
// directories on the real OpenSSH sshd on 127.0.0.1 (remote_node_fixture.h), so the rendezvous
// is on the loopback and both ranks run on this machine (the namespaced nodes with their own
// addresses are tests/remote/test_multinode.cpp). Start → completed with both ranks' figures and
// the layout in the store; a long run detached, re-attached by a new controller from the stored
// layout, stopped there (every rank ends), then resumed on both nodes from its checkpoint; a
// rank killed while rank 0 is held is reported by the target, then by rank 0's alert.
#include <QtTest>

#include <dirent.h>
#include <signal.h>

#include <filesystem>

#include "../gui_test_util.h"
#include "../target_test_util.h"
#include "engine/common/error.h"
#include "gui/core/store_client.h"
#include "gui/runs/remote_run_controller.h"
#include "remote/cluster.h"
#include "remote/multinode.h"
#include "remote_node_fixture.h"
#include "store/store.h"

using namespace td::gui;
using td::remote::testing::processes_with_arg;
using td::remote::testing::read_text;
namespace fs = std::filesystem;

class TestRemoteClusterRuns : public QObject {
  Q_OBJECT
  tdguitest::RemoteNode fx_;  // sshd, dataset, store path; fx_.node is node-a
  td::remote::ClusterSpec cluster_;

  RemoteRunController::Connector connector() {
    return [this](const td::remote::NodeSpec& n) { return fx_.open(n); };
  }
  std::string run_dir(size_t node, const QString& id) const {
    return cluster_.nodes[node].work_dir + "/runs/" + id.toStdString();
  }
  QString why(const QString& id) {
    td::store::Store s(fx_.db.toStdString());
    const auto info = s.find_run(id.toStdString());
    return QString::fromStdString((info ? info->status + ": " + info->end_reason : std::string("(no run)")) +
                                  "\nrank 0: " + read_text(run_dir(0, id) + "/engine.log") +
                                  "\nrank 1: " + read_text(run_dir(1, id) + "/engine.rank1.log"));
  }

 private slots:
  void initTestCase() {
    if (!fx_.start("node-a", "a work")) {
      if (!fx_.sshd.skip_reason.empty()) QSKIP(fx_.sshd.skip_reason.c_str());
      QFAIL("the tiny dataset could not be prepared");
    }
    td::remote::NodeSpec b = fx_.node;
    b.name = "node-b";
    b.work_dir = (fx_.sshd.dir / "b work").string();
    cluster_.name = "pair";
    cluster_.nodes = {fx_.node, b};
  }
  void cleanupTestCase() { fx_.kill_engines(); }

  void refuses_before_any_work() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    td::remote::ClusterSpec mixed = cluster_;
    mixed.nodes[1].gpus = 2;
    QString err;
    QVERIFY(tdguitest::start_on_cluster(c, mixed, "e", tdguitest::tiny_config(fx_.data, 10), &err).isEmpty());
    QVERIFY2(err.contains("mixes GPU nodes and CPU nodes"), qPrintable(err));
    td::remote::ClusterSpec empty;
    empty.name = "none";
    QVERIFY(tdguitest::start_on_cluster(c, empty, "e", tdguitest::tiny_config(fx_.data, 10), &err).isEmpty());
    QVERIFY2(err.contains("has no nodes"), qPrintable(err));
    QVERIFY(c.activeRuns().isEmpty());
  }

  void two_ranks_complete() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy started(&c, &RemoteRunController::runStarted), ended(&c, &RemoteRunController::runEnded),
        errs(&c, &RemoteRunController::error);
    tdguitest::StateLog log(&c);
    const auto& progress = log.progress;  // (run_id, done, total, phase) while deploying
    const int steps = 40;
    QString err;
    const QString id = tdguitest::start_on_cluster(c, cluster_, "cluster-exp", tdguitest::tiny_config(fx_.data, steps), &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    QCOMPARE(c.files(id).host, QString("node-a, node-b"));
    const QString status = tdguitest::wait_ended(ended, id);
    QVERIFY2(status == "completed", qPrintable(status + " " + why(id)));
    QCOMPARE(started.count(), 1);
    QVERIFY(errs.isEmpty());
    QStringList phases;
    for (const auto& a : progress) phases << a.at(3).toString();
    QVERIFY2(phases.contains("uploading the engine and the dataset to node-b (node 2 of 2)"), qPrintable(phases.join("|")));
    QVERIFY(phases.contains("starting the ranks on node-b"));

    td::store::Store s(fx_.db.toStdString());
    const auto remote = s.remote_run(id.toStdString());
    QVERIFY(remote);
    QCOMPARE(remote->run_dir, run_dir(0, id));
    QVERIFY(!remote->layout_json.empty());
    const auto layout = td::remote::cluster_run_from_json(nlohmann::json::parse(remote->layout_json));
    QCOMPARE(layout.world_size, 2);
    QCOMPARE(layout.nodes.size(), size_t(2));
    QCOMPARE(layout.nodes[1].node.name, std::string("node-b"));
    QCOMPARE(layout.nodes[1].run_dir, run_dir(1, id));
    QCOMPARE(layout.master_addr, std::string("127.0.0.1"));
    QCOMPARE(remote->pid.value_or(0), layout.rank0_pid());
    // Both ranks' figures at every step; rank 1 logged on its node.
    for (int rank : {0, 1}) {
      QCOMPARE(int64_t(s.metric_series(id.toStdString(), "comm_bytes_sent", rank).size()), int64_t(steps));
      QCOMPARE(int64_t(s.metric_series(id.toStdString(), "rank_tokens_per_s", rank).size()), int64_t(steps));
    }
    QCOMPARE(s.chart_run(id.toStdString()).hosts.size(), size_t(2));
    QVERIFY(fs::exists(run_dir(1, id) + "/engine.rank1.log"));
    QVERIFY(!fs::exists(run_dir(1, id) + "/events.jsonl"));
    QCOMPARE((int)processes_with_arg(id.toStdString()).size(), 0);
  }

  void reattach_stop_resume() {
    QString id;
    {
      StoreClient client(fx_.db);
      RemoteRunController c(&client, connector());
      QSignalSpy ingested(&c, &RemoteRunController::runIngested);
      QString err;
      id = tdguitest::start_on_cluster(c, cluster_, "cluster-exp", tdguitest::tiny_config(fx_.data, 1000000), &err);
      QVERIFY2(!id.isEmpty(), qPrintable(err));
      QVERIFY2(tdguitest::wait_step(ingested, id, 5) >= 5, qPrintable("waited for step 5: " + why(id)));
      c.detachAll();  // the window closes: both ranks keep training
    }
    QCOMPARE((int)processes_with_arg(id.toStdString()).size(), 2);
    // A new controller re-attaches from the stored layout and stops every rank.
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy attached(&c, &RemoteRunController::runAttached), ended(&c, &RemoteRunController::runEnded),
        started(&c, &RemoteRunController::runStarted), errs(&c, &RemoteRunController::error);
    QTRY_VERIFY_WITH_TIMEOUT(c.isActive(id), 60000);
    QString err;
    QVERIFY(c.stop(id, &err));
    const QString status = tdguitest::wait_ended(ended, id);
    QVERIFY2(status == "stopped", qPrintable(status + " " + why(id)));
    QTRY_COMPARE_WITH_TIMEOUT((int)processes_with_arg(id.toStdString()).size(), 0, 60000);
    const int64_t stopped_at = tdguitest::loss_rows(fx_.db, id).last;
    QVERIFY(stopped_at >= 5);

    // Resume on both nodes from rank 0's checkpoint, then stop again.
    ended.clear();
    QVERIFY2(c.resume(id, &err), qPrintable(err));
    QTRY_VERIFY_WITH_TIMEOUT(started.count() == 1, tdguitest::kSlowMs);
    QCOMPARE((int)processes_with_arg(id.toStdString()).size(), 2);
    QSignalSpy ingested(&c, &RemoteRunController::runIngested);
    QVERIFY2(tdguitest::wait_step(ingested, id, stopped_at + 3) >= stopped_at + 3,
             qPrintable("waited for 3 steps after the resume: " + why(id)));
    QVERIFY(c.stop(id, &err));
    QCOMPARE(tdguitest::wait_ended(ended, id), QString("stopped"));
    QTRY_COMPARE_WITH_TIMEOUT((int)processes_with_arg(id.toStdString()).size(), 0, 60000);
    QVERIFY2(errs.isEmpty(), qPrintable(errs.isEmpty() ? QString() : errs.first().at(0).toString()));
    td::store::Store s(fx_.db.toStdString());
    QCOMPARE(s.get_run(id.toStdString()).attempts, 2);
  }

  // A rank whose process is gone while rank 0 goes on: the target's state names it
  // (RunTargetState::lost_ranks, from its check of every node's ranks). Rank 0 is held with
  // SIGSTOP meanwhile, so that it cannot end the run first; once continued its collective fails
  // (train.dist_timeout_s 3 s) and the run ends failed, with rank 0's own rank_lost alert.
  void a_lost_rank_is_reported_while_rank0_goes_on() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy ingested(&c, &RemoteRunController::runIngested), ended(&c, &RemoteRunController::runEnded);
    nlohmann::json cfg = tdguitest::tiny_config(fx_.data, 1000000);
    cfg["train"]["dist_timeout_s"] = 3.0;
    QString err;
    const QString id = tdguitest::start_on_cluster(c, cluster_, "cluster-exp", cfg, &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    QVERIFY2(tdguitest::wait_step(ingested, id, 3) >= 3, qPrintable("waited for step 3: " + why(id)));
    const auto remote = td::store::Store(fx_.db.toStdString()).remote_run(id.toStdString());
    QVERIFY(remote);
    const auto layout = td::remote::cluster_run_from_json(nlohmann::json::parse(remote->layout_json));
    const pid_t rank0 = pid_t(layout.rank0_pid()), rank1 = pid_t(layout.nodes[1].ranks[0].pid);
    QVERIFY(rank0 > 0 && rank1 > 0);
    QCOMPARE(::kill(rank0, SIGSTOP), 0);
    QCOMPARE(::kill(rank1, SIGKILL), 0);
    QTRY_VERIFY2_WITH_TIMEOUT(c.state(id).lost_ranks == QStringList{QStringLiteral("rank 1 on node-b")},
                              "waited for the target to report rank 1 on node-b gone", tdguitest::kSlowMs);
    QCOMPARE(c.state(id).phase, RunTargetState::Phase::Running);
    QCOMPARE(c.state(id).connection, RunTargetState::Connection::Connected);
    ::kill(rank0, SIGCONT);
    const QString status = tdguitest::wait_ended(ended, id);
    QVERIFY2(status == "failed", qPrintable(status + " " + why(id)));
    td::store::Store s(fx_.db.toStdString());
    const auto alerts = s.alerts(id.toStdString());
    QVERIFY2(std::any_of(alerts.begin(), alerts.end(),
                         [](const td::store::RunAlert& a) {
                           return a.kind == "rank_lost" && a.source == "engine" && a.message.find("rank 1 (host ") == 0;
                         }),
             qPrintable("rank 0's rank_lost alert naming rank 1: " + why(id)));
  }
};

QTEST_MAIN(TestRemoteClusterRuns)
#include "test_remote_cluster_runs.moc"
