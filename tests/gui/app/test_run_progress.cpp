// A run's progress and tokens/s in the GUI (issue 14, "Runs"): the run page's status line says
// "step 89 / 1000 (9 %) · 2 min elapsed · ~18 min left" for a running run and "step 10 / 10 ·
// 20 min" for a finished one, the sidebar draws a bar of the run's steps, and the run page,
// `runs show` and Compare print one tokens/s for one run. Runs written by hand; every expected
// value computed in the comments.
#include <QDir>
#include <QLabel>
#include <QSignalSpy>
#include <QStyleOptionProgressBar>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

#include <sstream>

#include "engine/cli/runs_cmd.h"
#include "gui/app/run_view.h"
#include "gui/app/sidebar.h"
#include "gui/compare/compare_model.h"
#include "gui/core/store_client.h"
#include "gui/runs/experiments_model.h"
#include "gui/runs/run_controller.h"
#include "store/ingest.h"
#include "store/store.h"
#include "tests/store/events_fixture.h"

using namespace td::store::test;

namespace {

// run-p, train.steps 1000, running: steps 1..89 at t = 1000 + 1.2 s.
//   elapsed 89 x 1.2 = 106.8 s -> "2 min"; rate (t89 - t1) / 88 = 1.2 s a step; left
//   (1000 - 89) x 1.2 = 1093.2 s -> "~18 min"; 89 / 1000 = 8.9 % -> "9 %".
//   tokens_per_s 1000 + 10 s: steps 4..89 (1..3 warm-up), 86 values 1040..1890 -> median
//   (1460 + 1470) / 2 = 1465.
// run-d, train.steps 10, completed: start t 100, steps 1..10 at t = 100 + 100 s, run_end at 1300
//   -> "step 10 / 10 · 20 min" (1200 s), no time left.
std::string run_p() {
  json start = run_start("run-p", 1000);
  start["config"]["train"]["steps"] = 1000;
  std::string t = line(start);
  for (int s = 1; s <= 89; ++s) {
    json j = step("run-p", 1000 + 1.2 * s, s, 4.0);
    j["tokens_per_s"] = 1000.0 + 10 * s;
    t += line(j);
  }
  return t;
}

std::string run_d() {
  json start = run_start("run-d", 100);
  start["config"]["train"]["steps"] = 10;
  std::string t = line(start);
  for (int s = 1; s <= 10; ++s) t += line(step("run-d", 100 + 100.0 * s, s, 3.0));
  json end = ev("run_end", "run-d", 1300);
  end["status"] = "completed";
  end["reason"] = "reached train.steps";
  end["step"] = 10;
  return t + line(end);
}

// The sidebar's index of run `id`'s column `col` (through its proxy).
QModelIndex sidebarIndex(td::gui::Sidebar& bar, const QString& id, int col) {
  QAbstractItemModel* m = bar.view()->model();
  for (int e = 0; e < m->rowCount(); ++e) {
    const QModelIndex exp = m->index(e, 0);
    for (int r = 0; r < m->rowCount(exp); ++r)
      if (m->index(r, 0, exp).data(td::gui::ExperimentsModel::KeyRole).toString() == id) return m->index(r, col, exp);
  }
  return {};
}

}  // namespace

