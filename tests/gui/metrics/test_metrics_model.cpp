// MetricsModel: facts of a run (tokens per step from the config, step -> elapsed seconds),
// envelopes at two widths checked by hand, superseded requests cancelled, equal requests
// dropped, CSV export of the whole run, and ema() against hand-computed values.
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <thread>

#include "chart_fixture.h"
#include "gui/metrics/metrics_model.h"

using namespace td::gui;
using namespace td::gui::test;

class TestMetricsModel : public QObject {
  Q_OBJECT
 private slots:
  void factsOfASmallRun() {
    QTemporaryDir dir;
    write_small_run(dir.filePath("td.db"), dir.filePath("events.jsonl"), "s", 200);
    StoreClient client(dir.filePath("td.db"));
    MetricsModel model(&client);
    QSignalSpy ready(&model, &MetricsModel::factsReady);
    model.requestFacts("s");
    QVERIFY(model.factsPending("s"));
    QTRY_COMPARE(ready.count(), 1);
    const RunFacts* f = model.facts("s");
    QVERIFY(f);
    QCOMPARE(f->tokens_per_step, 512.0);  // seq_len 64 * micro_batch 4 * grad_accum 2
    QCOMPARE(f->last_step.value(), int64_t(200));
    QVERIFY(f->find("loss"));
    QCOMPARE(f->find("loss")->count, int64_t(200));
    QCOMPARE(f->find("val_loss")->first_step, int64_t(50));
    QVERIFY(!f->find("comm_bytes"));
    // x by tokens: step * 512; by wall time: t = 1000 + step / 2, elapsed from step 1.
    QCOMPARE(f->toX(XAxis::Tokens, 3), 1536.0);
    QCOMPARE(f->toStep(XAxis::Tokens, 1536.0), 3.0);
    QCOMPARE(f->toX(XAxis::WallTime, 1), 0.0);
    QCOMPARE(f->toX(XAxis::WallTime, 101), 50.0);
    QCOMPARE(f->toX(XAxis::WallTime, 150.5), 74.75);
    QCOMPARE(f->toStep(XAxis::WallTime, 50.0), 101.0);
    QCOMPARE(f->toX(XAxis::Step, 7), 7.0);

    // An unknown run fails, no facts.
    QSignalSpy failed(&model, &MetricsModel::failed);
    model.requestFacts("nope");
    QTRY_COMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(0).toString().contains("nope"));
    QVERIFY(!model.facts("nope"));
  }

  void envelopesByHand() {
    QTemporaryDir dir;
    write_small_run(dir.filePath("td.db"), dir.filePath("events.jsonl"), "s", 200);
    StoreClient client(dir.filePath("td.db"));
    MetricsModel model(&client);
    QSignalSpy ready(&model, &MetricsModel::envelopeReady);
    const SeriesKey loss{"s", "loss", 0};
    model.requestEnvelope(loss, 1, 200, 1000);
    QTRY_COMPARE(ready.count(), 1);
    QCOMPARE(ready.at(0).at(0).value<SeriesKey>(), loss);
    const SeriesEnvelope* e = model.envelope(loss);
    QVERIFY(e->env.raw());
    QCOMPARE(e->env.size(), size_t(200));
    QCOMPARE(e->env.buckets[9].step_min, int64_t(10));
    QCOMPARE(e->env.buckets[9].v_first, small_loss(10));

    // 10 columns: level 0 (16 steps) has buckets 0..12 (<= 2 x 10), merged in pairs: 7
    // buckets of 32 steps; bucket 0 holds steps 1..31.
    model.requestEnvelope(loss, 1, 200, 10);
    QTRY_COMPARE(ready.count(), 2);
    e = model.envelope(loss);
    QCOMPARE(e->env.level, 0);
    QCOMPARE(e->env.bucket_steps, int64_t(32));
    QCOMPARE(e->env.size(), size_t(7));
    QCOMPARE(e->env.buckets[0].n, int64_t(31));
    QCOMPARE(e->env.buckets[0].v_max, small_loss(1));
    QCOMPARE(e->env.buckets[0].v_min, small_loss(31));
    QCOMPARE(e->width, 10);

    // The same request again is dropped: no job.
    model.requestEnvelope(loss, 1, 200, 10);
    QCOMPARE(model.pendingRequests(), 0);
    model.requestEnvelope(loss, 1, 200, 10, /*force=*/true);
    QCOMPARE(model.pendingRequests(), 1);
    QTRY_COMPARE(ready.count(), 3);
  }

  void supersededRequestsAreCancelled() {
    QTemporaryDir dir;
    write_small_run(dir.filePath("td.db"), dir.filePath("events.jsonl"), "s", 200);
    StoreClient client(dir.filePath("td.db"));
    MetricsModel model(&client);
    QSignalSpy ready(&model, &MetricsModel::envelopeReady);
    // Hold the store thread so the requests below queue behind this job.
    std::atomic<bool> release{false};
    client.exec(this, [&](td::store::Store&) {
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    const SeriesKey loss{"s", "loss", 0};
    model.requestEnvelope(loss, 1, 200, 500);
    model.requestEnvelope(loss, 10, 20, 500);
    model.requestEnvelope(loss, 30, 39, 500);
    release = true;
    QVERIFY(client.waitIdle());
    QCOMPARE(ready.count(), 1);  // only the last one ran
    const SeriesEnvelope* e = model.envelope(loss);
    QCOMPARE(e->step_lo, int64_t(30));
    QCOMPARE(e->env.size(), size_t(10));
    QCOMPARE(e->env.buckets[0].v_first, small_loss(30));
    QCOMPARE(model.pendingRequests(), 0);

    // A new store forgets everything.
    model.setStoreClient(nullptr);
    QVERIFY(!model.envelope(loss));
  }

  void exportWholeRun() {
    QTemporaryDir dir;
    write_small_run(dir.filePath("td.db"), dir.filePath("events.jsonl"), "s", 20);
    StoreClient client(dir.filePath("td.db"));
    MetricsModel model(&client);
    QSignalSpy done(&model, &MetricsModel::exportFinished);
    model.exportRunCsv({"s"}, dir.filePath("all.csv"));
    QTRY_COMPARE(done.count(), 1);
    QCOMPARE(done.at(0).at(2).toString(), QString());
    QCOMPARE(done.at(0).at(1).toLongLong(), qint64(20 * 6));  // 6 numeric fields per step line
    QFile f(dir.filePath("all.csv"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().split('\n');
    QCOMPARE(lines.at(0), QByteArray("step,rank,attempt,t,name,value"));
    QVERIFY(lines.contains(QByteArray("1,0,0,1000.5,loss,4.99")));
  }

  void emaByHand() {
    // s0 = y0; s_i = w s_{i-1} + (1 - w) y_i.
    const std::vector<double> y{1, 2, 3, 10};
    const std::vector<double> s = ema(y, 0.5);
    QCOMPARE(s, (std::vector<double>{1, 1.5, 2.25, 6.125}));
    QCOMPARE(ema(y, 0.0), y);
    const std::vector<double> t = ema({4, NAN, 8}, 0.25);
    QCOMPARE(t[0], 4.0);
    QVERIFY(std::isnan(t[1]));
    QCOMPARE(t[2], 0.25 * 4 + 0.75 * 8);
    QCOMPARE(tokens_per_step_from_config(R"({"model":{"seq_len":128},"train":{"micro_batch":8,"grad_accum":4}})", 2),
             8192.0);
    QCOMPARE(tokens_per_step_from_config("{}", 1), 0.0);
  }
};

QTEST_GUILESS_MAIN(TestMetricsModel)
#include "test_metrics_model.moc"
