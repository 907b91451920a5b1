// RemoteRunController against a real OpenSSH sshd on 127.0.0.1 (tests/remote/sshd_fixture.h)
// whose "node" is this machine: tiny training runs deployed, launched detached, followed into a
// store, detached and re-attached by a new controller (through a node that is unreachable at
// first), stopped (with a checkpoint), resumed, killed with SIGKILL, and a checkpoint downloaded.
// Every check reads the store, the node's files or the signals; nothing is timed.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <sstream>

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

class TestRemoteRuns : public QObject {
  Q_OBJECT
  tdguitest::RemoteNode fx_;  // sshd as the node, the dataset, the store path, the NodeSpec
  std::atomic<int> refuse_connects_{0};  // the next n connects fail as an unreachable node would
  std::atomic<int> connects_{0};

  // The lead wires NodeAccess::connector(); here the node is opened the same way from its
  // NodeSpec (resolve_node + node_auth + open_node) with the fixture's key and known_hosts.
  RemoteRunController::Connector connector() {
    return [this](const td::remote::NodeSpec& n) {
      ++connects_;
      if (refuse_connects_ > 0) {
        --refuse_connects_;
        throw td::Error(n.host + ": connect failed: Connection refused (test)");
      }
      return fx_.open(n);
    };
  }

  std::string node_run_dir(const QString& id) const { return fx_.node.work_dir + "/runs/" + id.toStdString(); }

  std::unique_ptr<td::store::Store> store() { return std::make_unique<td::store::Store>(fx_.db.toStdString()); }

  // The run's loss rows must be steps 1..last, each once.
  void check_every_step_once(const QString& id, int64_t expected_last) {
    const auto rows = tdguitest::loss_rows(fx_.db, id);
    QCOMPARE(rows.first, int64_t(1));
    QCOMPARE(rows.last, expected_last);
    QCOMPARE(rows.count, expected_last);
  }

  // Waits for run_id's runEnded and compares its status; on a difference says why the store
  // ended it (end_reason) and what the node's engine.log ends with.
  void expect_end(QSignalSpy& ended, const QString& id, const QString& expected, int timeout_ms = tdguitest::kSlowMs) {
    const QString status = tdguitest::wait_ended(ended, id, timeout_ms);
    if (status == expected) return;
    auto s = store();
    const auto info = s->find_run(id.toStdString());
    std::string log = read_text(node_run_dir(id) + "/engine.log");
    if (log.size() > 2000) log = log.substr(log.size() - 2000);
    QFAIL(qPrintable(QStringLiteral("run %1 ended '%2', expected '%3'; end_reason: %4; engine.log ends: %5; sshd log: %6")
                         .arg(id, status, expected, QString::fromStdString(info ? info->end_reason : "(no run)"),
                              QString::fromStdString(log), QString::fromStdString(fx_.sshd.log()))));
  }

  QString errors(const QSignalSpy& spy) {
    QStringList l;
    for (const auto& a : spy) l << a.at(0).toString();
    return l.join(" | ");
  }

 private slots:
  void initTestCase() {
    // The fixture's folder is unique: it marks this test's engines (cleanup) and holds a space.
    if (!fx_.start("gpu-node-a", "node work")) {
      if (!fx_.sshd.skip_reason.empty()) QSKIP(fx_.sshd.skip_reason.c_str());
      QFAIL("the tiny dataset could not be prepared");
    }
  }

  void cleanupTestCase() {
    fx_.kill_engines();
  }

  void start_follow_complete() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy started(&c, &RemoteRunController::runStarted), ingested(&c, &RemoteRunController::runIngested),
        ended(&c, &RemoteRunController::runEnded), logs(&c, &RemoteRunController::logAppended),
        errs(&c, &RemoteRunController::error);
    tdguitest::StateLog log(&c);
    const auto& progress = log.progress;  // (run_id, done, total, phase) while deploying
    const auto& states = log.connection;  // (run_id, how the node is reached)
    // The GUI thread keeps turning during the deploy: a timer counts its ticks.
    int ticks = 0;
    QTimer timer;
    connect(&timer, &QTimer::timeout, [&] { ++ticks; });
    timer.start(5);
    int ticks_at_first_progress = -1;
    connect(&c, &RemoteRunController::stateChanged, [&](const QString& run) {
      if (ticks_at_first_progress < 0 && c.state(run).phase == td::gui::RunTargetState::Phase::Deploying)
        ticks_at_first_progress = ticks;
    });
    int ticks_at_started = -1;
    connect(&c, &RemoteRunController::runStarted, [&] { ticks_at_started = ticks; });

