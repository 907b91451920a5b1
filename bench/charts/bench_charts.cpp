// bench_charts: from SQLite to the screen, each figure beside its target (issue 3).
//
//   bench_charts [--work-dir DIR] [--width W] [--height H] [--ingest-rows N] [--no-ingest] [--per-chart]
//
// (a) first frame: a Dashboard (offscreen, W x H) opens a stored run and draws its first frame
//     (store opened, run facts read, every series' envelope fetched and plotted). Two stores:
//     one metric (loss) of 10,000,000 steps; ten metrics of 1,000,000 steps each. Figures: time
//     from opening to the first replot with every series drawn; rows SQLite returned for it
//     (counted by sqlite3_trace_v2 SQLITE_TRACE_ROW on the dashboard's own connection), split
//     into envelope rows per series (target <= 2x the chart's pixel columns) and the run facts;
//     resident memory of this process afterwards (VmRSS; peak VmHWM).
// (b) replot while zoomed and panned: the 10M-step loss chart zoomed to 1% of the run, panned
//     60 times by 1% of that window. Each pan is drawn at once from the data on hand
//     (ChartView::replotNow(): QCustomPlot::replot(rpImmediateRefresh), timed), then re-queried; the replot with the
//     new data is timed too, and the time from the pan to the new data on screen reported.
//     Also the whole 10-metric dashboard (five charts) replotted per pan.
// (c) ingest: bench_store_ingest (bench/store_ingest, run as a child process in this run):
//     Ingester::poll_all() on an events.jsonl beside a bare prepared-statement insert loop into
//     the same table in one transaction, rows/s and the ratio (target >= 0.5x).
//
// The two stores are generated once into --work-dir (default /tmp/td-bench-charts) with plain
// bulk INSERTs and Store::rebuild_lod(), and reused when present (about 1 GB, a minute to make).
// The page cache is warm after generation: first-frame times are those of a store opened again.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "gui/charts/dashboard.h"
#include "store/ingest.h"
#include "store/sqlite.h"
#include "store/store.h"

using namespace td::gui;
using td::store::Stmt;

