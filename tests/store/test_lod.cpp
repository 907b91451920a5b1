// Level of detail of metric series (store/lod.h, Store::metric_envelope): buckets checked by
// hand, kept exact through batches and resumed attempts, a one-step spike in a 1,000,000-step
// run found at every zoom, the migration that builds it for older stores.
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "events_fixture.h"
#include "store/ingest.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store/store.h"

using namespace td::store;
using namespace td::store::test;

namespace {

// A step event carrying only `loss` (one metric row), value written to round-trip exactly.
std::string loss_line(const std::string& run, int64_t step, double v, int attempt = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                R"({"type":"step","v":1,"t":%.3f,"run_id":"%s","attempt":%d,"rank":0,"step":%lld,"loss":%.17g})",
                1000.0 + static_cast<double>(step), run.c_str(), attempt,
                static_cast<long long>(step), v);
  return std::string(buf) + "\n";
}

void append_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "ab");
  QVERIFY(f);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

struct Row {
  int64_t name, rank, level, bucket;
  Bucket b;
};

// Every metric_lod row of run `run_id`, by key.
std::vector<Row> lod_rows(Store& st, const std::string& run_id) {
  Stmt s(st.handle(),
         "SELECT name, rank, level, bucket, step_min, step_max, step_at_min, step_at_max, v_min,"
         " v_max, v_first, v_last, v_sum, n FROM metric_lod WHERE run = ?1"
         " ORDER BY name, rank, level, bucket");
  s.bind(1, *st.run_key(run_id));
  std::vector<Row> out;
  while (s.step()) {
    Row r{s.col_int(0), s.col_int(1), s.col_int(2), s.col_int(3), {}};
    r.b.step_min = s.col_int(4);
    r.b.step_max = s.col_int(5);
    r.b.step_at_min = s.col_int(6);
    r.b.step_at_max = s.col_int(7);
    r.b.v_min = s.col_double(8);
    r.b.v_max = s.col_double(9);
    r.b.v_first = s.col_double(10);
    r.b.v_last = s.col_double(11);
    r.b.v_sum = s.col_double(12);
    r.b.n = s.col_int(13);
    out.push_back(r);
  }
  return out;
}

// An oracle independent of store/lod.cpp: plain GROUP BY over the raw rows, per level.
void check_against_sql(Store& st, const std::string& run_id, std::vector<int> levels) {
  const int64_t run = *st.run_key(run_id);
  for (int level : levels) {
    Stmt groups(st.handle(),
                "SELECT count(*) FROM (SELECT DISTINCT name, rank, step >> ?2 FROM metrics"
                " WHERE run = ?1)");
    groups.bind(1, run).bind(2, 4 + 2 * level);  // lod::shift, written out
    QVERIFY(groups.step());
    Stmt rows(st.handle(), "SELECT count(*) FROM metric_lod WHERE run = ?1 AND level = ?2");
    rows.bind(1, run).bind(2, level);
    QVERIFY(rows.step());
    QCOMPARE(rows.col_int(0), groups.col_int(0));
    Stmt bad(st.handle(),
             "SELECT count(*) FROM (SELECT name, rank, step >> ?2 AS b, count(*) AS n,"
             " min(step) AS s0, max(step) AS s1, min(value) AS lo, max(value) AS hi"
             " FROM metrics WHERE run = ?1 GROUP BY name, rank, b) g"
             " LEFT JOIN metric_lod l ON l.run = ?1 AND l.name = g.name AND l.rank = g.rank"
             " AND l.level = ?3 AND l.bucket = g.b"
             " WHERE l.n IS NOT g.n OR l.step_min IS NOT g.s0 OR l.step_max IS NOT g.s1"
             " OR l.v_min IS NOT g.lo OR l.v_max IS NOT g.hi");
    bad.bind(1, run).bind(2, 4 + 2 * level).bind(3, level);
    QVERIFY(bad.step());
    QVERIFY2(bad.col_int(0) == 0, ("level " + std::to_string(level) + ": " +
                                   std::to_string(bad.col_int(0)) + " buckets differ").c_str());
  }
}

