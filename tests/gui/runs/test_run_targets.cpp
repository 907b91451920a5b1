// RunTargets (gui/runs/run_targets.h), the one interface every run target sits behind: a start
// goes to the target that accepts the placement, stop/state/files to the target that follows the
// run, resume to the target the store says the run went to; every target's signals come out of
// the router. With the real "local" target (RunController and the real engine) and a recording
// fake target (what a new target, e.g. Kubernetes, plugs in as).
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "../gui_test_util.h"
#include "gui/core/store_client.h"
#include "gui/runs/run_controller.h"
#include "gui/runs/run_targets.h"
#include "store/store.h"

using namespace td::gui;
using td::store::Store;
using tdguitest::wait_ended;

namespace {

// A target of its own kind, taking placements on clusters named "fake-*"; records what it got.
class FakeTarget : public RunTarget {
 public:
  using RunTarget::RunTarget;
  QString kind() const override { return QStringLiteral("fake"); }
  bool accepts(const RunPlacement& p) const override {
    return p.cluster && QString::fromStdString(p.cluster->name).startsWith(QStringLiteral("fake-"));
  }
  void setStoreClient(StoreClient* s) override { store = s; }
  QString start(const RunPlacement& p, const QString& experiment, const nlohmann::json&, const QString& name,
                QString*) override {
    const QString id = QStringLiteral("fake-run-%1").arg(++started);
    active << id;
    last_node = p.node;
    last_experiment = experiment;
    last_name = name;
    emit stateChanged(id);
    return id;
  }
  bool stop(const QString& run_id, QString* error) override {
    if (!active.contains(run_id)) {
      if (error) *error = QStringLiteral("not mine");
      return false;
    }
    stopped << run_id;
    return true;
  }
  bool resume(const QString& run_id, QString*) override {
    resumed << run_id;
    return true;
  }
  void reattach() override { ++reattached; }
  void detachAll() override { active.clear(); }
  QStringList activeRuns() const override { return active; }
  RunTargetState state(const QString& run_id) const override {
    RunTargetState s;
    if (active.contains(run_id)) s = {RunTargetState::Phase::Queued, QStringLiteral("waiting for resources"), 0, 0};
    return s;
  }
  RunFiles files(const QString& run_id) const override {
    RunFiles f;
    if (active.contains(run_id)) f.host = QStringLiteral("fake-host");
    return f;
  }

  StoreClient* store = nullptr;
  int started = 0, reattached = 0, last_node = -2;
  QString last_experiment, last_name;
  QStringList active, stopped, resumed;
};

}  // namespace

