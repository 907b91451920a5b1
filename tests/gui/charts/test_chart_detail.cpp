// Charts at every run length (issue 14): stored runs of 300, 1,000, 20,000 and 1,000,000 steps
// on a Dashboard at the default window's chart size. For each chart with data: the points drawn
// are about one per pixel column (between 0.5x and 2x the plot's columns, or every row when
// the run has fewer), and the line begins and ends at the run's first and last stored value
// exactly. Also: MFU is the right axis of the tokens/s line (one line, two scales), smoothing
// touches noisy series only with the raw line faint behind, legends sit outside the plot,
// tick labels read 10k / 1.5M, byte axes keep a minimum span, and a run without rows does not
// keep the previous run's ranges. All charts of a dashboard draw at one detail: charts of
// different widths draw the same buckets (the narrowest plot's column count), zoomed and panned
// together.
#include <QGridLayout>
#include <QSlider>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <string>

#include "gui/charts/chart_view.h"
#include "gui/charts/dashboard.h"
#include "gui/core/store_client.h"
#include "store/sqlite.h"
#include "store/store.h"

#include <qcustomplot.h>

using namespace td::gui;

namespace {

constexpr int64_t kLengths[] = {300, 1000, 20000, 1000000};
constexpr double kMfuPerTps = 1.0 / 8192.0;  // exact: MFU = tokens/s * this

std::string run_name(int64_t n) { return "len" + std::to_string(n); }

// The values of step x, as SQL computes them below (the same IEEE operations in the same order).
double loss_at(int64_t x) { return 1.5 + 4.0 * 101.0 / (static_cast<double>(x) + 100.0); }
double tps_at(int64_t x) { return 2000.0 + static_cast<double>(x % 7); }

// Writes the runs straight into the store (bulk SQL, then the level of detail rebuilt): loss,
// lr, tokens_per_s and mfu at every step; rss_bytes on the shorter runs.
void write_runs(const QString& db) {
  td::store::Store st(db.toStdString());
  td::store::exec_sql(st.handle(),
                      "INSERT INTO experiments(id, name, created) VALUES (1, 'e', 0);"
                      "INSERT INTO metric_names(id, name) VALUES (1, 'loss'), (2, 'lr'), (3, 'tokens_per_s'),"
                      " (4, 'mfu'), (5, 'rss_bytes');");
  for (size_t i = 0; i < std::size(kLengths); ++i) {
    const int64_t n = kLengths[i];
    const std::string id = std::to_string(i + 1), steps = std::to_string(n);
    std::string sql = "INSERT INTO runs(id, run_id, experiment, status, last_step, world_size) VALUES (" + id + ", '" +
                      run_name(n) + "', 1, 'completed', " + steps + ", 1);";
    auto series = [&](int name, const std::string& value) {
      sql += "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < " + steps +
             ") INSERT INTO metrics SELECT " + id + ", " + std::to_string(name) + ", 0, x, 0, 1000.0 + x, " + value +
             " FROM s;";
    };
    series(1, "1.5 + 4.0 * 101.0 / (x + 100.0)");
    series(2, "0.001");
    series(3, "2000.0 + (x % 7)");
    series(4, "(2000.0 + (x % 7)) * 0.0001220703125");  // kMfuPerTps
    if (n <= 20000) series(5, "214958080.0 + (x % 3) * 17000.0");  // 205 MiB +- 0.05 MiB
    td::store::exec_sql(st.handle(), sql.c_str());
    st.rebuild_lod(run_name(n));
  }
}

// The drawn line's points that are buckets (the two exact end points of a bucketed line aside).
size_t bucket_points(const ChartView::Drawn& d) { return d.raw ? d.x.size() : d.band_x.size(); }

// Where series 0 of chart c draws its points: the buckets' middles (the raw rows' steps).
std::vector<double> point_xs(ChartView* c) {
  const ChartView::Drawn d = c->drawn(0);
  return d.raw ? d.x : d.band_x;
}

// The narrowest plot of the dashboard, in pixel columns.
int narrowest(const Dashboard& dash) {
  int cols = 1 << 30;
  for (const QString& name : dash.chartNames()) cols = std::min(cols, dash.chart(name)->plotColumns());
  return cols;
}

// The charts of len20000 with data (the network chart has none).
const QStringList kDrawn{"loss", "throughput", "memory", "optimizer"};

// Every chart in kDrawn has drawn series 0 over [lo, hi] (the x range's steps, or the run's).
bool all_drawn_over(const Dashboard& dash, double lo, double hi) {
  for (const QString& name : kDrawn) {
    ChartView* c = dash.chart(name);
    if (c->seriesCount() < 1 || c->drawn(0).x.empty()) return false;
    const ChartView::Drawn d = c->drawn(0);
    if (d.x.front() > lo + 200 || d.x.front() < lo - 200 || d.x.back() < hi - 200 || d.x.back() > hi + 200) return false;
  }
  return true;
}

}  // namespace

