// Dashboard with a small run (200 steps, val_loss every 50): the loss chart draws one point
// per step and val markers at the eval steps, the network chart says why it is empty, x by
// tokens is step * tokens per step, EMA smoothing matches hand-computed values, CSV export
// holds the drawn points, two runs overlay with a colour each, and refresh() follows new rows.
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QSignalSpy>
#include <QSlider>
#include <QTemporaryDir>
#include <QtTest>

#include "chart_fixture.h"
#include "gui/charts/chart_view.h"
#include "gui/charts/dashboard.h"
#include "engine/metrics/step_fields.h"

#include <qcustomplot.h>

using namespace td::gui;
using namespace td::gui::test;

namespace {

int indexOf(ChartView* c, const QString& run, const QString& metric) { return c->seriesIndex({run, metric, 0}); }

}  // namespace

class TestDashboard : public QObject {
  Q_OBJECT
 private slots:
  void bytesAxisLabels() {
    // Memory ticks in binary units: 2 MiB = 2,097,152 bytes reads "2.0 MiB".
    StoreClient client(QDir::temp().filePath("td-bytes-axis.db"));
    MetricsModel model(&client);
    ChartView view(&model);
    view.resize(400, 300);
    view.setValueFormat(YSide::Left, ValueFormat::Bytes);
    view.setValueFormat(YSide::Right, ValueFormat::BytesPerSecond);
    view.plot()->yAxis->setRange(0, 4 * 1048576.0);
    view.plot()->yAxis2->setRange(0, 3 * 1073741824.0);
    view.plot()->replot();
    const QVector<QString> left = view.plot()->yAxis->tickVectorLabels();
    const QVector<QString> right = view.plot()->yAxis2->tickVectorLabels();
    QVERIFY2(left.contains("2.0 MiB"), qPrintable(QStringList(left.begin(), left.end()).join(" | ")));
    QVERIFY2(right.contains("2.0 GiB/s"), qPrintable(QStringList(right.begin(), right.end()).join(" | ")));
    QVERIFY(left.contains("0 B"));
    view.setLogScale(true);
    view.setLogScale(false);  // the byte labels come back
    view.plot()->yAxis->setRange(0, 4 * 1048576.0);
    view.plot()->replot();
    QVERIFY(view.plot()->yAxis->tickVectorLabels().contains("2.0 MiB"));
  }

  // A two-node data-parallel run: each rank's tokens/s, collective bytes and bus bandwidth are
  // series of their own, named by rank and host (run_start's `hosts`, stored by the ingest).
  void perNodeSeries() {
    QTemporaryDir dir;
    const QString events = dir.filePath("events.jsonl");
    {
      std::FILE* f = std::fopen(events.toStdString().c_str(), "wb");
      std::string text =
          R"({"type":"run_start","v":1,"t":1000,"run_id":"mn","attempt":0,"rank":0,"world_size":2,)"
          R"("host":"node-a","hosts":["node-a","node-b"]})" "\n";
      for (int s = 1; s <= 20; ++s) {
        const std::string step = std::to_string(s), t = std::to_string(1000 + s);
        text += R"({"type":"step","v":1,"t":)" + t + R"(,"run_id":"mn","attempt":0,"rank":0,"step":)" + step +
                R"(,"loss":3.5,"tokens_per_s":2000,"ranks":[)"
                R"({"rank":0,"host":"node-a","tokens_per_s":1100,"comm_bytes_sent":4096,"comm_bytes_received":4096,"comm_ms":2,"busbw_gb_s":0.5},)"
                R"({"rank":1,"host":"node-b","tokens_per_s":900,"comm_bytes_sent":4096,"comm_bytes_received":4096,"comm_ms":3,"busbw_gb_s":0.25}]})"
                "\n";
      }
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
      td::store::Store st(dir.filePath("td.db").toStdString());
      td::store::Ingester ing(st, events.toStdString(), "e");
      ing.poll_all();
      QCOMPARE(st.chart_run("mn").hosts, (std::vector<std::string>{"node-a", "node-b"}));
    }
    StoreClient client(dir.filePath("td.db"));
    Dashboard dash(&client);
    dash.resize(1400, 1000);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    dash.setRuns({"mn"});
    ChartView* tp = dash.chart("throughput");
    QTRY_COMPARE(tp->seriesCount(), 3);
    QCOMPARE(tp->legendLabels(), (QStringList{"tokens/s", "tokens/s rank 0 (node-a)", "tokens/s rank 1 (node-b)"}));
    ChartView* net = dash.chart("network");
    QTRY_COMPARE(net->seriesCount(), 4);
    QCOMPARE(net->legendLabels(),
             (QStringList{"collective bytes sent rank 0 (node-a)", "collective bytes sent rank 1 (node-b)",
                          "bus bandwidth rank 0 (node-a)", "bus bandwidth rank 1 (node-b)"}));
    QTRY_COMPARE(net->drawn(3).line.size(), size_t(20));  // the envelopes arrive one by one
    QVERIFY(!net->emptyTextVisible());
    QCOMPARE(net->drawn(3).line[0], 0.25);
    QTRY_COMPARE(tp->drawn(2).line.size(), size_t(20));
    QCOMPARE(tp->drawn(2).line[0], 900.0);
  }

