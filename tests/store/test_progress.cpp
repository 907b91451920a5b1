// A run's progress (step of train.steps, elapsed, time left) and its one tokens/s
// (Store::run_progress, Store::run_throughput; issue 14 "Runs"), on runs written by hand. Every
// expected number is computed in the comments from the events below.
#include <QTemporaryDir>
#include <QtTest>

#include <sys/wait.h>
#include <unistd.h>

#include <QDir>
#include <QProcess>
#include <sstream>

#include "engine/cli/runs_cmd.h"
#include "engine/common/duration.h"
#include "engine/metrics/sysinfo.h"
#include "cli_fixture.h"
#include "events_fixture.h"
#include "store/format.h"
#include "store/ingest.h"
#include "store/store.h"

using namespace td::store;
using namespace td::store::test;

namespace {

json start(const std::string& run, double t, int attempt, json resumed, int64_t total_steps) {
  json j = run_start(run, t, attempt, resumed);
  j["config"]["train"]["steps"] = total_steps;
  return j;
}

json end(const std::string& run, double t, const char* status, int64_t s, int attempt) {
  json j = ev("run_end", run, t, attempt);
  j["status"] = status;
  j["reason"] = "test";
  j["step"] = s;
  return j;
}

// run-p, train.steps 1000, still running:
//   attempt 0: start t 1000, steps 1..50 at t = 1000 + 2 s, stopped at t 1105 -> 105 s.
//   attempt 1: start t 2000, resumed from step 40: steps 41..200 at t = 2000 + 3 (s - 40), plus a
//     50 s pause (an evaluation) before step 151 -> step 200 at 2000 + 480 + 50 = 2530; no end:
//     it counts to its last step, 2530 - 2000 = 530 s. Elapsed 105 + 530 = 635 s.
//   rate: rows 100..200 (101 rows, all attempt 1): t 2180 .. 2530 -> 350 s / 100 steps = 3.5 s a
//     step (with the pause; one step alone would say 3 s); left (1000 - 200) x 3.5 = 2800 s.
//   tokens_per_s 2048 + s: the last 100 steps 101..200 (no warm-up among them: attempt 1's are
//     41..43) -> median of 2149..2248 = (2198 + 2199) / 2 = 2198.5; mfu (2048 + s) / 1e5 ->
//     0.021985. The last step alone says 2248, all 200 rows' median 2148.5.
std::string run_p() {
  std::string t = line(start("run-p", 1000, 0, nullptr, 1000));
  for (int s = 1; s <= 50; ++s) t += line(step("run-p", 1000 + 2.0 * s, s, 5.0, 0, 0, (2048.0 + s) / 1e5));
  t += line(end("run-p", 1105, "stopped", 50, 0));
  t += line(start("run-p", 2000, 1, 40, 1000));
  for (int s = 41; s <= 200; ++s)
    t += line(step("run-p", 2000 + 3.0 * (s - 40) + (s > 150 ? 50 : 0), s, 4.0, 1, 0, (2048.0 + s) / 1e5));
  return t;
}

// run-k: like run-p's attempt 0 but killed (no run_end) at step 50, resumed from step 40 and
// still running at step 60 (t = 2000 + 3 (s - 40)). Attempt 0 has no end: it counts to its last
// step still stored, 40 (41..50 were rewritten by attempt 1) at t 1080 -> 80 s; attempt 1
// 2060 - 2000 = 60 s. Elapsed 140 s. Rate over rows 41..60 (attempt 1 only; the gap between
// the attempts is no step's time): (2060 - 2003) / 19 = 3 s. Left (100 - 60) x 3 = 120 s.
std::string run_k() {
  std::string t = line(start("run-k", 1000, 0, nullptr, 100));
  for (int s = 1; s <= 50; ++s) t += line(step("run-k", 1000 + 2.0 * s, s, 5.0));
  t += line(start("run-k", 2000, 1, 40, 100));
  for (int s = 41; s <= 60; ++s) t += line(step("run-k", 2000 + 3.0 * (s - 40), s, 4.0, 1));
  return t;
}

// run-w, train.steps 10, completed in two attempts: steps 1..6 (attempt 0, t 101..106, stopped
// at 107), resumed from 6: steps 7..10 (attempt 1, t 201..204, completed at 205).
//   tokens_per_s 100 200 300 1000 1100 1200 | 50 60 70 1300. Warm-up: attempt 0's steps 1..3,
//   attempt 1's 7..9 (<= 6 + 3) -> kept 1000 1100 1200 1300 -> median 1150 over 4 steps.
//   Elapsed (107 - 100) + (205 - 200) = 12 s; no time left (completed).
std::string run_w() {
  const double tps[] = {100, 200, 300, 1000, 1100, 1200, 50, 60, 70, 1300};
  auto st = [&](int s, double t, int attempt) {
    json j = step("run-w", t, s, 3.0, attempt);
    j["tokens_per_s"] = tps[s - 1];
    return line(j);
  };
  std::string t = line(start("run-w", 100, 0, nullptr, 10));
  for (int s = 1; s <= 6; ++s) t += st(s, 100 + s, 0);
  t += line(end("run-w", 107, "stopped", 6, 0));
  t += line(start("run-w", 200, 1, 6, 10));
  for (int s = 7; s <= 10; ++s) t += st(s, 194 + s, 1);
  t += line(end("run-w", 205, "completed", 10, 1));
  return t;
}

}  // namespace

