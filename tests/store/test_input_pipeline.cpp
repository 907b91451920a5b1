// Is a run input-bound (store/input_pipeline.h)? Runs written as events by hand and ingested:
// the wait's share, the read speed and the decision at and around the 5 % limit, each computed
// in the comments from the rows the events give.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <vector>

#include "engine/common/error.h"
#include "events_fixture.h"
#include "store/ingest.h"
#include "store/input_pipeline.h"
#include "store/store.h"

using namespace td::store;
using namespace td::store::test;

namespace {

struct StepIo {
  double step_ms;
  std::optional<double> wait_ms;  // empty: the event has no data_wait_ms
  std::optional<double> read_mb_s;
};

// A run of `steps.size()` steps (1, 2, ...) of attempt 0 with these figures.
std::string run_events(const std::string& id, const std::vector<StepIo>& steps) {
  std::string t = line(run_start(id, 1000));
  for (size_t i = 0; i < steps.size(); ++i) {
    json j = step(id, 1001 + double(i), int64_t(i) + 1, 3.0);
    j["step_ms"] = steps[i].step_ms;
    if (steps[i].wait_ms) {
      j["data_wait_ms"] = *steps[i].wait_ms;
      j["data_wait_pct"] = 100 * *steps[i].wait_ms / steps[i].step_ms;
    }
    j["data_read_mb_s"] = steps[i].read_mb_s ? json(*steps[i].read_mb_s) : json(nullptr);
    t += line(j);
  }
  return t;
}

}  // namespace

