// SlurmTarget (gui/runs/slurm_target.h), the workbench's Slurm run target, against a real
// Slurm started by the test (tests/remote/slurm_fixture.h: munged, slurmctld and two slurmd
// "nodes" in network namespaces), its login node this machine's real sshd whose sessions find
// the test cluster's slurm.conf. Through the same RunTargets router the main window uses: a
// 2-node CPU run is submitted, waits in the queue, runs on both nodes and completes with every
// step stored once and both hosts named; a job that cannot run shows its pending reason and is
// cancelled by Stop; a stopped run resumes in a new job. Skips with the reason where Slurm,
// munge, root or namespaces are missing.
#include <QSignalSpy>
#include <QtTest>

#include <set>

#include "../../remote/slurm_fixture.h"
#include "../gui_test_util.h"
#include "gui/core/store_client.h"
#include "gui/runs/run_targets.h"
#include "gui/runs/slurm_target.h"
#include "remote_node_fixture.h"
#include "store/store.h"

using namespace td::gui;
using td::remote::testing::SlurmCluster;
using tdguitest::wait_ended;

class TestSlurmTarget : public QObject {
  Q_OBJECT
  tdguitest::RemoteNode fx_;
  SlurmCluster slurm_;
  td::remote::ClusterSpec cluster_;

  // The target behind a router, as in the main window.
  struct Targets {
    StoreClient client;
    RunTargets router;
    SlurmTarget* slurm;
    Targets(const QString& db, const tdguitest::RemoteNode& fx)
        : client(db), slurm(new SlurmTarget(nullptr, [&fx](const td::remote::NodeSpec& n) { return fx.open(n); })) {
      router.add(slurm);
      slurm->setPollIntervalMs(300);
      router.setKillTimeoutMs(60000);
      router.setStoreClient(&client);
    }
  };

  RunPlacement placement(int nodes) const {
    RunPlacement p;
    p.cluster = cluster_;
    p.cluster->slurm.nodes = nodes;
    return p;
  }

 private slots:
  void initTestCase() {
    if (!fx_.start("login", "home")) QSKIP(fx_.sshd.skip_reason.empty() ? "no dataset" : fx_.sshd.skip_reason.c_str());
    if (!slurm_.start(2)) QSKIP(("test Slurm cluster: " + slurm_.skip_reason).c_str());
    QVERIFY2(fx_.sshd.launch({}, "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n", slurm_.env()),
             fx_.sshd.skip_reason.c_str());
    fx_.node.port = fx_.sshd.port;
    cluster_.name = "hpc";
    cluster_.kind = "slurm";
    cluster_.nodes = {fx_.node};
    cluster_.slurm.partition = slurm_.partition;
    cluster_.slurm.nodes = 2;
    cluster_.slurm.work_dir = (slurm_.dir / "shared").string();
    QCOMPARE(placement(2).kind(), QStringLiteral("slurm"));
  }

  void cleanupTestCase() {
    slurm_.stop();
    fx_.kill_engines();
  }

  void twoNodeRunCompletes() {
    Targets t(fx_.db, fx_);
    QSignalSpy ended(&t.router, &RunTarget::runEnded), started(&t.router, &RunTarget::runStarted),
        errors(&t.router, &RunTarget::error), states(&t.router, &RunTarget::stateChanged);
    QString error;
    const int steps = 8;
    const QString id = t.router.start(placement(2), "slurm-exp", tdguitest::tiny_config(fx_.data, steps), "on slurm", &error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QCOMPARE(t.router.owner(id), t.slurm);
    QCOMPARE(t.router.files(id).host, QStringLiteral("hpc"));
    QSet<int> phases;
    connect(&t.router, &RunTarget::stateChanged, this, [&](const QString& rid) {
      if (rid == id) phases.insert(int(t.router.state(id).phase));
    });
    const QString status = wait_ended(ended, id);
    QVERIFY2(status == "completed", qPrintable(status + " " + (errors.isEmpty() ? QString() : errors.last().at(0).toString())));
    QVERIFY(phases.contains(int(RunTargetState::Phase::Deploying)));
    QVERIFY(phases.contains(int(RunTargetState::Phase::Running)));
    QCOMPARE(started.count(), 1);

    td::store::Store s(fx_.db.toStdString());
    // Every step once, in order; the per-rank figures name both Slurm nodes.
    // (metrics are keyed by step: count == steps from 1 to steps is every step exactly once)
    const auto rows = tdguitest::loss_rows(fx_.db, id);
    QCOMPARE(int(rows.count), steps);
    QCOMPARE(int(rows.first), 1);
    QCOMPARE(int(rows.last), steps);
    const auto chart = s.chart_run(id.toStdString());
    QCOMPARE(int(chart.hosts.size()), 2);
    QCOMPARE(std::set<std::string>(chart.hosts.begin(), chart.hosts.end()),
             std::set<std::string>(slurm_.node_names.begin(), slurm_.node_names.end()));
    QCOMPARE(s.run_target(id.toStdString()), std::string("slurm"));
    QCOMPARE(s.find_run(id.toStdString())->name, std::string("on slurm"));
    const auto jobs = s.run_jobs(id.toStdString());
    QCOMPARE(int(jobs.size()), 1);
    QCOMPARE(jobs[0].state, std::string("COMPLETED"));
    // The batch script as submitted is kept in the local run folder.
    const QString script = QDir(qEnvironmentVariable("TRAINDECK_RUNS_DIR")).filePath(id + "/traindeck.sbatch");
    QFile f(script);
    QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(script));
    QVERIFY(f.readAll().contains("#SBATCH --nodes=2"));
  }