// The incremental LOD equals one rebuilt from the raw rows (v_sum up to rounding order), and
// both agree with plain SQL aggregates.
void check_matches_rebuild(Store& st, const std::string& run_id,
                           std::vector<int> sql_levels = {0, 1, 2, 3, 4, 5, 6, 7, 8}) {
  check_against_sql(st, run_id, std::move(sql_levels));
  const std::vector<Row> inc = lod_rows(st, run_id);
  st.rebuild_lod(run_id);
  const std::vector<Row> reb = lod_rows(st, run_id);
  QCOMPARE(inc.size(), reb.size());
  for (size_t i = 0; i < inc.size(); ++i) {
    const Row &a = inc[i], &b = reb[i];
    const std::string at = "row " + std::to_string(i) + " level " + std::to_string(a.level) +
                           " bucket " + std::to_string(a.bucket);
    QVERIFY2(a.name == b.name && a.rank == b.rank && a.level == b.level && a.bucket == b.bucket, at.c_str());
    QVERIFY2(a.b.n == b.b.n && a.b.step_min == b.b.step_min && a.b.step_max == b.b.step_max, at.c_str());
    QVERIFY2(a.b.step_at_min == b.b.step_at_min && a.b.step_at_max == b.b.step_at_max, at.c_str());
    QVERIFY2(a.b.v_min == b.b.v_min && a.b.v_max == b.b.v_max, at.c_str());
    QVERIFY2(a.b.v_first == b.b.v_first && a.b.v_last == b.b.v_last, at.c_str());
    QVERIFY2(std::abs(a.b.v_sum - b.b.v_sum) <= 1e-9 * std::max(1.0, std::abs(b.b.v_sum)), at.c_str());
  }
}

void check_bucket(const Bucket& b, int64_t n, int64_t s_min, int64_t s_max, double v_min,
                  int64_t at_min, double v_max, int64_t at_max, double first, double last,
                  double sum) {
  QCOMPARE(b.n, n);
  QCOMPARE(b.step_min, s_min);
  QCOMPARE(b.step_max, s_max);
  QCOMPARE(b.v_min, v_min);
  QCOMPARE(b.step_at_min, at_min);
  QCOMPARE(b.v_max, v_max);
  QCOMPARE(b.step_at_max, at_max);
  QCOMPARE(b.v_first, first);
  QCOMPARE(b.v_last, last);
  QCOMPARE(b.v_sum, sum);
}

// Writes run "r" with loss = step for steps 1..300 into <dir>/events.jsonl; returns its path.
std::string write_ramp(const QTemporaryDir& dir) {
  const std::string events = dir.filePath("events.jsonl").toStdString();
  std::string text = line(run_start("r", 999.0));
  for (int64_t s = 1; s <= 300; ++s) text += loss_line("r", s, static_cast<double>(s));
  append_file(events, text);
  return events;
}

// Sum of s for s in [a, b].
double tri(int64_t a, int64_t b) { return static_cast<double>((a + b) * (b - a + 1) / 2); }

}  // namespace

class TestLod : public QObject {
  Q_OBJECT

