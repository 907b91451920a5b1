// Screenshots for people to look at (not compared with anything): the main window, the
// designer, the dashboard during a run and the compare view, as PNGs in
// <build>/tests/screenshots/. The test checks that each was written and is not blank.
#include <QDir>
#include <QImage>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QTreeView>

#include "app_fixture.h"
#include "gui/app/main_window.h"
#include "gui/runs/run_targets.h"
#include "gui/app/checkpoints_tab.h"
#include "gui/app/run_view.h"
#include "gui/app/sidebar.h"
#include "gui/charts/dashboard.h"
#include "gui/designer/model_designer.h"
#include "gui/look/theme.h"
#include "gui/runs/experiments_model.h"

using namespace td::gui;
using namespace tdapptest;

class TestScreenshots : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_;

  void shoot(QWidget* w, const QString& name) {
    QApplication::processEvents();
    QTest::qWait(300);  // queued replots
    const QString path = QDir(TD_SCREENSHOT_DIR).filePath(name + ".png");
    const QImage img = w->grab().toImage();
    QVERIFY(img.save(path));
    // Not blank: a window shows many colours.
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 7)
      for (int x = 0; x < img.width(); x += 7) colours.insert(img.pixel(x, y));
    QVERIFY2(colours.size() > 20, qPrintable(name));
    qInfo("screenshot: %s", qPrintable(path));
  }

 private slots:
  void initTestCase() {
    isolate(dir_);
    QDir().mkpath(TD_SCREENSHOT_DIR);
    data_ = tdguitest::prepare_tiny_dataset(dir_.path());
    QVERIFY(!data_.isEmpty());
  }

  void screenshots() {
    MainWindow w(dir_.filePath("shots.db"), data_);
    w.setCloseAction(MainWindow::CloseAction::StopRuns);
    w.resize(1500, 950);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QTRY_COMPARE(w.experiments()->experimentNames(), QStringList{"demo"});
    QTRY_VERIFY(w.designer()->isValid());
    shoot(&w, "main_window");
    w.pages()->setCurrentIndex(MainWindow::DesignPage);
    shoot(w.pages()->currentWidget(), "designer");

    // A completed run with evaluations and samples, then one caught while training.
    QSignalSpy ended(w.runTargets(), &td::gui::RunTarget::runEnded);
    QSignalSpy ingested(w.runTargets(), &td::gui::RunTarget::runIngested);
    auto cfg = tdguitest::tiny_config(data_, 150);
    cfg["train"]["sample_interval"] = 50;
    cfg["train"]["sample_tokens"] = 48;
    cfg["train"]["checkpoint_interval"] = 50;  // 50 (pruned: keep_checkpoints 2), 100, 150
    w.designer()->setConfig(cfg);
    QString error;
    const QString a = w.startRun(&error);
    QVERIFY2(!a.isEmpty(), qPrintable(error));
    QCOMPARE(wait_ended(ended, a), QString("completed"));
    // The run page's Checkpoints tab (docs/guide.md "Use a checkpoint in the workbench").
    CheckpointsTab* ckpts = w.runView()->checkpointsTab();
    auto* bottom = qobject_cast<QTabWidget*>(ckpts->parentWidget() ? ckpts->parentWidget()->parentWidget() : nullptr);
    QVERIFY2(bottom, "the Checkpoints tab sits in the run page's bottom tabs");
    bottom->setCurrentWidget(ckpts);
    QTRY_COMPARE_WITH_TIMEOUT(ckpts->rows().size(), 3, tdguitest::kSlowMs);
    // The tab showed the run from its start: its "none yet" note went with the first checkpoint.
    QVERIFY2(!ckpts->noteText().contains("No checkpoint yet"), qPrintable(ckpts->noteText()));
    // Room for the rows (the user drags the page's splitter the same way).
    if (auto* split = qobject_cast<QSplitter*>(bottom->parentWidget())) split->setSizes({500, 300});
    ckpts->table()->selectRow(2);
    shoot(&w, "checkpoints");
    bottom->setCurrentIndex(0);
    cfg["train"]["lr"] = 3e-3;
    cfg["train"]["steps"] = 1000000;
    w.designer()->setConfig(cfg);
    const QString b = w.startRun(&error);
    QVERIFY2(!b.isEmpty(), qPrintable(error));
    QVERIFY(wait_step(ingested, b, 120) >= 120);
    QTRY_VERIFY(w.experiments()->runIndex(b).isValid());  // the sidebar follows running runs
    QTest::qWait(400);
    shoot(&w, "dashboard_during_run");

    w.runTargets()->stop(b, nullptr);
    QCOMPARE(wait_ended(ended, b), QString("stopped"));
    QTRY_VERIFY(w.experiments()->runIndex(a).isValid() && w.experiments()->runIndex(b).isValid());
    w.showRuns({a, b});
    QTest::qWait(500);
    shoot(&w, "compare");

    // The same compare view in the dark theme (View > Theme > Dark).
    applyTheme(*qApp, Theme::Dark);
    QTest::qWait(300);
    shoot(&w, "compare_dark");
    applyTheme(*qApp, Theme::Light);
  }
};

QTEST_MAIN(TestScreenshots)
#include "test_screenshots.moc"
