// Clusters and remote runs in the store (schema version 4): save/replace/list/forget clusters,
// secrets refused with nothing written, remote run records tied to their run rows (deleted
// with them), and the active ones listed for a reattach.
#include <QTemporaryDir>
#include <QtTest>

#include "engine/common/error.h"
#include "store/sqlite.h"
#include "store/store.h"

using namespace td::store;

class TestClusters : public QObject {
  Q_OBJECT
 private slots:
  void save_list_forget() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    QVERIFY(st.list_clusters().empty());
    st.save_cluster("lab", R"({"name":"lab","nodes":[{"host":"gpu1","auth":"agent"}]})");
    st.save_cluster("home", R"({"name":"home","nodes":[]})");
    const double created = st.find_cluster("lab")->created;
    st.save_cluster("lab", R"({"name":"lab","nodes":[{"host":"gpu2","auth":"key"}]})");
    const auto all = st.list_clusters();
    QCOMPARE(int(all.size()), 2);
    QCOMPARE(all[0].name, std::string("home"));  // by name
    QCOMPARE(all[1].spec_json, std::string(R"({"name":"lab","nodes":[{"host":"gpu2","auth":"key"}]})"));
    QCOMPARE(all[1].created, created);
    QVERIFY(all[1].updated >= created);
    QVERIFY(st.forget_cluster("home"));
    QVERIFY(!st.forget_cluster("home"));
    QVERIFY(!st.find_cluster("home"));
  }

  void secrets_are_refused() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    st.save_cluster("lab", R"({"name":"lab","nodes":[]})");
    try {
      st.save_cluster("lab", R"({"name":"lab","nodes":[{"host":"a"},{"host":"b","password":"hunter2"}]})");
      QFAIL("a spec with a password must be refused");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("nodes[1].password") != std::string::npos, e.what());
      QVERIFY(std::string(e.what()).find("hunter2") == std::string::npos);
    }
    QVERIFY_THROWS_EXCEPTION(td::Error, st.save_cluster("lab", R"({"passphrase":"x"})"));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.save_cluster("lab", "not json"));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.save_cluster("", "{}"));
    QCOMPARE(st.find_cluster("lab")->spec_json, std::string(R"({"name":"lab","nodes":[]})"));  // unchanged
  }

  void remote_runs() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    RemoteRun r{"r1", "lab", R"({"host":"gpu1","auth":"agent"})", "/home/ana/traindeck/runs/r1", 4242, 0};
    QVERIFY_THROWS_EXCEPTION(td::Error, st.note_remote_run(r));  // no run row yet
    st.note_launch("r1", "exp", "/tmp/mirror/r1/events.jsonl", 4242, "gpu1", 100.0);
    st.note_launch("r2", "exp", "/tmp/mirror/r2/events.jsonl", 7, "gpu1", 101.0);
    st.note_remote_run(r);
    RemoteRun r2 = r;
    r2.run_id = "r2";
    r2.pid = std::nullopt;
    r2.node_json = R"({"host":"gpu1","passphrase":"x"})";
    QVERIFY_THROWS_EXCEPTION(td::Error, st.note_remote_run(r2));
    r2.node_json = R"({"host":"gpu1"})";
    st.note_remote_run(r2);
    const auto got = st.remote_run("r1");
    QVERIFY(got);
    QCOMPARE(got->cluster, std::string("lab"));
    QCOMPARE(got->run_dir, std::string("/home/ana/traindeck/runs/r1"));
    QCOMPARE(*got->pid, int64_t(4242));
    QVERIFY(got->created > 0);
    QVERIFY(!st.remote_run("r2")->pid);
    QVERIFY(!st.remote_run("nope"));

    QCOMPARE(int(st.active_remote_runs().size()), 2);
    QVERIFY(st.mark_run_ended("r1", "failed", "gone", 200.0));
    const auto active = st.active_remote_runs();
    QCOMPARE(int(active.size()), 1);
    QCOMPARE(active[0].run_id, std::string("r2"));

    // A resume replaces the record (new pid); deleting the run deletes it.
    r.pid = 5151;
    st.note_remote_run(r);
    QCOMPARE(*st.remote_run("r1")->pid, int64_t(5151));
    Stmt(st.handle(), "DELETE FROM runs WHERE run_id = 'r1'").exec();
    QVERIFY(!st.remote_run("r1"));
  }
};

QTEST_GUILESS_MAIN(TestClusters)
#include "test_clusters.moc"
