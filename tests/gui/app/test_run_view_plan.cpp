// The run page's "Plan vs measured" tab (gui/app/run_view.h): for the hand-computed two-rank run
// of tests/gui/plan/run_plan_fixture.h, the table shows the planner's figures beside the
// measured ones with the error, and the note says which MFU the plan assumes.
#include <QLabel>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/app/run_view.h"
#include "gui/core/store_client.h"
#include "gui/runs/run_controller.h"
#include "tests/gui/plan/run_plan_fixture.h"

class TestRunViewPlan : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void planTableOfARun() {
    QVERIFY(dir_.isValid());
    const QString db = td::gui::test::makePlanRunStore(dir_.path());
    td::gui::StoreClient client(db);
    td::gui::RunController local(&client);
    td::gui::RunView view(&client, &local);
    view.setRun(QStringLiteral("run-p"));
    QVERIFY(client.waitIdle());
    QTableWidget* t = view.planTable();
    QCOMPARE(t->objectName(), QStringLiteral("run_plan_vs_measured"));
    QCOMPARE(t->rowCount(), 4);
    // Rows and figures: tests/gui/plan/test_run_plan.cpp computes each by hand.
    QCOMPARE(t->item(0, 0)->text(), QStringLiteral("Memory per rank (peak RSS)"));
    QCOMPARE(t->item(1, 0)->text(), QStringLiteral("Tokens per second"));
    QCOMPARE(t->item(1, 1)->text(), QStringLiteral("441.0 k tokens/s"));  // 2 x 1e11 x 0.5 / 226752
    QCOMPARE(t->item(1, 2)->text(), QStringLiteral("400.0 k tokens/s"));
    QCOMPARE(t->item(1, 3)->text(), QStringLiteral("+10.3 %"));
    QCOMPARE(t->item(2, 1)->text(), QStringLiteral("135.6 KiB"));  // 138880 bytes
    QCOMPARE(t->item(2, 3)->text(), QStringLiteral("−0.8 %"));
    QCOMPARE(t->item(3, 3)->text(), QStringLiteral("−4.3 %"));
    QVERIFY(!t->item(1, 1)->toolTip().isEmpty());  // the formula
    QVERIFY2(view.planBasisLabel()->text().contains(QStringLiteral("MFU 50 %")), qPrintable(view.planBasisLabel()->text()));
    // No run: an empty table.
    view.setRun(QString());
    QCOMPARE(t->rowCount(), 0);
  }
};

QTEST_MAIN(TestRunViewPlan)
#include "test_run_view_plan.moc"