  void smallRun() {
    QTemporaryDir dir;
    write_small_run(dir.filePath("td.db"), dir.filePath("events.jsonl"), "s", 200);
    StoreClient client(dir.filePath("td.db"));
    Dashboard dash(&client);
    dash.resize(1400, 1000);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    QVERIFY(dash.chart("loss") && dash.chart("throughput") && dash.chart("memory") && dash.chart("network"));
    QVERIFY(!dash.chart("nope"));
    QVERIFY(dash.chart("network")->emptyTextVisible());
    QVERIFY2(dash.chart("network")->plotColumns() > 200, qPrintable(QString::number(dash.chart("network")->plotColumns())));
    dash.setRuns({"s"});

    // (b) zoomed to the whole 200-step run on a chart wider than 200 columns: one point per
    // step, each the stored loss; val_loss markers at steps 50, 100, 150, 200.
    ChartView* loss = dash.chart("loss");
    QTRY_COMPARE(loss->seriesCount(), 2);
    const int li = indexOf(loss, "s", "loss"), vi = indexOf(loss, "s", "val_loss");
    QVERIFY(li >= 0 && vi >= 0);
    QTRY_COMPARE(loss->drawn(li).x.size(), size_t(200));
    ChartView::Drawn d = loss->drawn(li);
    QVERIFY(d.raw);
    for (int s = 1; s <= 200; ++s) {
      QCOMPARE(d.x[s - 1], double(s));
      QCOMPARE(d.line[s - 1], small_loss(s));
    }
    QTRY_COMPARE(loss->drawn(vi).x, (std::vector<double>{50, 100, 150, 200}));
    QCOMPARE(loss->drawn(vi).line[1], 4.0 - 0.1);
    QVERIFY(!loss->emptyTextVisible());
    QCOMPARE(loss->readoutAt(100.2), QString("train loss: 4 at step 100\nval loss: 3.9 at step 100"));

    // Throughput: one tokens/s line, MFU its right axis; network: no series and its sentence.
    ChartView* tp = dash.chart("throughput");
    QTRY_COMPARE(tp->seriesCount(), 1);
    QCOMPARE(tp->legendLabels(), (QStringList{"tokens/s"}));
    QTRY_COMPARE(tp->drawn(0).line.size(), size_t(200));
    QCOMPARE(tp->drawn(0).line[9], 2010.0);
    QCOMPARE(tp->secondaryRatio(), kMfuPerTokenPerS);
    ChartView* net = dash.chart("network");
    QCOMPARE(net->seriesCount(), 0);
    QVERIFY(net->emptyTextVisible());
    QCOMPARE(net->emptyText(), QString("No network traffic: single-process runs do not communicate; "
                                       "distributed runs report collective bytes here."));
    QTRY_COMPARE(dash.chart("memory")->drawn(0).line.size(), size_t(200));
    // Every chart's queries are answered before the export (they arrive one by one).
    QTRY_COMPARE(dash.chart("optimizer")->seriesCount(), 2);
    QTRY_COMPARE(dash.chart("optimizer")->drawn(0).line.size(), size_t(200));
    QTRY_COMPARE(dash.chart("optimizer")->drawn(1).line.size(), size_t(200));

    // (e) CSV of the points shown: stored values; first loss row by hand.
    const QString csv = dir.filePath("shown.csv");
    QVERIFY(dash.exportCsv(csv));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().split('\n');
    QCOMPARE(lines.at(0), QByteArray("chart,run_id,metric,rank,x,step_min,step_max,n,value,min,max"));
    QCOMPARE(lines.at(1), QByteArray("loss,s,loss,0,1,1,1,1,4.99,4.99,4.99"));
    QVERIFY(lines.contains("loss,s,val_loss,0,150,150,150,1,3.85,3.85,3.85"));
    // loss 200 + val 4, tokens/s 200, rss 200, lr + grad_norm 400, header, final ''.
    QCOMPARE(lines.size(), 1 + 204 + 200 + 200 + 400 + 1);
    QVERIFY(dash.exportPng(dir.filePath("dash.png")));
    QVERIFY(QFile(dir.filePath("dash.png")).size() > 1000);
    QVERIFY(loss->exportPng(dir.filePath("loss.png")));
    QVERIFY(QFile(dir.filePath("loss.png")).size() > 1000);

    // (d) EMA weight 0.5 through the slider: s1 = y1, s2 = (y1 + y2) / 2, s3 = (s2 + y3) / 2;
    // the val markers and the stored values (CSV, read-out) are not smoothed.
    dash.findChild<QSlider*>("smoothing")->setValue(50);
    QCOMPARE(loss->smoothing(), 0.5);
    d = loss->drawn(li);
    QCOMPARE(d.line[0], 4.99);
    QCOMPARE(d.line[1], 0.5 * 4.99 + 0.5 * 4.98);
    QCOMPARE(d.line[2], 0.5 * (0.5 * 4.99 + 0.5 * 4.98) + 0.5 * 4.97);
    QCOMPARE(loss->pointNear(3).value, 4.97);
    QCOMPARE(loss->drawn(vi).line[1], 4.0 - 0.1);
    dash.setSmoothing(0);
    QCOMPARE(loss->drawn(li).line[2], 4.97);

    // Log scale through the checkbox: values unchanged, axis logarithmic.
    dash.findChild<QCheckBox*>("logScale")->setChecked(true);
    QVERIFY(loss->logScale());
    dash.setLogScale(false);

    // (c) x by tokens: step * 512 (seq_len 64 * micro_batch 4 * grad_accum 2).
    dash.findChild<QComboBox*>("xAxis")->setCurrentIndex(1);
    QCOMPARE(dash.xAxis(), XAxis::Tokens);
    QTRY_COMPARE(loss->drawn(li).x.size(), size_t(200));
    d = loss->drawn(li);
    QCOMPARE(d.x[0], 512.0);
    QCOMPARE(d.x[199], 200.0 * 512);
    QCOMPARE(loss->pointNear(100 * 512.0).step, int64_t(100));
    // Wall time: t = 1000 + step / 2, elapsed since step 1.
    dash.setXAxis(XAxis::WallTime);
    QTRY_COMPARE(loss->drawn(li).x.back(), 99.5);
    QCOMPARE(loss->drawn(li).x[0], 0.0);
    dash.setXAxis(XAxis::Step);
    QTRY_COMPARE(loss->drawn(li).x.back(), 200.0);
  }

