// The run page's Card tab (gui/app/run_card_tab.h; issue 16 part 5) clicked through the real main
// window (offscreen) with the real engine: a tiny CPU run started from the Design page shows its
// card (seed, dataset with the hash sha256sum gives, tokens, engine, device, world size, place);
// Run again on the card starts a new run in the same experiment whose losses equal the first
// run's bit for bit, step by step. An edited manifest is said on the card before starting (the
// button reads "Run again anyway"); a dataset moved away turns the button off.
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>

#include <cstring>

#include "app_fixture.h"
#include "gui/app/main_window.h"
#include "gui/runs/run_targets.h"
#include "gui/app/run_card_tab.h"
#include "gui/app/run_view.h"
#include "gui/designer/model_designer.h"
#include "store/store.h"

using namespace td::gui;
using namespace tdapptest;

namespace {

QString sha256sum(const QString& path) {
  QProcess p;
  p.start(QStringLiteral("sha256sum"), {path});
  if (!p.waitForFinished(30000) || p.exitCode() != 0) return {};
  return QString::fromLatin1(p.readAllStandardOutput()).section(QLatin1Char(' '), 0, 0);
}

}  // namespace

class TestRunCardTab : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_;

 private slots:
  void initTestCase() {
    isolate(dir_);
    data_ = tdguitest::prepare_tiny_dataset(dir_.path());
    QVERIFY(!data_.isEmpty());
  }

  void runAgainFromTheCard() {
    MainWindow w(dir_.filePath("card.db"));
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QSignalSpy ended(w.runTargets(), &td::gui::RunTarget::runEnded);
    QSignalSpy started(w.runTargets(), &td::gui::RunTarget::runStarted);
    w.designer()->setConfig(tdguitest::tiny_config(data_, 20));
    auto* start = w.findChild<QPushButton*>("start_run");
    QTRY_VERIFY2(start && start->isEnabled(), "the Start run button never came on");
    QTest::mouseClick(start, Qt::LeftButton);
    QCOMPARE(started.count(), 1);
    const QString first = started.at(0).at(0).toString();
    QCOMPARE(wait_ended(ended, first), QStringLiteral("completed"));

    RunCardTab* card = w.runView()->cardTab();
    QVERIFY(card);
    w.runView()->setRun(first);  // read again now that the run ended
    QTRY_VERIFY2(card->runAgainButton()->isEnabled(), qPrintable("Run again never came on: " + card->warningLabel()->text()));
    const QString manifest = QDir(data_).filePath("manifest.json");
    const QString sha = sha256sum(manifest);
    QCOMPARE(card->fieldText("seed"), QStringLiteral("1337"));
    QCOMPARE(card->fieldText("dataset"), QDir(data_).absolutePath());
    QCOMPARE(card->fieldText("manifest"), sha + " (unchanged since the run)");
    QVERIFY2(card->fieldText("tokens").contains("train") && card->fieldText("tokens").contains("validation"),
             qPrintable(card->fieldText("tokens")));
    QVERIFY2(card->fieldText("engine").startsWith(TD_VERSION " ("), qPrintable(card->fieldText("engine")));
    QVERIFY2(card->fieldText("device").startsWith("cpu · "), qPrintable(card->fieldText("device")));
    QCOMPARE(card->fieldText("world_size"), QStringLiteral("1"));
    QCOMPARE(card->fieldText("place"), QStringLiteral("this machine"));
    QVERIFY(!card->warningLabel()->isVisibleTo(card));
    QCOMPARE(card->runAgainButton()->text(), QStringLiteral("Run again"));
    QVERIFY(card->configView()->toPlainText().contains("\"seed\": 1337"));

    QSignalSpy again(card, &RunCardTab::againStarted);
    QTest::mouseClick(card->runAgainButton(), Qt::LeftButton);
    QCOMPARE(again.count(), 1);
    const QString second = again.at(0).at(0).toString();
    QCOMPARE(again.at(0).at(1).toString(), first);
    QCOMPARE(started.count(), 2);
    QCOMPARE(started.at(1).at(0).toString(), second);
    QCOMPARE(w.runView()->run(), second);
    QCOMPARE(wait_ended(ended, second), QStringLiteral("completed"));
    {
      td::store::Store s(w.storePath().toStdString());
      QCOMPARE(s.get_run(second.toStdString()).experiment, s.get_run(first.toStdString()).experiment);
      const auto a = s.metric_series(first.toStdString(), "loss");
      const auto b = s.metric_series(second.toStdString(), "loss");
      QCOMPARE(a.size(), size_t(20));
      QCOMPARE(b.size(), a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        QCOMPARE(b.step[i], a.step[i]);
        QVERIFY2(std::memcmp(&a.value[i], &b.value[i], sizeof(double)) == 0,
                 qPrintable(QStringLiteral("loss at step %1: %2 vs %3").arg(a.step[i]).arg(b.value[i], 0, 'g', 17)
                                .arg(a.value[i], 0, 'g', 17)));
      }
    }

    // The manifest changes: the card says so before anything starts.
    {
      QFile f(manifest);
      QVERIFY(f.open(QIODevice::Append));
      f.write("\n");
    }
    w.runView()->setRun(first);
    QTRY_VERIFY2(card->runAgainButton()->text() == QStringLiteral("Run again anyway"),
                 qPrintable(card->runAgainButton()->text()));
    QVERIFY(card->warningLabel()->isVisibleTo(card));
    QVERIFY2(card->warningLabel()->text().contains("has changed since this run"), qPrintable(card->warningLabel()->text()));
    QVERIFY(card->fieldText("manifest").endsWith("(changed since the run)"));
    QVERIFY(card->runAgainButton()->isEnabled());

    // Moved away: said, and the button is off.
    QVERIFY(QDir().rename(data_, data_ + "-moved"));
    w.runView()->setRun(first);
    QTRY_VERIFY2(card->warningLabel()->text().contains("is gone"), qPrintable(card->warningLabel()->text()));
    QVERIFY(!card->runAgainButton()->isEnabled());
    QVERIFY(QDir().rename(data_ + "-moved", data_));
  }
};

QTEST_MAIN(TestRunCardTab)
#include "test_run_card_tab.moc"
