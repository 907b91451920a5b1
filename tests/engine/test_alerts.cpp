// The alert rules (engine/metrics/alerts.h) on hand-computed series: each rule fires exactly at
// the step worked out below, once per episode, re-arms when it clears, and a clean series fires
// nothing with the default rules.
#include <QtTest>

#include <cmath>
#include <limits>

#include "engine/metrics/alerts.h"

using namespace td::alerts;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Mean + k * population std and factor * mean of v, the spike limit written out independently.
double spike_limit(const std::vector<double>& v, double k, double factor) {
  double m = 0;
  for (double x : v) m += x;
  m /= v.size();
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::max(m + k * std::sqrt(ss / v.size()), factor * m);
}

}  // namespace

class TestAlerts : public QObject {
  Q_OBJECT
 private slots:
  void median_of_odd_and_even_counts() {
    QCOMPARE(median({3, 1, 2}), 2.0);
    QCOMPARE(median({4, 1, 3, 2}), 2.5);
    QVERIFY(std::isnan(median({})));
  }

  void kind_names_round_trip() {
    for (Kind k : kAllKinds) QCOMPARE(kind_from_name(kind_name(k)), std::optional<Kind>(k));
    QCOMPARE(kind_name(Kind::LossSpike), std::string_view("loss_spike"));
    QVERIFY(!kind_from_name("gpu_on_fire"));
  }

  // Steps 1..10 alternate 2.0 (odd) and 2.2 (even): mean 2.1, std 0.1, so with k = 3 and
  // factor 1.5 the limit is max(2.1 + 0.3, 3.15) = 3.15.
  void loss_spike_fires_once_per_episode() {
    AlertRules r;
    r.spike_window = 10;
    r.spike_min_steps = 10;
    r.spike_sigma = 3;
    r.spike_factor = 1.5;
    AlertEvaluator ev(r);
    std::vector<double> series;
    for (int s = 1; s <= 10; s++) {
      const double l = s % 2 ? 2.0 : 2.2;
      // Fewer than spike_min_steps losses before step 11: no test, however high.
      QVERIFY2(ev.on_step(s, l, 1.0, 0.1, 1000).empty(), qPrintable(QString("step %1").arg(s)));
      series.push_back(l);
    }
    auto a = ev.on_step(11, 3.2, 1.0, 0.1, 1000);
    QCOMPARE(a.size(), size_t(1));
    QCOMPARE(a[0].kind, Kind::LossSpike);
    QCOMPARE(a[0].step, int64_t(11));
    QCOMPARE(a[0].value, 3.2);
    QVERIFY(std::abs(a[0].threshold - 3.15) < 1e-12);
    // Step 12 (5.0) is still above its limit (max(2.22 + 3 * 0.34, 3.33)): same episode, no alert.
    QVERIFY(ev.on_step(12, 5.0, 1.0, 0.1, 1000).empty());
    // Step 13 (2.1) is below: the rule re-arms; step 14 (9.0) fires again against steps 4..13.
    QVERIFY(ev.on_step(13, 2.1, 1.0, 0.1, 1000).empty());
    a = ev.on_step(14, 9.0, 1.0, 0.1, 1000);
    QCOMPARE(a.size(), size_t(1));
    QCOMPARE(a[0].step, int64_t(14));
    const std::vector<double> window = {2.2, 2.0, 2.2, 2.0, 2.2, 2.0, 2.2, 3.2, 5.0, 2.1};
    QVERIFY(std::abs(a[0].threshold - spike_limit(window, 3, 1.5)) < 1e-12);
    QVERIFY(std::abs(a[0].threshold - 5.19479) < 1e-4);  // 2.51 + 3 * sqrt(0.8009)
  }

