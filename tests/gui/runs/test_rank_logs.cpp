// RankLogs (gui/runs/rank_logs.h): where each rank's log of a run is (this machine, an SSH node,
// the node of an SSH cluster that ran the rank, a Slurm cluster's login node), and reading it —
// locally and through a real OpenSSH sshd on 127.0.0.1 (tests/remote/sshd_fixture.h) — with the
// tail's bytes exact, links refused, and the Run page's Log tab showing the chosen rank.
#include <QtTest>

#include <QComboBox>
#include <QLabel>
#include <QPlainTextEdit>

#include <filesystem>
#include <fstream>

#include "../gui_test_util.h"
#include "remote_node_fixture.h"
#include "gui/app/run_view.h"
#include "gui/core/store_client.h"
#include "gui/runs/rank_logs.h"
#include "gui/runs/run_controller.h"
#include "remote/multinode.h"
#include "store/ingest.h"
#include "store/store.h"

using namespace td::gui;
namespace fs = std::filesystem;

namespace {

// A log of `n` bytes whose every position is recognisable: line k is "line <k> ..." padded.
std::string log_text(size_t n) {
  std::string s;
  for (int k = 0; s.size() < n; ++k) s += "line " + std::to_string(k) + " of a rank's log, step " + std::to_string(k * 10) + "\n";
  s.resize(n);
  return s;
}

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// A run `id` of `world` ranks in store `db`, its events file in `run_dir` (a run_start event).
void make_run(const std::string& db, const fs::path& run_dir, const std::string& id, int world) {
  write_file(run_dir / "events.jsonl", R"({"type":"run_start","v":1,"t":1000,"run_id":")" + id +
                                           R"(","attempt":0,"rank":0,"world_size":)" + std::to_string(world) +
                                           R"(,"host":"h"})" "\n");
  td::store::Store st(db);
  td::store::Ingester ing(st, (run_dir / "events.jsonl").string(), "e");
  ing.poll_all();
}

td::store::RunInfo info_of(const std::string& id, int world, const std::string& events) {
  td::store::RunInfo i;
  i.run_id = id;
  i.world_size = world;
  i.events_path = events;
  return i;
}

}  // namespace

class TestRankLogs : public QObject {
  Q_OBJECT
  tdguitest::RemoteNode fx_;
  bool have_sshd_ = false;

  RemoteConnector connector() {
    return [this](const td::remote::NodeSpec& n) { return fx_.open(n); };
  }

 private slots:
  void initTestCase() { have_sshd_ = fx_.start("rank-node", "work"); }
  void cleanupTestCase() { fx_.kill_engines(); }