    const int steps = 300;
    QString err;
    const QString id = tdguitest::start_on_node(c, "lab", fx_.node, "remote-exp", tdguitest::tiny_config(fx_.data, steps), &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    QCOMPARE(progress.count(), 0);  // nothing happened on this thread: it all goes on a worker
    QVERIFY(c.isActive(id));
    QCOMPARE(int(c.state(id).phase), int(td::gui::RunTargetState::Phase::Deploying));
    expect_end(ended, id, "completed");
    QVERIFY2(errs.isEmpty(), qPrintable(errors(errs)));
    QCOMPARE(started.count(), 1);
    QVERIFY(ticks_at_started > ticks_at_first_progress && ticks_at_first_progress >= 0);
    QVERIFY(!c.isActive(id));

    // Deploy progress reached its total (bytes of bundle + dataset), in uploading order.
    qint64 last_done = -1, total = 0;
    for (const auto& a : progress)
      if (a.at(2).toLongLong() > 0) {
        QVERIFY(a.at(1).toLongLong() >= last_done);
        last_done = a.at(1).toLongLong();
        total = a.at(2).toLongLong();
      }
    QVERIFY(total > 0);
    QCOMPARE(last_done, total);
    QVERIFY(!ingested.isEmpty());
    QCOMPARE(ingested.last().at(1).toLongLong(), qint64(steps));
    bool connected = false;
    for (const auto& a : states) connected |= a.at(1).toString() == QLatin1String("connected");
    QVERIFY(connected);

    // The store: the run, its remote row (no secret), every step once.
    auto s = store();
    const auto info = s->get_run(id.toStdString());
    QCOMPARE(info.status, std::string("completed"));
    QCOMPARE(info.experiment, std::string("remote-exp"));
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    QCOMPARE(info.host, std::string(host));  // the engine's run_start names the node's host
    QCOMPARE(info.events_path, (fs::path(c.runDir(id).toStdString()) / "events.jsonl").string());
    const auto remote = s->remote_run(id.toStdString());
    QVERIFY(remote);
    QCOMPARE(remote->cluster, std::string("lab"));
    QCOMPARE(remote->run_dir, node_run_dir(id));
    QVERIFY(remote->pid.value_or(0) > 0);
    const auto node = nlohmann::json::parse(remote->node_json);
    QCOMPARE(node.value("name", ""), std::string("gpu-node-a"));
    QCOMPARE(node.value("port", 0), fx_.sshd.port);
    QVERIFY(remote->node_json.find("pass") == std::string::npos);
    QVERIFY(remote->node_json.find("secret") == std::string::npos);
    check_every_step_once(id, steps);
    // The mirrors equal the node's files byte for byte (events and log).
    QCOMPARE(read_text(info.events_path), read_text(node_run_dir(id) + "/events.jsonl"));
    const std::string node_log = read_text(node_run_dir(id) + "/engine.log");
    QVERIFY(!node_log.empty());
    QCOMPARE(read_text(c.runDir(id).toStdString() + "/engine.log"), node_log);
    QString logged;
    for (const auto& a : logs) logged += a.at(1).toString();
    QCOMPARE(logged.toStdString(), node_log);
    // The engine bundle is cached once per engine build.
    int bundles = 0;
    for (const auto& e : fs::directory_iterator(c.bundleCacheDir().toStdString())) bundles += e.is_directory();
    QCOMPARE(bundles, 1);
  }