  void followsNewRows() {
    QTemporaryDir dir;
    const QString events = dir.filePath("events.jsonl");
    write_small_run(dir.filePath("td.db"), events, "s", 100);
    StoreClient client(dir.filePath("td.db"));
    Dashboard dash(&client);
    dash.resize(1200, 900);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    dash.setRuns({"s"});
    ChartView* loss = dash.chart("loss");
    QTRY_VERIFY(loss->seriesCount() > 0 && loss->drawn(0).x.size() == 100);
    QCOMPARE(loss->xRange().second, 100.0 + 0.02 * 99);  // room for the last val marker

    // 50 more steps ingested (as the integrator's follower would), then refresh(): the view
    // that showed the newest step now shows step 150.
    {
      std::FILE* f = std::fopen(events.toStdString().c_str(), "ab");
      for (int64_t s = 101; s <= 150; ++s) {
        const std::string l = step_line("s", s, 1000.0 + static_cast<double>(s) / 2, small_loss(s));
        std::fwrite(l.data(), 1, l.size(), f);
      }
      std::fclose(f);
      td::store::Store st(dir.filePath("td.db").toStdString());
      td::store::Ingester ing(st, events.toStdString(), "e");
      ing.poll_all();
    }
    dash.refresh();
    dash.refresh();  // coalesced with the first
    QTRY_COMPARE(loss->drawn(0).x.size(), size_t(150));
    QCOMPARE(loss->xRange().second, 150.0 + 0.02 * 149);
    QCOMPARE(loss->drawn(0).line.back(), small_loss(150));

    // Zoomed into steps 20..60 (not the tail): new rows do not move the view.
    loss->setXRange(20, 60);
    QTRY_COMPARE(loss->drawn(0).x.front(), 20.0);
    dash.refresh();
    QTest::qWait(50);
    QCOMPARE(loss->xRange().first, 20.0);
    QCOMPARE(loss->xRange().second, 60.0);
  }

