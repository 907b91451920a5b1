// The Run page's straggler line (gui/app/run_view.h stragglerLabel, store/straggler.h): a stored
// two-rank run whose rank 1 on node-b computes 12 % longer than rank 0 is named; a run of one
// rank shows no line. The figures are computed by hand in tests/store/test_straggler.cpp's way.
#include <QLabel>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/app/run_view.h"
#include "gui/core/store_client.h"
#include "gui/runs/run_controller.h"
#include "store/ingest.h"
#include "store/store.h"
#include "store/straggler.h"
#include "tests/store/events_fixture.h"

using namespace td::store::test;

namespace {

// `world` ranks on node-a, node-b, ...; step s of rank r computes compute_ms[r][s - 1] ms.
std::string runEvents(const std::string& id, const std::vector<std::vector<double>>& compute_ms) {
  const int world = int(compute_ms.size());
  json start = run_start(id, 1000);
  start["world_size"] = world;
  json hosts = json::array();
  for (int r = 0; r < world; ++r) hosts.push_back(std::string("node-") + char('a' + r));
  if (world > 1) start["hosts"] = hosts;
  std::string t = line(start);
  for (size_t s = 1; s <= compute_ms[0].size(); ++s) {
    json j = step(id, 1000.0 + double(s), int64_t(s), 3.0);
    json ranks = json::array();
    for (int r = 0; r < world; ++r)
      ranks.push_back({{"rank", r}, {"host", hosts[size_t(r)]}, {"step_ms", 130.0}, {"compute_ms", compute_ms[size_t(r)][s - 1]},
                       {"comm_ms", 130.0 - compute_ms[size_t(r)][s - 1]}});
    if (world > 1) j["ranks"] = ranks;
    t += line(j);
  }
  return t;
}

}  // namespace

class TestRunViewStraggler : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void namesTheSlowestRankOfATwoRankRun() {
    QVERIFY(dir_.isValid());
    const QString db = dir_.filePath("td.db");
    {
      td::store::Store st(db.toStdString());
      // Rank 1: 112 ms in five steps and 113 in one -> median 112; rank 0 100: 12 % slower,
      // the slowest in all 6 steps.
      const std::string dp = dir_.filePath("dp.jsonl").toStdString(), one = dir_.filePath("one.jsonl").toStdString();
      write_file(dp, runEvents("dp", {{100, 100, 100, 100, 100, 100}, {112, 113, 112, 112, 112, 112}}));
      write_file(one, runEvents("one", {{100, 100, 100}}));
      QCOMPARE(td::store::Ingester(st, dp).poll_all().skipped, size_t(0));
      QCOMPARE(td::store::Ingester(st, one).poll_all().skipped, size_t(0));
    }
    td::gui::StoreClient client(db);
    td::gui::RunView view(&client, nullptr);  // runs shown from the store only
    view.setRun(QStringLiteral("dp"));
    QVERIFY(client.waitIdle());
    QLabel* line = view.stragglerLabel();
    QCOMPARE(line->objectName(), QStringLiteral("run_straggler"));
    QTRY_VERIFY2_WITH_TIMEOUT(!line->isHidden(), "waited 10 s for the straggler line of the 2-rank run", 10000);
    QCOMPARE(line->text(), QStringLiteral("Slowest rank: 1 (node-b), 12 % slower than rank 0 over the last 6 step(s) (the slowest in 6 "
                                          "of them)"));
    QVERIFY2(line->toolTip().contains(QStringLiteral("rank 1 112.00 ms, the other ranks 100.00 ms")), qPrintable(line->toolTip()));
    // One rank: no line.
    view.setRun(QStringLiteral("one"));
    QVERIFY(client.waitIdle());
    QVERIFY(line->isHidden());
    // More ranks compare with the median of the others (store/straggler.h).
    td::store::Straggler s;
    s.rank = 2;
    s.host = "gpu%1";  // the run's own text, left as it is
    s.world_size = 4;
    s.steps = 100;
    s.slowest_steps = 97;
    s.slower_pct = 7.6;
    QCOMPARE(td::gui::RunView::stragglerText(s),
             QStringLiteral("Slowest rank: 2 (gpu%1), 8 % slower than the median of the other ranks over the last 100 step(s) (the "
                            "slowest in 97 of them)"));
  }
};

QTEST_MAIN(TestRunViewStraggler)
#include "test_run_view_straggler.moc"