  // A Llama run (issue 17) goes to the node as any run: it completes there, and its losses are
  // the losses of the same config trained by this machine's engine (the node runs the same
  // build, one thread, the same seed and the same dataset: CPU training is deterministic).
  void llama_run_on_the_node_equals_a_local_run() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy ended(&c, &RemoteRunController::runEnded), errs(&c, &RemoteRunController::error);
    const int steps = 30;
    nlohmann::json cfg = tdguitest::tiny_config(fx_.data, steps);
    cfg["model"].update({{"family", "llama"}, {"n_kv_head", 1}});  // multi-query attention
    QString err;
    const QString id = tdguitest::start_on_node(c, "lab", fx_.node, "remote-exp", cfg, &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    expect_end(ended, id, "completed");
    QVERIFY2(errs.isEmpty(), qPrintable(errors(errs)));
    check_every_step_once(id, steps);
    auto s = store();
    const auto stored = nlohmann::json::parse(s->chart_run(id.toStdString()).config_json);
    QCOMPARE(stored["model"]["family"].get<std::string>(), std::string("llama"));
    QCOMPARE(stored["model"]["n_kv_head"].get<int>(), 1);
    const auto remote = s->metric_series(id.toStdString(), "loss");

    QTemporaryDir local;
    QVERIFY(local.isValid());
    tdguitest::writeFile(local.filePath("run.json"), QByteArray::fromStdString(cfg.dump()));
    QProcess p;
    p.start(TD_ENGINE_EXE, {"train", "--config", local.filePath("run.json"), "--out", local.filePath("run"), "--quiet",
                            "--no-events-stdout"});
    QVERIFY2(p.waitForStarted(10000) && p.waitForFinished(tdguitest::kSlowMs), "waited for the local llama run to end");
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, p.readAllStandardError().constData());
    std::vector<double> losses;
    std::istringstream events(read_text(local.filePath("run/events.jsonl").toStdString()));
    for (std::string line; std::getline(events, line);) {
      const auto e = nlohmann::json::parse(line);
      if (e["type"] == "step") losses.push_back(e["loss"].get<double>());
    }
    QCOMPARE(losses.size(), size_t(steps));
    QCOMPARE(remote.size(), size_t(steps));
    for (int i = 0; i < steps; i++) QCOMPARE(remote.value[i], losses[i]);
    QVERIFY2(losses.back() < losses.front() - 0.5, qPrintable(QString("%1 -> %2").arg(losses.front()).arg(losses.back())));
  }

  // The run is a million steps: it outlasts the detach and the reattach on any machine, and
  // the test stops it once the new controller has followed it past the detach.
  void detach_then_reattach_through_unreachable_node() {
    QString id;
    int64_t at_detach = 0;
    {
      StoreClient client(fx_.db);
      RemoteRunController c(&client, connector());
      QSignalSpy ingested(&c, &RemoteRunController::runIngested), errs(&c, &RemoteRunController::error);
      QString err;
      id = tdguitest::start_on_node(c, "lab", fx_.node, "remote-exp", tdguitest::tiny_config(fx_.data, 1000000), &err);
      QVERIFY2(!id.isEmpty(), qPrintable(err));
      at_detach = tdguitest::wait_step(ingested, id, 20);
      QVERIFY2(at_detach >= 20, qPrintable("waited for step 20 before the detach: " + errors(errs)));
      c.detachAll();  // the window closes: the run keeps training on the node
      QVERIFY(!c.isActive(id));
    }
    {
      auto s = store();
      QCOMPARE(s->get_run(id.toStdString()).status, std::string("running"));
    }
    // A new controller re-attaches; its node refuses the first two connections.
    refuse_connects_ = 2;
    StoreClient client(fx_.db);
    RemoteRunController c(&client, nullptr);
    QSignalSpy attached(&c, &RemoteRunController::runAttached), ended(&c, &RemoteRunController::runEnded),
        ingested(&c, &RemoteRunController::runIngested), errs(&c, &RemoteRunController::error);
    tdguitest::StateLog log(&c);
    const auto& states = log.connection;  // (run_id, how the node is reached)
    c.setConnector(connector());
    c.reattach();
    QVERIFY2(attached.wait(tdguitest::kSlowMs) || !attached.isEmpty(), "waited for the reattach");
    QCOMPARE(attached.first().at(0).toString(), id);
    // Steps the node wrote while no controller followed it, and more after the reattach.
    const qint64 followed = tdguitest::wait_step(ingested, id, at_detach + 20);
    QVERIFY2(followed >= at_detach + 20,
             qPrintable(QString("waited for step %1 after the reattach: %2 ").arg(at_detach + 20).arg(followed) + errors(errs)));
    QString err;
    QVERIFY2(c.stop(id, &err), qPrintable(err));
    expect_end(ended, id, "stopped");
    QVERIFY2(errs.isEmpty(), qPrintable(errors(errs)));
    QStringList seen;
    for (const auto& a : states) seen << a.at(1).toString();
    QVERIFY2(seen.size() >= 3 && seen[1].startsWith("reconnecting (attempt 1)") &&
                 seen[2].startsWith("reconnecting (attempt 2)") && seen.contains("connected"),
             qPrintable(seen.join(" | ")));
    QCOMPARE(refuse_connects_.load(), 0);
    auto s = store();
    const int64_t last = s->get_run(id.toStdString()).last_step.value_or(-1);
    QVERIFY(last >= at_detach + 20);
    // The mirror catches up with the node's file and the store with the mirror (the stop may
    // come while the reattached follower still backfills): awaited, then every step once.
    const std::string mirror = s->get_run(id.toStdString()).events_path;
    QTRY_VERIFY2_WITH_TIMEOUT(read_text(mirror) == read_text(node_run_dir(id) + "/events.jsonl") &&
                                  tdguitest::loss_rows(fx_.db, id).count == last,
                              qPrintable(QString("waited for the mirror and the store to hold all %1 steps: %2 rows")
                                             .arg(last).arg(tdguitest::loss_rows(fx_.db, id).count)),
                              tdguitest::kSlowMs);
    check_every_step_once(id, last);
  }

  void stop_resume_stop_then_download_checkpoint() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy started(&c, &RemoteRunController::runStarted), ingested(&c, &RemoteRunController::runIngested),
        ended(&c, &RemoteRunController::runEnded), errs(&c, &RemoteRunController::error),
        dl_progress(&c, &RemoteRunController::checkpointProgress),
        downloaded(&c, &RemoteRunController::checkpointFetched);
    QString err;
    const QString id = tdguitest::start_on_node(c, "lab", fx_.node, "remote-exp", tdguitest::tiny_config(fx_.data, 1000000), &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    QVERIFY2(tdguitest::wait_step(ingested, id, 5) >= 5, qPrintable(errors(errs)));
    QVERIFY(c.stop(id, &err));
    expect_end(ended, id, "stopped");
    auto s = store();
    const auto first = s->get_run(id.toStdString());
    QCOMPARE(first.status, std::string("stopped"));
    const auto ckpts = s->checkpoints(id.toStdString());
    QVERIFY(!ckpts.empty());
    QCOMPARE(ckpts.back().step, first.last_step.value_or(-1));
    check_every_step_once(id, *first.last_step);

    // Resume on the same node: the deploy sends nothing new, the engine continues the steps.
    ended.clear();
    started.clear();
    QVERIFY(c.resume(id, &err));
    QVERIFY2(started.wait(tdguitest::kSlowMs) || !started.isEmpty(), "waited for the resumed run to start");
    QVERIFY2(tdguitest::wait_step(ingested, id, *first.last_step + 5) >= *first.last_step + 5,
             qPrintable(errors(errs)));
    QVERIFY(c.stop(id, &err));
    expect_end(ended, id, "stopped");
    const auto second = s->get_run(id.toStdString());
    QCOMPARE(second.attempts, 2);
    QVERIFY(*second.last_step > *first.last_step);
    check_every_step_once(id, *second.last_step);
    QVERIFY2(errs.isEmpty(), qPrintable(errors(errs)));

    // The newest checkpoint comes down whole: each file's sha256 equals the node's.
    const QString out = fx_.dir.filePath("downloaded");
    QVERIFY(c.fetchCheckpoint(id, out, {}, &err));
    QVERIFY2(downloaded.wait(tdguitest::kSlowMs) || !downloaded.isEmpty(), "waited for the checkpoint download");
    QVERIFY2(errs.isEmpty(), qPrintable(errors(errs)));
    char name[32];
    std::snprintf(name, sizeof name, "step_%08lld", static_cast<long long>(*second.last_step));
    const fs::path local = downloaded.first().at(1).toString().toStdString();
    QCOMPARE(local.filename().string(), std::string(name));
    td::remote::Session session = connector()(fx_.node);
    int files = 0;
    for (const auto& e : fs::directory_iterator(local)) {
      ++files;
      const std::string remote = node_run_dir(id) + "/checkpoints/" + name + "/" + e.path().filename().string();
      QCOMPARE(td::remote::sha256_file(e.path()), td::remote::remote_sha256(session, remote));
    }
    QCOMPARE(files, 4);  // model.safetensors, optimizer.safetensors, trainer.json, SHA256SUMS (docs/formats.md)
    QVERIFY(!dl_progress.isEmpty());
    QCOMPARE(dl_progress.last().at(1).toLongLong(), dl_progress.last().at(2).toLongLong());
  }

  void killed_engine_marked_failed_with_log_tail() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy ingested(&c, &RemoteRunController::runIngested), ended(&c, &RemoteRunController::runEnded),
        errs(&c, &RemoteRunController::error);
    QString err;
    const QString id = tdguitest::start_on_node(c, "lab", fx_.node, "remote-exp", tdguitest::tiny_config(fx_.data, 1000000), &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    QVERIFY2(tdguitest::wait_step(ingested, id, 5) >= 5, qPrintable(errors(errs)));
    auto s = store();
    const auto remote = s->remote_run(id.toStdString());
    QVERIFY(remote && remote->pid);
    QCOMPARE(::kill(pid_t(*remote->pid), SIGKILL), 0);  // the node is this machine
    expect_end(ended, id, "failed");
    const auto info = s->get_run(id.toStdString());
    QCOMPARE(info.status, std::string("failed"));
    std::string log = read_text(node_run_dir(id) + "/engine.log");
    while (!log.empty() && log.back() == '\n') log.pop_back();
    QVERIFY(!log.empty());
    const std::string last_line = log.substr(log.rfind('\n') + 1);
    QVERIFY2(info.end_reason.find("ended without a run_end") != std::string::npos, info.end_reason.c_str());
    QVERIFY2(info.end_reason.find(last_line) != std::string::npos, info.end_reason.c_str());
  }

  void reattach_to_dead_engine_marks_failed() {
    QString id;
    {
      StoreClient client(fx_.db);
      RemoteRunController c(&client, connector());
      QSignalSpy ingested(&c, &RemoteRunController::runIngested), errs(&c, &RemoteRunController::error);
      QString err;
      id = tdguitest::start_on_node(c, "lab", fx_.node, "remote-exp", tdguitest::tiny_config(fx_.data, 1000000), &err);
      QVERIFY2(!id.isEmpty(), qPrintable(err));
      QVERIFY2(tdguitest::wait_step(ingested, id, 5) >= 5, qPrintable(errors(errs)));
      c.detachAll();
    }
    // While nobody follows it, the engine dies (a node reboot would do the same).
    auto s = store();
    const auto remote = s->remote_run(id.toStdString());
    QVERIFY(remote && remote->pid);
    QCOMPARE(::kill(pid_t(*remote->pid), SIGKILL), 0);
    QCOMPARE(s->get_run(id.toStdString()).status, std::string("running"));
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());  // reattaches at once
    QSignalSpy attached(&c, &RemoteRunController::runAttached), ended(&c, &RemoteRunController::runEnded);
    expect_end(ended, id, "failed");
    QCOMPARE(attached.count(), 1);
    const auto info = s->get_run(id.toStdString());
    QVERIFY2(info.end_reason.find("ended without a run_end") != std::string::npos, info.end_reason.c_str());
    std::string log = read_text(node_run_dir(id) + "/engine.log");
    while (!log.empty() && log.back() == '\n') log.pop_back();
    QVERIFY2(info.end_reason.find(log.substr(log.rfind('\n') + 1)) != std::string::npos, info.end_reason.c_str());
    // Every step the engine wrote before it died is in the store once.
    check_every_step_once(id, info.last_step.value_or(-1));
  }

  void bad_dataset_refused_before_anything() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QString err;
    auto cfg = tdguitest::tiny_config(fx_.dir.filePath("corpus"), 10);  // a corpus, not a prepared dataset
    QVERIFY(tdguitest::start_on_node(c, "lab", fx_.node, "remote-exp", cfg, &err).isEmpty());
    QVERIFY2(err.contains("manifest.json"), qPrintable(err));
    QVERIFY(c.activeRuns().isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestRemoteRuns)
#include "test_remote_runs.moc"