 private slots:
  void smallSeriesBucketsByHand() {
    QTemporaryDir dir;
    const std::string events = write_ramp(dir);
    Store st(dir.filePath("td.db").toStdString());
    IngestOptions o;
    o.batch_lines = 50;  // many batches: buckets merged with stored ones
    Ingester ing(st, events, "e", o);
    QVERIFY(ing.poll_all().batches >= 6);

    // 300 steps > 8 x 5 columns: the finest level with <= 10 buckets is level 1 (64 steps,
    // buckets 0..4; level 0 has 19 of 16 steps).
    MetricEnvelope e = st.metric_envelope("r", "loss", 0, 1, 300, 5);
    QCOMPARE(e.level, 1);
    QCOMPARE(e.bucket_steps, int64_t(64));
    QCOMPARE(e.size(), size_t(5));
    check_bucket(e.buckets[0], 63, 1, 63, 1, 1, 63, 63, 1, 63, tri(1, 63));
    check_bucket(e.buckets[1], 64, 64, 127, 64, 64, 127, 127, 64, 127, tri(64, 127));
    check_bucket(e.buckets[3], 64, 192, 255, 192, 192, 255, 255, 192, 255, tri(192, 255));
    check_bucket(e.buckets[4], 45, 256, 300, 256, 256, 300, 300, 256, 300, tri(256, 300));
    QCOMPARE(e.buckets[4].mean(), 278.0);

    // 4 columns: level 1's five buckets merged in pairs (128 steps; the last alone).
    e = st.metric_envelope("r", "loss", 0, 1, 300, 4);
    QCOMPARE(e.level, 1);
    QCOMPARE(e.bucket_steps, int64_t(128));
    QCOMPARE(e.size(), size_t(3));
    check_bucket(e.buckets[0], 127, 1, 127, 1, 1, 127, 127, 1, 127, tri(1, 127));
    check_bucket(e.buckets[1], 128, 128, 255, 128, 128, 255, 255, 128, 255, tri(128, 255));
    check_bucket(e.buckets[2], 45, 256, 300, 256, 256, 300, 300, 256, 300, tri(256, 300));

    e = st.metric_envelope("r", "loss", 0, 1, 300, 1);  // level 2's two buckets, merged
    QCOMPARE(e.level, 2);
    QCOMPARE(e.bucket_steps, int64_t(512));
    QCOMPARE(e.size(), size_t(1));
    check_bucket(e.buckets[0], 300, 1, 300, 1, 1, 300, 300, 1, 300, tri(1, 300));

    // A range of <= max_points raw rows: the rows themselves.
    e = st.metric_envelope("r", "loss", 0, 100, 109, 10);
    QVERIFY(e.raw());
    QCOMPARE(e.size(), size_t(10));
    for (int i = 0; i < 10; ++i)
      check_bucket(e.buckets[i], 1, 100 + i, 100 + i, 100.0 + i, 100 + i, 100.0 + i, 100 + i,
                   100.0 + i, 100.0 + i, 100.0 + i);
    // Between max_points and 8 * max_points raw rows: the rows, summarised in memory two by two
    // (300 rows for 200 columns: 150 buckets of 2 steps, band min/max of each pair).
    e = st.metric_envelope("r", "loss", 0, 1, 300, 200);
    QCOMPARE(e.level, -1);
    QCOMPARE(e.bucket_steps, int64_t(2));
    QVERIFY(!e.raw());
    QCOMPARE(e.size(), size_t(150));
    check_bucket(e.buckets[0], 2, 1, 2, 1, 1, 2, 2, 1, 2, 3);
    check_bucket(e.buckets[149], 2, 299, 300, 299, 299, 300, 300, 299, 300, 599);
    // Up to 8 rows a column: 300 rows for 40 columns, eight by eight (38 buckets, n = 8 but
    // the last, steps 297..300).
    e = st.metric_envelope("r", "loss", 0, 1, 300, 40);
    QCOMPARE(e.level, -1);
    QCOMPARE(e.bucket_steps, int64_t(8));
    QCOMPARE(e.size(), size_t(38));
    check_bucket(e.buckets[0], 8, 1, 8, 1, 1, 8, 8, 1, 8, tri(1, 8));
    check_bucket(e.buckets[37], 4, 297, 300, 297, 297, 300, 300, 297, 300, tri(297, 300));
    // Buckets overlapping a range are returned whole (131 steps > 8 x 3: level 1, 64 steps).
    e = st.metric_envelope("r", "loss", 0, 70, 200, 3);
    QCOMPARE(e.level, 1);
    QCOMPARE(e.size(), size_t(3));
    QCOMPARE(e.buckets[0].step_min, int64_t(64));
    QCOMPARE(e.buckets[2].step_max, int64_t(255));
    // Every level holds all 300 rows.
    QCOMPARE(count(st, "SELECT count(DISTINCT level) FROM metric_lod"), int64_t(9));
    QCOMPARE(count(st, "SELECT count(*) FROM metric_lod WHERE level = 8 AND n = 300"), int64_t(1));
    QCOMPARE(count(st, "SELECT count(*) FROM metric_lod WHERE level = 0"), int64_t(19));
    QCOMPARE(count(st, "SELECT sum(n) FROM metric_lod WHERE level = 3"), int64_t(300));
    check_matches_rebuild(st, "r");

    // Unknown metric: nothing; bad arguments and unknown runs throw.
    QCOMPARE(st.metric_envelope("r", "nope", 0, 1, 300, 5).size(), size_t(0));
    QCOMPARE(st.metric_envelope("r", "loss", 1, 1, 300, 5).size(), size_t(0));
    QCOMPARE(st.metric_envelope("r", "loss", 0, 400, 500, 5).size(), size_t(0));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.metric_envelope("r", "loss", 0, 1, 300, 0));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.metric_envelope("r", "loss", 0, 300, 1, 5));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.metric_envelope("nope", "loss", 0, 1, 300, 5));

    // Deleting the run deletes its level of detail.
    st.delete_run("r");
    QCOMPARE(count(st, "SELECT count(*) FROM metric_lod"), int64_t(0));
  }

  void resumedAttemptUpdatesBuckets() {
    QTemporaryDir dir;
    const std::string events = write_ramp(dir);
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events, "e");
    ing.poll_all();
    // Attempt 1 resumes from step 6 and redoes 7..10 with other values; then a stray line of
    // attempt 0 for step 8 arrives (an older attempt never wins).
    std::string text = line(run_start("r", 2000.0, 1, 6));
    text += loss_line("r", 7, 1007, 1) + loss_line("r", 8, 1008, 1) + loss_line("r", 9, -9, 1) +
            loss_line("r", 10, -10, 1) + loss_line("r", 8, 5, 0);
    append_file(events, text);
    ing.poll_all();

    const double sum0 = tri(1, 63) - tri(7, 10) + (1007 + 1008 - 9 - 10);
    MetricEnvelope e = st.metric_envelope("r", "loss", 0, 1, 300, 5);
    QCOMPARE(e.level, 1);
    check_bucket(e.buckets[0], 63, 1, 63, -10, 10, 1008, 8, 1, 63, sum0);
    check_bucket(e.buckets[1], 64, 64, 127, 64, 64, 127, 127, 64, 127, tri(64, 127));
    e = st.metric_envelope("r", "loss", 0, 1, 300, 2);
    QCOMPARE(e.level, 2);
    check_bucket(e.buckets[0], 255, 1, 255, -10, 10, 1008, 8, 1, 255,
                 tri(1, 255) - tri(7, 10) + 1996);
    e = st.metric_envelope("r", "loss", 0, 1, 300, 1);
    check_bucket(e.buckets[0], 300, 1, 300, -10, 10, 1008, 8, 1, 300,
                 tri(1, 300) - tri(7, 10) + 1996);
    e = st.metric_envelope("r", "loss", 0, 6, 11, 100);
    QVERIFY(e.raw());
    QCOMPARE(e.size(), size_t(6));
    const double want[] = {6, 1007, 1008, -9, -10, 11};
    for (int i = 0; i < 6; ++i) QCOMPARE(e.buckets[i].v_max, want[i]);
    check_matches_rebuild(st, "r");

    // A re-ingest from byte 0 (rows are upserts, attempt 1 keeps its values) changes nothing.
    const std::vector<Row> before = lod_rows(st, "r");
    ing.reset();
    ing.poll_all();
    const std::vector<Row> after = lod_rows(st, "r");
    QCOMPARE(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      QCOMPARE(after[i].b.n, before[i].b.n);
      QCOMPARE(after[i].b.v_max, before[i].b.v_max);
      QCOMPARE(after[i].b.v_sum, before[i].b.v_sum);
    }
  }

  void rolledBackBatchLeavesNoTrace() {
    QTemporaryDir dir;
    const std::string events = write_ramp(dir);
    Store st(dir.filePath("td.db").toStdString());
    bool fail = false;
    IngestOptions o;
    o.batch_lines = 100;
    o.after_row = [&](size_t rows) {
      if (fail && rows == 40) throw td::Error("killed");  // mid-batch, before the commit
    };
    Ingester ing(st, events, "e", o);
    ing.poll(100);  // lines 1..100 committed (99 rows)
    fail = true;
    QVERIFY_THROWS_EXCEPTION(td::Error, ing.poll(100));  // the second batch rolls back
    QCOMPARE(count(st, "SELECT sum(n) FROM metric_lod WHERE level = 0"), int64_t(99));
    QCOMPARE(count(st, "SELECT max(step_max) FROM metric_lod WHERE level = 8"), int64_t(99));
    fail = false;
    ing.poll_all();
    const MetricEnvelope e = st.metric_envelope("r", "loss", 0, 1, 300, 1);
    check_bucket(e.buckets[0], 300, 1, 300, 1, 1, 300, 300, 1, 300, tri(1, 300));
    check_matches_rebuild(st, "r");
  }

  void millionStepSpikeAtEveryZoom() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    constexpr int64_t kSteps = 1000000, kSpike = 654321, kDip = 123457;
    constexpr double kSpikeValue = 97.25, kDipValue = -3.5;
    QElapsedTimer timer;
    timer.start();
    {
      std::FILE* f = std::fopen(events.c_str(), "wb");
      QVERIFY(f);
      const std::string start = line(run_start("big", 999.0));
      std::fwrite(start.data(), 1, start.size(), f);
      for (int64_t s = 1; s <= kSteps; ++s) {
        const double v = s == kSpike ? kSpikeValue
                         : s == kDip ? kDipValue
                                     : 2.0 + std::sin(static_cast<double>(s) * 1e-3);
        std::fprintf(f,
                     R"({"type":"step","v":1,"t":%lld.5,"run_id":"big","step":%lld,"loss":%.17g})"
                     "\n",
                     static_cast<long long>(s + 1000), static_cast<long long>(s), v);
      }
      std::fclose(f);
    }
    const qint64 write_ms = timer.restart();
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events, "e");
    QCOMPARE(ing.poll_all().metric_rows, size_t(kSteps));
    const qint64 ingest_ms = timer.restart();

    // Fully zoomed out on a 1000-column chart: one bucket holds the spike, one the dip.
    MetricEnvelope e = st.metric_envelope("big", "loss", 0, 1, kSteps, 1000);
    const qint64 query_ms = timer.restart();
    QCOMPARE(e.level, 3);  // 1024 steps per bucket: 977 buckets (level 2 has 3907 > 2 x 1000)
    QVERIFY(e.size() <= 1000);
    QCOMPARE(e.size(), size_t(977));
    int64_t n = 0;
    int spikes = 0, dips = 0;
    for (const Bucket& b : e.buckets) {
      n += b.n;
      QVERIFY(b.v_max <= kSpikeValue && b.v_min >= kDipValue);
      if (b.v_max == kSpikeValue) {
        ++spikes;
        QCOMPARE(b.step_at_max, kSpike);
        QVERIFY(b.step_min <= kSpike && kSpike <= b.step_max);
      }
      if (b.v_min == kDipValue) {
        ++dips;
        QCOMPARE(b.step_at_min, kDip);
      }
    }
    QCOMPARE(n, kSteps);
    QCOMPARE(spikes, 1);
    QCOMPARE(dips, 1);

    // Any chart width: never more buckets than columns, the spike always visible.
    for (int cols : {1, 3, 16, 100, 977, 2000, 4000, 20000}) {
      e = st.metric_envelope("big", "loss", 0, 1, kSteps, cols);
      QVERIFY2(e.size() <= static_cast<size_t>(cols), std::to_string(cols).c_str());
      QVERIFY2(e.size() > static_cast<size_t>(cols) / 2, std::to_string(cols).c_str());  // one per column
      double top = -1e300;
      for (const Bucket& b : e.buckets) top = std::max(top, b.v_max);
      QCOMPARE(top, kSpikeValue);
    }
    e = st.metric_envelope("big", "loss", 0, 1, kSteps, 20000);
    QCOMPARE(e.level, 1);  // 15626 buckets of 64 steps

    // Zoomed in around the spike: the raw rows, its exact value at its exact step.
    e = st.metric_envelope("big", "loss", 0, kSpike - 50, kSpike + 50, 1000);
    QVERIFY(e.raw());
    QCOMPARE(e.size(), size_t(101));
    QCOMPARE(e.buckets[50].step_min, kSpike);
    QCOMPARE(e.buckets[50].v_max, kSpikeValue);
    QCOMPARE(e.buckets[50].v_min, kSpikeValue);
    const MetricSeries raw = st.metric_series("big", "loss", 0, kSpike - 50, kSpike + 50);
    for (size_t i = 0; i < raw.size(); ++i) {
      QCOMPARE(e.buckets[i].step_min, raw.step[i]);
      QCOMPARE(e.buckets[i].v_first, raw.value[i]);
    }
    // Half zoomed (10,001 steps > 8 x 1000): level 0 buckets of 16 steps, the spike in one.
    e = st.metric_envelope("big", "loss", 0, kSpike - 5000, kSpike + 5000, 1000);
    QCOMPARE(e.level, 0);
    QVERIFY(e.size() > 500);
    QVERIFY(e.size() <= 1000);
    spikes = 0;
    for (const Bucket& b : e.buckets) spikes += b.v_max == kSpikeValue && b.step_at_max == kSpike;
    QCOMPARE(spikes, 1);
    const qint64 zoom_ms = timer.restart();

    check_matches_rebuild(st, "big", {0, 2, 8});  // the SQL oracle sorts 1M rows per level
    const qint64 rebuild_ms = timer.restart();
    qInfo("1M steps: write %lld ms, ingest %lld ms, top envelope %lld ms, zooms %lld ms,"
          " check vs rebuild %lld ms, %lld LOD rows",
          static_cast<long long>(write_ms), static_cast<long long>(ingest_ms),
          static_cast<long long>(query_ms), static_cast<long long>(zoom_ms),
          static_cast<long long>(rebuild_ms),
          static_cast<long long>(count(st, "SELECT count(*) FROM metric_lod")));
  }

  void migrationBuildsLodOfOlderStores() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("v1.db").toStdString();
    {
      sqlite3* db = nullptr;
      QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
      migrate(db, path, migrations().first(1));  // a store written by the version-1 build
      exec_sql(db,
               "INSERT INTO experiments(id, name, created) VALUES (1, 'e', 0);"
               "INSERT INTO runs(id, run_id, experiment) VALUES (1, 'old', 1);"
               "INSERT INTO metric_names(id, name) VALUES (1, 'loss'), (2, 'lr');"
               "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 300)"
               " INSERT INTO metrics SELECT 1, 1, 0, x, 0, x, CASE WHEN x = 200 THEN 1e6 ELSE x END"
               " FROM s;"
               "INSERT INTO metrics VALUES (1, 2, 1, 5, 0, 0, 0.5), (1, 2, 1, 6, 0, 0, 0.25);");
      QCOMPARE(read_user_version(db), 1);
      sqlite3_close(db);
    }
    Store st(path);
    QCOMPARE(read_user_version(st.handle()), schema_version());
    MetricEnvelope e = st.metric_envelope("old", "loss", 0, 1, 300, 5);
    QCOMPARE(e.level, 1);
    check_bucket(e.buckets[0], 63, 1, 63, 1, 1, 63, 63, 1, 63, tri(1, 63));
    check_bucket(e.buckets[3], 64, 192, 255, 192, 192, 1e6, 200, 192, 255, tri(192, 255) - 200 + 1e6);
    e = st.metric_envelope("old", "loss", 0, 1, 300, 1);
    check_bucket(e.buckets[0], 300, 1, 300, 1, 1, 1e6, 200, 1, 300, tri(1, 300) - 200 + 1e6);
    e = st.metric_envelope("old", "lr", 1, 1, 300, 1);  // two steps: raw rows, merged
    QCOMPARE(e.level, -1);
    check_bucket(e.buckets[0], 2, 5, 6, 0.25, 6, 0.5, 5, 0.5, 0.25, 0.75);
    check_matches_rebuild(st, "old");
  }

  // A version-5 store (buckets of 64 * 4^k steps) gets the finer levels of version 6.
  void migrationRebuildsCoarserLevels() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("v5.db").toStdString();
    {
      sqlite3* db = nullptr;
      QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
      migrate(db, path, migrations().first(5));
      exec_sql(db,
               "INSERT INTO experiments(id, name, created) VALUES (1, 'e', 0);"
               "INSERT INTO runs(id, run_id, experiment) VALUES (1, 'old', 1);"
               "INSERT INTO metric_names(id, name) VALUES (1, 'loss');"
               "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 300)"
               " INSERT INTO metrics SELECT 1, 1, 0, x, 0, x, x FROM s;"
               // what the version-5 build wrote: level 0 of 64 steps, ..., level 7 whole
               "INSERT INTO metric_lod VALUES (1, 1, 0, 0, 0, 63, 1, 63, 1, 63, 1, 63, 1, 63, 2016),"
               " (1, 1, 0, 7, 0, 300, 1, 300, 1, 300, 1, 300, 1, 300, 45150);");
      sqlite3_close(db);
    }
    Store st(path);
    QCOMPARE(read_user_version(st.handle()), schema_version());
    QCOMPARE(count(st, "SELECT count(*) FROM metric_lod WHERE level = 0"), int64_t(19));  // 16 steps
    QCOMPARE(count(st, "SELECT n FROM metric_lod WHERE level = 0 AND bucket = 0"), int64_t(15));
    QCOMPARE(count(st, "SELECT count(*) FROM metric_lod WHERE level = 8 AND n = 300"), int64_t(1));
    check_matches_rebuild(st, "old");
  }

  // About one bucket per pixel column at any run length (issue 14): runs of 300, 1,000, 20,000
  // and 1,000,000 steps on charts 200, 517 and 1000 columns wide, fully zoomed out, give more
  // than half as many buckets as columns (all rows when there are fewer), never more; the
  // first and last step's exact values are the first bucket's v_first and the last's v_last.
  void oneBucketPerColumnAtEveryLength() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    const int64_t lengths[] = {300, 1000, 20000, 1000000};
    exec_sql(st.handle(), "INSERT INTO experiments(id, name, created) VALUES (1, 'e', 0);"
                          "INSERT INTO metric_names(id, name) VALUES (1, 'loss');");
    // loss = 5.5 at step 1, decaying towards 1.5 (x / (x + 100)): exact in SQL and here.
    auto value = [](int64_t x) { return 1.5 + 4.0 * 101.0 / (static_cast<double>(x) + 100.0); };
    for (size_t i = 0; i < std::size(lengths); ++i) {
      const std::string id = "len" + std::to_string(lengths[i]);
      exec_sql(st.handle(), ("INSERT INTO runs(id, run_id, experiment) VALUES (" + std::to_string(i + 1) + ", '" +
                             id + "', 1);"
                             "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < " +
                             std::to_string(lengths[i]) + ") INSERT INTO metrics SELECT " + std::to_string(i + 1) +
                             ", 1, 0, x, 0, x, 1.5 + 4.0 * 101.0 / (x + 100.0) FROM s;")
                                .c_str());
      st.rebuild_lod(id);
    }
    for (size_t i = 0; i < std::size(lengths); ++i) {
      const int64_t n = lengths[i];
      const std::string id = "len" + std::to_string(n);
      for (int cols : {200, 517, 1000}) {
        const MetricEnvelope e = st.metric_envelope(id, "loss", 0, 1, n, cols);
        const std::string at = id + " on " + std::to_string(cols) + " columns: " + std::to_string(e.size()) +
                               " buckets (level " + std::to_string(e.level) + ")";
        if (n <= cols) {
          QVERIFY2(e.raw() && e.size() == static_cast<size_t>(n), at.c_str());
        } else {
          QVERIFY2(e.size() <= static_cast<size_t>(cols) && e.size() > static_cast<size_t>(cols) / 2, at.c_str());
        }
        int64_t rows = 0;
        for (const Bucket& b : e.buckets) rows += b.n;
        QVERIFY2(rows == n, at.c_str());
        QCOMPARE(e.buckets.front().step_min, int64_t(1));
        QCOMPARE(e.buckets.front().v_first, 5.5);
        QCOMPARE(e.buckets.back().step_max, n);
        QCOMPARE(e.buckets.back().v_last, value(n));
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestLod)
#include "test_lod.moc"
