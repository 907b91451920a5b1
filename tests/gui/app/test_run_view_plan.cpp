// The run page's "Plan vs measured" tab (gui/app/run_view.h): for the hand-computed two-rank run
// of tests/gui/plan/run_plan_fixture.h, the table shows the planner's figures beside the
// measured ones with the error, and the note says which MFU the plan assumes. And the status
// line's facts: the malformed events lines the store skipped (issue 13, finding 5).
#include <QLabel>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/app/run_view.h"
#include "gui/core/store_client.h"
#include "gui/runs/run_controller.h"
#include "store/ingest.h"
#include "store/store.h"
#include "tests/gui/plan/run_plan_fixture.h"

class TestRunViewPlan : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void planTableOfARun() {
    QVERIFY(dir_.isValid());
    const QString db = td::gui::test::makePlanRunStore(dir_.path());
    td::gui::StoreClient client(db);
    td::gui::RunView view(&client, nullptr);  // runs shown from the store only
    view.setRun(QStringLiteral("run-p"));
    QVERIFY(client.waitIdle());
    QTableWidget* t = view.planTable();
    QCOMPARE(t->objectName(), QStringLiteral("run_plan_vs_measured"));
    QCOMPARE(t->rowCount(), 5);
    // Rows and figures: tests/gui/plan/test_run_plan.cpp computes each by hand.
    QCOMPARE(t->item(0, 0)->text(), QStringLiteral("Memory per rank (peak RSS)"));
    QCOMPARE(t->item(1, 0)->text(), QStringLiteral("Tokens per second"));
    QCOMPARE(t->item(1, 1)->text(), QStringLiteral("441.0 k tokens/s"));  // 2 x 1e11 x 0.5 / 226752
    QCOMPARE(t->item(1, 2)->text(), QStringLiteral("400.0 k tokens/s"));
    QCOMPARE(t->item(1, 3)->text(), QStringLiteral("+10.3 %"));
    QCOMPARE(t->item(2, 1)->text(), QStringLiteral("135.6 KiB"));  // 138880 bytes
    QCOMPARE(t->item(2, 3)->text(), QStringLiteral("−0.8 %"));
    QCOMPARE(t->item(3, 3)->text(), QStringLiteral("−4.3 %"));
    // Storage read bandwidth per rank: needed 441010.45 tokens/s / 2 ranks x 2 bytes, reached the
    // median 200 MB/s of steps 4..6 (tests/gui/plan/test_run_plan.cpp).
    QCOMPARE(t->item(4, 0)->text(), QStringLiteral("Storage read bandwidth per rank (needed / reached)"));
    QCOMPARE(t->item(4, 1)->text(), QStringLiteral("441.0 kB/s"));
    QCOMPARE(t->item(4, 2)->text(), QStringLiteral("200.0 MB/s"));
    QCOMPARE(t->item(4, 3)->text(), QStringLiteral("−99.8 %"));
    QVERIFY(!t->item(1, 1)->toolTip().isEmpty());  // the formula
    QVERIFY2(view.planBasisLabel()->text().contains(QStringLiteral("MFU 50 %")), qPrintable(view.planBasisLabel()->text()));
    // No run: an empty table.
    view.setRun(QString());
    QCOMPARE(t->rowCount(), 0);
  }

  void inputBoundLine() {
    using namespace td::gui::test;
    // run-p (tests/gui/plan/run_plan_fixture.h): steps 4..6 waited 3 x 10 of 3 x 100 ms for data
    // = 10 % >= 5 %: input-bound; reads the median 200 MB/s of those steps (180, 200, 240).
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString db = makePlanRunStore(dir.path());
    // run-fed: steps 4..8 of 100.25 ms each waited 4.9 ms: 24.5 of 501.25 ms = 4.89 % < 5 %: not
    // input-bound (its warm-up steps 1..3 waited 90 ms, left out).
    {
      td::store::Store st(db.toStdString());
      std::string t = line(run_start("run-fed", 2000));
      for (int s = 1; s <= 8; ++s) {
        json j = step("run-fed", 2000 + s, s, 3.0);
        j["data_wait_ms"] = s <= 3 ? 90.0 : 4.9;
        j["data_read_mb_s"] = 100.0;
        t += line(j);
      }
      const std::string path = dir.filePath("fed.jsonl").toStdString();
      write_file(path, t);
      td::store::Ingester(st, path, "exp").poll_all();
    }
    td::gui::StoreClient client(db);
    td::gui::RunView view(&client, nullptr);  // runs shown from the store only
    view.show();
    QLabel* marker = view.inputBoundLabel();
    QCOMPARE(marker->objectName(), QStringLiteral("run_input_bound"));
    QVERIFY(!marker->isVisible());
    view.setRun(QStringLiteral("run-p"));
    QVERIFY2(client.waitIdle(), "waited for run-p's store jobs to deliver");
    QVERIFY(marker->isVisible());
    QCOMPARE(marker->text(), QStringLiteral("⚠ Input-bound: the steps waited for data 10.0 % of their time (steps 4–6) · reads 200.0 MB/s"));
    QVERIFY2(marker->toolTip().contains(QStringLiteral("3 step(s): 30.0 ms of 300.0 ms")), qPrintable(marker->toolTip()));
    QVERIFY2(marker->toolTip().contains(QStringLiteral("from 5 %")), qPrintable(marker->toolTip()));
    // Another run, just under the limit: no line (the text is emptied once its figures arrived).
    view.setRun(QStringLiteral("run-fed"));
    QVERIFY(!marker->isVisible());
    QVERIFY2(client.waitIdle(), "waited for run-fed's store jobs to deliver");
    QVERIFY(!marker->isVisible());
    QVERIFY2(marker->text().isEmpty(), qPrintable(marker->text()));
    // Back to run-p: the line again; no run: none.
    view.setRun(QStringLiteral("run-p"));
    QVERIFY2(client.waitIdle(), "waited for run-p's store jobs to deliver again");
    QVERIFY(marker->isVisible());
    view.setRun(QString());
    QVERIFY(!marker->isVisible());
  }

  void statusLineCountsSkippedLines() {
    QVERIFY(dir_.isValid());
    const QString db = dir_.filePath("skip.db");
    const std::string events = dir_.filePath("skip.jsonl").toStdString();
    td::gui::test::write_file(events, "{\"type\":\"run_start\",\"v\":1,\"t\":10,\"run_id\":\"run-s\",\"attempt\":0}\n"
                                      "not json\n[1]\n"
                                      "{\"type\":\"step\",\"v\":1,\"t\":11,\"run_id\":\"run-s\",\"step\":1,\"loss\":2}\n");
    const std::string clean = dir_.filePath("clean.jsonl").toStdString();
    td::gui::test::write_file(clean, "{\"type\":\"step\",\"v\":1,\"t\":11,\"run_id\":\"run-c\",\"step\":4,\"loss\":2}\n");
    {
      td::store::Store st(db.toStdString());
      QCOMPARE(td::store::Ingester(st, events).poll_all().skipped, size_t(2));
      QCOMPARE(td::store::Ingester(st, clean).poll_all().skipped, size_t(0));
    }
    td::gui::StoreClient client(db);
    td::gui::RunView view(&client, nullptr);  // runs shown from the store only
    view.setRun(QStringLiteral("run-s"));
    QVERIFY(client.waitIdle());
    QTRY_VERIFY2(view.statusLabel()->text().contains(QStringLiteral("step 1")), qPrintable(view.statusLabel()->text()));
    QVERIFY2(view.statusLabel()->text().contains(QStringLiteral("2 malformed event line(s) skipped")),
             qPrintable(view.statusLabel()->text()));
    // A run without skipped lines says nothing of them.
    view.setRun(QStringLiteral("run-c"));
    QVERIFY(client.waitIdle());
    QTRY_VERIFY2(view.statusLabel()->text().contains(QStringLiteral("step 4")), qPrintable(view.statusLabel()->text()));
    QVERIFY2(!view.statusLabel()->text().contains(QStringLiteral("skipped")), qPrintable(view.statusLabel()->text()));
  }
};

QTEST_MAIN(TestRunViewPlan)
#include "test_run_view_plan.moc"