  void pendingJobShowsItsReasonAndStopCancelsIt() {
    Targets t(fx_.db, fx_);
    QSignalSpy ended(&t.router, &RunTarget::runEnded);
    QString error;
    // Three nodes on a two-node partition: Slurm keeps it pending.
    const QString id = t.router.start(placement(3), "slurm-exp", tdguitest::tiny_config(fx_.data, 5), {}, &error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QVERIFY2(QTest::qWaitFor([&] { return t.router.state(id).phase == RunTargetState::Phase::Queued &&
                                          !t.router.state(id).detail.startsWith("job "); },
                             tdguitest::kSlowMs),
             "waited for the job to be seen pending with a reason");
    const QString reason = t.router.state(id).detail;
    QVERIFY2(!reason.isEmpty() && !reason.contains("Slurm says: None"), qPrintable(reason));
    QVERIFY2(t.router.stop(id, &error), qPrintable(error));
    QCOMPARE(wait_ended(ended, id), QStringLiteral("stopped"));
    td::store::Store s(fx_.db.toStdString());
    const auto jobs = s.run_jobs(id.toStdString());
    QCOMPARE(int(jobs.size()), 1);
    QCOMPARE(jobs[0].state, std::string("CANCELLED"));
  }

  void stoppedRunResumesInANewJob() {
    // train.steps far beyond what a test waits for, so a stop always finds the run training (with
    // 400 steps a loaded machine's store saw step 3 after the engine had finished: "completed");
    // the resumed job is followed past the stopped step, then stopped the same way.
    Targets t(fx_.db, fx_);
    QSignalSpy ended(&t.router, &RunTarget::runEnded), ingested(&t.router, &RunTarget::runIngested);
    QString error;
    const int steps = 1000000;
    const QString id =
        t.router.start(placement(2), "slurm-exp", tdguitest::tiny_config(fx_.data, steps, 1000), {}, &error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QVERIFY2(tdguitest::wait_step(ingested, id, 3) >= 3, "waited for step 3 in the store");
    QVERIFY2(t.router.stop(id, &error), qPrintable(error));
    QCOMPARE(wait_ended(ended, id), QStringLiteral("stopped"));
    const qint64 stopped_at = tdguitest::loss_rows(fx_.db, id).last;
    QVERIFY(stopped_at >= 3 && stopped_at < steps);
    // Resume: the store says where it ran; a new job continues it from the stopped step.
    ended.clear();
    ingested.clear();
    QVERIFY2(t.router.resume(id, &error), qPrintable(error));
    QVERIFY2(tdguitest::wait_step(ingested, id, stopped_at + 3) >= stopped_at + 3, "waited for the resumed job's steps in the store");
    QVERIFY2(t.router.stop(id, &error), qPrintable(error));
    QCOMPARE(wait_ended(ended, id), QStringLiteral("stopped"));
    const auto rows = tdguitest::loss_rows(fx_.db, id);
    QCOMPARE(int(rows.first), 1);
    QVERIFY(rows.last >= stopped_at + 3);
    QCOMPARE(qint64(rows.count), rows.last);  // one row a step: the new job went on from the checkpoint
    td::store::Store s(fx_.db.toStdString());
    const auto jobs = s.run_jobs(id.toStdString());
    QCOMPARE(int(jobs.size()), 2);
    QCOMPARE(jobs[1].state, jobs[0].state);  // both stopped the same way
    QVERIFY(jobs[1].job_id != jobs[0].job_id);
  }

  void timeLimitWithRequeueIsFollowedIntoTheNextJob() {
    // The warning Slurm sends before a time limit (--signal=USR1@lead) is sent here by hand,
    // once the run is past step 20, so the test does not depend on how fast this machine
    // trains: the engine checkpoints and ends "stopped: time limit", the batch script submits
    // the next job, and the target follows the run into it until train.steps.
    Targets t(fx_.db, fx_);
    QSignalSpy ended(&t.router, &RunTarget::runEnded), ingested(&t.router, &RunTarget::runIngested);
    RunPlacement p = placement(2);
    p.cluster->slurm.requeue = true;
    QString error;
    const int steps = 3000;
    const QString id = t.router.start(p, "slurm-exp", tdguitest::tiny_config(fx_.data, steps, 100000), {}, &error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QVERIFY2(tdguitest::wait_step(ingested, id, 20) >= 20, "waited for step 20 in the store");
    const QStringList first = t.slurm->jobsOf(id);
    QCOMPARE(first.size(), 1);
    std::string out;
    QVERIFY2(slurm_.client({"scancel", "--signal=USR1", first.front().toStdString()}, &out) == 0, out.c_str());
    const QString status = wait_ended(ended, id);
    td::store::Store s(fx_.db.toStdString());
    const auto info = s.find_run(id.toStdString());
    QVERIFY2(status == "completed", qPrintable(status + ": " + QString::fromStdString(info ? info->end_reason : "")));
    const auto jobs = s.run_jobs(id.toStdString());
    QVERIFY2(jobs.size() >= 2, "the run took one job only");
    QCOMPARE(jobs.front().job_id, first.front().toStdString());
    QCOMPARE(jobs.back().state, std::string("COMPLETED"));
    QVERIFY(t.slurm->jobsOf(id).isEmpty());  // no longer followed
    // Every step once, from both jobs.
    const auto rows = tdguitest::loss_rows(fx_.db, id);
    QCOMPARE(int(rows.count), steps);
    QCOMPARE(int(rows.first), 1);
    QCOMPARE(int(rows.last), steps);
  }

  void anAdminsScancelIsNotTheUsersStop() {
    // scancel from outside TrainDeck (here as root, like an administrator): the engine ends
    // "stop requested (signal)" as for the user's own stop; the store says what happened.
    Targets t(fx_.db, fx_);
    QSignalSpy ended(&t.router, &RunTarget::runEnded), ingested(&t.router, &RunTarget::runIngested);
    QString error;
    const QString id = t.router.start(placement(2), "slurm-exp", tdguitest::tiny_config(fx_.data, 1000000, 1000), {}, &error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QVERIFY2(tdguitest::wait_step(ingested, id, 3) >= 3, "waited for step 3 in the store");
    const QStringList jobs = t.slurm->jobsOf(id);
    QCOMPARE(jobs.size(), 1);
    std::string out;
    QVERIFY2(slurm_.client({"scancel", jobs.front().toStdString()}, &out) == 0, out.c_str());
    QCOMPARE(wait_ended(ended, id), QStringLiteral("stopped"));
    td::store::Store s(fx_.db.toStdString());
    const auto info = s.find_run(id.toStdString());
    QVERIFY(info);
    QVERIFY2(info->end_reason.find("cancelled by Slurm, not from TrainDeck") == 0, info->end_reason.c_str());
    QVERIFY2(info->end_reason.find("job " + jobs.front().toStdString()) != std::string::npos, info->end_reason.c_str());
    QCOMPARE(s.run_jobs(id.toStdString()).back().state, std::string("CANCELLED"));
  }

  void deadNodeFailsTheRunWithSlurmsWordsAndItResumes() {
    Targets t(fx_.db, fx_);
    QSignalSpy ended(&t.router, &RunTarget::runEnded), ingested(&t.router, &RunTarget::runIngested);
    QString error;
    const QString id = t.router.start(placement(2), "slurm-exp", tdguitest::tiny_config(fx_.data, 100000, 10), {}, &error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QVERIFY2(tdguitest::wait_step(ingested, id, 25) >= 25, "waited for step 25 (two checkpoints) in the store");
    // The first node dies (slurmd, slurmstepd, the batch script and rank 0): no run_end is
    // written; Slurm ends the job NODE_FAIL and the target says so.
    QVERIFY(slurm_.kill_node(0) >= 3);
    QCOMPARE(wait_ended(ended, id), QStringLiteral("failed"));
    td::store::Store s(fx_.db.toStdString());
    const auto info = s.find_run(id.toStdString());
    QVERIFY(info);
    QVERIFY2(info->end_reason.find("NODE_FAIL") != std::string::npos, info->end_reason.c_str());
    QCOMPARE(s.run_jobs(id.toStdString()).back().state, std::string("NODE_FAIL"));
    QVERIFY(!s.checkpoints(id.toStdString()).empty());
    // The node comes back; Resume continues from the newest checkpoint in a new job.
    QVERIFY(slurm_.start_slurmd(0));
    QVERIFY2(slurm_.wait_idle(2), slurm_.sinfo().c_str());
    ended.clear();
    QVERIFY2(t.router.resume(id, &error), qPrintable(error));
    QVERIFY2(QTest::qWaitFor([&] { return t.router.state(id).phase == RunTargetState::Phase::Running; },
                             tdguitest::kSlowMs),
             "waited for the resumed job to run");
    QVERIFY2(t.router.stop(id, &error), qPrintable(error));
    QCOMPARE(wait_ended(ended, id), QStringLiteral("stopped"));
    QVERIFY(s.run_jobs(id.toStdString()).size() >= 2);
  }
};

QTEST_GUILESS_MAIN(TestSlurmTarget)
#include "test_slurm_target.moc"
