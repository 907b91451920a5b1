// The Run page's alert line (gui/app/run_view.h RunView::alertsText, docs/events.md "Alerts"):
// hand-made alert rows give exactly the line under the status (how many, the newest one's kind
// as Run > Alert notifications names it, and its message), in English and in German; no alerts,
// no line; a kind this workbench does not know (a newer engine's) keeps its name. On the page: a
// stored run's alerts appear under its status line.
#include <QApplication>
#include <QLabel>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/app/run_view.h"
#include "gui/core/store_client.h"
#include "gui/look/i18n.h"
#include "gui/runs/run_controller.h"
#include "store/ingest.h"
#include "store/store.h"
#include "tests/store/events_fixture.h"

using namespace td::store::test;
using td::gui::RunView;
using td::store::RunAlert;

namespace {

RunAlert row(const char* kind, const char* severity, const char* message, int64_t step) {
  RunAlert a;
  a.kind = kind;
  a.severity = severity;
  a.message = message;
  a.step = step;
  return a;
}

}  // namespace

class TestRunViewAlerts : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void theLineOfHandMadeRows() {
    QCOMPARE(RunView::alertsText({}), QString());
    const std::vector<RunAlert> one = {row("disk_low", "warning", "the run directory's disk has 512 MiB free, below 1.0 GiB", 1)};
    QCOMPARE(RunView::alertsText(one),
             QStringLiteral("⚠ 1 alert(s), newest: Disk nearly full: the run directory's disk has 512 MiB free, below 1.0 GiB"));
    // Oldest first (Store::alerts): the line names the last.
    const std::vector<RunAlert> three = {
        one[0], row("stall", "warning", "no step for 130 s after step 40 (limit 120 s)", 40),
        row("rank_lost", "critical", "rank 1 (host node-b) lost: the run ends failed: all_reduce on rank 0 failed", 41)};
    QCOMPARE(RunView::alertsText(three), QStringLiteral("⚠ 3 alert(s), newest: Rank or node lost: rank 1 (host node-b) lost: the run "
                                                        "ends failed: all_reduce on rank 0 failed"));
    // A newer engine's kind: its name as written; a message with %1 in it stays as it is.
    QCOMPARE(RunView::alertsText({row("gpu_hot", "warning", "GPU 0 at 95 %1 C", 7)}),
             QStringLiteral("⚠ 1 alert(s), newest: gpu_hot: GPU 0 at 95 %1 C"));
  }

  void theLineInGerman() {
    QVERIFY2(td::gui::installTranslation(*qApp, QStringLiteral("de")), "the German translation is built into the workbench");
    const std::vector<RunAlert> two = {row("stall", "warning", "no step for 130 s", 40),
                                       row("loss_spike", "warning", "step 41: loss 30 is far above the last steps' mean 3.2", 41)};
    const QString de = RunView::alertsText(two);
    const QString one = RunView::alertsText({two[0]});
    td::gui::installTranslation(*qApp, QStringLiteral("en"));  // back to the source strings (false: nothing to load)
    QCOMPARE(de, QStringLiteral("⚠ 2 Alarme, der neueste: Verlustspitze: step 41: loss 30 is far above the last steps' mean 3.2"));
    QCOMPARE(one, QStringLiteral("⚠ 1 Alarm, der neueste: Stillstand (kein Schritt): no step for 130 s"));
  }

  void theLineOnThePage() {
    QVERIFY(dir_.isValid());
    const QString db = dir_.filePath("td.db");
    {
      td::store::Store st(db.toStdString());
      const std::string file = dir_.filePath("run.jsonl").toStdString();
      json alert = {{"type", "alert"}, {"v", 1}, {"t", 1002.0}, {"run_id", "r"}, {"attempt", 0}, {"rank", 0}, {"kind", "loss_spike"},
                    {"severity", "warning"}, {"message", "step 2: loss 30 is far above"}, {"step", 2}, {"value", 30.0},
                    {"threshold", 4.5}};
      write_file(file, line(run_start("r", 1000)) + line(step("r", 1001.0, 1, 3.0)) + line(step("r", 1002.0, 2, 30.0)) + line(alert));
      QCOMPARE(td::store::Ingester(st, file).poll_all().skipped, size_t(0));
      QCOMPARE(st.alerts("r").size(), size_t(1));
    }
    td::gui::StoreClient client(db);
    RunView view(&client, nullptr);  // runs shown from the store only
    view.setRun(QStringLiteral("r"));
    const QString want = QStringLiteral("\n⚠ 1 alert(s), newest: Loss spike: step 2: loss 30 is far above");
    QTRY_VERIFY2_WITH_TIMEOUT(view.statusLabel()->text().endsWith(want),
                              qPrintable("waited 10 s for the alert line under the status; it reads: " + view.statusLabel()->text()),
                              10000);
    QVERIFY(view.statusLabel()->text().startsWith(QStringLiteral("Run r")));
  }
};

QTEST_MAIN(TestRunViewAlerts)
#include "test_run_view_alerts.moc"