  // Where each rank's log is, for every kind of place a run can have.
  void places() {
    QCOMPARE(rank_log_name(0), std::string("engine.log"));
    QCOMPARE(rank_log_name(7), std::string("engine.rank7.log"));
    std::string err;
    // This machine: beside the events file.
    auto p = rank_log_place(info_of("R", 4, "/data/runs/R/events.jsonl"), std::nullopt, 2, &err);
    QVERIFY(p);
    QVERIFY(p->local);
    QCOMPARE(p->path, std::string("/data/runs/R/engine.rank2.log"));
    // A rank the run does not have.
    QVERIFY(!rank_log_place(info_of("R", 4, "/data/runs/R/events.jsonl"), std::nullopt, 4, &err));
    QCOMPARE(err, std::string("run R has ranks 0 to 3; there is no rank 4"));
    QVERIFY(!rank_log_place(info_of("R", 4, "/x/events.jsonl"), std::nullopt, -1, &err));
    // One SSH node.
    td::remote::NodeSpec a;
    a.name = "gpu-a";
    a.host = "10.0.0.1";
    a.user = "ana";
    td::store::RemoteRun rr;
    rr.run_id = "R";
    rr.node_json = td::remote::to_json(a).dump();
    rr.run_dir = "/work/runs/R";
    p = rank_log_place(info_of("R", 2, "/m/R/events.jsonl"), rr, 1, &err);
    QVERIFY(p);
    QVERIFY(!p->local);
    QCOMPARE(p->node.host, std::string("10.0.0.1"));
    QCOMPARE(p->path, std::string("/work/runs/R/engine.rank1.log"));
    QCOMPARE(p->where, std::string("gpu-a"));
    // An SSH cluster: rank 3 ran on the second node, in that node's run folder.
    td::remote::NodeSpec b = a;
    b.name = "gpu-b";
    b.host = "10.0.0.2";
    td::remote::ClusterRun layout;
    layout.run_id = "R";
    layout.nodes.push_back({a, "/work/runs/R", "", "", "", {{0, 0, 11}, {1, 1, 12}}});
    layout.nodes.push_back({b, "/other/runs/R", "", "", "", {{2, 0, 21}, {3, 1, 22}}});
    rr.layout_json = td::remote::to_json(layout).dump();
    p = rank_log_place(info_of("R", 4, "/m/R/events.jsonl"), rr, 3, &err);
    QVERIFY(p);
    QCOMPARE(p->node.host, std::string("10.0.0.2"));
    QCOMPARE(p->path, std::string("/other/runs/R/engine.rank3.log"));
    p = rank_log_place(info_of("R", 4, "/m/R/events.jsonl"), rr, 0, &err);
    QVERIFY(p);
    QCOMPARE(p->path, std::string("/work/runs/R/engine.log"));
    // A stored layout that is not one.
    rr.layout_json = "{\"nodes\": 5}";
    QVERIFY(!rank_log_place(info_of("R", 4, "/m/R/events.jsonl"), rr, 1, &err));
    QVERIFY2(err.find("unreadable") != std::string::npos, err.c_str());
    // A Slurm cluster: the shared filesystem, read through the login node.
    rr.layout_json.clear();
    rr.target = "slurm";
    rr.run_dir = "/scratch/td/runs/R";
    p = rank_log_place(info_of("R", 8, "/m/R/events.jsonl"), rr, 5, &err);
    QVERIFY(p);
    QCOMPARE(p->path, std::string("/scratch/td/runs/R/engine.rank5.log"));
    QCOMPARE(p->where, std::string("the login node gpu-a"));
  }