  void nonfinite_fires_once_and_stays_out_of_the_window() {
    AlertRules r;
    r.spike_window = 4;
    r.spike_min_steps = 4;
    r.spike_sigma = 3;
    r.spike_factor = 1.5;
    AlertEvaluator ev(r);
    for (int s = 1; s <= 4; s++) QVERIFY(ev.on_step(s, 2.0, 1.0, 0.1, 1000).empty());
    auto a = ev.on_step(5, kNaN, 1.0, 0.1, 1000);
    QCOMPARE(a.size(), size_t(1));
    QCOMPARE(a[0].kind, Kind::NonFinite);
    QCOMPARE(a[0].severity, Severity::Critical);
    QVERIFY(a[0].message.find("loss") != std::string::npos);
    QVERIFY(ev.on_step(6, kNaN, kNaN, 0.1, 1000).empty());  // same episode
    QVERIFY(ev.on_step(7, 2.0, 1.0, 0.1, 1000).empty());    // finite: re-arms
    a = ev.on_step(8, 2.0, std::numeric_limits<double>::infinity(), 0.1, 1000);
    QCOMPARE(a.size(), size_t(1));
    QVERIFY(a[0].message.find("gradient norm") != std::string::npos);
    // The window is still four 2.0 and one 2.0 (the NaNs never joined): limit 3.0, 3.1 spikes.
    a = ev.on_step(9, 3.1, 1.0, 0.1, 1000);
    QCOMPARE(a.size(), size_t(1));
    QCOMPARE(a[0].kind, Kind::LossSpike);
    QCOMPARE(a[0].threshold, 3.0);
  }

  // W = 4, warmup 2: steps 1-2 (10 tokens/s) never count; steps 3-10 run at 1000, then 400.
  // Step 11: last four {1000,1000,1000,400} median 1000; step 12: {1000,1000,400,400} median 700
  // (above 0.5 * 1000); step 13: {1000,400,400,400} median 400 < 500: fires.
  void throughput_drop_fires_at_the_hand_computed_step() {
    AlertRules r;
    r.throughput_window = 4;
    r.throughput_warmup = 2;
    r.throughput_fraction = 0.5;
    AlertEvaluator ev(r);
    auto tps = [](int s) { return s <= 2 ? 10.0 : s <= 10 ? 1000.0 : s <= 14 ? 400.0 : s <= 16 ? 1000.0 : 100.0; };
    std::vector<int64_t> fired;
    std::vector<double> values, limits;
    for (int s = 1; s <= 24; s++)
      for (const auto& a : ev.on_step(s, 2.0, 1.0, 0.1, tps(s))) {
        QCOMPARE(a.kind, Kind::ThroughputDrop);
        fired.push_back(a.step), values.push_back(a.value), limits.push_back(a.threshold);
      }
    // Step 16: {400,400,1000,1000} median 700 clears; step 19: {1000,100,100,100} median 100 fires.
    QCOMPARE(fired, (std::vector<int64_t>{13, 19}));
    QCOMPARE(values, (std::vector<double>{400, 100}));
    QCOMPARE(limits, (std::vector<double>{500, 500}));
  }

  // Step times 1, 1, 2 s: median 1 s, factor 10, floor 5 s: limit 10 s.
  void stall_after_ten_median_step_times() {
    AlertRules r;
    r.stall_factor = 10;
    r.stall_min_s = 5;
    AlertEvaluator ev(r);
    QVERIFY(!ev.check_stall(1e6));  // no step yet: start-up is never a stall
    ev.on_step(1, 2.0, 1.0, 1.0, 1000);
    ev.on_step(2, 2.0, 1.0, 1.0, 1000);
    ev.on_step(3, 2.0, 1.0, 2.0, 1000);
    QCOMPARE(ev.stall_limit_s(), std::optional<double>(10.0));
    QVERIFY(!ev.check_stall(9.9));
    auto a = ev.check_stall(10.5);
    QVERIFY(a);
    QCOMPARE(a->kind, Kind::Stall);
    QCOMPARE(a->step, int64_t(3));
    QCOMPARE(a->value, 10.5);
    QCOMPARE(a->threshold, 10.0);
    QVERIFY(!ev.check_stall(20));  // same episode
    ev.on_step(4, 2.0, 1.0, 1.0, 1000);
    QVERIFY(ev.check_stall(11));   // re-armed by the step
    // A follower's view (note_steps): the limit from the times it was given, a new step re-arms.
    AlertEvaluator follower(r);
    QVERIFY(!follower.check_stall(1e6));
    follower.note_steps(12, {3.0, 1.0, 2.0});
    QCOMPARE(follower.stall_limit_s(), std::optional<double>(20.0));
    QVERIFY(follower.check_stall(21));
    follower.note_steps(12, {3.0, 1.0, 2.0});  // the same step again: same episode
    QVERIFY(!follower.check_stall(30));
    follower.note_steps(13, {1.0});
    QCOMPARE(follower.last_step(), int64_t(13));
    QVERIFY(follower.check_stall(10.5));
    // The floor: fast steps (0.01 s) still give no stall before stall_min_s.
    AlertEvaluator fast(r);
    fast.on_step(1, 2.0, 1.0, 0.01, 1000);
    QCOMPARE(fast.stall_limit_s(), std::optional<double>(5.0));
    QVERIFY(!fast.check_stall(4.9));
    QVERIFY(fast.check_stall(5.1));
  }

