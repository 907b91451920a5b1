// Plan beside measured for runs in a store (gui/plan/run_plan.h, store/plan_measured.h): a
// two-rank CPU run written as events by hand and ingested by the store's Ingester; every
// planned, measured and error figure against a value computed by hand in the comments.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "engine/common/error.h"
#include "engine/model/gpt.h"
#include "gui/plan/run_plan.h"
#include "store/plan_measured.h"
#include "tests/gui/plan/run_plan_fixture.h"

namespace {

bool near(double a, double b, double rel = 1e-9) { return std::fabs(a - b) <= rel * std::fabs(b); }

}  // namespace

using namespace td::gui::test;

class TestRunPlan : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    makePlanRunStore(dir_.path());
  }

  void measuredFiguresFromTheStore() {
    td::store::Store st(dir_.filePath("td.db").toStdString());
    const td::store::MeasuredFigures f = td::store::measured_figures(st, "run-p");
    QCOMPARE(f.measured.world_size, 2);
    QCOMPARE(*f.measured.peak_flops, 1e11);
    QCOMPARE(*f.measured.peak_rss_bytes, 21e6);
    QVERIFY(!f.measured.gpu_mem_peak_bytes);
    QCOMPARE(*f.measured.tokens_per_s, 400000.0);
    QCOMPARE(*f.measured.comm_bytes_per_step, 140000.0);
    QVERIFY(near(*f.measured.busbw_bytes_per_s, 2.5e8));
    QCOMPARE(*f.measured.storage_read_bytes_per_s, 2e8);
    QVERIFY_THROWS_EXCEPTION(td::Error, td::store::measured_figures(st, "no-such-run"));
  }

  void measuredMfuIsTheMedianOfTheNewestCompletedRuns() {
    // Five runs (newest last): completed with final MFU 0.30, 0.10, failed with 0.90, completed
    // with 0.20 and 0.40. The median of the newest three completed ones (0.10, 0.20, 0.40) is
    // 0.20; of all four completed, sorted 0.10 0.20 0.30 0.40, the upper middle: 0.30. The failed
    // run's 0.90 never counts. A store without a completed run has none.
    QTemporaryDir dir;
    td::store::Store st(dir.filePath("mfu.db").toStdString());
    QVERIFY(!td::store::measured_mfu(st));
    const double mfu[] = {0.30, 0.10, 0.90, 0.20, 0.40};
    for (int r = 0; r < 5; ++r) {
      const std::string id = "mfu-" + std::to_string(r);
      std::string t = line(run_start(id, 1000 + 100 * r));
      for (int s = 1; s <= 3; ++s) {
        json j = step(id, 1000 + 100 * r + s, s, 5.0);
        j["mfu"] = s == 3 ? mfu[r] : 0.01;  // the last value is the run's
        t += line(j);
      }
      json end = ev("run_end", id, 1000 + 100 * r + 10);
      end["status"] = r == 2 ? "failed" : "completed";
      end["step"] = 3;
      t += line(end);
      const std::string path = dir.filePath(QString::fromStdString(id + ".jsonl")).toStdString();
      write_file(path, t);
      td::store::Ingester ing(st, path, "exp");
      ing.poll_all();
    }
    QCOMPARE(*td::store::measured_mfu(st, 3), 0.20);
    QCOMPARE(*td::store::measured_mfu(st), 0.30);
  }

  void rowsByHand() {
    td::store::Store st(dir_.filePath("td.db").toStdString());
    const td::gui::RunPlanComparison c = td::gui::comparePlanWithRun(st, "run-p");
    QVERIFY2(c.error.isEmpty(), qPrintable(c.error));
    QVERIFY(!c.gpu);
    QCOMPARE(c.mfu, 0.5);  // the designer's CPU default
    QCOMPARE(int(c.rows.size()), 5);
    // Memory: 16 N = 555520 bytes of weights, gradients and AdamW, the activations (the
    // engine's layout, gpt_activation_floats x 4) and the CPU attention scratch
    // B NH T T x 4 = 32768 bytes, + the 16 MiB process baseline; against 21e6.
    const double act = 4.0 * td::gpt_activation_floats(td::parse_config(engineConfig()).model, 4, 32);
    const double mem = 555520 + act + 32768 + 16 * 1048576;
    QCOMPARE(*c.rows[0].planned, mem);
    QCOMPARE(*c.rows[0].measured, 21e6);
    QVERIFY(near(*c.rows[0].error_pct, 100 * (mem - 21e6) / 21e6));
    // Tokens/s: 2 x 1e11 x 0.5 / 226752 = 441010.45 against 400000: +10.25 %.
    QVERIFY(near(*c.rows[1].planned, 1e11 / 226752.0));
    QVERIFY(near(*c.rows[1].error_pct, 100 * (1e11 / 226752.0 - 4e5) / 4e5));
    QCOMPARE(td::gui::formatErrorPercent(c.rows[1].error_pct), QStringLiteral("+10.3 %"));
    // Collective bytes: ring all-reduce of fp32 gradients, 2 (1/2) 4N = 138880 against 140000:
    // -0.8 %.
    QCOMPARE(*c.rows[2].planned, 138880.0);
    QCOMPARE(td::gui::formatErrorPercent(c.rows[2].error_pct), QStringLiteral("−0.8 %"));
    QCOMPARE(td::gui::formatPlanValue(c.rows[2].planned, c.rows[2].unit), QStringLiteral("135.6 KiB"));
    // Bus bandwidth to hide them in the planned step (256 tokens / 441010.45 tokens/s =
    // 0.58048 ms): 239.248 MB/s, against 250 MB/s reached: -4.3 %.
    QVERIFY(near(*c.rows[3].planned, 138880.0 * (1e11 / 226752.0) / 256));
    QCOMPARE(td::gui::formatPlanValue(c.rows[3].planned, c.rows[3].unit), QStringLiteral("239.2 MB/s"));
    QCOMPARE(td::gui::formatErrorPercent(c.rows[3].error_pct), QStringLiteral("−4.3 %"));
    // Storage read bandwidth per rank: the planned 441010.45 tokens/s over 2 ranks x 2 bytes per
    // token (V = 257: uint16 shards) = 441010.45 B/s, against the 200 MB/s rank 0's reads
    // reached: (441010.45 - 2e8) / 2e8 = -99.78 %.
    QCOMPARE(c.rows[4].key, std::string("storage"));
    QVERIFY(near(*c.rows[4].planned, 1e11 / 226752.0));
    QCOMPARE(*c.rows[4].measured, 2e8);
    QVERIFY(near(*c.rows[4].error_pct, 100 * (1e11 / 226752.0 - 2e8) / 2e8));
    QCOMPARE(td::gui::formatPlanValue(c.rows[4].planned, c.rows[4].unit), QStringLiteral("441.0 kB/s"));
    QCOMPARE(td::gui::formatPlanValue(c.rows[4].measured, c.rows[4].unit), QStringLiteral("200.0 MB/s"));
    QCOMPARE(td::gui::formatErrorPercent(c.rows[4].error_pct), QStringLiteral("−99.8 %"));
    QCOMPARE(td::gui::planRowLabel(c.rows[4]), QStringLiteral("Storage read bandwidth per rank (needed / reached)"));
    QCOMPARE(td::gui::planRowLabel(c.rows[0]), QStringLiteral("Memory per rank (peak RSS)"));
    QCOMPARE(td::gui::formatPlanValue(c.rows[1].measured, c.rows[1].unit), QStringLiteral("400.0 k tokens/s"));
  }

  void runWithAConfigThisEngineRefuses() {
    // The fixture's run_start config has no data.path: nothing to plan, and the error says why.
    td::store::Store st(dir_.filePath("td.db").toStdString());
    const std::string path = dir_.filePath("q.jsonl").toStdString();
    write_file(path, line(run_start("run-q", 5)) + line(step("run-q", 6, 1, 4.0)));
    td::store::Ingester ing(st, path, "exp");
    ing.poll_all();
    const td::gui::RunPlanComparison c = td::gui::comparePlanWithRun(st, "run-q");
    QVERIFY(c.rows.empty());
    QVERIFY(!c.error.isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestRunPlan)
#include "test_run_plan.moc"
