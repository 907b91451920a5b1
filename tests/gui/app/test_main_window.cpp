// The main flows clicked through the real main window (offscreen) with the real engine:
// first start with the demo experiment, a new experiment, a model field changing the estimate,
// an invalid value and its message, a tiny model run to completion (points on the loss chart,
// rows in the store), stop then resume, a run left running across a GUI restart and
// re-attached with no missing step, and two runs compared with their config diff.
#include <QComboBox>
#include <QLabel>
#include <QMenuBar>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTreeView>

#include "app_fixture.h"
#include "gui/app/main_window.h"
#include "gui/runs/run_targets.h"
#include "gui/app/run_view.h"
#include "gui/app/sidebar.h"
#include "gui/charts/chart_view.h"
#include "gui/cluster/cluster_designer.h"
#include "gui/cluster/cluster_list.h"
#include "gui/core/store_client.h"
#include "store/store.h"
#include "gui/charts/dashboard.h"
#include "gui/compare/compare_view.h"
#include "gui/designer/model_designer.h"
#include "gui/look/i18n.h"
#include "gui/runs/experiments_model.h"

using namespace td::gui;
using namespace tdapptest;

namespace {

void retype(QWidget* editor, const QString& text) {
  auto* edit = qobject_cast<QLineEdit*>(editor);
  QVERIFY2(edit, "designer fields are line edits");
  edit->selectAll();
  QTest::keyClick(edit, Qt::Key_Backspace);
  QTest::keyClicks(edit, text);
}

QString label(QWidget* root, const char* name) {
  auto* l = root->findChild<QLabel*>(QString::fromLatin1(name));
  return l ? l->text() : QStringLiteral("<no label %1>").arg(name);
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_;

  QString db(const char* name) const { return dir_.filePath(QString::fromLatin1(name)); }

  // Starts the designer's config (tiny, `steps`) from the Design page's button.
  QString start_tiny(MainWindow& w, int steps, int checkpoint_interval = 0) {
    w.designer()->setConfig(tdguitest::tiny_config(data_, steps, checkpoint_interval));
    auto* start = w.findChild<QPushButton*>("start_run");
    if (!start || !start->isEnabled()) return {};
    QSignalSpy started(w.runTargets(), &td::gui::RunTarget::runStarted);
    QTest::mouseClick(start, Qt::LeftButton);
    if (started.isEmpty()) return {};
    return started.at(0).at(0).toString();
  }

 private slots:
  void initTestCase() {
    isolate(dir_);
    data_ = tdguitest::prepare_tiny_dataset(dir_.path());
    QVERIFY(!data_.isEmpty());
  }

  void firstStartHasTheDemoExperiment() {
    MainWindow w(db("first.db"), data_);
    w.setCloseAction(MainWindow::CloseAction::LeaveRunning);
    // Until the store's experiments have loaded (they arrive through the event loop), Start
    // run is off and refused: the first start's demo design would replace a design set earlier
    // and the run would land outside the demo experiment (a race CI hit).
    QVERIFY(!w.isReady());
    QVERIFY(!w.findChild<QPushButton*>("start_run")->isEnabled());
    {
      QString error;
      QVERIFY(w.startRun(&error).isEmpty());
      QVERIFY2(error.contains("still opening"), qPrintable(error));
    }
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    // Ready means the demo experiment is there and selected: a run started now lands in it.
    QCOMPARE(w.experiments()->experimentNames(), QStringList{"demo"});
    QCOMPARE(w.sidebar()->currentExperiment(), QString("demo"));
    const auto cfg = w.designer()->config();
    QCOMPARE(cfg["model"]["n_layer"].get<int>(), 4);  // resources/configs/demo.json
    QCOMPARE(QString::fromStdString(cfg["data"]["path"].get<std::string>()), QFileInfo(data_).absoluteFilePath());
    QTRY_VERIFY(w.designer()->isValid());
    QVERIFY(w.findChild<QPushButton*>("start_run")->isEnabled());
    QCOMPARE(w.pages()->currentIndex(), (int)MainWindow::DesignPage);
    // New experiment from the sidebar.
    w.sidebar()->newExperiment("lr-sweep");
    QTRY_COMPARE(w.experiments()->experimentNames(), QStringList({"demo", "lr-sweep"}));
    QTRY_COMPARE(w.sidebar()->currentExperiment(), QString("lr-sweep"));
  }

  void switchingLanguageTranslatesTheWindow() {
    MainWindow w(db("lang.db"));
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QCOMPARE(w.menuBar()->actions().at(0)->text(), QString("&File"));
    QVERIFY(installTranslation(*qApp, "de"));
    QTRY_COMPARE(w.menuBar()->actions().at(0)->text(), QString("&Datei"));  // translations/traindeck_de.ts
    QCOMPARE(w.pages()->tabText(MainWindow::DesignPage), QString("Entwurf"));
    QCOMPARE(w.findChild<QPushButton*>("start_run")->text(), QString("Lauf starten"));
    QVERIFY(!installTranslation(*qApp, "en"));  // English: the source strings, no translator
    QTRY_COMPARE(w.menuBar()->actions().at(0)->text(), QString("&File"));
    QCOMPARE(w.findChild<QPushButton*>("start_run")->text(), QString("Start run"));
  }

  void designerEstimateAndInvalidValue() {
    MainWindow w(db("design.db"));
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    w.designer()->setConfig(tdguitest::tiny_config(data_, 10));
    // V=257, T=32, C=32, tied: wte 8224 + wpe 1024 + lnf 64 + 12704 per layer
    // (ln 2*64, qkv 3*32*32+96, proj 32*32+32, fc 4*32*32+128, proj 4*32*32+32).
    QTRY_VERIFY(label(w.designer(), "estimate_params").startsWith("22,016"));
    retype(w.designer()->fieldEditor("model.n_layer"), "2");
    QTRY_VERIFY2(label(w.designer(), "estimate_params").startsWith("34,720"),
                 qPrintable(label(w.designer(), "estimate_params")));
    retype(w.designer()->fieldEditor("model.n_head"), "5");  // 32 is not a multiple of 5
    QTRY_VERIFY(!w.designer()->isValid());
    QVERIFY2(w.designer()->errorFor("model.n_head").contains("multiple"), qPrintable(w.designer()->errorFor("model.n_head")));
    QVERIFY(w.designer()->fieldEditor("model.n_head")->property("invalid").toBool());
    QVERIFY(!w.findChild<QPushButton*>("start_run")->isEnabled());
    QString error;
    QVERIFY(w.startRun(&error).isEmpty());
    QVERIFY(error.contains("invalid"));
    retype(w.designer()->fieldEditor("model.n_head"), "4");
    QTRY_VERIFY(w.designer()->isValid());
    QVERIFY(w.findChild<QPushButton*>("start_run")->isEnabled());
  }

  void tinyRunToCompletionOnTheChart() {
    MainWindow w(db("run.db"));
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QSignalSpy ended(w.runTargets(), &td::gui::RunTarget::runEnded);
    const QString id = start_tiny(w, 40);
    QVERIFY(!id.isEmpty());
    QCOMPARE(w.pages()->currentWidget(), (QWidget*)w.runView());
    QCOMPARE(w.runView()->run(), id);
    QCOMPARE(wait_ended(ended, id), QString("completed"));
    const Rows r = loss_rows(w.storePath(), id);
    QCOMPARE(r.count, 40);
    ChartView* loss = w.runView()->dashboard()->chart("loss");
    QVERIFY(loss);
    loss->fitAll();
    const SeriesKey train{id, "loss", 0};
    QTRY_COMPARE(loss->seriesIndex(train) >= 0 ? (int)loss->drawn(loss->seriesIndex(train)).x.size() : -1, 40);
    // The chart's value at step 40 is the stored row's.
    td::store::Store s(w.storePath().toStdString());
    const double stored = s.metric_series(id.toStdString(), "loss", 0, 40, 40).value.at(0);
    const Readout at40 = loss->pointNear(40, loss->seriesIndex(train));
    QVERIFY(at40.valid && at40.raw);
    QCOMPARE(at40.step, (int64_t)40);
    QCOMPARE(at40.value, stored);
    QTRY_VERIFY2(w.runView()->statusLabel()->text().contains("completed"), qPrintable(w.runView()->statusLabel()->text()));
    QTRY_VERIFY(w.runView()->logView()->toPlainText().contains("step 40/40"));
    QTRY_VERIFY(w.experiments()->runIndex(id).isValid());
  }

  void stopThenResumeFromTheRunPage() {
    MainWindow w(db("resume.db"));
    w.setCloseAction(MainWindow::CloseAction::StopRuns);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QSignalSpy ended(w.runTargets(), &td::gui::RunTarget::runEnded);
    QSignalSpy ingested(w.runTargets(), &td::gui::RunTarget::runIngested);
    const QString id = start_tiny(w, 1000000);
    QVERIFY(!id.isEmpty());
    QVERIFY(wait_step(ingested, id, 8) >= 8);
    QTRY_VERIFY(w.runView()->stopButton()->isEnabled());
    QTest::mouseClick(w.runView()->stopButton(), Qt::LeftButton);
    QCOMPARE(wait_ended(ended, id), QString("stopped"));
    const Rows stopped = loss_rows(w.storePath(), id);
    QTRY_VERIFY(w.runView()->resumeButton()->isEnabled());
    ended.clear();
    QSignalSpy started(w.runTargets(), &td::gui::RunTarget::runStarted);
    QTest::mouseClick(w.runView()->resumeButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, tdguitest::kSlowMs);
    QVERIFY(wait_step(ingested, id, stopped.last + 5) >= stopped.last + 5);
    QTest::mouseClick(w.runView()->stopButton(), Qt::LeftButton);
    QCOMPARE(wait_ended(ended, id), QString("stopped"));
    const Rows r = loss_rows(w.storePath(), id);
    QVERIFY(r.last >= stopped.last + 5);
    QCOMPARE(r.first, 1);
    QCOMPARE(r.count, r.last);  // no step missing or doubled across stop and resume
  }

  // A second run beside another on this machine's CPU says both slow down, and by how much.
  void secondCpuRunSaysBothSlowDown() {
    MainWindow w(db("contention.db"));
    w.setCloseAction(MainWindow::CloseAction::StopRuns);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QSignalSpy ended(w.runTargets(), &td::gui::RunTarget::runEnded);
    QSignalSpy ingested(w.runTargets(), &td::gui::RunTarget::runIngested);
    const QString id = start_tiny(w, 1000000);
    QVERIFY(!id.isEmpty());
    QVERIFY(wait_step(ingested, id, 3) >= 3);
    QVERIFY(w.contentionNoteShown().isEmpty());  // the first had the CPU to itself
    const QString second = start_tiny(w, 20);
    QVERIFY(!second.isEmpty());
    QVERIFY2(w.contentionNoteShown().contains(QString("already train on this machine's CPU (%1)").arg(id)) &&
                 w.contentionNoteShown().contains("roughly 1/2 of its speed"),
             qPrintable(w.contentionNoteShown()));
    QCOMPARE(wait_ended(ended, second), QString("completed"));
    QString error;
    QVERIFY2(w.runTargets()->stop(id, &error), qPrintable(error));
    QCOMPARE(wait_ended(ended, id), QString("stopped"));
  }

  void runLeftRunningIsReattachedAfterRestart() {
    const QString store = db("reattach.db");
    QString id;
    qint64 before = 0;
    {
      MainWindow w(store);
      w.setCloseAction(MainWindow::CloseAction::LeaveRunning);
      w.show();
      QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
      QSignalSpy ingested(w.runTargets(), &td::gui::RunTarget::runIngested);
      id = start_tiny(w, 1000000, 1000000);
      QVERIFY(!id.isEmpty());
      before = wait_step(ingested, id, 5);
      QVERIFY(before >= 5);
      QVERIFY(w.close());
    }
    QTest::qWait(1000);  // the engine trains on with no window
    MainWindow w(store);
    w.setCloseAction(MainWindow::CloseAction::StopRuns);
    QSignalSpy attached(w.runTargets(), &td::gui::RunTarget::runAttached);
    QSignalSpy ingested(w.runTargets(), &td::gui::RunTarget::runIngested);
    QSignalSpy ended(w.runTargets(), &td::gui::RunTarget::runEnded);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QTRY_COMPARE_WITH_TIMEOUT(attached.count(), 1, tdguitest::kSlowMs);
    QCOMPARE(attached.at(0).at(0).toString(), id);
    QVERIFY(wait_step(ingested, id, before + 1) > before);
    w.showRuns({id});
    QTRY_VERIFY(w.runView()->stopButton()->isEnabled());
    QTest::mouseClick(w.runView()->stopButton(), Qt::LeftButton);
    QCOMPARE(wait_ended(ended, id), QString("stopped"));
    const Rows r = loss_rows(store, id);
    QCOMPARE(r.first, 1);
    QCOMPARE(r.count, r.last);  // nothing written while the GUI was closed is missing
  }

  void trainOnOffersSavedClusterNodesAndRoutesThere() {
    // A cluster saved in the store appears in "Train on" as one entry per node; starting there
    // goes to the remote controller (the Run page shows the deploy), and a node that refuses the
    // connection ends it with an error naming the node, never blocking the window.
    const QString path = db("clusters.db");
    {
      td::store::Store st(path.toStdString());
      st.save_cluster("lab", R"({"name":"lab","nodes":[{"name":"gpu1","host":"127.0.0.1","port":1,"gpus":2},)"
                             R"({"name":"cpu9","host":"127.0.0.1","port":1}]})");
      st.save_cluster("pair", R"({"name":"pair","nodes":[{"name":"a","host":"127.0.0.1","port":1},)"
                              R"({"name":"b","host":"127.0.0.1","port":1}]})");
    }
    MainWindow w(path, data_);
    w.setCloseAction(MainWindow::CloseAction::LeaveRunning);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    // A cluster of CPU nodes also trains on all of them as one run; "lab" mixes a GPU node and
    // a CPU node, which cannot be one run, so it offers its nodes one by one only.
    QTRY_COMPARE(w.trainOn()->count(), 6);
    QCOMPARE(w.trainOn()->itemText(0), ClusterList::localName());
    QCOMPARE(w.trainOn()->itemText(1), QString("lab / gpu1 (2 GPUs)"));
    QCOMPARE(w.trainOn()->itemText(2), QString("lab / cpu9 (CPU)"));
    QCOMPARE(w.trainOn()->itemText(3), QString("pair / all 2 nodes (2 ranks)"));
    QCOMPARE(w.trainOn()->itemText(5), QString("pair / b (CPU)"));
    QCOMPARE(w.pages()->tabText(MainWindow::ClustersPage), QString("Clusters"));

    w.trainOn()->setCurrentIndex(1);
    w.designer()->setConfig(tdguitest::tiny_config(data_, 20));
    QSignalSpy failed(w.runTargets(), &td::gui::RunTarget::startFailed);
    QSignalSpy local(w.runTargets(), &td::gui::RunTarget::runStarted);
    QString error;
    const QString id = w.startRun(&error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QCOMPARE(w.runView()->run(), id);
    QCOMPARE(w.pages()->currentIndex(), (int)MainWindow::RunPage);
    QTRY_VERIFY_WITH_TIMEOUT(!failed.isEmpty(), tdguitest::kSlowMs);
    QCOMPARE(failed.at(0).at(0).toString(), id);
    const QString message = failed.at(0).at(1).toString();
    QVERIFY2(message.contains("127.0.0.1:1"), qPrintable(message));
    QVERIFY(local.isEmpty());  // nothing started on this machine
  }

  void compareTwoRunsShowsTheDiff() {
    MainWindow w(db("compare.db"));
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QSignalSpy ended(w.runTargets(), &td::gui::RunTarget::runEnded);
    const QString a = start_tiny(w, 20);
    QCOMPARE(wait_ended(ended, a), QString("completed"));
    auto cfg = tdguitest::tiny_config(data_, 20);
    cfg["train"]["lr"] = 2e-3;
    w.designer()->setConfig(cfg);
    // The name beside Start run suggests what differs from the experiment's last run.
    QTRY_COMPARE(w.suggestedRunName(), QString("lr=0.002"));
    QCOMPARE(w.runNameField()->placeholderText(), QString("lr=0.002"));
    QSignalSpy started(w.runTargets(), &td::gui::RunTarget::runStarted);
    QTest::mouseClick(w.findChild<QPushButton*>("start_run"), Qt::LeftButton);
    QCOMPARE(started.count(), 1);
    const QString b = started.at(0).at(0).toString();
    QCOMPARE(wait_ended(ended, b), QString("completed"));
    QTRY_VERIFY(w.experiments()->runIndex(a).isValid() && w.experiments()->runIndex(b).isValid());
    // Select both in the sidebar: the Compare page opens with both runs.
    QTreeView* tree = w.sidebar()->view();
    QItemSelection sel;
    for (const QString& id : {a, b}) {
      const QModelIndex src = w.experiments()->runIndex(id);
      auto* proxy = static_cast<const QAbstractProxyModel*>(tree->model());
      const QModelIndex i = proxy->mapFromSource(src);
      sel.select(i, i.siblingAtColumn(ExperimentsModel::ColumnCount - 1));
    }
    tree->selectionModel()->select(sel, QItemSelectionModel::ClearAndSelect);
    QCOMPARE(w.pages()->currentWidget(), (QWidget*)w.compareView());
    QCOMPARE(w.compareDashboard()->runs().size(), 2);
    QAbstractItemModel* diff = w.compareView()->diffModel();
    QTRY_COMPARE(diff->rowCount(), 1);
    QCOMPARE(diff->headerData(0, Qt::Vertical).toString(), QString("train.lr"));
    QCOMPARE(diff->index(0, 0).data().toString(), QString("0.001"));
    QCOMPARE(diff->index(0, 1).data().toString(), QString("0.002"));
    QAbstractItemModel* summary = w.compareView()->summaryModel();
    QTRY_COMPARE(summary->rowCount(), 2);
    ChartView* loss = w.compareDashboard()->chart("loss");
    QTRY_COMPARE(loss->legendLabels().size() >= 2, true);
    // Run b carries that name: in the sidebar and the legends; run a (the first) its id.
    QCOMPARE(w.experiments()->runIndex(b).data().toString(), QString("lr=0.002"));
    QCOMPARE(w.experiments()->runIndex(a).data().toString(), a);
    QCOMPARE(diff->headerData(1, Qt::Horizontal).toString(), QString("lr=0.002"));  // the config diff's column
    QCOMPARE(diff->headerData(0, Qt::Horizontal).toString(), a);
    QTRY_VERIFY2(loss->legendLabels().contains("lr=0.002 · train loss"), qPrintable(loss->legendLabels().join(" | ")));
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
