// The Design and Data pages together in the real main window (offscreen) with the real engine:
// a first start without a dataset leaves data.path empty and says to prepare one; a BPE dataset
// prepared on the Data page sets the design's vocab_size to its tokenizer's and the run starts
// and completes; the Infrastructure tab is readable at the window's default size, and a tiny
// token budget's time has a unit that shows it. Set TD_DESIGN_SHOTS to a folder to keep
// screenshots of the pages checked.
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QTabWidget>

#include "app_fixture.h"
#include "gui/app/main_window.h"
#include "gui/runs/run_targets.h"
#include "gui/core/store_client.h"
#include "gui/data/data_panel.h"
#include "gui/designer/infra_panel.h"
#include "gui/designer/model_designer.h"
#include "gui/runs/experiments_model.h"

using namespace td::gui;
using namespace tdapptest;

namespace {

void shot(QWidget* w, const QString& name) {
  const QByteArray dir = qgetenv("TD_DESIGN_SHOTS");
  if (dir.isEmpty()) return;
  QDir().mkpath(QString::fromLocal8Bit(dir));
  w->grab().save(QDir(QString::fromLocal8Bit(dir)).filePath(name + ".png"));
}

}  // namespace

class TestDesignPage : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  QString db(const char* name) const { return dir_.filePath(QString::fromLatin1(name)); }

 private slots:
  void initTestCase() { isolate(dir_); }

  void noDatasetYetLeavesDataPathEmpty() {
    MainWindow w(db("nodata.db"));  // no demo dataset
    w.setCloseAction(MainWindow::CloseAction::LeaveRunning);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QTRY_COMPARE(w.experiments()->experimentNames(), QStringList{"demo"});
    QTRY_VERIFY(w.designer()->config()["model"].value("n_layer", 0) == 4);  // the demo config
    const auto cfg = w.designer()->config();
    // Not the demo config's path relative to the source tree's resources/.
    QVERIFY2(!cfg["data"].contains("path"), cfg.dump().c_str());
    QCOMPARE(w.designer()->errorFor("data.path"), QStringLiteral("missing: prepare a dataset first (Data page), or choose one here"));
    auto* path = qobject_cast<QComboBox*>(w.designer()->fieldEditor("data.path"));
    QVERIFY(path->currentText().isEmpty());
    QCOMPARE(path->lineEdit()->placeholderText(), QStringLiteral("prepare a dataset first (Data page)"));
    QVERIFY(!w.findChild<QPushButton*>("start_run")->isEnabled());
    // The device list has at least this machine's CPU (the engine was asked for its GPUs).
    auto* device = qobject_cast<QComboBox*>(w.designer()->fieldEditor("train.device"));
    QCOMPARE(device->itemData(0).toString(), QStringLiteral("cpu"));
  }

  void bpeDatasetSetsTheVocabAndTheRunStarts() {
    // A corpus BPE can learn 300 pieces from (256 bytes, 3 special tokens, 41 merges).
    QDir().mkpath(dir_.filePath("bpe-corpus"));
    {
      QFile f(dir_.filePath("bpe-corpus/text.txt"));
      QVERIFY(f.open(QIODevice::WriteOnly));
      for (int i = 0; i < 800; ++i)
        f.write(QStringLiteral("Line %1: the quick brown fox jumps over the lazy dog; pack my box with five dozen jugs.\n")
                    .arg(i)
                    .toUtf8());
    }
    MainWindow w(db("bpe.db"));
    w.setCloseAction(MainWindow::CloseAction::StopRuns);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QTRY_COMPARE(w.experiments()->experimentNames(), QStringList{"demo"});
    // A design of a tiny model, still at the byte tokenizer's 257 ids.
    nlohmann::json tiny = tdguitest::tiny_config(QString(), 6);
    tiny["data"].erase("path");
    w.designer()->setConfig(tiny);
    QCOMPARE(w.designer()->config()["model"]["vocab_size"], nlohmann::json(257));

    DataPanel* data = w.dataPanel();
    // Only this corpus (a first start may have offered Debian's fortunes).
    auto* sources = data->findChild<QListWidget*>("sourceList");
    sources->selectAll();
    QTest::mouseClick(data->findChild<QPushButton*>("removeSourceButton"), Qt::LeftButton);
    QVERIFY(data->sources().isEmpty());
    data->addSource(dir_.filePath("bpe-corpus"));
    data->setTokenizer("bpe", 300);
    data->setOutputDir(dir_.filePath("bpe-dataset"));
    QSignalSpy ready(data, &DataPanel::datasetReady);
    QVERIFY(data->startPrepare());
    QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1 || !data->isPreparing(), 120000);
    QVERIFY2(ready.count() == 1, qPrintable(data->findChild<QLabel*>("statusLabel")->text()));
    QCOMPARE(ready.at(0).at(1).toInt(), 300);
    // The design follows: data.path and vocab_size from the dataset's tokenizer.
    const auto cfg = w.designer()->config();
    QCOMPARE(QString::fromStdString(cfg["data"]["path"].get<std::string>()), dir_.filePath("bpe-dataset"));
    QCOMPARE(cfg["model"]["vocab_size"], nlohmann::json(300));
    QVERIFY2(w.designer()->isValid(), qPrintable(QStringList(w.designer()->errors().values()).join("; ")));
    // Registered and offered by the designer with its vocab_size; typing 257 is marked.
    QTRY_COMPARE(data->datasetVocabSize(dir_.filePath("bpe-dataset")), 300);
    auto* vocab = qobject_cast<QLineEdit*>(w.designer()->fieldEditor("model.vocab_size"));
    vocab->selectAll();
    QTest::keyClicks(vocab, "257");
    QVERIFY(w.designer()->errorFor("model.vocab_size").contains("set 300"));
    QVERIFY(!w.findChild<QPushButton*>("start_run")->isEnabled());
    // "Use in design" on the Data page puts it right again.
    QVERIFY(data->selectDataset(dir_.filePath("bpe-dataset")));
    QTest::mouseClick(data->findChild<QPushButton*>("useDatasetButton"), Qt::LeftButton);
    QCOMPARE(w.designer()->config()["model"]["vocab_size"], nlohmann::json(300));

    // The engine accepts it: the run trains to its end on the BPE dataset.
    auto* start = w.findChild<QPushButton*>("start_run");
    QVERIFY(start->isEnabled());
    QSignalSpy started(w.runTargets(), &td::gui::RunTarget::runStarted);
    QSignalSpy ended(w.runTargets(), &td::gui::RunTarget::runEnded);
    QTest::mouseClick(start, Qt::LeftButton);
    QCOMPARE(started.count(), 1);
    QCOMPARE(wait_ended(ended, started.at(0).at(0).toString()), QString("completed"));
  }

  void infrastructureTabReadableAtTheDefaultSize() {
    MainWindow w(db("infra.db"));
    w.setCloseAction(MainWindow::CloseAction::LeaveRunning);
    QCOMPARE(w.size(), MainWindow::defaultSize());  // no saved geometry
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QTRY_COMPARE(w.experiments()->experimentNames(), QStringList{"demo"});
    w.pages()->setCurrentIndex(MainWindow::DesignPage);
    auto* tabs = w.designer()->findChild<QTabWidget*>("estimate_tabs");
    QVERIFY(tabs);
    tabs->setCurrentIndex(1);
    InfraPanel* infra = w.designer()->infraPanel();
    QTRY_VERIFY(infra->plan().has_value());
    QApplication::processEvents();
    shot(&w, "design_infrastructure_default_size");
    auto* area = qobject_cast<QScrollArea*>(infra->parentWidget()->parentWidget());
    QVERIFY(area);
    QWidget* viewport = area->viewport();
    // Nothing to scroll sideways to: every input and figure lies inside the visible width.
    QCOMPARE(area->horizontalScrollBar()->maximum(), 0);
    QVERIFY2(infra->width() <= viewport->width(), qPrintable(QStringLiteral("%1 > %2").arg(infra->width()).arg(viewport->width())));
    int checked = 0;
    for (QWidget* child : infra->findChildren<QWidget*>()) {
      if (!child->objectName().startsWith(QLatin1String("infra_")) || !child->isVisibleTo(infra)) continue;
      const QRect r(child->mapTo(viewport, QPoint(0, 0)), child->size());
      QVERIFY2(r.left() >= 0 && r.right() < viewport->width(),
               qPrintable(QStringLiteral("%1 spans x %2..%3 of a %4 px wide tab")
                              .arg(child->objectName())
                              .arg(r.left())
                              .arg(r.right())
                              .arg(viewport->width())));
      if (auto* label = qobject_cast<QLabel*>(child); label && !label->text().isEmpty()) {
        // The text fits: one line of it, or wrapped within the label.
        const QFontMetrics fm(label->font());
        const bool fits = fm.horizontalAdvance(label->text()) <= label->contentsRect().width() ||
                          (label->wordWrap() && label->heightForWidth(label->contentsRect().width()) <= label->height());
        QVERIFY2(fits, qPrintable(label->objectName() + ": " + label->text()));
      }
      ++checked;
    }
    QVERIFY(checked >= 20);  // 7 inputs, the device line, 4 memory rows, 9 figures, bars, table

    // A tiny budget on 8 devices: its time has a unit that shows it, not "0 s".
    auto* tokens = infra->findChild<QLineEdit*>("infra_tokens");
    tokens->setText(QStringLiteral("1000"));
    const QString time = infra->findChild<QLabel*>("infra_time")->text();
    QVERIFY2(QRegularExpression(QStringLiteral("^[0-9.]+ (ns|µs|ms)$")).match(time).hasMatch(), qPrintable(time));
    QVERIFY2(QRegularExpression(QStringLiteral("^[0-9.]+ (ns|µs|ms)$"))
                 .match(infra->findChild<QLabel*>("infra_step_time")->text())
                 .hasMatch(),
             qPrintable(infra->findChild<QLabel*>("infra_step_time")->text()));
  }
};

QTEST_MAIN(TestDesignPage)
#include "test_design_page.moc"
