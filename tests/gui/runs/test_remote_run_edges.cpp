// RemoteRunController where a new user goes off the happy path, against a real OpenSSH sshd on
// 127.0.0.1 (tests/remote/sshd_fixture.h): a node that does not listen, a work directory typed
// as "~/...", a work directory and a dataset folder full of shell metacharacters, a run that
// ended on its node while no workbench was following it, and a checkpoint downloaded twice.
// Every check reads the store, the node's files or the signals; nothing is timed.
#include <QtTest>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "../gui_test_util.h"
#include "../target_test_util.h"
#include "remote_node_fixture.h"
#include "engine/common/error.h"
#include "gui/core/store_client.h"
#include "gui/runs/remote_run_controller.h"
#include "remote/cluster.h"
#include "remote/sftp.h"
#include "store/store.h"

using namespace td::gui;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
using td::remote::testing::SshdFixture;
namespace fs = std::filesystem;

class TestRemoteRunEdges : public QObject {
  Q_OBJECT
  tdguitest::RemoteNode fx_;  // sshd as the node, the dataset, the store path, the NodeSpec

  RemoteRunController::Connector connector() {
    return [this](const td::remote::NodeSpec& n) {
      return fx_.open(n);
    };
  }

  QString errors(const QSignalSpy& spy) {
    QStringList l;
    for (const auto& a : spy) l << a.at(0).toString();
    return l.join(" | ");
  }

  std::unique_ptr<td::store::Store> store() { return std::make_unique<td::store::Store>(fx_.db.toStdString()); }

  // Whether an engine of run `id` still runs on the node (this machine).
  static bool engine_running(const QString& id) {
    return run_cmd({"pgrep", "-f", "traindeck-engine.*" + id.toStdString()}) == 0;
  }

 private slots:
  void initTestCase() {
    if (!fx_.start("edge-node", "work")) {
      if (!fx_.sshd.skip_reason.empty()) QSKIP(fx_.sshd.skip_reason.c_str());
      QFAIL("the tiny dataset could not be prepared");
    }
  }

  void cleanupTestCase() {
    fx_.kill_engines();
  }

  // A port where nothing listens: the start fails on the worker with the node named; the store
  // gets no run.
  void node_not_listening_fails_clearly() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy failed(&c, &RemoteRunController::startFailed), errs(&c, &RemoteRunController::error);
    td::remote::NodeSpec n = fx_.node;
    n.port = td::remote::testing::free_port();
    QString err;
    const QString id = tdguitest::start_on_node(c, "lab", n, "edges", tdguitest::tiny_config(fx_.data, 10), &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    QVERIFY2(failed.wait(tdguitest::kSlowMs) || !failed.isEmpty(), "waited for the start to fail");
    const QString message = failed.first().at(1).toString();
    QVERIFY2(message.contains(QStringLiteral("127.0.0.1:%1").arg(n.port)), qPrintable(message));
    QVERIFY2(message.contains("refused", Qt::CaseInsensitive), qPrintable(message));
    QCOMPARE(errs.count(), 1);
    QVERIFY(!c.isActive(id));
    QVERIFY(!store()->find_run(id.toStdString()));
  }