  void overlayTwoRuns() {
    QTemporaryDir dir;
    write_small_run(dir.filePath("td.db"), dir.filePath("a.jsonl"), "a", 120);
    write_small_run(dir.filePath("td.db"), dir.filePath("b.jsonl"), "b", 80, 5000.0);
    StoreClient client(dir.filePath("td.db"));
    Dashboard dash(&client);
    dash.resize(1200, 900);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    dash.setRuns({"a", "b"});
    ChartView* loss = dash.chart("loss");
    QTRY_COMPARE(loss->seriesCount(), 4);
    const QStringList labels = loss->legendLabels();
    QCOMPARE(labels, (QStringList{"a · train loss", "a · val loss", "b · train loss", "b · val loss"}));
    const QList<QColor> colours = loss->legendColors();
    QCOMPARE(colours[0], colours[1]);  // one colour per run
    QCOMPARE(colours[2], colours[3]);
    QVERIFY(colours[0] != colours[2]);
    // Both drawn, over the union of their steps.
    QTRY_COMPARE(loss->drawn(indexOf(loss, "b", "loss")).x.size(), size_t(80));
    QTRY_COMPARE(loss->drawn(indexOf(loss, "a", "loss")).x.size(), size_t(120));
    QCOMPARE(loss->xRange().second, 120.0 + 0.02 * 119);
    // Back to one run: colours per metric, one legend entry per metric.
    dash.setRuns({"b"});
    QTRY_COMPARE(loss->legendLabels(), (QStringList{"train loss", "val loss"}));
    QVERIFY(loss->legendColors()[0] != loss->legendColors()[1]);

    // An unknown run: its error beside the controls, the charts empty with their sentence.
    dash.setRuns({"gone"});
    QTRY_VERIFY(dash.errorText().contains("gone"));
    QCOMPARE(loss->seriesCount(), 0);
    QVERIFY(loss->emptyTextVisible());
  }