namespace {

// ---- store generation ---------------------------------------------------------------------

// The value of metric number m at step s: a smooth curve per metric, one spike per metric.
double value_of(int m, int64_t s) {
  const double x = static_cast<double>(s);
  if (s % 777777 == 12345) return 1000.0 + m;  // a spike (a 1-step event the band must keep)
  switch (m) {
    case 0: return 2.0 + 8.0 / (1.0 + x * 1e-5) + 0.05 * std::sin(x * 0.37);    // loss
    case 1: return 2.1 + 8.0 / (1.0 + x * 1e-5);                                // val_loss
    case 2: return 50000.0 + 800.0 * std::sin(x * 0.01);                         // tokens_per_s
    case 3: return 0.42 + 0.01 * std::sin(x * 0.01);                             // mfu
    case 4: return 6.0e9 + 1.0e6 * std::fmod(x, 97.0);                           // rss_bytes
    case 5: return 7.0e10 + 1.0e7 * std::fmod(x, 13.0);                          // gpu_mem_bytes
    case 6: return 4.0e8 * x;                                                    // comm_bytes
    case 7: return 9.0e10 + 1.0e9 * std::sin(x * 0.001);                         // comm_bandwidth
    case 8: return 3e-4 * std::min(1.0, x / 2000.0);                             // lr
    default: return 1.0 + 0.3 * std::sin(x * 0.13);                              // grad_norm
  }
}

const char* kNames[] = {"loss", "val_loss", "tokens_per_s", "mfu", "rss_bytes", "gpu_mem_bytes",
                        "comm_bytes", "comm_bandwidth", "lr", "grad_norm"};

// Creates store `path` with run `run` holding metrics kNames[0 .. n_metrics) of steps 1..steps
// (t = 1.7e9 + 0.5 s per step), unless a completed one is there.
void make_store(const QString& path, const std::string& run, int n_metrics, int64_t steps) {
  const QString done = path + ".ready";
  if (QFile::exists(done) && QFile::exists(path)) {
    std::printf("  reusing %s\n", qPrintable(path));
    return;
  }
  QFile::remove(path);
  QFile::remove(path + "-wal");
  QFile::remove(path + "-shm");
  QElapsedTimer tm;
  tm.start();
  const std::string events = (path + ".start.jsonl").toStdString();
  {
    std::ofstream f(events, std::ios::binary);
    f << R"({"type":"run_start","v":1,"t":1700000000.0,"run_id":")" << run
      << R"(","attempt":0,"rank":0,"host":"bench","device":"cpu","world_size":1,)"
      << R"("config":{"model":{"seq_len":1024},"train":{"micro_batch":8,"grad_accum":4}}})" << '\n';
  }
  td::store::Store st(path.toStdString());
  td::store::Ingester(st, events, "bench").poll_all();
  const int64_t key = *st.run_key(run);
  sqlite3* db = st.handle();
  td::store::exec_sql(db, "PRAGMA synchronous = OFF");
  {
    td::store::Transaction tx(db);
    Stmt name(db, "INSERT OR IGNORE INTO metric_names(name) VALUES (?1)");
    Stmt id(db, "SELECT id FROM metric_names WHERE name = ?1");
    Stmt ins(db, "INSERT INTO metrics(run, name, rank, step, attempt, t, value) VALUES (?1, ?2, 0, ?3, 0, ?4, ?5)");
    for (int m = 0; m < n_metrics; ++m) {
      name.bind(1, kNames[m]).exec();
      id.bind(1, kNames[m]);
      id.step();
      const int64_t nid = id.col_int(0);
      id.reset();
      for (int64_t s = 1; s <= steps; ++s) {
        ins.bind(1, key).bind(2, nid).bind(3, s).bind(4, 1.7e9 + 0.5 * static_cast<double>(s)).bind(5, value_of(m, s));
        ins.exec();
      }
    }
    Stmt last(db, "UPDATE runs SET last_step = ?2, status = 'completed' WHERE id = ?1");
    last.bind(1, key).bind(2, steps).exec();
    tx.commit();
  }
  const double insert_s = tm.restart() / 1000.0;
  st.rebuild_lod(run);
  std::printf("  generated %s: %d metric(s) x %lld steps in %.1f s (bulk insert) + %.1f s (level of detail)\n",
              qPrintable(path), n_metrics, static_cast<long long>(steps), insert_s, tm.elapsed() / 1000.0);
  QFile f(done);
  f.open(QIODevice::WriteOnly);
}

// ---- measuring ----------------------------------------------------------------------------

struct RowCount {
  std::atomic<long long> envelope{0}, other{0};
};