class TestRunProgress : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString db_;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath("td.db");
    td::store::Store st(db_.toStdString());
    for (const auto& [name, text] : {std::pair{"run-p", run_p()}, {"run-d", run_d()}}) {
      const std::string path = dir_.filePath(QString(name) + ".jsonl").toStdString();
      write_file(path, text);
      td::store::Ingester(st, path, "exp").poll_all();
    }
  }

  void runPageSaysStepsElapsedAndTimeLeft() {
    td::gui::StoreClient client(db_);
    td::gui::RunView view(&client, nullptr);  // runs shown from the store only
    view.setRun(QStringLiteral("run-p"));
    QVERIFY(client.waitIdle());
    QTRY_COMPARE(view.statusLabel()->text(),
                 QStringLiteral("Run run-p · running · step 89 / 1000 (9 %) · 2 min elapsed · ~18 min left · "
                                "1465 tokens/s (median of last 100 steps)"));
    view.setRun(QStringLiteral("run-d"));
    QVERIFY(client.waitIdle());
    QTRY_VERIFY2(view.statusLabel()->text().startsWith(QStringLiteral("Run run-d · completed · step 10 / 10 · 20 min · ")),
                 qPrintable(view.statusLabel()->text()));
    QVERIFY(!view.statusLabel()->text().contains(QStringLiteral("left")));
  }

  void progressTextByHand() {
    td::store::RunProgress p;
    p.status = "running";
    p.step = 1;
    p.total_steps = 1000;
    p.elapsed_s = 4.3;
    // One step: no rate, so no time left yet; 0.1 % rounds to 0.
    QCOMPARE(td::gui::RunView::progressText(p), QStringLiteral("step 1 / 1000 (0 %) · 4.3 s elapsed"));
    p.step = 999;
    p.elapsed_s = 12300;
    p.eta_s = 42;
    QCOMPARE(td::gui::RunView::progressText(p), QStringLiteral("step 999 / 1000 (99 %) · 3 h 25 min elapsed · ~42 s left"));
    p.status = "stopped";
    p.total_steps.reset();
    QCOMPARE(td::gui::RunView::progressText(p), QStringLiteral("step 999 · 3 h 25 min"));
  }

  void sidebarDrawsABarOfTheSteps() {
    td::gui::StoreClient client(db_);
    td::gui::ExperimentsModel model(&client);
    td::gui::Sidebar bar(&model);
    QVERIFY(client.waitIdle());
    QTRY_VERIFY(sidebarIndex(bar, "run-p", 0).isValid());
    const int col = td::gui::ExperimentsModel::ColStatus;
    auto* delegate = qobject_cast<td::gui::RunProgressDelegate*>(bar.view()->itemDelegateForColumn(col));
    QVERIFY(delegate);
    QStyleOptionProgressBar o;
    QVERIFY(td::gui::RunProgressDelegate::barFor(sidebarIndex(bar, "run-p", col), &o));
    QCOMPARE(o.minimum, 0);
    QCOMPARE(o.maximum, 1000);
    QCOMPARE(o.progress, 89);
    QCOMPARE(o.text, QStringLiteral("running · 9 %"));
    QVERIFY(td::gui::RunProgressDelegate::barFor(sidebarIndex(bar, "run-d", col), &o));
    QCOMPARE(o.maximum, 10);
    QCOMPARE(o.progress, 10);
    QCOMPARE(o.text, QStringLiteral("completed"));
    // An experiment's row has no bar.
    QVERIFY(!td::gui::RunProgressDelegate::barFor(bar.view()->model()->index(0, col), &o));
    // The tokens/s column prints the same number as the run page.
    QCOMPARE(sidebarIndex(bar, "run-p", td::gui::ExperimentsModel::ColTokensPerS).data().toString(), QStringLiteral("1465"));
    // For a look at the bars (not compared).
    bar.resize(640, 200);
    bar.show();
    QVERIFY(QTest::qWaitForWindowExposed(&bar));
    QDir().mkpath(TD_SCREENSHOT_DIR);
    bar.grab().save(QStringLiteral(TD_SCREENSHOT_DIR "/sidebar_progress.png"));
  }

  void runPageRunsShowAndCompareAgreeOnTokensPerS() {
    td::gui::StoreClient client(db_);
    td::gui::RunView view(&client, nullptr);  // runs shown from the store only
    view.setRun(QStringLiteral("run-p"));
    QVERIFY(client.waitIdle());
    QTRY_VERIFY(view.statusLabel()->text().contains(QStringLiteral("tokens/s")));
    QVERIFY2(view.statusLabel()->text().contains(QStringLiteral(" · 1465 tokens/s (median of last 100 steps)")),
             qPrintable(view.statusLabel()->text()));

    td::store::Store st(db_.toStdString());
    std::ostringstream show;
    td::cli::print_run_details(st, "run-p", show);
    QVERIFY2(show.str().find("tokens/s       1465 (median of last 100 steps)\n") != std::string::npos, show.str().c_str());

    td::gui::CompareModel cmp(&client);
    QSignalSpy loaded(&cmp, &td::gui::CompareModel::loaded);
    cmp.setRuns({"run-p"});
    QVERIFY(loaded.wait(10000));
    QAbstractItemModel* m = cmp.summaryModel();
    QCOMPARE(m->index(0, td::gui::CompareSummaryModel::TokensPerS).data().toString(), QStringLiteral("1465"));
    QCOMPARE(m->headerData(td::gui::CompareSummaryModel::TokensPerS, Qt::Horizontal).toString(),
             QStringLiteral("tokens/s (median of last 100 steps)"));
  }
};

QTEST_MAIN(TestRunProgress)
#include "test_run_progress.moc"