class TestInputPipeline : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  int files_ = 0;

  // Ingests `events` into `st` under a file of its own.
  void ingest(Store& st, const std::string& events) {
    const std::string path = dir_.filePath(QStringLiteral("e%1.jsonl").arg(files_++)).toStdString();
    write_file(path, events);
    Ingester ing(st, path, "exp");
    ing.poll_all();
  }

  // A run whose steps after the 3 warm-up steps all take 100 ms and wait `wait` ms; the warm-up
  // steps wait 90 of 100 ms (a cold start), which must not count.
  std::string flat_run(const std::string& id, double wait, int steps = 13) {
    std::vector<StepIo> s;
    for (int i = 1; i <= steps; ++i) s.push_back({100.0, i <= 3 ? 90.0 : wait, 200.0 + i});
    return run_events(id, s);
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void theRule() {
    QCOMPARE(kInputBoundWaitPct, 5.0);
    QVERIFY(is_input_bound(5.0));
    QVERIFY(is_input_bound(5.0001));
    QVERIFY(!is_input_bound(4.9999));
    QVERIFY(!is_input_bound(0.0));
    QVERIFY(!is_input_bound(std::nan("")));
  }

  void atAndAroundTheLimit() {
    Store st(dir_.filePath("limit.db").toStdString());
    // Steps 4..13 (10 steps): 100 ms each, waits 5 ms: 50 of 1000 ms = exactly 5 %: input-bound.
    ingest(st, flat_run("at", 5.0));
    const InputPipeline at = input_pipeline(st, "at");
    QCOMPARE(at.steps, 10);
    QCOMPARE(at.first_step, int64_t(4));
    QCOMPARE(at.last_step, int64_t(13));
    QCOMPARE(at.wait_ms, 50.0);
    QCOMPARE(at.step_ms, 1000.0);
    QCOMPARE(*at.wait_pct, 5.0);
    QVERIFY(at.input_bound);
    // Waits 4.99 ms: 49.9 of 1000 ms = 4.99 %: not input-bound.
    ingest(st, flat_run("below", 4.99));
    const InputPipeline below = input_pipeline(st, "below");
    QVERIFY(std::fabs(*below.wait_pct - 4.99) < 1e-9);
    QVERIFY(!below.input_bound);
    // Waits 5.01 ms: 5.01 %: input-bound.
    ingest(st, flat_run("above", 5.01));
    QVERIFY(std::fabs(*input_pipeline(st, "above").wait_pct - 5.01) < 1e-9);
    QVERIFY(input_pipeline(st, "above").input_bound);
    // A loader that never blocks: 0 %.
    ingest(st, flat_run("fed", 0.0));
    QCOMPARE(*input_pipeline(st, "fed").wait_pct, 0.0);
    QVERIFY(!input_pipeline(st, "fed").input_bound);
    // Read speed: the median data_read_mb_s of steps 4..13 (204..213 MB/s): (208 + 209) / 2.
    QCOMPARE(*at.read_mb_s, 208.5);
  }

  void weightedByTimeNotAMedianOfPercents() {
    // After the warm-up, steps alternate 100 ms waiting 0 ms and 300 ms waiting 20 ms (a stall
    // every other step): per-step shares 0 % and 6.67 %, their median 3.33 %; but the steps
    // spent 20 of every 400 ms waiting: 5 %, input-bound. Read speeds 50, null, 70, null, ...:
    // only steps with a read speed count: steps 4, 6, 8, 10 -> 50, 70, 50, 70 -> median 60.
    std::vector<StepIo> s;
    for (int i = 1; i <= 3; ++i) s.push_back({100.0, 0.0, 1000.0});
    for (int i = 4; i <= 11; ++i) {
      const bool stall = i % 2 == 1;
      s.push_back({stall ? 300.0 : 100.0, stall ? 20.0 : 0.0, stall ? std::nullopt : std::optional<double>(i % 4 == 0 ? 50.0 : 70.0)});
    }
    Store st(dir_.filePath("weighted.db").toStdString());
    ingest(st, run_events("w", s));
    const InputPipeline p = input_pipeline(st, "w");
    QCOMPARE(p.steps, 8);
    QCOMPARE(p.wait_ms, 80.0);
    QCOMPARE(p.step_ms, 1600.0);
    QCOMPARE(*p.wait_pct, 5.0);
    QVERIFY(p.input_bound);
    QCOMPARE(*p.read_mb_s, 60.0);
  }

  void theWindowIsTheLast100Steps() {
    // 150 steps: 1..50 wait 50 of 100 ms (50 %), 51..150 wait 1 ms (1 %). The window is steps
    // 51..150: 100 of 10000 ms = 1 %, not input-bound although the run's whole mean is 17 %.
    std::vector<StepIo> s;
    for (int i = 1; i <= 150; ++i) s.push_back({100.0, i <= 50 ? 50.0 : 1.0, 100.0});
    Store st(dir_.filePath("window.db").toStdString());
    ingest(st, run_events("long", s));
    const InputPipeline p = input_pipeline(st, "long");
    QCOMPARE(kInputWindowSteps, 100);
    QCOMPARE(p.first_step, int64_t(51));
    QCOMPARE(p.last_step, int64_t(150));
    QCOMPARE(p.steps, 100);
    QCOMPARE(*p.wait_pct, 1.0);
    QVERIFY(!p.input_bound);
  }

  void aResumedAttemptsWarmupIsLeftOut() {
    // Attempt 0: steps 1..10 wait 0 of 100 ms; attempt 1 resumes from step 10: steps 11..13
    // (its warm-up) wait 80 ms, steps 14..20 wait 10 ms. Kept: 4..10 (7 x 0) and 14..20
    // (7 x 10): 70 of 1400 ms = 5 %.
    Store st(dir_.filePath("resume.db").toStdString());
    std::string t = line(run_start("r", 1000));
    for (int i = 1; i <= 10; ++i) {
      json j = step("r", 1000 + i, i, 3.0);
      j["step_ms"] = 100.0;
      j["data_wait_ms"] = 0.0;
      t += line(j);
    }
    t += line(run_start("r", 1100, 1, 10));
    for (int i = 11; i <= 20; ++i) {
      json j = step("r", 1100 + i, i, 3.0, 1);
      j["step_ms"] = 100.0;
      j["data_wait_ms"] = i <= 13 ? 80.0 : 10.0;
      t += line(j);
    }
    ingest(st, t);
    const InputPipeline p = input_pipeline(st, "r");
    QCOMPARE(p.steps, 14);
    QCOMPARE(p.wait_ms, 70.0);
    QCOMPARE(*p.wait_pct, 5.0);
    QVERIFY(p.input_bound);
    QVERIFY(!p.read_mb_s);  // no step has a read speed
  }

  void shortAndBareRuns() {
    Store st(dir_.filePath("bare.db").toStdString());
    // Only warm-up steps: all of them count (as run_throughput does): 2 steps waiting 10 of
    // 100 ms: 10 %.
    ingest(st, run_events("short", {{100.0, 10.0, 30.0}, {100.0, 10.0, 40.0}}));
    const InputPipeline p = input_pipeline(st, "short");
    QCOMPARE(p.steps, 2);
    QCOMPARE(*p.wait_pct, 10.0);
    QVERIFY(p.input_bound);
    QCOMPARE(*p.read_mb_s, 35.0);
    // An older engine's steps (no data_wait_ms): no share, not input-bound.
    ingest(st, run_events("old", {{100.0, std::nullopt, std::nullopt}, {100.0, std::nullopt, std::nullopt}}));
    const InputPipeline old = input_pipeline(st, "old");
    QCOMPARE(old.steps, 0);
    QVERIFY(!old.wait_pct && !old.read_mb_s && !old.input_bound);
    // A run without steps, and an unknown run.
    ingest(st, line(run_start("nosteps", 10)));
    QCOMPARE(input_pipeline(st, "nosteps").steps, 0);
    QVERIFY_THROWS_EXCEPTION(td::Error, input_pipeline(st, "no-such-run"));
  }
};

QTEST_GUILESS_MAIN(TestInputPipeline)
#include "test_input_pipeline.moc"
