// Chart queries (store/chart_queries.cpp): metric_extents agrees with list_metrics (which
// scans every row) and reads only the level of detail; chart_run matches get_run; metric_step_times returns every row of a
// short series and about max_points samples of a long one, first and last step included, each
// with the t stored for its step.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <string>

#include "engine/common/error.h"
#include "events_fixture.h"
#include "store/ingest.h"
#include "store/store.h"

using namespace td::store;
using namespace td::store::test;

namespace {

// Run "r": steps 1..n, step event fields of events_fixture's step() with loss = 10 - s/1000
// and t = 1000 + 2 s; val_loss at every 50th step on rank 0; rss_bytes also from rank 1.
void write_run(const QTemporaryDir& dir, int64_t n) {
  std::ofstream f(dir.filePath("events.jsonl").toStdString(), std::ios::binary);
  f << line(run_start("r", 999.0));
  for (int64_t s = 1; s <= n; ++s) {
    f << line(step("r", 1000.0 + 2.0 * static_cast<double>(s), s, 10.0 - static_cast<double>(s) / 1000.0));
    if (s % 50 == 0) {
      json e = ev("eval", "r", 1000.5 + 2.0 * static_cast<double>(s));
      e["step"] = s;
      e["val_loss"] = 5.0 + static_cast<double>(s) / 1e6;
      f << line(e);
      json r1 = ev("step", "r", 1000.0 + 2.0 * static_cast<double>(s), 0, 1);
      r1["step"] = s;
      r1["rss_bytes"] = 7e8 + static_cast<double>(s);
      f << line(r1);
    }
  }
}

}  // namespace

class TestChartQueries : public QObject {
  Q_OBJECT

 private slots:
  void extentsMatchListMetrics() {
    QTemporaryDir dir;
    write_run(dir, 3000);
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, dir.filePath("events.jsonl").toStdString(), "e");
    ing.poll_all();
    const std::vector<MetricInfo> want = st.list_metrics("r");
    const std::vector<MetricInfo> got = st.metric_extents("r");
    QCOMPARE(got.size(), want.size());
    QCOMPARE(got.size(), size_t(10));  // 8 step fields + val_loss on rank 0, rss_bytes rank 1
    for (size_t i = 0; i < got.size(); ++i) {
      QCOMPARE(got[i].name, want[i].name);
      QCOMPARE(got[i].rank, want[i].rank);
      QCOMPARE(got[i].count, want[i].count);
      QCOMPARE(got[i].first_step, want[i].first_step);
      QCOMPARE(got[i].last_step, want[i].last_step);
      QCOMPARE(got[i].min_value, want[i].min_value);
      QCOMPARE(got[i].max_value, want[i].max_value);
      QCOMPARE(got[i].last_value, want[i].last_value);
    }
    // By hand: loss has 3000 rows, 9.999 at step 1 down to 7 at step 3000.
    const auto loss = std::find_if(got.begin(), got.end(), [](auto& m) { return m.name == "loss"; });
    QCOMPARE(loss->count, int64_t(3000));
    QCOMPARE(loss->max_value, 9.999);
    QCOMPARE(loss->last_value, 7.0);
    const auto val = std::find_if(got.begin(), got.end(), [](auto& m) { return m.name == "val_loss"; });
    QCOMPARE(val->count, int64_t(60));
    QCOMPARE(val->first_step, int64_t(50));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.metric_extents("nope"));

    // chart_run: the run row's fields, as get_run has them.
    const Store::ChartRun r = st.chart_run("r");
    const RunInfo info = st.get_run("r");
    QCOMPARE(r.status, std::string("running"));
    QCOMPARE(r.status, info.status);
    QCOMPARE(r.last_step.value(), int64_t(3000));
    QCOMPARE(r.world_size.value(), int64_t(1));
    QCOMPARE(r.config_json, info.config_json);
    QVERIFY(r.config_json.find("\"d_model\":64") != std::string::npos);
    QVERIFY_THROWS_EXCEPTION(td::Error, st.chart_run("nope"));
  }

  void stepTimesShortAndLong() {
    QTemporaryDir dir;
    write_run(dir, 3000);
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, dir.filePath("events.jsonl").toStdString(), "e");
    ing.poll_all();

    // val_loss has 60 rows <= 100: all of them, with their own t (eval t = 1000.5 + 2 s).
    MetricSeries s = st.metric_step_times("r", "val_loss", 0, 100);
    QCOMPARE(s.size(), size_t(60));
    for (size_t i = 0; i < s.size(); ++i) {
      QCOMPARE(s.step[i], int64_t(50 * (i + 1)));
      QCOMPARE(s.t[i], 1000.5 + 2.0 * static_cast<double>(s.step[i]));
    }

    // loss has 3000 rows > 100: level 0 (16 steps) has 188 buckets > 99, level 1 has 47
    // (3000 >> 6 = 46), <= 99, so 47 samples at the first step of each 64-step bucket, then 3000.
    s = st.metric_step_times("r", "loss", 0, 100);
    QCOMPARE(s.size(), size_t(48));
    QCOMPARE(s.step.front(), int64_t(1));
    QCOMPARE(s.step[1], int64_t(64));
    QCOMPARE(s.step[46], int64_t(46 * 64));
    QCOMPARE(s.step.back(), int64_t(3000));
    for (size_t i = 0; i < s.size(); ++i) {
      QCOMPARE(s.t[i], 1000.0 + 2.0 * static_cast<double>(s.step[i]));
      QCOMPARE(s.value[i], 10.0 - static_cast<double>(s.step[i]) / 1000.0);
    }
    // 10 points: level 1 has 47 buckets > 9, level 2 has 12 > 9, level 3 (1024 steps) has 3:
    // steps 1, 1024, 2048, then 3000.
    s = st.metric_step_times("r", "loss", 0, 10);
    QCOMPARE(s.size(), size_t(4));
    QCOMPARE(s.step[1], int64_t(1024));
    QCOMPARE(s.step[2], int64_t(2048));
    QCOMPARE(s.step[3], int64_t(3000));

    QCOMPARE(st.metric_step_times("r", "nope", 0, 10).size(), size_t(0));
    QCOMPARE(st.metric_step_times("r", "loss", 5, 10).size(), size_t(0));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.metric_step_times("r", "loss", 0, 1));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.metric_step_times("nope", "loss", 0, 10));
  }
};

QTEST_GUILESS_MAIN(TestChartQueries)
#include "test_chart_queries.moc"