  // 1000 bytes or 10 %: of a 100000-byte disk the limit is 10000 bytes.
  void disk_low_by_bytes_or_fraction() {
    AlertRules r;
    r.disk_min_free_bytes = 1000;
    r.disk_min_free_fraction = 0.1;
    AlertEvaluator ev(r);
    QVERIFY(!ev.check_disk(10000, 100000));
    auto a = ev.check_disk(5000, 100000);
    QVERIFY(a);
    QCOMPARE(a->kind, Kind::DiskLow);
    QCOMPARE(a->value, 5000.0);
    QCOMPARE(a->threshold, 10000.0);
    QVERIFY(!ev.check_disk(4000, 100000));
    QVERIFY(!ev.check_disk(20000, 100000));  // clears
    a = ev.check_disk(900, 0);               // size unknown: the byte floor alone
    QVERIFY(a);
    QCOMPARE(a->threshold, 1000.0);
  }

  void connection_lost_after_the_limit() {
    AlertRules r;
    r.connection_lost_s = 180;
    AlertEvaluator ev(r);
    QVERIFY(!ev.check_connection(100));
    auto a = ev.check_connection(181);
    QVERIFY(a);
    QCOMPARE(a->kind, Kind::ConnectionLost);
    QCOMPARE(a->threshold, 180.0);
    QVERIFY(!ev.check_connection(300));
    QVERIFY(!ev.check_connection(0));  // back: re-arms
    QVERIFY(ev.check_connection(200));
  }

  void run_end_severity() {
    QCOMPARE(run_ended(5, "completed", "reached train.steps").severity, Severity::Info);
    QCOMPARE(run_ended(5, "stopped", "").severity, Severity::Warning);
    const Alert f = run_ended(5, "failed", "rank 1 lost");
    QCOMPARE(f.severity, Severity::Critical);
    QCOMPARE(f.message, std::string("run failed at step 5: rank 1 lost"));
    QCOMPARE(rank_lost(7, "rank 1 on b", "timeout").message, std::string("rank 1 on b lost: timeout"));
  }

  // A decaying, noisy loss, steady throughput and step times, a roomy disk: nothing fires with
  // the default rules over 300 steps.
  void a_clean_series_fires_nothing() {
    AlertEvaluator ev;
    for (int s = 1; s <= 300; s++) {
      const double loss = 3.0 * std::exp(-s / 100.0) + 1.0 + (s % 2 ? 0.02 : -0.02);
      const double tps = 1000.0 + 5.0 * (s % 3);
      const auto a = ev.on_step(s, loss, 1.0 + 0.1 * (s % 5), 0.5 + 0.01 * (s % 4), tps);
      QVERIFY2(a.empty(), qPrintable(QString("step %1: %2").arg(s).arg(a.empty() ? "" : a[0].message.c_str())));
      QVERIFY(!ev.check_stall(2.0));
      QVERIFY(!ev.check_disk(50e9, 500e9));
    }
  }
};

QTEST_APPLESS_MAIN(TestAlerts)
#include "test_alerts.moc"