  // The charts' lines come from the step event's field table (engine/metrics/step_fields.h):
  // every charted field names a chart the page has, and the page draws what it drew before the
  // table (metric, side, style, per rank, smoothed), in the same order.
  void chartLinesComeFromTheFieldTable() {
    Dashboard dash(nullptr);
    for (const td::EventField& f : td::kEventFields)
      if (f.chart.chart) QVERIFY2(dash.chart(QString::fromLatin1(f.chart.chart)), f.chart.chart);
    auto lines = [](const QString& chart) {
      QStringList out;
      for (const MetricSpec& m : Dashboard::chartMetrics(chart))
        out << QStringLiteral("%1 %2 %3 %4 %5 %6")
                   .arg(m.metric, m.label, m.style == SeriesStyle::Markers ? "markers" : "line", m.side == YSide::Right ? "right" : "left",
                        m.all_ranks ? "ranks" : "rank0", m.smooth ? "smooth" : "exact");
      return out;
    };
    QCOMPARE(lines("loss"), (QStringList{"loss train loss line left rank0 smooth", "val_loss val loss markers left rank0 exact"}));
    QCOMPARE(lines("throughput"),
             (QStringList{"tokens_per_s tokens/s line left rank0 smooth", "rank_tokens_per_s tokens/s line left ranks smooth"}));
    QCOMPARE(lines("memory"), (QStringList{"rss_bytes process RSS line left ranks exact", "cpu_util_pct process CPU line right rank0 smooth",
                                           "gpu_mem_bytes GPU memory line left ranks exact",
                                           "rank_cpu_util_pct process CPU line right ranks smooth"}));
    QCOMPARE(lines("network"), (QStringList{"comm_bytes_sent collective bytes sent line left ranks exact",
                                            "all_reduce_bytes all-reduce bytes line left ranks exact",
                                            "reduce_scatter_bytes reduce-scatter bytes line left ranks exact",
                                            "all_gather_bytes all-gather bytes line left ranks exact",
                                            "busbw_gb_s bus bandwidth line right ranks smooth"}));
    QCOMPARE(lines("optimizer"),
             (QStringList{"lr lr line left rank0 exact", "grad_norm grad norm (before clipping) line right rank0 smooth"}));
    QCOMPARE(lines("gpu"), (QStringList{"gpu_util_pct GPU utilization line left rank0 smooth",
                                        "gpu_power_w GPU power line right rank0 smooth",
                                        "rank_gpu_util_pct GPU utilization line left ranks smooth",
                                        "rank_gpu_power_w GPU power line right ranks smooth"}));
  }

  // The GPU chart draws NVML's utilization and power of a run's steps as stored; a run without
  // them (a CPU run) leaves the chart empty with its reason.
  void gpuChart() {
    QTemporaryDir dir;
    const QString events = dir.filePath("events.jsonl");
    {
      std::string text = R"({"type":"run_start","v":1,"t":1000,"run_id":"g","attempt":0,"rank":0,"host":"h"})" "\n";
      for (int s = 1; s <= 20; ++s)
        text += R"({"type":"step","v":1,"t":)" + std::to_string(1000 + s) + R"(,"run_id":"g","attempt":0,"rank":0,"step":)" +
                std::to_string(s) + R"(,"loss":3.5,"tokens_per_s":2000,"gpu_util_pct":)" + std::to_string(50 + s) +
                R"(,"gpu_power_w":)" + std::to_string(300 + 2 * s) + "}\n";
      QFile f(events);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(text.data(), qint64(text.size()));
      f.close();
      td::store::Store st(dir.filePath("td.db").toStdString());
      td::store::Ingester ing(st, events.toStdString(), "e");
      ing.poll_all();
    }
    StoreClient client(dir.filePath("td.db"));
    Dashboard dash(&client);
    dash.resize(1400, 1000);
    dash.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dash));
    ChartView* gpu = dash.chart("gpu");
    QVERIFY(gpu);
    QVERIFY(gpu->emptyTextVisible());
    dash.setRuns({"g"});
    QTRY_COMPARE(gpu->seriesCount(), 2);
    QCOMPARE(gpu->legendLabels(), (QStringList{"GPU utilization", "GPU power"}));
    const int u = indexOf(gpu, "g", "gpu_util_pct"), p = indexOf(gpu, "g", "gpu_power_w");
    QVERIFY(u >= 0 && p >= 0);
    QTRY_COMPARE(gpu->drawn(u).line.size(), size_t(20));
    QTRY_COMPARE(gpu->drawn(p).line.size(), size_t(20));
    QCOMPARE(gpu->drawn(u).line[9], 60.0);   // step 10: 50 + 10 %
    QCOMPARE(gpu->drawn(p).line[19], 340.0);  // step 20: 300 + 2 * 20 W
    QVERIFY(!gpu->emptyTextVisible());
  }
};

QTEST_MAIN(TestDashboard)
#include "test_dashboard.moc"