class TestProgress : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string db_;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath("td.db").toStdString();
    Store st(db_);
    for (const auto& [name, text] : {std::pair{"run-p", run_p()}, {"run-k", run_k()}, {"run-w", run_w()}}) {
      const std::string path = dir_.filePath(QString(name) + ".jsonl").toStdString();
      write_file(path, text);
      Ingester(st, path, "exp").poll_all();
    }
  }

  void progressOfARunningRun() {
    Store st(db_);
    const RunProgress p = st.run_progress("run-p");
    QCOMPARE(p.status, std::string("running"));
    QCOMPARE(*p.step, int64_t(200));
    QCOMPARE(*p.total_steps, int64_t(1000));
    QCOMPARE(*p.percent(), 20);
    QCOMPARE(*p.elapsed_s, 635.0);
    QCOMPARE(*p.seconds_per_step, 3.5);
    QCOMPARE(*p.eta_s, 2800.0);
    // Compare's wall time is the same elapsed.
    QCOMPARE(*st.run_numbers("run-p").wall_seconds, 635.0);
  }

  void aKilledAttemptCountsToItsLastStoredStep() {
    Store st(db_);
    const RunProgress p = st.run_progress("run-k");
    QCOMPARE(*p.elapsed_s, 140.0);
    QCOMPARE(*p.seconds_per_step, 3.0);
    QCOMPARE(*p.eta_s, 120.0);
    QCOMPARE(*p.percent(), 60);
  }

  void aFinishedRunHasNoTimeLeft() {
    Store st(db_);
    const RunProgress p = st.run_progress("run-w");
    QCOMPARE(p.status, std::string("completed"));
    QCOMPARE(*p.step, int64_t(10));
    QCOMPARE(*p.total_steps, int64_t(10));
    QCOMPARE(*p.elapsed_s, 12.0);
    QVERIFY(!p.eta_s.has_value());
    QCOMPARE(*p.percent(), 100);
  }

  void percentRoundsButNeverSaysDoneEarly() {
    RunProgress p;
    p.total_steps = 1000;
    p.step = 89;
    QCOMPARE(*p.percent(), 9);  // 8.9 %
    p.step = 85;
    QCOMPARE(*p.percent(), 9);  // 8.5 % rounds half up
    p.step = 999;
    QCOMPARE(*p.percent(), 99);  // 99.9 % is not done
    p.total_steps.reset();
    QVERIFY(!p.percent().has_value());
  }

  void tokensPerSIsTheMedianOfTheLastSteps() {
    Store st(db_);
    const Store::RunThroughput p = st.run_throughput("run-p");
    QCOMPARE(*p.tokens_per_s, 2198.5);
    QCOMPARE(p.steps, 100);
    QCOMPARE(*p.mfu, 0.021985);
    const Store::RunThroughput w = st.run_throughput("run-w");
    QCOMPARE(*w.tokens_per_s, 1150.0);  // each attempt's warm-up left out
    QCOMPARE(w.steps, 4);
    // Every query that reports tokens/s gives the same number.
    QCOMPARE(*st.get_run("run-p").tokens_per_s, 2198.5);
    QCOMPARE(*st.run_numbers("run-p").tokens_per_s, 2198.5);
    QCOMPARE(*st.run_numbers("run-p").mfu, 0.021985);
    for (const RunSummary& r : st.list_runs()) {
      QCOMPARE(*r.tokens_per_s, *st.run_throughput(r.run_id).tokens_per_s);
      QCOMPARE(*r.total_steps, r.run_id == "run-p" ? int64_t(1000) : r.run_id == "run-k" ? int64_t(100) : int64_t(10));
    }
    QCOMPARE(format_tokens_per_s(2198.5), std::string("2198"));  // %.0f: round half to even
    QCOMPARE(format_tokens_per_s(std::nullopt), std::string("-"));
  }

  void runsListAndShowPrintIt() {
    const std::string list = run_cli({"runs", "list", "--db", db_});
    QVERIFY2(list.find("  2198  ") != std::string::npos, list.c_str());
    QVERIFY2(list.find("  1150  ") != std::string::npos, list.c_str());
    QVERIFY2(list.find("TOKENS/S: median of rank 0's tokens_per_s over the last 100 steps, each attempt's first 3 left out\n") !=
                 std::string::npos,
             list.c_str());
    const std::string show = run_cli({"runs", "show", "run-p", "--db", db_});
    QVERIFY2(show.find("tokens/s       2198 (median of last 100 steps)\n") != std::string::npos, show.c_str());
    // 635 s elapsed, 2800 s left.
    QVERIFY2(show.find("progress       step 200 / 1000 (20 %), 10m35s elapsed, ~46m40s left\n") != std::string::npos,
             show.c_str());
    const std::string done = run_cli({"runs", "show", "run-w", "--db", db_});
    QVERIFY2(done.find("progress       step 10 / 10, 12.0s\n") != std::string::npos, done.c_str());
  }

  // Issue 35: a run the store says is running on this machine whose engine process is gone (a
  // full disk kept its run_end out of the file; a kill) is "gone" in `runs list` and `runs show`,
  // with no time left; one whose engine lives (its command line names the engine and the run's
  // folder) is still running with its time left.
  void aRunWhoseEngineIsGoneSaysSo() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("gone.db").toStdString();
    QVERIFY(QDir(dir.path()).mkpath("run-gone") && QDir(dir.path()).mkpath("run-live"));
    // A pid that surely ended: a child that exits, reaped.
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    QVERIFY(dead > 0);
    ::waitpid(dead, nullptr, 0);
    // A live "engine" of run-live: argv[0] names the engine and the run's folder.
    QProcess live;
    live.start("bash", {"-c", "exec -a 'traindeck-engine train --out " + dir.filePath("run-live") + "' sleep 300"});
    QVERIFY(live.waitForStarted());
    {
      Store st(db);
      for (const auto& [name, pid] : {std::pair{"run-gone", int64_t(dead)}, {"run-live", int64_t(live.processId())}}) {
        json s = start(name, 1000, 0, nullptr, 100);
        s["host"] = td::host_name();
        s["pid"] = pid;
        std::string t = line(s);
        for (int k = 1; k <= 10; ++k) t += line(step(name, 1000 + 2.0 * k, k, 5.0));
        const std::string path = dir.filePath(QString(name) + "/events.jsonl").toStdString();
        write_file(path, t);
        Ingester(st, path, "exp").poll_all();
      }
    }
    const std::string list = run_cli({"runs", "list", "--db", db});
    auto row_of = [&](const std::string& run) {
      const size_t at = list.find(run + " ");
      return at == std::string::npos ? std::string() : list.substr(at, list.find('\n', at) - at);
    };
    QVERIFY2(row_of("run-gone").find(" gone ") != std::string::npos, list.c_str());
    QVERIFY2(row_of("run-live").find(" running ") != std::string::npos, list.c_str());
    QVERIFY2(list.find("gone: the store says running, but the engine's process on this machine has ended") != std::string::npos,
             list.c_str());
    const std::string gone = run_cli({"runs", "show", "run-gone", "--db", db});
    QVERIFY2(gone.find("status         gone: the store says running, but its engine (pid " + std::to_string(dead) +
                       " on this machine) has ended without writing its end") != std::string::npos, gone.c_str());
    QVERIFY2(gone.find("the events file ends at step 10. Continue it with: traindeck-engine train --resume --out " +
                       dir.filePath("run-gone").toStdString()) != std::string::npos, gone.c_str());
    QVERIFY2(gone.find("progress       step 10 / 100, 20.0s\n") != std::string::npos, gone.c_str());  // no time left
    const std::string running = run_cli({"runs", "show", "run-live", "--db", db});
    QVERIFY2(running.find("status         running\n") != std::string::npos, running.c_str());
    QVERIFY2(running.find("progress       step 10 / 100 (10 %), 20.0s elapsed, ~3m00s left\n") != std::string::npos, running.c_str());
    live.kill();
    live.waitForFinished();
  }

  void durationsForTerminals() {
    QCOMPARE(td::format_duration(635), std::string("10m35s"));
    QCOMPARE(td::format_duration(59.96), std::string("1m00s"));  // not "60.0s"
    QCOMPARE(td::format_duration(4.25), std::string("4.2s"));
    QCOMPARE(td::format_duration(-1), std::string("?"));
  }
};

QTEST_GUILESS_MAIN(TestProgress)
#include "test_progress.moc"
