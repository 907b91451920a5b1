// Look and language of the whole window (issue 14, "Look and language"), offscreen:
//  - a language switch changes a label on the Design page and on the Run page at once (no
//    restart), and back;
//  - the charts' texts QCustomPlot draws (title, x axis title, legend, empty-chart sentence)
//    switch too, without the data being read again;
//  - a theme switch makes the Design page's palette dark (it kept the light one: a widget with a
//    style sheet keeps the palette it was polished with);
//  - a run's status and end reason in German on the Run page, in the sidebar and in Compare, and
//    every end-reason sentence the engine and the followers write;
//  - Qt's own dialog buttons in German (qtbase_de.qm, qt6-translations-l10n);
//  - closing the window with an unsaved cluster asks (Cancel keeps it, Save stores it and closes,
//    Discard closes);
//  - File > Open store clears Compare (no error about the old store's runs);
//  - the window title "td.db — TrainDeck";
//  - Help > User guide opens docs/guide.md;
//  - the Log tab of a run TrainDeck started never says it logged to its own terminal.
#include <QAbstractButton>
#include <QCheckBox>
#include <QDesktopServices>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
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
#include "gui/charts/dashboard.h"
#include "gui/cluster/cluster_designer.h"
#include "gui/cluster/cluster_list.h"
#include "gui/compare/compare_view.h"
#include "gui/core/paths.h"
#include "gui/core/run_text.h"
#include "gui/designer/model_designer.h"
#include "gui/look/i18n.h"
#include "gui/look/theme.h"
#include "gui/runs/experiments_model.h"
#include "store/ingest.h"
#include "tests/store/events_fixture.h"

using namespace td::gui;
using namespace tdapptest;
namespace ev = td::store::test;

namespace {

// The label under `root` showing exactly `text` (nullptr when none does).
QLabel* labelShowing(QWidget* root, const QString& text) {
  for (QLabel* l : root->findChildren<QLabel*>())
    if (l->text() == text) return l;
  return nullptr;
}

// A finished run written by hand: `steps` steps of loss 3.0, then run_end(status, reason).
std::string finishedRun(const std::string& id, const std::string& status, const std::string& reason, int steps) {
  ev::json start = ev::run_start(id, 100);
  start["config"]["train"]["steps"] = steps;
  std::string t = ev::line(start);
  for (int s = 1; s <= steps; ++s) t += ev::line(ev::step(id, 100 + 10.0 * s, s, 3.0));
  ev::json end = ev::ev("run_end", id, 100 + 10.0 * steps + 1);
  end["status"] = status;
  end["reason"] = reason;
  end["step"] = steps;
  return t + ev::line(end);
}

const char* kNonFinite =
    "3 steps in a row had a non-finite loss or gradient norm; lower train.lr or check the data. The newest "
    "checkpoint that verifies is step 40 (/r/ckpt/step_40): continue with --resume, or from an older step with "
    "--resume-from STEP.";

// Receives the URLs QDesktopServices::openUrl() is asked to open (instead of xdg-open).
class UrlCatcher : public QObject {
  Q_OBJECT
 public:
  QList<QUrl> urls;
 public slots:
  void open(const QUrl& url) { urls << url; }
};

}  // namespace

