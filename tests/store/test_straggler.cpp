// The straggler of a data-parallel run (store/straggler.h, issue 16 part 2 "Host"): the rank
// with the largest median compute time (ranks[].compute_ms) over the last steps, against the
// other ranks' median. Every expected figure is computed by hand in the comments.
#include <QTemporaryDir>
#include <QtTest>

#include "store/ingest.h"
#include "store/straggler.h"
#include "tests/store/events_fixture.h"

using namespace td::store;
using namespace td::store::test;

namespace {

MetricSeries series(std::vector<int64_t> steps, std::vector<double> values) {
  MetricSeries s;
  s.step = std::move(steps);
  s.value = std::move(values);
  s.t.assign(s.step.size(), 0);
  s.attempt.assign(s.step.size(), 0);
  return s;
}

// A run of `world` ranks on hosts node-a, node-b, ... whose step s has compute_ms[r][s-1] on rank r.
std::string run_events(const std::string& id, const std::vector<std::vector<double>>& compute_ms, bool with_compute = true) {
  const int world = int(compute_ms.size());
  json start = run_start(id, 1000);
  start["world_size"] = world;
  json hosts = json::array();
  for (int r = 0; r < world; ++r) hosts.push_back(std::string("node-") + char('a' + r));
  start["hosts"] = hosts;
  std::string t = line(start);
  for (size_t s = 1; s <= compute_ms[0].size(); ++s) {
    json j = step(id, 1000.0 + double(s), int64_t(s), 3.0);
    json ranks = json::array();
    for (int r = 0; r < world; ++r) {
      json e = {{"rank", r}, {"host", hosts[size_t(r)]}, {"step_ms", 130.0}, {"comm_ms", 130.0 - compute_ms[size_t(r)][s - 1]}};
      if (with_compute) e["compute_ms"] = compute_ms[size_t(r)][s - 1];
      ranks.push_back(e);
    }
    if (world > 1) j["ranks"] = ranks;
    t += line(j);
  }
  return t;
}

}  // namespace

class TestStraggler : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void slowestRankByHand() {
    // Steps 1..5 of 3 ranks (ms); step 6 only rank 0 has, so it is left out.
    //   rank 0: 10 10 11 10 12 (6: 50)  sorted 10 10 10 11 12 -> median 10
    //   rank 1: 12 13 11 14 12          sorted 11 12 12 13 14 -> median 12
    //   rank 2: 10 11 10 10 10          -> median 10
    // Slowest: rank 1; the others' medians 10, 10 -> 10; 100 * (12 / 10 - 1) = 20 %.
    // Per step the largest: s1 r1, s2 r1, s3 r0 = r1 = 11 (the lower rank: r0), s4 r1, s5 r0 = r1
    // = 12 (r0) -> rank 1 is the slowest in 3 of the 5 steps.
    const std::vector<MetricSeries> ranks = {series({1, 2, 3, 4, 5, 6}, {10, 10, 11, 10, 12, 50}),
                                             series({1, 2, 3, 4, 5}, {12, 13, 11, 14, 12}),
                                             series({1, 2, 3, 4, 5}, {10, 11, 10, 10, 10})};
    auto s = find_straggler(ranks, 100);
    QVERIFY(s);
    QCOMPARE(s->rank, 1);
    QCOMPARE(s->world_size, 3);
    QCOMPARE(s->steps, 5);
    QCOMPARE(s->median_ms, 12.0);
    QCOMPARE(s->others_median_ms, 10.0);
    QCOMPARE(s->slower_pct, 20.0);
    QCOMPARE(s->slowest_steps, 3);
    // The last 3 steps (3, 4, 5): rank 0 11 10 12 -> 11, rank 1 11 14 12 -> 12, rank 2 -> 10.
    // Others' median (11 + 10) / 2 = 10.5; 100 * (12 / 10.5 - 1) = 14.2857...; slowest in s4 only.
    s = find_straggler(ranks, 3);
    QVERIFY(s);
    QCOMPARE(s->rank, 1);
    QCOMPARE(s->steps, 3);
    QCOMPARE(s->others_median_ms, 10.5);
    QVERIFY2(std::fabs(s->slower_pct - 100.0 * (12.0 / 10.5 - 1)) < 1e-12, qPrintable(QString::number(s->slower_pct, 'g', 17)));
    QCOMPARE(s->slowest_steps, 1);
    // Equal ranks: rank 0 (the first of equals), 0 % slower.
    s = find_straggler({series({1, 2}, {5, 5}), series({1, 2}, {5, 5})}, 10);
    QVERIFY(s);
    QCOMPARE(s->rank, 0);
    QCOMPARE(s->slower_pct, 0.0);
    QCOMPARE(s->slowest_steps, 2);
    // One rank, no common step, no window: nothing.
    QVERIFY(!find_straggler({series({1}, {5})}, 10));
    QVERIFY(!find_straggler({series({1}, {5}), series({2}, {5})}, 10));
    QVERIFY(!find_straggler({series({1}, {5}), series({1}, {6})}, 0));
  }

  void storedTwoRankRun() {
    QVERIFY(dir_.isValid());
    Store st(dir_.filePath("td.db").toStdString());
    // Rank 1 on node-b computes 112 ms in five of its six steps (113 in one), rank 0 100 ms:
    // medians 112 and 100, 100 * (112 / 100 - 1) = 12 %, the slowest in all 6 steps.
    const std::string p = dir_.filePath("dp.jsonl").toStdString();
    write_file(p, run_events("dp", {{100, 100, 100, 100, 100, 100}, {112, 113, 112, 112, 112, 112}}));
    QCOMPARE(Ingester(st, p).poll_all().skipped, size_t(0));
    auto s = run_straggler(st, "dp", 100);
    QVERIFY(s);
    QCOMPARE(s->rank, 1);
    QCOMPARE(s->host, std::string("node-b"));
    QCOMPARE(s->steps, 6);
    QCOMPARE(s->slowest_steps, 6);
    QCOMPARE(s->median_ms, 112.0);
    QCOMPARE(s->others_median_ms, 100.0);
    QVERIFY2(std::fabs(s->slower_pct - 12.0) < 1e-9, qPrintable(QString::number(s->slower_pct, 'g', 17)));
    // The window is the run's last steps: the last 2 (112, 112 against 100, 100).
    s = run_straggler(st, "dp", 2);
    QVERIFY(s);
    QCOMPARE(s->steps, 2);
    // A single-process run, a run written before compute_ms and an unknown run: nothing.
    const std::string one = dir_.filePath("one.jsonl").toStdString();
    write_file(one, run_events("one", {{100, 100}}));
    Ingester(st, one).poll_all();
    QVERIFY(!run_straggler(st, "one"));
    const std::string old = dir_.filePath("old.jsonl").toStdString();
    write_file(old, run_events("old", {{100, 100}, {120, 120}}, false));
    Ingester(st, old).poll_all();
    QVERIFY(!run_straggler(st, "old"));
    QVERIFY(!run_straggler(st, "nope"));
  }
};

QTEST_GUILESS_MAIN(TestStraggler)
#include "test_straggler.moc"
