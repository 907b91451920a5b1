// The issue's requirement: a one-step spike hidden in a 1,000,000-step stored run is visible at
// full zoom-out (the plotted min/max band reaches it) and, zoomed in around it, the hover
// read-out shows its exact value and step.
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gui/charts/chart_view.h"
#include "store/ingest.h"
#include "store/store.h"

using namespace td::gui;

class TestChartSpike : public QObject {
  Q_OBJECT
 private slots:
  void spikeInAMillionSteps() {
    constexpr int64_t kSteps = 1000000, kSpike = 654321, kDip = 123457;
    constexpr double kSpikeValue = 97.25, kDipValue = -3.5;
    QTemporaryDir dir;
    const QString events = dir.filePath("events.jsonl"), db = dir.filePath("td.db");
    {
      std::FILE* f = std::fopen(events.toStdString().c_str(), "wb");
      QVERIFY(f);
      std::fprintf(f, "%s\n", R"({"type":"run_start","v":1,"t":999.0,"run_id":"big","attempt":0,"rank":0,"config":{}})");
      for (int64_t s = 1; s <= kSteps; ++s) {
        const double v = s == kSpike ? kSpikeValue : s == kDip ? kDipValue : 2.0 + std::sin(static_cast<double>(s) * 1e-3);
        std::fprintf(f, R"({"type":"step","v":1,"t":%lld.5,"run_id":"big","step":%lld,"loss":%.17g})" "\n",
                     static_cast<long long>(s + 1000), static_cast<long long>(s), v);
      }
      std::fclose(f);
      td::store::Store st(db.toStdString());
      td::store::Ingester ing(st, events.toStdString(), "e");
      QCOMPARE(ing.poll_all().metric_rows, size_t(kSteps));
    }

    StoreClient client(db);
    MetricsModel model(&client);
    ChartView view(&model);
    view.setTitle("Loss");
    view.setMetrics({{"loss", "train loss", SeriesStyle::Line, YSide::Left, false}});
    view.resize(1000, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setRuns({"big"});
    QTRY_COMPARE(view.seriesCount(), 1);
    QTRY_VERIFY(!view.drawn(0).hi.empty());

    // Full zoom-out: buckets, never more than the plot's pixel columns; the band's top is the
    // spike and its bottom the dip, each at its own step.
    QCOMPARE(view.xRange().first, 1.0);
    QCOMPARE(view.xRange().second, double(kSteps));
    ChartView::Drawn d = view.drawn(0);
    QVERIFY(!d.raw);
    // (The band has one point per bucket; the line also the exact first and last step.)
    QVERIFY2(d.band_x.size() <= static_cast<size_t>(view.plotColumns()),
             qPrintable(QString("%1 points, %2 columns").arg(d.band_x.size()).arg(view.plotColumns())));
    QVERIFY(d.band_x.size() >= static_cast<size_t>(view.plotColumns()) / 2);
    QCOMPARE(d.x.front(), 1.0);
    QCOMPARE(d.x.back(), double(kSteps));
    const auto top = std::max_element(d.hi.begin(), d.hi.end());
    QCOMPARE(*top, kSpikeValue);
    QCOMPARE(*std::min_element(d.lo.begin(), d.lo.end()), kDipValue);
    Readout r = view.pointNear(d.band_x[static_cast<size_t>(top - d.hi.begin())]);
    QVERIFY(!r.raw);
    QCOMPARE(r.v_max, kSpikeValue);
    QCOMPARE(r.step_at_max, kSpike);
    QVERIFY(r.step_min <= kSpike && kSpike <= r.step_max);
    QVERIFY2(r.text.contains("max 97.25 at step 654321"), qPrintable(r.text));

    // Zoomed in around it: the stored rows themselves, the spike's exact value at its step.
    view.setXRange(kSpike - 50, kSpike + 50);
    QTRY_VERIFY(view.drawn(0).raw && view.drawn(0).x.size() == 101);
    d = view.drawn(0);
    QVERIFY(d.hi.empty());  // raw rows: no band
    QCOMPARE(d.x[50], double(kSpike));
    QCOMPARE(d.line[50], kSpikeValue);
    QCOMPARE(d.line[49], 2.0 + std::sin(static_cast<double>(kSpike - 1) * 1e-3));
    r = view.pointNear(kSpike + 0.3);
    QVERIFY(r.raw);
    QCOMPARE(r.step, kSpike);
    QCOMPARE(r.value, kSpikeValue);
    QCOMPARE(view.readoutAt(kSpike), QString("train loss: 97.25 at step 654321"));

    // The same through the mouse: hovering the spike's pixel.
    QTest::mouseMove(view.plotWidget(), view.pixelOf(kSpike));
    QTRY_COMPARE(view.hoverText(), QString("train loss: 97.25 at step 654321"));
  }
};

QTEST_MAIN(TestChartSpike)
#include "test_chart_spike.moc"