  // "~/runs" as a work directory would be a folder named "~" under the remote home (nothing
  // expands it): refused before anything starts, with the relative form to write instead.
  void tilde_work_dir_is_refused() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    td::remote::NodeSpec n = fx_.node;
    n.work_dir = "~/td-runs";
    QString err;
    const QString id = tdguitest::start_on_node(c, "lab", n, "edges", tdguitest::tiny_config(fx_.data, 10), &err);
    QVERIFY(id.isEmpty());
    QVERIFY2(err.contains("starts with ~") && err.contains("'td-runs'"), qPrintable(err));
    QVERIFY(c.activeRuns().isEmpty());
  }

  // Shell metacharacters in the node's work directory and in the local dataset's folder reach
  // the node as plain names: the run completes there and no injected command ran.
  void metacharacters_in_work_dir_and_dataset() {
    // A folder name cannot hold '/': its injection would touch a file in the remote home.
    const std::string marker = (fx_.sshd.dir / "INJECTED").string();
    const std::string home_marker = "td-injected-" + std::to_string(getpid());
    const fs::path home = qEnvironmentVariable("HOME").toStdString();
    const QString odd_data =
        fx_.dir.filePath(QStringLiteral("data 'q\" ; $(touch %1) `touch %1`").arg(QString::fromStdString(home_marker)));
    QVERIFY(run_cmd({"cp", "-r", fx_.data.toStdString(), odd_data.toStdString()}) == 0);
    td::remote::NodeSpec n = fx_.node;
    n.work_dir = (fx_.sshd.dir / ("w 'x\" ; $(touch " + marker + ") & |")).string();
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy ended(&c, &RemoteRunController::runEnded), errs(&c, &RemoteRunController::error);
    QString err;
    const QString id = tdguitest::start_on_node(c, "lab", n, "edges", tdguitest::tiny_config(odd_data, 30), &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    const QString status = tdguitest::wait_ended(ended, id);
    QVERIFY2(status == "completed", qPrintable(status + " " + errors(errs)));
    QVERIFY(!fs::exists(marker));
    QVERIFY(!fs::exists(home / home_marker));
    const auto rows = tdguitest::loss_rows(fx_.db, id);
    QCOMPARE(rows.count, int64_t(30));
    QVERIFY(fs::exists(n.work_dir + "/runs/" + id.toStdString() + "/events.jsonl"));
  }

  // The engine ended on the node while no workbench followed it (stopped there by SIGTERM, as
  // a person on the node would: the run is a million steps, so it cannot end before the detach on
  // a fast machine nor need minutes on a slow one): the next start re-attaches, backfills every
  // event and ends the run with its run_end's status 'stopped' (not failed), each step once.
  void reattach_after_the_run_ended_unfollowed() {
    QString id;
    {
      StoreClient client(fx_.db);
      RemoteRunController c(&client, connector());
      QSignalSpy ingested(&c, &RemoteRunController::runIngested), errs(&c, &RemoteRunController::error);
      QString err;
      id = tdguitest::start_on_node(c, "lab", fx_.node, "edges", tdguitest::tiny_config(fx_.data, 1000000), &err);
      QVERIFY2(!id.isEmpty(), qPrintable(err));
      QVERIFY2(tdguitest::wait_step(ingested, id, 2) >= 2, qPrintable("waited for step 2: " + errors(errs)));
      c.detachAll();
    }
    QCOMPARE(store()->get_run(id.toStdString()).status, std::string("running"));
    const auto remote = store()->remote_run(id.toStdString());
    QVERIFY(remote && remote->pid);
    QCOMPARE(::kill(pid_t(*remote->pid), SIGTERM), 0);  // the node is this machine
    QElapsedTimer t;
    t.start();
    while (engine_running(id) && t.elapsed() < tdguitest::kSlowMs) QTest::qWait(100);
    QVERIFY2(!engine_running(id), "waited for the engine to end on the node after SIGTERM");
    // What the node's events file says: the last step and the run_end.
    const std::string events = read_text(fx_.node.work_dir + "/runs/" + id.toStdString() + "/events.jsonl");
    QVERIFY2(events.find("\"type\":\"run_end\"") != std::string::npos, events.substr(events.size() > 500 ? events.size() - 500 : 0).c_str());
    int64_t node_steps = 0;
    for (size_t at = events.find("\"type\":\"step\""); at != std::string::npos; at = events.find("\"type\":\"step\"", at + 1))
      ++node_steps;
    QVERIFY(node_steps >= 2);
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy attached(&c, &RemoteRunController::runAttached), ended(&c, &RemoteRunController::runEnded),
        errs(&c, &RemoteRunController::error);
    const QString status = tdguitest::wait_ended(ended, id);
    QVERIFY2(status == "stopped", qPrintable("waited for the reattached run to end: " + status + " " + errors(errs)));
    QCOMPARE(attached.count(), 1);
    const auto rows = tdguitest::loss_rows(fx_.db, id);
    QCOMPARE(rows.first, int64_t(1));
    QCOMPARE(rows.count, node_steps);
    QCOMPARE(rows.last, node_steps);
  }

  // Two runs started at once on a fresh node (a small sweep): both deploy the same bundle and
  // dataset into the same folders at the same time; both must complete.
  void two_runs_started_together_on_a_fresh_node() {
    td::remote::NodeSpec n = fx_.node;
    n.work_dir = (fx_.sshd.dir / "fresh sweep").string();
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy ended(&c, &RemoteRunController::runEnded), errs(&c, &RemoteRunController::error);
    QString err;
    const QString a = tdguitest::start_on_node(c, "lab", n, "edges", tdguitest::tiny_config(fx_.data, 20), &err);
    QVERIFY2(!a.isEmpty(), qPrintable(err));
    const QString b = tdguitest::start_on_node(c, "lab", n, "edges", tdguitest::tiny_config(fx_.data, 20), &err);
    QVERIFY2(!b.isEmpty(), qPrintable(err));
    for (const QString& id : {a, b}) {
      const QString status = tdguitest::wait_ended(ended, id);
      QVERIFY2(status == "completed", qPrintable(id + ": " + status + " " + errors(errs)));
    }
    QVERIFY2(errs.isEmpty(), qPrintable(errors(errs)));
  }

  // Download checkpoint twice into the same folder: both succeed, the second moves nothing new
  // and the files equal the node's.
  void download_checkpoint_twice() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy ended(&c, &RemoteRunController::runEnded), errs(&c, &RemoteRunController::error),
        downloaded(&c, &RemoteRunController::checkpointFetched);
    QString err;
    const QString id = tdguitest::start_on_node(c, "lab", fx_.node, "edges", tdguitest::tiny_config(fx_.data, 40, 20), &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    QCOMPARE(tdguitest::wait_ended(ended, id), QStringLiteral("completed"));
    const QString into = fx_.dir.filePath("downloads twice");
    for (int round = 0; round < 2; ++round) {
      downloaded.clear();
      QVERIFY2(c.fetchCheckpoint(id, into, {}, &err), qPrintable(err));
      QVERIFY2(downloaded.wait(tdguitest::kSlowMs) || !downloaded.isEmpty(), "waited for the download");
      QVERIFY2(errs.isEmpty(), qPrintable(errors(errs)));
      const std::string local = downloaded.first().at(1).toString().toStdString();
      const std::string remote = fx_.node.work_dir + "/runs/" + id.toStdString() + "/checkpoints/step_00000040";
      QCOMPARE(fs::path(local).filename().string(), std::string("step_00000040"));
      for (const char* f : {"model.safetensors", "trainer.json"})
        QCOMPARE(td::remote::sha256_file(local + "/" + f), td::remote::sha256_file(remote + "/" + f));
    }

    // Another run of the same config has a step_00000040 too: downloading it into the same
    // folder is refused, naming both runs, and the first run's copy stays as it was.
    const std::string kept = into.toStdString() + "/step_00000040/model.safetensors";
    const std::string before = td::remote::sha256_file(kept);
    const QString other = tdguitest::start_on_node(c, "lab", fx_.node, "edges", tdguitest::tiny_config(fx_.data, 40, 20), &err);
    QVERIFY2(!other.isEmpty(), qPrintable(err));
    QCOMPARE(tdguitest::wait_ended(ended, other), QStringLiteral("completed"));
    downloaded.clear();
    QVERIFY2(c.fetchCheckpoint(other, into, {}, &err), qPrintable(err));
    QVERIFY2(errs.wait(tdguitest::kSlowMs) || !errs.isEmpty(), "waited for the refused download's error");
    QVERIFY(downloaded.isEmpty());
    const QString message = errs.first().at(0).toString();
    QVERIFY2(message.contains("of run " + id) && message.contains("not of run " + other) &&
                 message.contains("another folder"),
             qPrintable(message));
    QCOMPARE(td::remote::sha256_file(kept), before);
    QVERIFY(!c.isFetching(other));
  }

  // The Checkpoints tab's remote source: the node lists every complete checkpoint with its
  // size, and one chosen by name (not only the newest) downloads; a name the node does not have
  // is refused naming those it has, and a name that is not step_ + 8 digits before any SSH.
  void list_and_download_a_chosen_checkpoint() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy ended(&c, &RemoteRunController::runEnded), errs(&c, &RemoteRunController::error),
        listed(&c, &RemoteRunController::checkpointsListed),
        downloaded(&c, &RemoteRunController::checkpointFetched);
    QString err;
    const QString id = tdguitest::start_on_node(c, "lab", fx_.node, "edges", tdguitest::tiny_config(fx_.data, 40, 20), &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    QCOMPARE(tdguitest::wait_ended(ended, id), QStringLiteral("completed"));
    const std::string remote = fx_.node.work_dir + "/runs/" + id.toStdString() + "/checkpoints/";
    auto folder_bytes = [](const std::string& dir) {
      qint64 n = 0;
      for (const auto& e : fs::directory_iterator(dir)) n += qint64(fs::file_size(e.path()));
      return n;
    };

    c.listCheckpoints(id);
    c.listCheckpoints(id);  // merged into the listing going on
    QVERIFY(c.isListing(id));
    QVERIFY2(listed.wait(tdguitest::kSlowMs) || !listed.isEmpty(), "waited for the node's checkpoint listing");
    QVERIFY2(errs.isEmpty(), qPrintable(errors(errs)));
    QTRY_VERIFY(!c.isListing(id));
    QCOMPARE(listed.size(), 1);
    QCOMPARE(listed.first().at(0).toString(), id);
    const auto entries = listed.first().at(1).value<QList<RemoteCheckpointEntry>>();
    QCOMPARE(entries.size(), 2);
    QCOMPARE(entries[0].name, QStringLiteral("step_00000020"));
    QCOMPARE(entries[0].step, 20);
    QCOMPARE(entries[1].step, 40);
    QCOMPARE(entries[0].bytes, folder_bytes(remote + "step_00000020"));
    QCOMPARE(entries[1].bytes, folder_bytes(remote + "step_00000040"));

    const QString into = fx_.dir.filePath("chosen");
    QVERIFY2(c.fetchCheckpoint(id, into, QStringLiteral("step_00000020"), &err), qPrintable(err));
    QVERIFY2(downloaded.wait(tdguitest::kSlowMs) || !downloaded.isEmpty(), "waited for the download of step 20");
    QVERIFY2(errs.isEmpty(), qPrintable(errors(errs)));
    const std::string local = downloaded.first().at(1).toString().toStdString();
    QCOMPARE(fs::path(local).filename().string(), std::string("step_00000020"));
    for (const char* f : {"model.safetensors", "optimizer.safetensors", "trainer.json"})
      QCOMPARE(td::remote::sha256_file(local + "/" + f), td::remote::sha256_file(remote + "step_00000020/" + f));

    QVERIFY2(c.fetchCheckpoint(id, into, QStringLiteral("step_00000030"), &err), qPrintable(err));
    QVERIFY2(errs.wait(tdguitest::kSlowMs) || !errs.isEmpty(), "waited for the missing checkpoint's error");
    const QString missing = errs.first().at(0).toString();
    QVERIFY2(missing.contains("step_00000030") && missing.contains("step_00000040"), qPrintable(missing));
    QVERIFY(!fs::exists(into.toStdString() + "/step_00000030"));
    QTRY_VERIFY(!c.isFetching(id));

    err.clear();
    QVERIFY(!c.fetchCheckpoint(id, into, QStringLiteral("../step_00000020"), &err));
    QVERIFY2(err.contains("not a checkpoint name"), qPrintable(err));
    QVERIFY(!c.isFetching(id));
  }
};

QTEST_GUILESS_MAIN(TestRemoteRunEdges)
#include "test_remote_run_edges.moc"