class TestRunTargets : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_, db_, engine_dir_;

 private slots:
  void initTestCase() {
    qputenv("TRAINDECK_ENGINE", TD_ENGINE_EXE);
    qputenv("TRAINDECK_RUNS_DIR", dir_.filePath("runs").toUtf8());
    data_ = tdguitest::prepare_tiny_dataset(dir_.path());
    QVERIFY(!data_.isEmpty());
    db_ = dir_.filePath("td.db");
  }

  void routesByPlacementAndOwner() {
    StoreClient client(db_);
    RunTargets targets;
    auto* local = new RunController(nullptr);
    auto* fake = new FakeTarget;
    QVERIFY(targets.add(local));
    QVERIFY(targets.add(fake));
    QVERIFY(!targets.add(new FakeTarget(&targets)));  // one target per kind
    QCOMPARE(targets.targets().size(), 2);
    QCOMPARE(targets.target("local"), local);
    QCOMPARE(targets.target("fake"), fake);
    QCOMPARE(local->parent(), &targets);
    targets.setStoreClient(&client);
    QCOMPARE(fake->store, &client);

    QSignalSpy state_changed(&targets, &RunTarget::stateChanged);
    RunPlacement on_fake;
    on_fake.cluster = td::remote::ClusterSpec{"fake-k8s", {}};
    on_fake.node = 3;
    QVERIFY(targets.accepts(on_fake));
    QString error;
    const QString fid = targets.start(on_fake, "exp", nlohmann::json::object(), "named", &error);
    QCOMPARE(fid, QStringLiteral("fake-run-1"));
    QCOMPARE(fake->last_node, 3);
    QCOMPARE(fake->last_experiment, QStringLiteral("exp"));
    QCOMPARE(fake->last_name, QStringLiteral("named"));
    // The target's signals come out of the router; state and files are the owner's.
    QCOMPARE(state_changed.count(), 1);
    QCOMPARE(state_changed.at(0).at(0).toString(), fid);
    QCOMPARE(targets.owner(fid), fake);
    QVERIFY(targets.isActive(fid));
    QCOMPARE(targets.state(fid).phase, RunTargetState::Phase::Queued);
    QCOMPARE(targets.state(fid).detail, QStringLiteral("waiting for resources"));
    QCOMPARE(targets.files(fid).host, QStringLiteral("fake-host"));
    QVERIFY(targets.activeRuns().contains(fid));
    QVERIFY(targets.stop(fid, &error));
    QCOMPARE(fake->stopped, QStringList{fid});
    // A run followed here is not resumed; one nobody follows is refused with its id.
    QVERIFY(!targets.resume(fid, &error));
    QVERIFY2(error.contains("still running"), qPrintable(error));
    QVERIFY(!targets.stop("nobody-runs-this", &error));
    QVERIFY2(error.contains("nobody-runs-this"), qPrintable(error));
    QCOMPARE(targets.state("nobody-runs-this").phase, RunTargetState::Phase::Unknown);

    // An SSH placement with no SSH target registered: nothing starts, the error names the kind.
    RunPlacement on_ssh;
    on_ssh.cluster = td::remote::ClusterSpec{"lab", {td::remote::NodeSpec{}}};
    QCOMPARE(on_ssh.kind(), QStringLiteral("ssh"));
    QVERIFY(!targets.accepts(on_ssh));
    QVERIFY(targets.start(on_ssh, "exp", nlohmann::json::object(), {}, &error).isEmpty());
    QVERIFY2(error.contains("\"ssh\""), qPrintable(error));

    // This machine: the local target runs the real engine; the router reports its signals.
    QSignalSpy ended(&targets, &RunTarget::runEnded);
    QSignalSpy started(&targets, &RunTarget::runStarted);
    const QString id = targets.start(RunPlacement{}, "exp", tdguitest::tiny_config(data_, 6), {}, &error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QCOMPARE(started.count(), 1);
    QCOMPARE(targets.owner(id), local);
    QCOMPARE(targets.state(id).phase, RunTargetState::Phase::Running);
    const RunFiles f = targets.files(id);
    QCOMPARE(f.host, QString());
    QCOMPARE(QFileInfo(f.local_dir).fileName(), id);
    QCOMPARE(f.events, QDir(f.local_dir).filePath("events.jsonl"));
    QCOMPARE(wait_ended(ended, id), QStringLiteral("completed"));
    QVERIFY(!targets.isActive(id));

    // Resume asks the store where the run went: the local run goes to the local target (which
    // refuses a completed run through error()), a run recorded as "slurm" to nobody here.
    {
      Store s(db_.toStdString());
      s.note_launch("on-slurm", "exp", dir_.filePath("x/events.jsonl").toStdString(), 0, "login", 100.0);
      td::store::RemoteRun r{"on-slurm", "hpc", R"({"host":"login"})", "/shared/runs/on-slurm", std::nullopt, 0, {}};
      r.target = "slurm";
      s.note_remote_run(r);
    }
    QSignalSpy errors(&targets, &RunTarget::error);
    QVERIFY(targets.resume("on-slurm", &error));
    QTRY_VERIFY_WITH_TIMEOUT(errors.count() >= 1, tdguitest::kSlowMs);
    QVERIFY2(errors.at(0).at(0).toString().contains("\"slurm\""), qPrintable(errors.at(0).at(0).toString()));
    QVERIFY(fake->resumed.isEmpty());
    QVERIFY(targets.resume("no-such-run", &error));
    QTRY_VERIFY_WITH_TIMEOUT(errors.count() >= 2, tdguitest::kSlowMs);
    QVERIFY2(errors.at(1).at(0).toString().contains("no-such-run"), qPrintable(errors.at(1).at(0).toString()));

    targets.reattach();
    QCOMPARE(fake->reattached, 1);
    targets.detachAll();
    QVERIFY(targets.activeRuns().isEmpty());
  }

  void localStopIsGracefulThenHard() {
    // An engine that ignores the graceful stop (SIGTERM) is killed once the timeout has passed;
    // the run ends failed. The stand-in's command line holds "traindeck-engine" and the run id,
    // which the hard stop checks first (a recycled pid is never killed).
    const QString fake_dir = dir_.filePath("stubborn");
    QVERIFY(QDir().mkpath(fake_dir));
    const QString exe = QDir(fake_dir).filePath("traindeck-engine");
    {
      QFile f(exe);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 0.1; done\n");
    }
    QVERIFY(QFile::setPermissions(exe, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    qputenv("TRAINDECK_ENGINE", exe.toUtf8());
    StoreClient client(dir_.filePath("stubborn.db"));
    RunTargets targets;
    auto* local = new RunController(nullptr);
    targets.add(local);
    targets.setKillTimeoutMs(400);
    QCOMPARE(local->killTimeoutMs(), 400);
    targets.setStoreClient(&client);
    QSignalSpy ended(&targets, &RunTarget::runEnded);
    QString error;
    const QString id = targets.start(RunPlacement{}, "exp", tdguitest::tiny_config(data_, 6), {}, &error);
    qputenv("TRAINDECK_ENGINE", TD_ENGINE_EXE);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QVERIFY2(targets.stop(id, &error), qPrintable(error));
    QCOMPARE(targets.state(id).phase, RunTargetState::Phase::Stopping);
    QCOMPARE(wait_ended(ended, id), QStringLiteral("failed"));
    QCOMPARE(targets.state(id).phase, RunTargetState::Phase::Unknown);
  }
};

QTEST_GUILESS_MAIN(TestRunTargets)
#include "test_run_targets.moc"
