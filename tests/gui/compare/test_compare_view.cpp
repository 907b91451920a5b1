// CompareView (Widgets, offscreen): two runs give the one differing field and the summary;
// three runs work; one run asks for more; sorting by a column header click; the charts widget.
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "compare_fixture.h"
#include "gui/compare/compare_model.h"
#include "gui/compare/compare_view.h"

using namespace td::gui;
using S = CompareSummaryModel;

class TestCompareView : public QObject {
  Q_OBJECT
 private slots:
  void twoRunsShowTheirDiffAndSummary() {
    QTemporaryDir dir;
    StoreClient client(test::makeCompareStore(dir.path()));
    CompareView view(&client);
    view.resize(1000, 700);
    view.show();
    auto* status = view.findChild<QLabel*>("diffStatus");
    QVERIFY(status);
    QCOMPARE(status->text(), QString("Select two or more runs to compare"));

    view.setRuns({"run-a", "run-b"});
    QTRY_COMPARE(view.diffModel()->rowCount(), 1);
    QTRY_VERIFY(!view.model()->isLoading());
    QCOMPARE(view.diffModel()->headerData(0, Qt::Vertical).toString(), QString("train.lr"));
    QCOMPARE(view.diffModel()->index(0, 0).data().toString(), QString("0.001"));
    QCOMPARE(view.diffModel()->index(0, 1).data().toString(), QString("0.002"));
    QCOMPARE(status->text(), QString("6 fields are equal (hidden)"));
    QCOMPARE(view.diffStatusText(), status->text());

    QAbstractItemModel* sm = view.summaryModel();
    QCOMPARE(sm->rowCount(), 2);
    QCOMPARE(sm->index(0, S::BestValLoss).data(Qt::UserRole).toDouble(), 2.8);
    QCOMPARE(sm->index(0, S::FinalLoss).data(Qt::UserRole).toDouble(), 2.9);
    QCOMPARE(sm->index(0, S::TokensSeen).data(Qt::UserRole).toLongLong(), 6144LL);
    QCOMPARE(sm->index(0, S::WallTime).data(Qt::UserRole).toDouble(), 75.0);
    QCOMPARE(sm->index(1, S::TokensSeen).data(Qt::UserRole).toLongLong(), 5120LL);
    QCOMPARE(sm->index(1, S::WallTime).data(Qt::UserRole).toDouble(), 50.0);

    // The diff tab shows the table; clicking the tokens/s header sorts by the raw number.
    auto* tabs = view.findChild<QTabWidget*>("compareTabs");
    QVERIFY(tabs);
    tabs->setCurrentIndex(1);
    auto* diff_table = view.findChild<QTableView*>("diffTable");
    QTRY_VERIFY(diff_table->isVisible());
    QCOMPARE(diff_table->model()->rowCount(), 1);
    tabs->setCurrentIndex(0);
    auto* table = view.findChild<QTableView*>("summaryTable");
    QVERIFY(table);
    QCOMPARE(table->model()->index(0, S::Run).data().toString(), QString("run-a"));  // given order
    QHeaderView* header = table->horizontalHeader();
    const int x = header->sectionViewportPosition(S::TokensPerS) + header->sectionSize(S::TokensPerS) / 2;
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, QPoint(x, header->height() / 2));
    QCOMPARE(header->sortIndicatorSection(), int(S::TokensPerS));
    const bool ascending = header->sortIndicatorOrder() == Qt::AscendingOrder;
    // run-b 1400 tokens/s < run-a 1950 tokens/s
    QCOMPARE(table->model()->index(0, S::Run).data().toString(), QString(ascending ? "run-b" : "run-a"));
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, QPoint(x, header->height() / 2));
    QCOMPARE(table->model()->index(0, S::Run).data().toString(), QString(ascending ? "run-a" : "run-b"));
  }

  void threeRuns() {
    QTemporaryDir dir;
    StoreClient client(test::makeCompareStore(dir.path()));
    CompareView view(&client);
    view.setRuns({"run-a", "run-b", "run-c"});
    QTRY_COMPARE(view.summaryModel()->rowCount(), 3);
    QTRY_VERIFY(!view.model()->isLoading());
    QCOMPARE(view.diffModel()->columnCount(), 3);
    QCOMPARE(view.diffModel()->rowCount(), 2);
    QCOMPARE(view.diffModel()->headerData(0, Qt::Vertical).toString(), QString("model.d_model"));
    QCOMPARE(view.diffModel()->index(0, 2).data().toString(), QString("128"));
    QCOMPARE(view.diffStatusText(), QString("5 fields are equal (hidden)"));
    QCOMPARE(view.summaryModel()->index(2, S::FinalLoss).data(Qt::UserRole).toDouble(), 4.5);
  }

  void oneRunAsksForMore() {
    QTemporaryDir dir;
    StoreClient client(test::makeCompareStore(dir.path()));
    CompareView view(&client);
    view.show();
    view.setRuns({"run-a", "run-b"});
    QTRY_COMPARE(view.diffModel()->rowCount(), 1);
    view.setRuns({"run-a"});
    QTRY_VERIFY(!view.model()->isLoading());
    QCOMPARE(view.diffStatusText(), QString("Select two or more runs to compare"));
    QCOMPARE(view.diffModel()->rowCount(), 0);
    QVERIFY(!view.findChild<QTableView*>("diffTable")->isVisibleTo(&view));
    QCOMPARE(view.summaryModel()->rowCount(), 1);  // its numbers are still shown
  }

  void chartsOnTopAndStoreSwitch() {
    QTemporaryDir dir;
    StoreClient client(test::makeCompareStore(dir.path()));
    CompareView view(nullptr);
    view.resize(900, 700);
    view.show();
    auto* charts = new QLabel("charts");
    charts->setObjectName("fakeCharts");
    view.setChartsWidget(charts);
    QCOMPARE(view.chartsWidget(), charts);
    QVERIFY(charts->isVisibleTo(&view));
    auto* tabs = view.findChild<QTabWidget*>("compareTabs");
    QTRY_VERIFY(charts->mapTo(&view, QPoint(0, 0)).y() < tabs->mapTo(&view, QPoint(0, 0)).y());
    // Runs set before any store: nothing loads; the store comes later and they load.
    view.setRuns({"run-a", "run-b"});
    QCOMPARE(view.summaryModel()->rowCount(), 0);
    view.setStoreClient(&client);
    QTRY_COMPARE(view.summaryModel()->rowCount(), 2);
    QTRY_COMPARE(view.diffStatusText(), QString("6 fields are equal (hidden)"));
  }

  void unknownRunMessage() {
    QTemporaryDir dir;
    StoreClient client(test::makeCompareStore(dir.path()));
    CompareView view(&client);
    view.setRuns({"run-a", "gone"});
    QTRY_VERIFY(view.diffStatusText().contains("gone"));
    QVERIFY(view.diffStatusText().contains("Select two or more runs to compare"));
    QCOMPARE(view.summaryModel()->rowCount(), 1);
  }
};

QTEST_MAIN(TestCompareView)
#include "test_compare_view.moc"
