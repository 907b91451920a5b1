// RunTargets (gui/runs/run_targets.h), the one interface every run target sits behind: "Train
// on" lists every target's placements, a start goes to the target that accepts the placement,
// stop/cancel/state/files to the target that follows the run, resume and checkpoints to the
// target the store says the run went to; every target's signals come out of the router. With the real "local" target (RunController and the real engine) and a recording
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
  bool cancel(const QString& run_id) override {
    cancelled << run_id;
    return active.contains(run_id);
  }
  QList<PlacementChoice> placements(const std::optional<td::remote::ClusterSpec>& c) const override {
    if (!c || !accepts(RunPlacement{c, -1})) return {};
    return {{QString::fromStdString(c->name) + " (fake)", QStringLiteral("remote"), RunPlacement{c, -1}}};
  }
  bool fetchesCheckpoints() const override { return true; }
  void listCheckpoints(const QString& run_id) override { listed << run_id; }
  bool fetchCheckpoint(const QString& run_id, const QString& dir, const QString& name, QString*) override {
    fetched << run_id + " " + dir + " " + name;
    return true;
  }
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
  QStringList active, stopped, resumed, cancelled, listed, fetched;
};

// A cluster named `name` of `nodes` (kind "ssh" unless changed).
td::remote::ClusterSpec cluster_of(const std::string& name, std::vector<td::remote::NodeSpec> nodes = {}) {
  td::remote::ClusterSpec c;
  c.name = name;
  c.nodes = std::move(nodes);
  return c;
}

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
    on_fake.cluster = cluster_of("fake-k8s");
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
    on_ssh.cluster = cluster_of("lab", {td::remote::NodeSpec{}});
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

  // "Train on": every target's entries, this machine first, then each cluster in the order
  // given, each entry's placement one its own target accepts; make_targets() registers the
  // app's three targets in that order.
  void placementsListEveryTargetsEntries() {
    RunTargets* app = make_targets(nullptr, nullptr);
    QCOMPARE(app->targets().size(), 3);
    QCOMPARE(app->targets()[0]->kind(), QStringLiteral("local"));
    QCOMPARE(app->targets()[1]->kind(), QStringLiteral("ssh"));
    QCOMPARE(app->targets()[2]->kind(), QStringLiteral("slurm"));
    app->add(new FakeTarget);

    td::remote::NodeSpec a, b, g;
    a.host = "a.lab";  // no name: the host is shown
    b.name = "b";
    b.host = "b.lab";
    g.name = "g";
    g.host = "g.lab";
    g.gpus = 2;
    td::remote::ClusterSpec pair = cluster_of("pair", {a, b});
    td::remote::ClusterSpec mixed = cluster_of("mixed", {g, a});  // GPU and CPU nodes: no "all nodes" entry
    td::remote::ClusterSpec hpc = cluster_of("hpc", {b});
    hpc.kind = "slurm";
    hpc.slurm.nodes = 2;
    hpc.slurm.gpus_per_node = 4;
    td::remote::ClusterSpec k8s = cluster_of("fake-k8s", {b});
    k8s.kind = "fake";
    const QList<PlacementChoice> rows = app->placements(QList<td::remote::ClusterSpec>{pair, mixed, hpc, k8s});
    QStringList labels;
    for (const PlacementChoice& c : rows) labels << c.label;
    QCOMPARE(labels, (QStringList{"This machine", "pair / all 2 nodes (2 ranks)", "pair / a.lab (CPU)", "pair / b (CPU)",
                                  "mixed / g (2 GPUs)", "mixed / a.lab (CPU)", "hpc (Slurm, 2 nodes × 4 GPUs)",
                                  "fake-k8s (fake)"}));
    const QList<int> nodes{-1, -1, 0, 1, 0, 1, -1, -1};
    const QStringList kinds{"local", "ssh", "ssh", "ssh", "ssh", "ssh", "slurm", "fake"};
    for (int i = 0; i < rows.size(); ++i) {
      QCOMPARE(rows[i].placement.node, nodes[i]);
      QCOMPARE(rows[i].placement.kind(), kinds[i]);
      QVERIFY2(app->target(kinds[i])->accepts(rows[i].placement), qPrintable(rows[i].label));
    }
    QCOMPARE(rows[0].icon, QStringLiteral("run"));
    QVERIFY(!rows[0].placement.cluster);
    QCOMPARE(rows[6].placement.cluster->slurm.gpus_per_node, 4);
    delete app;
  }

  // Cancel goes to the run's follower; checkpoints of a followed run to its follower, of a run
  // nobody follows to the target the store says it ran on (a local run's are here: refused).
  void checkpointsAndCancelGoWhereTheRunIs() {
    StoreClient client(dir_.filePath("routing.db"));
    RunTargets targets;
    targets.add(new RunController(nullptr));
    auto* fake = new FakeTarget;
    targets.add(fake);
    targets.setStoreClient(&client);
    QVERIFY(targets.fetchesCheckpoints());
    QVERIFY(!targets.target("local")->fetchesCheckpoints());

    QString error;
    const QString followed = targets.start(RunPlacement{cluster_of("fake-a"), -1}, "exp",
                                           nlohmann::json::object(), {}, &error);
    QVERIFY(targets.cancel(followed));
    QCOMPARE(fake->cancelled, QStringList{followed});
    QVERIFY(!targets.cancel("nobody-runs-this"));
    QCOMPARE(fake->cancelled.size(), 1);
    QVERIFY(targets.fetchCheckpoint(followed, "/tmp/into", "step_00000010", &error));
    QCOMPARE(fake->fetched, QStringList{followed + " /tmp/into step_00000010"});
    targets.listCheckpoints(followed);
    QCOMPARE(fake->listed, QStringList{followed});

    {
      Store s(dir_.filePath("routing.db").toStdString());
      s.note_launch("gone-fake", "exp", dir_.filePath("g/events.jsonl").toStdString(), 0, "h", 100.0);
      td::store::RemoteRun r{"gone-fake", "fake-a", R"({"host":"h"})", "/runs/gone-fake", std::nullopt, 0, {}};
      r.target = "fake";
      s.note_remote_run(r);
      s.note_launch("here", "exp", dir_.filePath("h/events.jsonl").toStdString(), 0, "", 100.0);
    }
    targets.listCheckpoints("gone-fake");
    QTRY_COMPARE_WITH_TIMEOUT(fake->listed.size(), 2, tdguitest::kSlowMs);
    QCOMPARE(fake->listed.last(), QStringLiteral("gone-fake"));
    QVERIFY(targets.fetchCheckpoint("gone-fake", "/tmp/into", {}, &error));
    QTRY_COMPARE_WITH_TIMEOUT(fake->fetched.size(), 2, tdguitest::kSlowMs);
    QCOMPARE(fake->fetched.last(), QStringLiteral("gone-fake /tmp/into "));
    QSignalSpy errors(&targets, &RunTarget::error);
    targets.listCheckpoints("here");
    QTRY_VERIFY_WITH_TIMEOUT(!errors.isEmpty(), tdguitest::kSlowMs);
    QVERIFY2(errors.first().at(0).toString().contains("not kept away from this machine"),
             qPrintable(errors.first().at(0).toString()));
    QCOMPARE(fake->listed.size(), 2);
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