  // A local run: the exact bytes; a link in place of a log is refused.
  void local_logs() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("store.db").toStdString();
    const fs::path run = fs::path(dir.path().toStdString()) / "runs" / "L";
    make_run(db, run, "L", 3);
    write_file(run / "engine.rank1.log", "rank 1 says hello\n");
    write_file(run / "elsewhere.txt", "not a log\n");
    fs::create_symlink(run / "elsewhere.txt", run / "engine.rank2.log");
    StoreClient client(QString::fromStdString(db));
    RankLogs logs(&client, {});
    QSignalSpy got(&logs, &RankLogs::fetched), bad(&logs, &RankLogs::failed);
    logs.fetch("L", 1);
    QVERIFY2(got.wait(10000), "awaited the local log of rank 1");
    QCOMPARE(got[0][2].toString(), QStringLiteral("rank 1 says hello\n"));
    QCOMPARE(got[0][3].toBool(), false);
    logs.fetch("L", 2);
    QVERIFY2(bad.wait(10000), "awaited the refusal of a link in place of rank 2's log");
    QVERIFY2(bad[0][2].toString().contains(QStringLiteral("symbolic link")), qPrintable(bad[0][2].toString()));
    QCOMPARE(got.size(), 1);
  }

  // A run on an SSH node: read over SSH; a tail longer than the limit is its exact last bytes.
  void remote_logs() {
    if (!have_sshd_) {
      if (!fx_.sshd.skip_reason.empty()) QSKIP(fx_.sshd.skip_reason.c_str());
      QFAIL("the node fixture could not start");
    }
    const fs::path local = fs::path(fx_.dir.path().toStdString()) / "mirror" / "S";
    make_run(fx_.db.toStdString(), local, "S", 3);
    const fs::path remote_dir = fs::path(fx_.node.work_dir) / "runs" / "S";
    const std::string big = log_text(300000);
    write_file(remote_dir / "engine.rank1.log", big);
    write_file(remote_dir / "target.txt", "x\n");
    fs::create_symlink(remote_dir / "target.txt", remote_dir / "engine.rank2.log");
    {
      td::store::Store st(fx_.db.toStdString());
      td::store::RemoteRun rr;
      rr.run_id = "S";
      rr.cluster = "c";
      rr.node_json = td::remote::to_json(fx_.node).dump();
      rr.run_dir = remote_dir.string();
      st.note_remote_run(rr);
    }
    StoreClient client(fx_.db);
    RankLogs logs(&client, connector());
    QSignalSpy got(&logs, &RankLogs::fetched), bad(&logs, &RankLogs::failed);
    logs.fetch("S", 1);
    QVERIFY2(got.wait(30000), "awaited rank 1's log over SSH");
    const QByteArray text = got[0][2].toString().toUtf8();
    QCOMPARE(text.size(), qsizetype(RankLogs::kDefaultBytes));
    QVERIFY(text == QByteArray::fromStdString(big.substr(big.size() - size_t(RankLogs::kDefaultBytes))));
    QCOMPARE(got[0][3].toBool(), true);
    QVERIFY2(got[0][4].toString().endsWith(QStringLiteral("/runs/S/engine.rank1.log")), qPrintable(got[0][4].toString()));
    logs.fetch("S", 1, 100);
    QVERIFY2(got.wait(30000), "awaited 100 bytes of rank 1's log");
    QVERIFY(got[1][2].toString().toUtf8() == QByteArray::fromStdString(big.substr(big.size() - 100)));
    logs.fetch("S", 2);
    QVERIFY2(bad.wait(30000), "awaited the refusal of a link on the node");
    QVERIFY2(bad[0][2].toString().contains(QStringLiteral("symbolic link")), qPrintable(bad[0][2].toString()));
    logs.fetch("S", 0);  // rank 0's engine.log was never written there
    QVERIFY2(bad.wait(30000), "awaited the message for a missing log");
    QVERIFY2(bad[1][2].toString().contains(QStringLiteral("does not exist")), qPrintable(bad[1][2].toString()));
    logs.fetch("S", 5);
    QVERIFY2(bad.wait(10000), "awaited the refusal of a rank the run does not have");
    QVERIFY2(bad[2][2].toString().contains(QStringLiteral("no rank 5")), qPrintable(bad[2][2].toString()));

    // The Run page: a run of 3 ranks lists them; rank 1 shows its log read over SSH.
    RunView view(&client, nullptr);  // runs shown from the store only
    view.setRankLogs(&logs);
    view.setRun(QStringLiteral("S"));
    QTRY_COMPARE_WITH_TIMEOUT(view.logRankBox()->count(), 3, 10000);
    QVERIFY(!view.logRankBox()->isHidden());
    view.logRankBox()->setCurrentIndex(1);
    emit view.logRankBox()->activated(1);
    QTRY_VERIFY_WITH_TIMEOUT(view.logView()->toPlainText().endsWith(QString::fromStdString(big.substr(big.size() - 40))),
                             30000);
    QVERIFY2(view.logWhereLabel()->text().contains(QStringLiteral("engine.rank1.log")), qPrintable(view.logWhereLabel()->text()));
    // Live rank-0 text does not land in rank 1's view.
    view.appendLog(QStringLiteral("S"), QStringLiteral("rank 0 live line\n"));
    QVERIFY(!view.logView()->toPlainText().contains(QStringLiteral("rank 0 live line")));
  }
};

QTEST_MAIN(TestRankLogs)
#include "test_rank_logs.moc"