class TestChartDetail : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString db_;

 private slots:
  void initTestCase() {
    db_ = dir_.filePath("td.db");
    write_runs(db_);
  }

  void onePointPerColumnAtEveryLength() {
    StoreClient client(db_);
    Dashboard dash(&client);
    dash.resize(1000, 700);  // the run page's charts at the default window size
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    for (int64_t n : kLengths) {
      const QString run = QString::fromStdString(run_name(n));
      dash.setRuns({run});
      QVERIFY(dash.columns() > 16);
      for (const QString& name : {QStringLiteral("loss"), QStringLiteral("throughput"), QStringLiteral("optimizer"),
                                  QStringLiteral("memory")}) {
        ChartView* c = dash.chart(name);
        if (name == QLatin1String("memory") && n > 20000) continue;  // no rss rows there
        QTRY_VERIFY2(c->seriesCount() >= 1, qPrintable(name + " of " + run + ": no series"));
        // Every chart at the detail of the page's narrowest plot.
        const int cols = narrowest(dash);
        const QString what = name + " of " + run + " on " + QString::number(cols) + " columns: ";
        // Wait for the envelope of this run (the last step drawn), then count.
        QTRY_VERIFY2_WITH_TIMEOUT(!c->drawn(0).x.empty() && c->pointNear(1e18, 0).step_max == n,
                                  qPrintable(what + "waited for the run's last step to be drawn"), 60000);
        const ChartView::Drawn d = c->drawn(0);
        const size_t points = bucket_points(d);
        if (n <= cols) {
          QVERIFY2(d.raw && points == static_cast<size_t>(n), qPrintable(what + QString::number(points)));
        } else {
          QVERIFY2(points >= static_cast<size_t>(cols) / 2 && points <= 2 * static_cast<size_t>(cols),
                   qPrintable(what + QString::number(points) + " points"));
        }
        // The first and last step at their exact x and stored value.
        QCOMPARE(d.x.front(), 1.0);
        QCOMPARE(d.x.back(), static_cast<double>(n));
        if (name == QLatin1String("loss")) {
          QCOMPARE(d.line.front(), 5.5);
          QCOMPARE(d.line.back(), loss_at(n));
        } else if (name == QLatin1String("throughput")) {
          QCOMPARE(d.line.front(), tps_at(1));
          QCOMPARE(d.line.back(), tps_at(n));
        }
      }
    }
  }

  // Charts of different widths on one page (the left column three times the right one's) draw
  // the same buckets: the same x positions in every chart, about one per column of the narrowest
  // plot; so after a zoom (linked: every chart follows) and after a resize.
  void everyChartOfAPageAtTheSameDetail() {
    StoreClient client(db_);
    Dashboard dash(&client);
    auto* grid = qobject_cast<QGridLayout*>(dash.chart("loss")->parentWidget()->layout());
    QVERIFY(grid);
    grid->setColumnStretch(0, 3);
    grid->setColumnStretch(1, 1);
    dash.resize(1400, 900);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    dash.setRuns({"len20000"});
    ChartView* loss = dash.chart("loss");
    ChartView* tp = dash.chart("throughput");
    QTRY_VERIFY_WITH_TIMEOUT(all_drawn_over(dash, 1, 20000), 60000);
    // Different widths: the loss plot (left) is more than twice as wide as the throughput plot.
    QVERIFY2(loss->plotColumns() > 2 * tp->plotColumns(),
             qPrintable(QString("%1 and %2 columns").arg(loss->plotColumns()).arg(tp->plotColumns())));

    // Every chart has drawn [lo, hi] from an envelope asked for at the page's column count now
    // (its part of the range: at least 90% of it), and nothing more is on its way.
    auto settled = [&](double lo, double hi) {
      if (!all_drawn_over(dash, lo, hi) || dash.model()->pendingRequests() != 0) return false;
      for (const QString& name : kDrawn) {
        const SeriesEnvelope* e = dash.model()->envelope(dash.chart(name)->seriesKey(0));
        if (!e || e->width > dash.columns() || e->width < 0.9 * dash.columns()) return false;
      }
      return true;
    };
    auto check = [&](const QString& when, double lo, double hi) {
      QTRY_VERIFY2_WITH_TIMEOUT(settled(lo, hi), qPrintable(when + ": not every chart drawn at the page's columns"), 60000);
      const int cols = narrowest(dash);
      const std::vector<double> ref = point_xs(loss);
      QVERIFY2(ref.size() >= static_cast<size_t>(cols) / 2 && ref.size() <= 2 * static_cast<size_t>(cols),
               qPrintable(when + QString(": %1 points on %2 columns").arg(ref.size()).arg(cols)));
      QVERIFY2(!loss->drawn(0).raw, qPrintable(when + ": buckets expected"));
      for (const QString& name : kDrawn) {
        ChartView* c = dash.chart(name);
        QCOMPARE(c->xRange(), loss->xRange());  // linked: one x range
        QCOMPARE(c->columns(), dash.columns());
        const std::vector<double> xs = point_xs(c);
        QVERIFY2(xs == ref, qPrintable(when + ": " + name + QString(" draws %1 points, loss %2 (first x %3 and %4)")
                                                      .arg(xs.size())
                                                      .arg(ref.size())
                                                      .arg(xs.empty() ? -1 : xs.front())
                                                      .arg(ref.front())));
      }
    };
    check("the whole run", 1, 20000);
    // Zoomed (as a wheel or drag would: the range of one chart), every chart follows.
    loss->setXRange(5000, 9000);
    QTRY_COMPARE(tp->xRange(), (QPair<double, double>(5000, 9000)));
    check("zoomed to 5000..9000", 5000, 9000);
    // Narrower: the columns are chosen again, still one for all.
    const int before = dash.columns();
    dash.resize(900, 800);
    QTRY_VERIFY(dash.columns() < before);
    QTRY_COMPARE(dash.columns(), narrowest(dash));
    check("resized", 5000, 9000);
  }

  void mfuIsTheRightAxisOfTheTokensLine() {
    StoreClient client(db_);
    Dashboard dash(&client);
    dash.resize(1000, 700);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    dash.setRuns({"len1000"});
    ChartView* tp = dash.chart("throughput");
    QTRY_COMPARE(tp->seriesCount(), 1);  // one line: tokens/s
    QCOMPARE(tp->legendLabels(), QStringList{"tokens/s"});
    QTRY_COMPARE(tp->secondaryRatio(), kMfuPerTps);
    QTRY_VERIFY(tp->seriesCount() >= 1 && !tp->drawn(0).x.empty());
    tp->replotNow();
    QVERIFY(tp->plot()->yAxis2->visible());
    QCOMPARE(tp->plot()->yAxis2->label(), QString("MFU (0..1)"));
    const QCPRange l = tp->plot()->yAxis->range(), r = tp->plot()->yAxis2->range();
    QCOMPARE(r.lower, l.lower * kMfuPerTps);
    QCOMPARE(r.upper, l.upper * kMfuPerTps);
    // The hover names both: the point's tokens/s and its MFU.
    const Readout p = tp->pointNear(500);
    QVERIFY2(p.text.contains(QStringLiteral("MFU (0..1): ") + QString::number(p.value * kMfuPerTps, 'g', 5)),
             qPrintable(p.text));
    // Zooming the line keeps the two scales in step.
    tp->plot()->yAxis->setRange(1000, 3000);
    QCOMPARE(tp->plot()->yAxis2->range().upper, 3000 * kMfuPerTps);
  }

  void smoothingOnlyNoisySeries() {
    StoreClient client(db_);
    Dashboard dash(&client);
    dash.resize(1400, 900);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    dash.setRuns({"len300"});
    ChartView* loss = dash.chart("loss");
    ChartView* opt = dash.chart("optimizer");
    QTRY_VERIFY(loss->seriesCount() >= 1 && loss->drawn(0).raw && loss->drawn(0).x.size() == 300);
    QTRY_VERIFY(opt->seriesCount() >= 1 && opt->drawn(0).x.size() == 300);
    dash.findChild<QSlider*>("smoothing")->setValue(50);
    const ChartView::Drawn d = loss->drawn(0);
    // EMA 0.5 by hand: s1 = y1, s2 = (y1 + y2) / 2; the raw line faint behind.
    QCOMPARE(d.line[0], loss_at(1));
    QCOMPARE(d.line[1], 0.5 * loss_at(1) + 0.5 * loss_at(2));
    QCOMPARE(d.unsmoothed.size(), size_t(300));
    QCOMPARE(d.unsmoothed[1], loss_at(2));
    // lr (and memory) never smoothed, no faint line.
    const ChartView::Drawn lr = opt->drawn(0);
    QCOMPARE(opt->seriesLabel(0), QString("lr"));
    QVERIFY(lr.unsmoothed.empty());
    QCOMPARE(lr.line[1], 0.001);
    dash.setSmoothing(0);
    QVERIFY(loss->drawn(0).unsmoothed.empty());
    QCOMPARE(loss->drawn(0).line[1], loss_at(2));
  }

  void legendOutsideTicksReadable() {
    StoreClient client(db_);
    Dashboard dash(&client);
    dash.resize(1000, 700);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    dash.setRuns({"len1000000"});
    ChartView* loss = dash.chart("loss");
    QTRY_VERIFY(loss->seriesCount() >= 1 && !loss->drawn(0).x.empty());
    loss->replotNow();
    QCustomPlot* p = loss->plot();
    QVERIFY(p->legend->visible());
    QVERIFY2(!p->legend->outerRect().intersects(p->axisRect()->rect()), "the legend covers the plot");
    // Steps 0 .. 1,000,000: "200k" ... "1M", no powers of ten, all distinct.
    const QVector<QString> x = p->xAxis->tickVectorLabels();
    const QStringList xs(x.begin(), x.end());
    QVERIFY2(xs.contains("500k") || xs.contains("400k"), qPrintable(xs.join(" | ")));
    QVERIFY2(xs.contains("1M"), qPrintable(xs.join(" | ")));
    for (const QString& t : xs) QVERIFY2(!t.contains(QChar(0x00B7)) && !t.contains('e'), qPrintable(t));
    QCOMPARE(QSet<QString>(xs.begin(), xs.end()).size(), xs.size());

    // 205 MiB +- 0.05 MiB: a flat line with distinct tick labels, not a cliff.
    dash.setRuns({"len1000"});
    ChartView* mem = dash.chart("memory");
    QTRY_VERIFY(mem->seriesCount() == 1 && !mem->drawn(0).x.empty());
    mem->replotNow();
    const QCPRange yr = mem->plot()->yAxis->range();
    QVERIFY2(yr.size() >= 0.02 * 214958080.0, qPrintable(QString::number(yr.size())));
    const QVector<QString> y = mem->plot()->yAxis->tickVectorLabels();
    QCOMPARE(QSet<QString>(y.begin(), y.end()).size(), y.size());

    // A run without rows: its charts start at 0, not at the last run's range (nor below 0).
    {
      td::store::Store st(db_.toStdString());
      td::store::exec_sql(st.handle(), "INSERT INTO runs(id, run_id, experiment, status) VALUES (9, 'fresh', 1, 'running');");
    }
    dash.setRuns({"fresh"});
    QTRY_VERIFY(loss->emptyTextVisible());
    QTRY_COMPARE(loss->xRange().first, 0.0);
    QCOMPARE(loss->xRange().second, 1.0);
    loss->replotNow();
    const QVector<QString> empty_ticks = loss->plot()->xAxis->tickVectorLabels();
    QCOMPARE(QSet<QString>(empty_ticks.begin(), empty_ticks.end()).size(), empty_ticks.size());  // not "0 0 1 1"
    dash.setXAxis(XAxis::WallTime);
    QVERIFY(loss->xRange().first >= 0.0);
  }

  // Overlaid runs are labelled by their names (an unnamed one by its id), one colour per run.
  void legendsNameTheRuns() {
    td::store::Store(db_.toStdString()).set_run_name("len300", "short run");
    StoreClient client(db_);
    Dashboard dash(&client);
    dash.resize(1000, 700);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    dash.setRuns({"len300", "len1000"});
    ChartView* loss = dash.chart("loss");
    QTRY_COMPARE(loss->legendLabels(), (QStringList{"short run · train loss", "len1000 · train loss"}));
    QVERIFY(loss->legendColors()[0] != loss->legendColors()[1]);
    td::store::Store(db_.toStdString()).set_run_name("len300", "");
  }

  void exportNamesAndAllRuns() {
    StoreClient client(db_);
    Dashboard dash(&client);
    dash.setRuns({"len300", "len1000"});
    QCOMPARE(dash.suggestedFileName("charts", "png"), QString("len300+len1000-charts.png"));
    // "All rows" of two runs: one header with run_id, every row of both.
    const QString csv = dir_.filePath("both.csv");
    QSignalSpy done(dash.findChild<MetricsModel*>(), &MetricsModel::exportFinished);
    dash.exportRunCsv(csv);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 60000);
    QCOMPARE(done.at(0).at(2).toString(), QString());
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().split('\n');
    QCOMPARE(lines.at(0), QByteArray("run_id,step,rank,attempt,t,name,value"));
    // 300 steps x 5 metrics + 1000 x 5, the header, the final ''.
    QCOMPARE(lines.size(), 1 + 300 * 5 + 1000 * 5 + 1);
    QCOMPARE(done.at(0).at(1).toLongLong(), qint64(300 * 5 + 1000 * 5));
    QVERIFY(lines.at(1).startsWith("len300,1,0,0,"));
    QVERIFY(lines.at(300 * 5 + 1).startsWith("len1000,1,0,0,"));
  }
};

QTEST_MAIN(TestChartDetail)
#include "test_chart_detail.moc"
