// The alert rules (engine/metrics/alerts.h) on hand-computed series: each rule fires exactly at
// the step worked out below, once per episode, re-arms when it clears, and a clean series fires
// nothing with the default rules.
#include <QtTest>

#include <cmath>
#include <functional>
#include <tuple>
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
    r.alert_interval_s = 0.25;  // steps of 0.1 s: step 14 is 0.3 s after step 11's alert
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
    // The interval: with the default 600 s between two spike alerts, step 14's is not given.
    r.alert_interval_s = 600;
    AlertEvaluator limited(r);
    std::vector<int64_t> fired;
    const double losses[] = {2.0, 2.2, 2.0, 2.2, 2.0, 2.2, 2.0, 2.2, 2.0, 2.2, 3.2, 5.0, 2.1, 9.0};
    for (int s = 1; s <= 14; s++)
      for (const auto& x : limited.on_step(s, losses[s - 1], 1.0, 0.1, 1000)) fired.push_back(x.step);
    QCOMPARE(fired, (std::vector<int64_t>{11}));
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

  // W = 4 steps (no seconds floor, no interval), warmup 2: steps 1-2 (10 tokens/s) never count;
  // 3-10 run at 1000, 11-14 at 400, 15-22 at 1000, 23- at 100. The earlier median stays 1000
  // (limit 500) throughout.
  //   step 11: last four {1000,1000,1000,400} median 1000; 12: {1000,1000,400,400} 700;
  //   13: {1000,400,400,400} 400 < 500: fires. 14, 15: 400, still low.
  //   16: {400,400,1000,1000} 700, recovered 1; 17, 18, 19: recovered 2, 3, 4 = the window: re-armed.
  //   24: {1000,1000,100,100} 550; 25: {1000,100,100,100} 100 < 500: fires again.
  // Without the hysteresis a median back at 700 for one step (16) would re-arm at once.
  void throughput_drop_fires_at_the_hand_computed_step() {
    AlertRules r;
    r.throughput_window = 4;
    r.throughput_window_s = 0;
    r.throughput_warmup = 2;
    r.throughput_fraction = 0.5;
    r.alert_interval_s = 0;
    auto tps = [](int s) { return s <= 2 ? 10.0 : s <= 10 ? 1000.0 : s <= 14 ? 400.0 : s <= 22 ? 1000.0 : 100.0; };
    auto run = [&](const std::function<double(int)>& f, int steps) {
      AlertEvaluator ev(r);
      std::vector<int64_t> fired;
      std::vector<double> values, limits;
      for (int s = 1; s <= steps; s++)
        for (const auto& a : ev.on_step(s, 2.0, 1.0, 0.1, f(s))) {
          if (a.kind != Kind::ThroughputDrop) continue;
          fired.push_back(a.step), values.push_back(a.value), limits.push_back(a.threshold);
        }
      return std::tuple{fired, values, limits};
    };
    auto [fired, values, limits] = run(tps, 30);
    QCOMPARE(fired, (std::vector<int64_t>{13, 25}));
    QCOMPARE(values, (std::vector<double>{400, 100}));
    QCOMPARE(limits, (std::vector<double>{500, 500}));
    // A dip back below before a whole window of recovery (step 18: 100 again) fires nothing new:
    // 16 {400,400,1000,1000} 700 rec 1, 17 {400,1000,1000,100} 700 rec 2, 18 {1000,1000,100,100}
    // 550 rec 3, 19 {1000,100,100,100} 100: low again, same episode.
    auto dip = [](int s) { return s <= 2 ? 10.0 : s <= 10 ? 1000.0 : s <= 14 ? 400.0 : s <= 16 ? 1000.0 : 100.0; };
    QCOMPARE(std::get<0>(run(dip, 30)), (std::vector<int64_t>{13}));
  }

  // The recent window in seconds: steps of 2^-10 s (so that sums are exact), W = 20 but
  // throughput_window_s = 1 s, so the recent window is the last 1,024 steps. Steps run at 1000
  // tokens/s but 20 of every 50 at 400 (scheduler noise): a 20-step window sees medians of 400
  // again and again; the 1,024-step window's median stays 1000. Then a real drop, every step at
  // 100 from step 30,001: it fires once, at the step where a plain median of the last 1,024
  // counted values (computed here, independently) first falls below half the median of all
  // counted values before them.
  void throughput_window_in_seconds_ignores_scheduler_noise() {
    AlertRules r;
    r.throughput_window = 20;
    r.throughput_window_s = 1.0;
    r.alert_interval_s = 0;
    const double dt = 1.0 / 1024;
    auto noisy = [](int s) { return s > 30000 ? 100.0 : (s % 50) < 30 ? 1000.0 : 400.0; };
    auto count = [&](double window_s) {
      AlertRules rr = r;
      rr.throughput_window_s = window_s;
      AlertEvaluator ev(rr);
      std::vector<int64_t> fired;
      for (int s = 1; s <= 32000; s++)
        for (const auto& a : ev.on_step(s, 2.0, 1.0, dt, noisy(s)))
          if (a.kind == Kind::ThroughputDrop) fired.push_back(a.step);
      return fired;
    };
    // The reference: counted steps start after the warm-up (10); from step 30,001 on only.
    int64_t expected = -1;
    std::vector<double> counted;
    for (int s = 11; s <= 32000 && expected < 0; s++) {
      counted.push_back(noisy(s));
      if (s <= 30000 || counted.size() < 2 * 1024) continue;
      const std::vector<double> recent(counted.end() - 1024, counted.end()), earlier(counted.begin(), counted.end() - 1024);
      if (median(recent) < 0.5 * median(earlier)) expected = s;
    }
    QVERIFY(expected > 30000 && expected <= 30000 + 1024);  // 30,153: the 400s of the noise count below the limit too
    const auto by_seconds = count(1.0);
    QCOMPARE(by_seconds, (std::vector<int64_t>{expected}));
    const auto by_steps = count(0);  // the old rule: one alert per noise burst
    QVERIFY2(by_steps.size() > 100, qPrintable(QString("a 20-step window gave %1 alerts").arg(by_steps.size())));
  }

  // At most one alert of a kind per alert_interval_s of step time: a drop that comes back every
  // 140 s (steps of 1 s: 100 at 1000 tokens/s, then 40 at 100), W = 20, for 1,400 s. The earlier
  // median stays 1000 (limit 500). Cycle k's slow steps are 101..140 + 140k; at 110 + 140k the
  // last 20 are 10 fast, 10 slow (median 550), at 111 + 140k 9 and 11 (median 100): it fires.
  // 20 fast steps later it is re-armed, before the next cycle. Without an interval: 111, 251, ...,
  // 1371 (10). With 600 s: 111, then nothing before clock 711; cycle 4's drop (671) is over by
  // 711 (the window 692..711 holds 11 fast steps), so the next is cycle 5's, 811; then 1411 > 1400.
  void at_most_one_alert_per_interval() {
    AlertRules r;
    r.throughput_window = 20;
    r.throughput_window_s = 0;
    r.throughput_warmup = 10;
    auto cyc = [](int s) { return (s - 1) % 140 < 100 ? 1000.0 : 100.0; };
    auto fired_with = [&](double interval) {
      AlertRules rr = r;
      rr.alert_interval_s = interval;
      AlertEvaluator ev(rr);
      std::vector<int64_t> fired;
      for (int s = 1; s <= 1400; s++)
        for (const auto& a : ev.on_step(s, 2.0, 1.0, 1.0, cyc(s))) fired.push_back(a.step);
      return fired;
    };
    std::vector<int64_t> every_cycle;
    for (int k = 0; k < 10; k++) every_cycle.push_back(111 + 140 * k);
    QCOMPARE(fired_with(0), every_cycle);
    QCOMPARE(fired_with(600), (std::vector<int64_t>{111, 811}));
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