int on_trace(unsigned type, void* ctx, void* p, void*) {
  if (type != SQLITE_TRACE_ROW) return 0;
  auto* c = static_cast<RowCount*>(ctx);
  const char* sql = sqlite3_sql(static_cast<sqlite3_stmt*>(p));
  // Store::metric_envelope's range reads (raw rows, last step, buckets).
  if (sql && (std::strstr(sql, "step BETWEEN ?4 AND ?5") || std::strstr(sql, "bucket BETWEEN ?5 AND ?6")))
    c->envelope.fetch_add(1, std::memory_order_relaxed);
  else
    c->other.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

double rss_mb(const char* field = "VmRSS:") {
  QFile f("/proc/self/status");
  f.open(QIODevice::ReadOnly);
  for (const QByteArray& line : f.readAll().split('\n'))
    if (line.startsWith(field)) return line.mid(static_cast<int>(std::strlen(field))).trimmed().split(' ')[0].toDouble() / 1024.0;
  return 0;
}

// Every chart's every series has points and the plots replotted after that.
bool all_drawn(const Dashboard& d) {
  for (const QString& n : d.chartNames()) {
    ChartView* c = d.chart(n);
    for (int i = 0; i < c->seriesCount(); ++i)
      if (c->drawn(i).x.empty()) return false;
  }
  return true;
}

int series_count(const Dashboard& d) {
  int n = 0;
  for (const QString& name : d.chartNames()) n += d.chart(name)->seriesCount();
  return n;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void line(const char* what, double value, const char* unit, const QString& target, bool ok) {
  std::printf("  %-52s %10.2f %-8s target %-16s %s\n", what, value, unit, qPrintable(target), ok ? "ok" : "MISSED");
}

struct Opened {
  StoreClient* client = nullptr;
  Dashboard* dash = nullptr;
  RowCount* rows = nullptr;
};

// (a) for one store: opens it in a new Dashboard and waits for the first complete frame.
Opened first_frame(const QString& path, const QString& run, int w, int h, const char* title, int64_t steps_total) {
  std::printf("\n(a) first frame: %s\n", title);
  Opened o;
  o.rows = new RowCount;
  QElapsedTimer tm;
  tm.start();
  o.client = new StoreClient(path);
  RowCount* rc = o.rows;
  o.client->exec(nullptr, [rc](td::store::Store& s) { sqlite3_trace_v2(s.handle(), SQLITE_TRACE_ROW, on_trace, rc); });
  o.dash = new Dashboard(o.client);
  o.dash->resize(w, h);
  o.dash->show();
  o.dash->setRuns({run});
  bool replotted_after = false;
  QList<QMetaObject::Connection> conns;
  for (const QString& n : o.dash->chartNames())
    conns << QObject::connect(o.dash->chart(n), &ChartView::replotted, [&] {
      if (series_count(*o.dash) > 0 && all_drawn(*o.dash)) replotted_after = true;
    });
  while (!replotted_after && tm.elapsed() < 60000) QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 5);
  const double ms = tm.nsecsElapsed() / 1e6;
  for (auto& c : conns) QObject::disconnect(c);

  // Every chart asks for the dashboard's columns (the narrowest plot's: one detail per page).
  const int cols = o.dash->columns();
  int n = 0;
  for (const QString& name : o.dash->chartNames()) n += o.dash->chart(name)->seriesCount();
  // Detail: points each chart draws (buckets, or rows when raw) per column of the narrowest plot.
  double lo_ratio = 1e300, hi_ratio = 0;
  for (const QString& name : o.dash->chartNames()) {
    ChartView* c = o.dash->chart(name);
    for (int i = 0; i < c->seriesCount(); ++i) {
      const ChartView::Drawn d = c->drawn(i);
      const double pts = static_cast<double>(d.raw ? d.x.size() : d.band_x.size());
      const double r = pts / std::max(1, cols);
      lo_ratio = std::min(lo_ratio, r);
      hi_ratio = std::max(hi_ratio, r);
    }
  }
  const double env_rows = static_cast<double>(o.rows->envelope.load());
  line("time to the first frame", ms, "ms", "<= 300 ms", ms <= 300);
  line("points per pixel column, fewest series", lo_ratio, "x", ">= 0.5x (or every row)", lo_ratio >= 0.5 || steps_total <= cols);
  line("points per pixel column, most series", hi_ratio, "x", "<= 2x", hi_ratio <= 2.0);
  // Store::metric_envelope reads at most 2 buckets a column from the level of detail; a span of
  // at most 8 steps a column (a short run, a deep zoom) is read raw: up to 8 rows a column.
  const bool raw_span = steps_total <= 8 * static_cast<int64_t>(cols);
  const double row_target = (raw_span ? 8.0 : 2.0) * cols;
  line(qPrintable(QString("envelope rows per series (%1 series, %2 columns)").arg(n).arg(cols)), env_rows / std::max(1, n),
       "rows", QString("<= %1 (%2x cols)").arg(row_target).arg(raw_span ? 8 : 2), env_rows / std::max(1, n) <= row_target);
  std::printf("  %-52s %10lld rows   (series extents, step->time samples)\n", "run facts rows",
              o.rows->other.load());
  const double rss = rss_mb();
  line("resident memory after it (whole process)", rss, "MB", "<= 300 MB", rss <= 300);
  return o;
}

// (b) pans of a zoomed chart: immediate replots with the data on hand, then with new data.
void pan_bench(Dashboard* dash, const char* chart_name, int64_t steps, bool whole_dashboard) {
  ChartView* c = dash->chart(chart_name);
  const double window = static_cast<double>(steps) / 100.0;
  double lo = static_cast<double>(steps) * 0.3;
  c->setXRange(lo, lo + window);
  QElapsedTimer wait;
  wait.start();
  while (wait.elapsed() < 2000) QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
  std::vector<double> at_once, with_data, latency;
  for (int i = 0; i < 60; ++i) {
    lo += window / 100.0;
    QElapsedTimer tm;
    tm.start();
    c->setXRange(lo, lo + window);
    QElapsedTimer rp;
    rp.start();
    if (whole_dashboard) {
      for (const QString& n : dash->chartNames()) dash->chart(n)->replotNow();  // all panned (linked)
    } else {
      c->replotNow();
    }
    at_once.push_back(rp.nsecsElapsed() / 1e6);
    // The re-query: wait for the new data to arrive, then time its replot.
    bool got = false;
    auto conn = QObject::connect(c, &ChartView::dataDrawn, [&] { got = true; });
    while (!got && tm.elapsed() < 5000) QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 5);
    QObject::disconnect(conn);
    while (dash->model()->pendingRequests() > 0 && tm.elapsed() < 5000) QCoreApplication::processEvents(QEventLoop::AllEvents, 1);
    rp.restart();
    if (whole_dashboard)
      for (const QString& n : dash->chartNames()) dash->chart(n)->replotNow();
    else
      c->replotNow();
    with_data.push_back(rp.nsecsElapsed() / 1e6);
    latency.push_back(tm.nsecsElapsed() / 1e6);
  }
  const double worst = *std::max_element(at_once.begin(), at_once.end());
  const double worst2 = *std::max_element(with_data.begin(), with_data.end());
  line("replot at the pan, median", median(at_once), "ms", "<= 16 ms", median(at_once) <= 16);
  line("replot at the pan, worst of 60", worst, "ms", "<= 16 ms", worst <= 16);
  line("replot with the re-queried data, median", median(with_data), "ms", "<= 16 ms", median(with_data) <= 16);
  line("replot with the re-queried data, worst of 60", worst2, "ms", "<= 16 ms", worst2 <= 16);
  std::printf("  %-52s %10.2f ms     (query on the store thread + replot; no target)\n",
              "pan -> new data on screen, median", median(latency));
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QCommandLineParser p;
  p.setApplicationDescription("TrainDeck chart benchmark: SQLite to the screen");
  p.addHelpOption();
  p.addOption({"work-dir", "Folder of the generated stores (reused when present).", "dir", "/tmp/td-bench-charts"});
  p.addOption({"width", "Dashboard width in pixels.", "px", "1600"});
  p.addOption({"height", "Dashboard height in pixels.", "px", "1000"});
  p.addOption({"ingest-rows", "Metric rows for the ingest comparison (c).", "n", "1000000"});
  p.addOption({"no-ingest", "Skip (c)."});
  p.addOption({"per-chart", "Also print each chart's replot time (10-metric run, zoomed)."});
  p.process(app);
  const QString work = p.value("work-dir");
  const int w = p.value("width").toInt(), h = p.value("height").toInt();
  QDir().mkpath(work);

  std::printf("bench_charts: from SQLite to the screen (issue 3 targets beside each figure)\n");
  std::printf("  (a) open a stored run in the Dashboard and draw its first frame: time, rows SQLite\n"
              "      returned, resident memory.  (b) replot a zoomed chart while panning.\n"
              "  (c) ingest of an events.jsonl vs a bare prepared-statement INSERT loop, same run.\n");
  std::printf("\nstores in %s:\n", qPrintable(work));
  make_store(work + "/one_10m.db", "one", 1, 10000000);
  make_store(work + "/ten_1m.db", "ten", 10, 1000000);
  make_store(work + "/ten_1k.db", "short", 10, 1000);
  make_store(work + "/ten_20k.db", "mid", 10, 20000);

  Opened one = first_frame(work + "/one_10m.db", "one", w, h, "1 metric x 10,000,000 steps", 10000000);
  Opened ten = first_frame(work + "/ten_1m.db", "ten", w, h, "10 metrics x 1,000,000 steps", 1000000);
  // Ordinary run lengths: the detail must hold there too (issue 14: a 1,000-step run was drawn
  // from 16 buckets).
  for (const auto& [file, run, n, title] :
       {std::tuple<const char*, const char*, int64_t, const char*>{"/ten_1k.db", "short", 1000, "10 metrics x 1,000 steps"},
        std::tuple<const char*, const char*, int64_t, const char*>{"/ten_20k.db", "mid", 20000, "10 metrics x 20,000 steps"}}) {
    Opened o = first_frame(work + file, run, w, h, title, n);
    delete o.dash;
    delete o.client;
    delete o.rows;
  }
  std::printf("  %-52s %10.2f MB\n", "peak resident memory so far (VmHWM)", rss_mb("VmHWM:"));

  if (p.isSet("per-chart")) {
    std::printf("\nreplot per chart of the 10-metric run, zoomed to steps 300000..310000:\n");
    for (const QString& n : ten.dash->chartNames()) ten.dash->chart(n)->setXRange(300000, 310000);
    QElapsedTimer w; w.start();
    while (w.elapsed() < 1500) QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
    for (const QString& n : ten.dash->chartNames()) {
      QElapsedTimer t; t.start();
      for (int i = 0; i < 5; ++i) ten.dash->chart(n)->replotNow();
      std::printf("  replot %s: %.2f ms\n", qPrintable(n), t.nsecsElapsed() / 5e6);
    }
  }
  std::printf("\n(b) replot while zoomed (1%% of the run) and panned (60 pans):\n");
  std::printf("  loss chart of the 10M-step run:\n");
  pan_bench(one.dash, "loss", 10000000, false);
  std::printf("  all five charts of the 10-metric run, each pan:\n");
  pan_bench(ten.dash, "loss", 1000000, true);
  one.dash->chart("loss")->exportPng(work + "/loss_10m.png");
  ten.dash->exportPng(work + "/dashboard_10x1m.png");
  std::printf("  (PNGs: %s/loss_10m.png, %s/dashboard_10x1m.png)\n", qPrintable(work), qPrintable(work));

  int rc = 0;
  if (!p.isSet("no-ingest")) {
    std::printf("\n(c) ingest (bench_store_ingest %s, child process):\n", qPrintable(p.value("ingest-rows")));
    QProcess proc;
    proc.setProcessChannelMode(QProcess::MergedChannels);
    proc.start(TD_BENCH_STORE_INGEST, {p.value("ingest-rows")});
    proc.waitForFinished(-1);
    const QString out = QString::fromUtf8(proc.readAll());
    for (const QString& l : out.split('\n', Qt::SkipEmptyParts)) std::printf("    %s\n", qPrintable(l));
    const QRegularExpression re(R"(ingest / bare \(metrics key\): ([0-9.]+)x wall)");
    const auto m = re.match(out);
    if (m.hasMatch()) {
      const double ratio = m.captured(1).toDouble();
      line("ingest / bare insert loop (same schema), wall", ratio, "x", ">= 0.5x", ratio >= 0.5);
    } else {
      std::printf("  bench_store_ingest printed no ratio (exit %d)\n", proc.exitCode());
      rc = 1;
    }
  }
  delete one.dash;
  delete ten.dash;
  delete one.client;
  delete ten.client;
  delete one.rows;
  delete ten.rows;
  return rc;
}
