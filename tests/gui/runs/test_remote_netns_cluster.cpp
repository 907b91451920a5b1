// A 2-node CPU run started from the GUI (the SSH target's "all nodes" placement) across two
// network namespaces, each a "node" with its own address, host name and real sshd
// (tests/remote/netns_fixture.h), charted per node by the Dashboard. The cluster is saved in the
// store and read back as the workbench does; node3 (10.78.N.2, reached with node2 as jump host)
// is the first node and holds rank 0 and the rendezvous, node2 (10.77.N.2) holds rank 1.
// Asserts: the run completes; the store has every step's comm_bytes_sent and rank_tokens_per_s
// of both ranks and the two nodes' host names; the Dashboard's network and throughput charts
// draw one series per rank named "rank R (<node's host>)".
// Skips with the reason where namespaces cannot be made (not root, no iproute2, a container).
#include <QtTest>

#include <dirent.h>

#include <filesystem>
#include <fstream>

#include "../gui_test_util.h"
#include "../target_test_util.h"
#include "gui/charts/chart_view.h"
#include "gui/charts/dashboard.h"
#include "gui/core/store_client.h"
#include "gui/runs/remote_run_controller.h"
#include "netns_fixture.h"
#include "remote/cluster.h"
#include "remote/multinode.h"
#include "remote_node_fixture.h"
#include "store/store.h"

using namespace td::gui;
using td::remote::testing::NetnsNodes;
using td::remote::testing::processes_with_arg;
using td::remote::testing::read_text;
namespace fs = std::filesystem;

class TestRemoteNetnsCluster : public QObject {
  Q_OBJECT
  tdguitest::RemoteNode fx_;  // keys (its loopback sshd is unused), dataset, store path, engine env
  NetnsNodes nodes_;          // destroyed before fx_: the namespaced sshds use fx_'s keys
  fs::path ssh_config_;
  td::remote::ClusterSpec cluster_;

  RemoteRunController::Connector connector() {
    return [this](const td::remote::NodeSpec& n) {
      const auto r = td::remote::resolve_node(n, ssh_config_);  // the jump host's user and key
      td::remote::OpenOptions o;
      o.known_hosts = fx_.sshd.known_hosts;
      o.timeout_ms = 15000;
      o.accept_unknown_host = [](const td::remote::HostKeyInfo&, const std::string&) { return true; };
      return td::remote::open_node(r, td::remote::node_auth(n, r, {}), o);
    };
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
    if (!fx_.start("node3", "node3 work")) {
      if (!fx_.sshd.skip_reason.empty()) QSKIP(fx_.sshd.skip_reason.c_str());
      QFAIL("the tiny dataset could not be prepared");
    }
    if (!nodes_.start(fx_.sshd)) QSKIP(("network-namespace nodes: " + nodes_.skip_reason).c_str());
    ssh_config_ = fx_.sshd.dir / "ssh_config";
    std::ofstream(ssh_config_) << "Host " << nodes_.node2_addr << "\n  User " << fx_.sshd.user << "\n  IdentityFile "
                               << fx_.sshd.user_key << "\n";
    td::remote::NodeSpec n3 = fx_.node, n2 = fx_.node;
    n3.host = nodes_.node3_addr;
    n3.port = 22;
    n3.jump = nodes_.node2_addr;  // no route from here to node3
    n2.name = "node2";
    n2.host = nodes_.node2_addr;
    n2.port = 22;
    n2.work_dir = (fx_.sshd.dir / "node2 work").string();  // separate disks, as on real nodes
    // Saved as the cluster designer does, and read back as "Train on" does.
    td::remote::ClusterSpec c;  // node3 first: rank 0 and the rendezvous there
    c.name = "netns";
    c.nodes = {n3, n2};
    QVERIFY(td::remote::validate(c).empty());
    td::store::Store s(fx_.db.toStdString());
    s.save_cluster(c.name, td::remote::to_json(c).dump());
    const auto row = s.find_cluster("netns");
    QVERIFY(row);
    cluster_ = td::remote::cluster_from_json(nlohmann::json::parse(row->spec_json));
    QCOMPARE(cluster_.nodes.size(), size_t(2));
    QCOMPARE(td::remote::cluster_world_size(cluster_), 2);
  }
  void cleanupTestCase() {
    fx_.kill_engines();
    nodes_.stop();
  }