class TestLookAndLanguage : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString db_;  // td.db: run-d (completed), run-f (failed, non-finite)

  QString db(const char* name) const { return dir_.filePath(QString::fromLatin1(name)); }

  // The box asking about the unsaved cluster, once it is shown.
  static QMessageBox* unsavedBox(MainWindow& w) {
    QMessageBox* box = nullptr;
    for (int i = 0; i < 100 && !box; ++i) {
      for (QMessageBox* b : w.findChildren<QMessageBox*>(QStringLiteral("unsavedConfirm")))
        if (b->isVisible()) box = b;
      if (!box) QTest::qWait(20);
    }
    return box;
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    isolate(dir_);
    // As main() does: the language (here English) before any window, so that every text a
    // window shows is known to the translator that switches it later.
    QVERIFY(!installTranslation(*qApp, QStringLiteral("en")));
    applyTheme(*qApp, Theme::Light);
    db_ = db("td.db");
    td::store::Store st(db_.toStdString());
    for (const auto& [name, text] :
         {std::pair{"run-d", finishedRun("run-d", "completed", "reached train.steps", 10)},
          {"run-f", finishedRun("run-f", "failed", kNonFinite, 43)}}) {
      const std::string path = dir_.filePath(QString(name) + ".jsonl").toStdString();
      ev::write_file(path, text);
      td::store::Ingester(st, path, "exp").poll_all();
    }
  }

  void cleanup() {
    installTranslation(*qApp, QStringLiteral("en"));
    applyTheme(*qApp, Theme::Light);
  }

  void windowTitleNamesTheStoreFirst() {
    MainWindow w(db_);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QCOMPARE(w.windowTitle(), QStringLiteral("td.db — TrainDeck"));
  }

  void languageSwitchesTheDesignAndRunPagesAtOnce() {
    MainWindow w(db_);
    w.setCloseAction(MainWindow::CloseAction::LeaveRunning);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    // Design page: the designer's own label (gui/designer) and the main window's beside Start run.
    QLabel* preset = labelShowing(w.designer(), QStringLiteral("Preset:"));
    QLabel* train_on = labelShowing(w.pages()->widget(MainWindow::DesignPage), QStringLiteral("Train on:"));
    // Run page: the dashboard's toolbar (gui/charts) and the run view's own buttons and tabs.
    QLabel* x_axis = labelShowing(w.runView(), QStringLiteral("X axis:"));
    QVERIFY(preset && train_on && x_axis);
    auto* log_scale = w.runView()->dashboard()->findChild<QCheckBox*>();
    QVERIFY(log_scale);
    QCOMPARE(log_scale->text(), QStringLiteral("Log scale"));
    w.showRuns({QStringLiteral("run-d")});
    QTRY_VERIFY2(w.runView()->statusLabel()->text().startsWith(QStringLiteral("Run run-d · completed · step 10 / 10")),
                 qPrintable(w.runView()->statusLabel()->text()));

    QVERIFY(installTranslation(*qApp, QStringLiteral("de")));
    // translations/traindeck_de.ts; the widgets are the same objects: no restart, no new page.
    QCOMPARE(preset->text(), QStringLiteral("Vorlage:"));
    QCOMPARE(train_on->text(), QStringLiteral("Trainieren auf:"));
    QCOMPARE(x_axis->text(), QStringLiteral("X-Achse:"));
    QCOMPARE(log_scale->text(), QStringLiteral("Logarithmische Skala"));
    QTRY_COMPARE(w.runView()->stopButton()->text(), QStringLiteral("Anhalten"));
    QCOMPARE(w.pages()->tabText(MainWindow::DesignPage), QStringLiteral("Entwurf"));
    // The status line is built from the run's figures: re-read in German on LanguageChange.
    QTRY_VERIFY2(w.runView()->statusLabel()->text().startsWith(
                     QStringLiteral("Lauf run-d · abgeschlossen · Schritt 10 / 10 · ")),
                 qPrintable(w.runView()->statusLabel()->text()));
    QVERIFY2(w.runView()->statusLabel()->text().endsWith(QStringLiteral(" · train.steps erreicht")),
             qPrintable(w.runView()->statusLabel()->text()));

    QVERIFY(!installTranslation(*qApp, QStringLiteral("en")));
    QCOMPARE(preset->text(), QStringLiteral("Preset:"));
    QCOMPARE(train_on->text(), QStringLiteral("Train on:"));
    QCOMPARE(x_axis->text(), QStringLiteral("X axis:"));
    QCOMPARE(log_scale->text(), QStringLiteral("Log scale"));
    QTRY_COMPARE(w.runView()->stopButton()->text(), QStringLiteral("Stop"));
    QTRY_VERIFY(w.runView()->statusLabel()->text().endsWith(QStringLiteral(" · reached train.steps")));
  }

  void chartsFollowTheLanguage() {
    MainWindow w(db_);
    w.setCloseAction(MainWindow::CloseAction::LeaveRunning);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    w.showRuns({QStringLiteral("run-d")});
    Dashboard* dash = w.runView()->dashboard();
    ChartView* loss = dash->chart(QStringLiteral("loss"));
    ChartView* net = dash->chart(QStringLiteral("network"));
    QTRY_VERIFY(loss->seriesCount() >= 1 && loss->drawn(0).x.size() == 10);  // run-d: 10 steps
    QTRY_COMPARE(dash->model()->pendingRequests(), 0);
    QCOMPARE(loss->title(), QStringLiteral("Loss"));
    QCOMPARE(loss->xAxisLabel(), QStringLiteral("step"));
    QCOMPARE(loss->legendLabels().front(), QStringLiteral("train loss"));
    QVERIFY(net->emptyTextVisible());
    QVERIFY2(net->emptyText().startsWith(QStringLiteral("No network traffic:")), qPrintable(net->emptyText()));
    const std::vector<double> drawn = loss->drawn(0).line;
    QSignalSpy envelopes(dash->model(), &MetricsModel::envelopeReady);

    QVERIFY(installTranslation(*qApp, QStringLiteral("de")));
    // translations/traindeck_de.ts (td::gui::Dashboard, td::gui::ChartView); LanguageChange is
    // posted to the window, so the charts follow at the next event-loop pass.
    QTRY_COMPARE(loss->title(), QStringLiteral("Verlust"));
    QCOMPARE(loss->xAxisLabel(), QStringLiteral("Schritt"));
    QCOMPARE(loss->legendLabels().front(), QStringLiteral("Trainingsverlust"));
    QCOMPARE(loss->seriesLabel(0), QStringLiteral("Trainingsverlust"));
    QCOMPARE(dash->chart(QStringLiteral("throughput"))->title(), QStringLiteral("Durchsatz"));
    QVERIFY2(net->emptyText().startsWith(QStringLiteral("Kein Netzwerkverkehr:")), qPrintable(net->emptyText()));
    QVERIFY(net->emptyTextVisible());
    // The data stays: the same line, no envelope asked for again.
    QCOMPARE(loss->drawn(0).line, drawn);
    QCOMPARE(dash->model()->pendingRequests(), 0);
    QCOMPARE(envelopes.count(), 0);
    // The x axis by tokens, in German too.
    dash->setXAxis(XAxis::Tokens);
    QCOMPARE(loss->xAxisLabel(), QStringLiteral("Tokens"));
    dash->setXAxis(XAxis::Step);

    QVERIFY(!installTranslation(*qApp, QStringLiteral("en")));
    QTRY_COMPARE(loss->title(), QStringLiteral("Loss"));
    QCOMPARE(loss->xAxisLabel(), QStringLiteral("step"));
    QCOMPARE(loss->legendLabels().front(), QStringLiteral("train loss"));
    QVERIFY2(net->emptyText().startsWith(QStringLiteral("No network traffic:")), qPrintable(net->emptyText()));
  }

  void statusesAndEndReasonsInGerman() {
    QVERIFY(installTranslation(*qApp, QStringLiteral("de")));
    QCOMPARE(runStatusText("unknown"), QStringLiteral("unbekannt"));
    QCOMPARE(runStatusText("running"), QStringLiteral("läuft"));
    QCOMPARE(runStatusText("completed"), QStringLiteral("abgeschlossen"));
    QCOMPARE(runStatusText("stopped"), QStringLiteral("gestoppt"));
    QCOMPARE(runStatusText("failed"), QStringLiteral("fehlgeschlagen"));
    QCOMPARE(runStatusText("requeued"), QStringLiteral("requeued"));  // not one of ours: as stored
    // engine/train/training_run.cpp
    QCOMPARE(endReasonText("reached train.steps"), QStringLiteral("train.steps erreicht"));
    QCOMPARE(endReasonText("stop requested (signal)"), QStringLiteral("Stopp angefordert (Signal)"));
    QCOMPARE(endReasonText("time limit"), QStringLiteral("Zeitlimit"));
    QCOMPARE(endReasonText("job 42: a node failed (NODE_FAIL)"), QStringLiteral("Job 42: a node failed (NODE_FAIL)"));
    // The non-finite sentence and its checkpoint note, each translated; step and path kept.
    QCOMPARE(endReasonText(kNonFinite),
             QStringLiteral("3 Schritte in Folge hatten einen nicht endlichen Verlust oder eine nicht endliche "
                            "Gradientennorm; verringern Sie train.lr oder prüfen Sie die Daten. Der neueste "
                            "Checkpoint mit gültiger Prüfsumme ist Schritt 40 (/r/ckpt/step_40): Fortsetzen mit "
                            "--resume oder von einem älteren Schritt mit --resume-from STEP."));
    QCOMPARE(endReasonText("3 steps in a row had a non-finite loss or gradient norm; lower train.lr or check the "
                           "data. The newest checkpoint that verifies is step 8 (/c/%2): continue with --resume "
                           "(the 2 newer do not verify), or from an older step with --resume-from STEP."),
             QStringLiteral("3 Schritte in Folge hatten einen nicht endlichen Verlust oder eine nicht endliche "
                            "Gradientennorm; verringern Sie train.lr oder prüfen Sie die Daten. Der neueste "
                            "Checkpoint mit gültiger Prüfsumme ist Schritt 8 (/c/%2): Fortsetzen mit --resume (die "
                            "2 neueren sind ungültig) oder von einem älteren Schritt mit --resume-from STEP."));
    QCOMPARE(endReasonText("3 steps in a row had a non-finite loss or gradient norm; lower train.lr or check the "
                           "data. No checkpoint verifies (/c/step_4): start again in a new --out."),
             QStringLiteral("3 Schritte in Folge hatten einen nicht endlichen Verlust oder eine nicht endliche "
                            "Gradientennorm; verringern Sie train.lr oder prüfen Sie die Daten. Kein Checkpoint hat "
                            "eine gültige Prüfsumme (/c/step_4): Beginnen Sie neu mit einem neuen --out."));
    // gui/runs/run_follower.cpp and remote/remote_run.cpp: the log's lines stay as written.
    QCOMPARE(endReasonText("the engine process 4242 ended without a run_end event: Killed"),
             QStringLiteral("der Engine-Prozess 4242 endete ohne run_end-Ereignis: Killed"));
    QCOMPARE(endReasonText("the engine process 17 ended without a run_end event"),
             QStringLiteral("der Engine-Prozess 17 endete ohne run_end-Ereignis"));
    QCOMPARE(endReasonText("the engine process (pid 9) on the node ended without a run_end event; last lines of "
                           "runs/r1/engine.log:\nstep 3\nSegmentation fault"),
             QStringLiteral("der Engine-Prozess (PID 9) auf dem Knoten endete ohne run_end-Ereignis; letzte Zeilen "
                            "von runs/r1/engine.log:\nstep 3\nSegmentation fault"));
    // An engine error's own message is not ours to translate.
    QCOMPARE(endReasonText("data.path: no manifest.json in /x"), QStringLiteral("data.path: no manifest.json in /x"));

    // Where the window shows them: the sidebar's Status column and Compare's summary.
    MainWindow w(db_);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QAbstractItemModel* m = w.sidebar()->view()->model();
    auto statusOf = [m](const QString& id) {
      for (int e = 0; e < m->rowCount(); ++e)
        for (int r = 0; r < m->rowCount(m->index(e, 0)); ++r) {
          const QModelIndex exp = m->index(e, 0);
          if (m->index(r, 0, exp).data(ExperimentsModel::KeyRole).toString() == id)
            return m->index(r, ExperimentsModel::ColStatus, exp).data().toString();
        }
      return QStringLiteral("<no run %1>").arg(id);
    };
    QTRY_COMPARE(statusOf("run-d"), QStringLiteral("abgeschlossen"));
    QCOMPARE(statusOf("run-f"), QStringLiteral("fehlgeschlagen"));
    w.showRuns({QStringLiteral("run-d"), QStringLiteral("run-f")});
    QAbstractItemModel* summary = w.compareView()->summaryModel();
    QTRY_COMPARE(summary->rowCount(), 2);
    int status_col = -1;
    for (int c = 0; c < summary->columnCount(); ++c)
      if (summary->headerData(c, Qt::Horizontal).toString() == QCoreApplication::translate("td::gui::CompareSummaryModel", "status"))
        status_col = c;
    QVERIFY(status_col >= 0);
    QStringList shown{summary->index(0, status_col).data().toString(), summary->index(1, status_col).data().toString()};
    shown.sort();
    QCOMPARE(shown, (QStringList{QStringLiteral("abgeschlossen"), QStringLiteral("fehlgeschlagen")}));
    // The failed run's page: its status and the reason, in German.
    w.showRuns({QStringLiteral("run-f")});
    QTRY_VERIFY2(w.runView()->statusLabel()->text().contains(QStringLiteral(" · fehlgeschlagen · ")),
                 qPrintable(w.runView()->statusLabel()->text()));
    QVERIFY2(w.runView()->statusLabel()->text().contains(QStringLiteral("verringern Sie train.lr")),
             qPrintable(w.runView()->statusLabel()->text()));
  }

  void qtDialogsInGerman() {
    QVERIFY(!qtTranslationLoaded());  // English: Qt's source texts
    // Qt's own German comes from Debian's qt6-translations-l10n (traindeck.sh installs it).
    if (!QFileInfo::exists(qtTranslationsPath() + QStringLiteral("/qtbase_de.qm")))
      QSKIP(qPrintable(QStringLiteral("no qtbase_de.qm in %1: install qt6-translations-l10n (traindeck.sh does)")
                           .arg(qtTranslationsPath())));
    QVERIFY(installTranslation(*qApp, QStringLiteral("de")));
    QVERIFY2(qtTranslationLoaded(),
             qPrintable(QStringLiteral("no qtbase_de.qm in %1: install qt6-translations-l10n (traindeck.sh does)")
                            .arg(qtTranslationsPath())));
    QMessageBox box(QMessageBox::Question, QStringLiteral("t"), QStringLiteral("q"),
                    QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
    QCOMPARE(box.button(QMessageBox::Cancel)->text(), QStringLiteral("Abbrechen"));
    QCOMPARE(box.button(QMessageBox::Save)->text(), QStringLiteral("Speichern"));
  }

  void themeSwitchesTheDesignPage() {
    MainWindow w(db_);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QWidget* field = w.designer()->fieldEditor(QStringLiteral("model.n_layer"));
    QVERIFY(field);
    QVERIFY(!isDark(w.designer()->palette()));
    applyTheme(*qApp, Theme::Dark);
    // darkPalette(): Window #2d2d30, Base #1e1e1e. The window and the Run page get it with the
    // application palette's change events; the designer (it has a style sheet) and a field under
    // it kept the light one before (the issue: "the Design page stays light").
    QTRY_COMPARE(w.palette().color(QPalette::Active, QPalette::Window).name(), QStringLiteral("#2d2d30"));
    QTRY_COMPARE(w.runView()->palette().color(QPalette::Active, QPalette::Window).name(), QStringLiteral("#2d2d30"));
    QCOMPARE(w.designer()->palette().color(QPalette::Active, QPalette::Window).name(), QStringLiteral("#2d2d30"));
    QCOMPARE(field->palette().color(QPalette::Active, QPalette::Base).name(), QStringLiteral("#1e1e1e"));
    QVERIFY(isDark(w.pages()->widget(MainWindow::DesignPage)->palette()));
    applyTheme(*qApp, Theme::Light);
    QTRY_VERIFY(!isDark(w.palette()));
    QVERIFY2(!isDark(w.designer()->palette()), qPrintable(w.designer()->palette().color(QPalette::Window).name()));
    QVERIFY(field->palette().color(QPalette::Active, QPalette::Base).lightness() >= 128);
  }

  void closingWithAnUnsavedClusterAsks() {
    MainWindow w(db("close.db"));
    w.setCloseAction(MainWindow::CloseAction::LeaveRunning);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QVERIFY(w.storeClient()->waitIdle());
    td::remote::ClusterSpec spec;
    spec.name = "lab";
    td::remote::NodeSpec node;
    node.host = "gpu1.lab";
    spec.nodes = {node};
    w.clusterDesigner()->setSpec(spec);
    QVERIFY(w.clusterDesigner()->isDirty());
    QVERIFY(w.clusterDesigner()->isValid());

    // Cancel: the window stays open with the edit.
    QVERIFY(!w.close());
    QMessageBox* box = unsavedBox(w);
    QVERIFY(box);
    QCOMPARE(box->informativeText(), QStringLiteral("Save them before you quit?"));
    QCOMPARE(box->text(), QStringLiteral("The cluster \"lab\" has unsaved changes."));
    QCOMPARE(w.pages()->currentWidget(), static_cast<QWidget*>(w.clusterDesigner()));
    box->button(QMessageBox::Cancel)->click();
    QTest::qWait(50);
    QVERIFY(w.isVisible());
    QVERIFY(w.clusterDesigner()->isDirty());

    // Save: the cluster is stored, then the window closes.
    QVERIFY(!w.close());
    box = unsavedBox(w);
    QVERIFY(box);
    box->button(QMessageBox::Save)->click();
    QTRY_VERIFY(!w.isVisible());
    QVERIFY(!w.clusterDesigner()->isDirty());
    QTRY_COMPARE(w.clusterDesigner()->clusterList()->names(), QStringList{"lab"});

    // Discard: closes without storing.
    MainWindow w2(db("close2.db"));
    w2.setCloseAction(MainWindow::CloseAction::LeaveRunning);
    w2.show();
    QVERIFY(w2.storeClient()->waitIdle());
    spec.name = "scratch";
    w2.clusterDesigner()->setSpec(spec);
    QVERIFY(!w2.close());
    box = unsavedBox(w2);
    QVERIFY(box);
    box->button(QMessageBox::Discard)->click();
    QTRY_VERIFY(!w2.isVisible());
    QVERIFY(w2.storeClient()->waitIdle());
    td::store::Store st(db("close2.db").toStdString());
    QVERIFY(st.list_clusters().empty());
  }

  void openStoreClearsCompare() {
    MainWindow w(db_);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QSignalSpy errors(&w, &MainWindow::errorShown);
    w.showRuns({QStringLiteral("run-d"), QStringLiteral("run-f")});
    QTRY_COMPARE(w.compareView()->summaryModel()->rowCount(), 2);
    QSignalSpy opened(&w, &MainWindow::storeOpened);
    w.openStore(db("other.db"));
    QTRY_COMPARE(opened.size(), 1);
    QVERIFY(w.compareView()->runs().isEmpty());
    QVERIFY(w.compareDashboard()->runs().isEmpty());
    QCOMPARE(w.compareView()->summaryModel()->rowCount(), 0);
    QVERIFY(w.storeClient()->waitIdle());
    QTest::qWait(300);  // an error would come from the new store's thread
    QCOMPARE(w.compareView()->diffStatusText(), QStringLiteral("Select two or more runs to compare"));
    QVERIFY2(errors.isEmpty(), errors.isEmpty() ? "" : qPrintable(errors.front().front().toString()));
    QCOMPARE(w.windowTitle(), QStringLiteral("other.db — TrainDeck"));
  }

  void userGuideOpensDocsGuideMd() {
    UrlCatcher catcher;
    QDesktopServices::setUrlHandler(QStringLiteral("file"), &catcher, "open");
    MainWindow w(db_);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    auto* action = w.findChild<QAction*>(QStringLiteral("help_user_guide"));
    QVERIFY(action);
    QCOMPARE(action->shortcut(), QKeySequence(QKeySequence::HelpContents));
    action->trigger();
    QCOMPARE(catcher.urls.size(), 1);
    const QString guide = QFileInfo(QStringLiteral(TD_SOURCE_DIR "/docs/guide.md")).canonicalFilePath();
    QCOMPARE(catcher.urls.front().toLocalFile(), guide);
    QFile f(guide);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readLine().startsWith("# "));  // the guide, not some other file
    // $TRAINDECK_DOCS_DIR comes first.
    QTemporaryDir docs;
    tdguitest::writeFile(docs.filePath("guide.md"), "# local guide\n");
    qputenv("TRAINDECK_DOCS_DIR", docs.path().toUtf8());
    QCOMPARE(userGuideCandidates().front(), docs.filePath("guide.md"));
    QCOMPARE(w.openUserGuide(), QFileInfo(docs.filePath("guide.md")).canonicalFilePath());
    QCOMPARE(catcher.urls.size(), 2);
    qunsetenv("TRAINDECK_DOCS_DIR");
    QDesktopServices::unsetUrlHandler(QStringLiteral("file"));
  }

  void logTabOfAStartedRunBlamesNoTerminal() {
    QCOMPARE(RunView::logMissingText("/r/engine.log", true, true),
             QStringLiteral("(the engine has written nothing to /r/engine.log yet)"));
    QCOMPARE(RunView::logMissingText("/r/engine.log", false, true),
             QStringLiteral("(no engine log at /r/engine.log yet: the engine's output appears here as it arrives)"));
    QVERIFY(RunView::logMissingText("/r/engine.log", false, false).contains("outside TrainDeck"));
    // A run this window starts: at its start the log is empty, never "outside TrainDeck".
    const QString data = tdguitest::prepare_tiny_dataset(dir_.filePath("data"));
    QVERIFY(!data.isEmpty());
    MainWindow w(db("log.db"));
    w.setCloseAction(MainWindow::CloseAction::StopRuns);
    w.show();
    QTRY_VERIFY2(w.isReady(), "the store did not open: its experiments never loaded");
    QVERIFY(w.storeClient()->waitIdle());
    w.designer()->setConfig(tdguitest::tiny_config(data, 20));
    QSignalSpy started(w.runTargets(), &td::gui::RunTarget::runStarted);
    QSignalSpy ended(w.runTargets(), &td::gui::RunTarget::runEnded);
    QString error;
    const QString id = w.startRun(&error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QTRY_VERIFY(!w.runView()->logView()->toPlainText().isEmpty());
    QVERIFY2(!w.runView()->logView()->toPlainText().contains(QStringLiteral("outside TrainDeck")),
             qPrintable(w.runView()->logView()->toPlainText()));
    QCOMPARE(wait_ended(ended, id), QStringLiteral("completed"));
    // Shown again once it ended (its engine.log is there): the engine's lines.
    w.runView()->setRun(QString());
    w.runView()->setRun(id);
    QTRY_VERIFY(!w.runView()->logView()->toPlainText().isEmpty());
    QVERIFY2(!w.runView()->logView()->toPlainText().contains(QStringLiteral("outside TrainDeck")),
             qPrintable(w.runView()->logView()->toPlainText()));
  }
};

QTEST_MAIN(TestLookAndLanguage)
#include "test_look_and_language.moc"