  void two_nodes_train_with_per_node_charts() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    c.setPollIntervalMs(200);
    QSignalSpy started(&c, &RemoteRunController::runStarted), ended(&c, &RemoteRunController::runEnded),
        errs(&c, &RemoteRunController::error), failed(&c, &RemoteRunController::startFailed);
    tdguitest::StateLog log(&c);
    const auto& progress = log.progress;  // (run_id, done, total, phase) while deploying
    const int steps = 10;
    nlohmann::json config = tdguitest::tiny_config(fx_.data, steps);
    config["train"]["eval_interval"] = 0;
    config["train"]["dist_timeout_s"] = 20;
    QString err;
    const QString id = tdguitest::start_on_cluster(c, cluster_, "netns-exp", config, &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    QCOMPARE(c.files(id).host, QString("node3, node2"));
    // The deploy (the ~50 MB engine bundle to both nodes, one through the jump host) and the
    // launch first, then the run: each awaited as an event, with a generous limit.
    const QString not_started = tdguitest::wait_started(started, failed, progress, id);
    QVERIFY2(not_started.isEmpty(), qPrintable(not_started + " " + why(id)));
    const QString status = tdguitest::wait_ended(ended, id);
    QVERIFY2(status == "completed", qPrintable("waited for the 10-step run to end: " + status + " " + why(id)));
    QCOMPARE(started.count(), 1);
    QVERIFY2(errs.isEmpty(), qPrintable(errs.isEmpty() ? QString() : errs.first().at(0).toString()));

    // The layout: rank 0 on node3 (the rendezvous at its address), rank 1 on node2.
    const std::string run = id.toStdString();
    td::store::Store s(fx_.db.toStdString());
    const auto remote = s.remote_run(run);
    QVERIFY(remote && !remote->layout_json.empty());
    const auto layout = td::remote::cluster_run_from_json(nlohmann::json::parse(remote->layout_json));
    QCOMPARE(layout.world_size, 2);
    QCOMPARE(layout.master_addr, nodes_.node3_addr);
    QCOMPARE(layout.nodes.size(), size_t(2));
    QCOMPARE(layout.nodes[0].node.host, nodes_.node3_addr);
    QCOMPARE(layout.nodes[1].node.host, nodes_.node2_addr);
    QCOMPARE(layout.nodes[0].ifname, nodes_.node3_ifname);
    QCOMPARE(layout.nodes[1].ifname, nodes_.node2_ifname);

    // Every step's figures of both ranks; two distinct hosts, the nodes' own names.
    QCOMPARE(int64_t(s.metric_series(run, "loss").size()), int64_t(steps));
    for (int rank : {0, 1})
      for (const char* m : {"comm_bytes_sent", "rank_tokens_per_s"}) {
        const auto series = s.metric_series(run, m, rank);
        QVERIFY2(int64_t(series.size()) == steps, qPrintable(QString("%1 rank %2: %3 rows").arg(m).arg(rank).arg(series.size())));
        for (size_t i = 0; i < series.size(); ++i) QVERIFY(series.value[i] > 0);
      }
    const auto facts = s.chart_run(run);
    QCOMPARE(facts.world_size.value_or(0), int64_t(2));
    QCOMPARE(facts.hosts.size(), size_t(2));
    QVERIFY2(facts.hosts[0] != facts.hosts[1], facts.hosts[0].c_str());
    if (!nodes_.hostname2.empty()) {  // util-linux's unshare gave each namespace its own name
      QCOMPARE(facts.hosts[0], nodes_.hostname3);
      QCOMPARE(facts.hosts[1], nodes_.hostname2);
    }
    const QString h0 = QString::fromStdString(facts.hosts[0]), h1 = QString::fromStdString(facts.hosts[1]);

    // The Run page's dashboard: one series per rank, named by rank and its node's host.
    Dashboard dash(&client);
    dash.resize(1400, 1000);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    dash.setRuns({id});
    ChartView* net = dash.chart("network");
    QVERIFY(net);
    // Per rank: bytes sent, then by kind (all-reduce, reduce-scatter, all-gather), then bus bandwidth.
    QTRY_COMPARE_WITH_TIMEOUT(net->seriesCount(), 10, 60000);
    QCOMPARE(net->legendLabels(),
             (QStringList{"collective bytes sent rank 0 (" + h0 + ")", "collective bytes sent rank 1 (" + h1 + ")",
                          "all-reduce bytes rank 0 (" + h0 + ")", "all-reduce bytes rank 1 (" + h1 + ")",
                          "reduce-scatter bytes rank 0 (" + h0 + ")", "reduce-scatter bytes rank 1 (" + h1 + ")",
                          "all-gather bytes rank 0 (" + h0 + ")", "all-gather bytes rank 1 (" + h1 + ")",
                          "bus bandwidth rank 0 (" + h0 + ")", "bus bandwidth rank 1 (" + h1 + ")"}));
    for (int rank : {0, 1}) {
      const int i = net->seriesIndex({id, "comm_bytes_sent", rank});
      QVERIFY(i >= 0);
      QTRY_COMPARE_WITH_TIMEOUT(net->drawn(i).line.size(), size_t(steps), 60000);
    }
    QVERIFY(!net->emptyTextVisible());
    ChartView* tp = dash.chart("throughput");
    QVERIFY(tp);
    const QString t0 = "tokens/s rank 0 (" + h0 + ")", t1 = "tokens/s rank 1 (" + h1 + ")";
    QTRY_VERIFY2_WITH_TIMEOUT(tp->legendLabels().contains(t0) && tp->legendLabels().contains(t1),
                              qPrintable(tp->legendLabels().join(" | ")), 60000);

    // Nothing is left running on either node.
    QTRY_COMPARE_WITH_TIMEOUT((int)processes_with_arg(run).size(), 0, 60000);
  }
};

QTEST_MAIN(TestRemoteNetnsCluster)
#include "test_remote_netns_cluster.moc"
