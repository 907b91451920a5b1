// Clusters and remote runs in the store (schema version 4): save/replace/list/forget clusters,
// secrets refused with nothing written, remote run records tied to their run rows (deleted
// with them), and the active ones listed for a reattach. Version 5: a multi-node run's layout
// and every rank's host, and a version-4 store migrated with its rows intact.
#include <QTemporaryDir>
#include <QtTest>

#include "engine/common/error.h"
#include "store/ingest.h"
#include "store/schema.h"
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
    // The end reason is replaced only while it is the one expected (compare and set).
    QVERIFY(!st.replace_end_reason("r1", "something else", "x"));
    QVERIFY(st.replace_end_reason("r1", "gone", "cancelled by Slurm"));
    QCOMPARE(st.find_run("r1")->end_reason, std::string("cancelled by Slurm"));
    QCOMPARE(st.find_run("r1")->status, std::string("failed"));
    QVERIFY(!st.replace_end_reason("r2", "", "x"));  // r2 has no end: nothing is written
    QVERIFY_THROWS_EXCEPTION(td::Error, st.replace_end_reason("nope", "gone", "x"));
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

  void multi_node_layout_and_hosts() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    st.note_launch("mn", "exp", dir.filePath("events.jsonl").toStdString(), 11, "node-a", 100.0);
    RemoteRun r{"mn", "pair", R"({"host":"a"})", "/w/runs/mn", 11, 0};
    r.layout_json = R"({"run_id":"mn","world_size":2,"nodes":[{"node":{"host":"a"},"ranks":[{"rank":0,"pid":11}]},)"
                    R"({"node":{"host":"b"},"ranks":[{"rank":1,"pid":12}]}]})";
    st.note_remote_run(r);
    QCOMPARE(st.remote_run("mn")->layout_json, r.layout_json);
    QCOMPARE(st.active_remote_runs().at(0).layout_json, r.layout_json);
    RemoteRun bad = r;
    bad.layout_json = R"({"nodes":[{"node":{"host":"b","password":"hunter2"}}]})";
    QVERIFY_THROWS_EXCEPTION(td::Error, st.note_remote_run(bad));
    QCOMPARE(st.remote_run("mn")->layout_json, r.layout_json);  // unchanged
    // A single-node run has none.
    st.note_launch("one", "exp", dir.filePath("one.jsonl").toStdString(), 5, "a", 100.0);
    st.note_remote_run({"one", "pair", R"({"host":"a"})", "/w/runs/one", 5, 0});
    QCOMPARE(st.remote_run("one")->layout_json, std::string());
    // run_start's hosts reach the run (charts name each rank's series by it).
    std::FILE* f = std::fopen(dir.filePath("events.jsonl").toStdString().c_str(), "wb");
    const std::string line = R"({"type":"run_start","v":1,"t":100,"run_id":"mn","attempt":0,"rank":0,"world_size":2,)"
                             R"("host":"node-a","hosts":["node-a","node-b"]})" "\n";
    std::fwrite(line.data(), 1, line.size(), f);
    std::fclose(f);
    Ingester ing(st, dir.filePath("events.jsonl").toStdString(), "exp");
    ing.poll_all();
    QCOMPARE(st.chart_run("mn").hosts, (std::vector<std::string>{"node-a", "node-b"}));
    QVERIFY(st.chart_run("one").hosts.empty());
  }

  void version_four_store_is_migrated() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("v4.db").toStdString();
    {
      sqlite3* db = nullptr;
      QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
      migrate(db, path, migrations().first(4));  // a store written by the version-4 build
      exec_sql(db,
               "INSERT INTO experiments(id, name, created) VALUES (1, 'e', 5);"
               "INSERT INTO runs(id, run_id, experiment, status) VALUES (1, 'r1', 1, 'running');"
               "INSERT INTO remote_runs(run, cluster, node, run_dir, pid, created)"
               " VALUES (1, 'lab', '{\"host\":\"gpu1\"}', '/w/runs/r1', 77, 9);");
      QCOMPARE(read_user_version(db), 4);
      sqlite3_close(db);
    }
    Store st(path);
    QCOMPARE(read_user_version(st.handle()), schema_version());
    QVERIFY(schema_version() >= 5);
    const auto r = st.remote_run("r1");
    QVERIFY(r);
    QCOMPARE(r->node_json, std::string(R"({"host":"gpu1"})"));
    QCOMPARE(r->run_dir, std::string("/w/runs/r1"));
    QCOMPARE(*r->pid, int64_t(77));
    QCOMPARE(r->layout_json, std::string());
    QVERIFY(st.chart_run("r1").hosts.empty());
    QCOMPARE(int(st.active_remote_runs().size()), 1);
    // Version 8: rows from before are SSH runs.
    QCOMPARE(r->target, std::string("ssh"));
    QCOMPARE(st.run_target("r1"), std::string("ssh"));
  }

  void run_targets_and_jobs() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    st.note_launch("loc", "exp", dir.filePath("loc.jsonl").toStdString(), 5, "here", 100.0);
    st.note_launch("sl", "exp", dir.filePath("sl.jsonl").toStdString(), 0, "login", 101.0);
    st.note_launch("ss", "exp", dir.filePath("ss.jsonl").toStdString(), 9, "gpu1", 102.0);
    QCOMPARE(st.run_target("loc"), std::string("local"));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.run_target("nope"));
    RemoteRun slurm{"sl", "hpc", R"({"host":"login"})", "/shared/traindeck/runs/sl", std::nullopt, 0};
    slurm.target = "slurm";
    st.note_remote_run(slurm);
    st.note_remote_run({"ss", "lab", R"({"host":"gpu1"})", "/w/runs/ss", 9, 0});
    QCOMPARE(st.run_target("sl"), std::string("slurm"));
    QCOMPARE(st.run_target("ss"), std::string("ssh"));
    // Each target re-attaches its own runs only.
    const auto ssh = st.active_remote_runs();
    QCOMPARE(int(ssh.size()), 1);
    QCOMPARE(ssh[0].run_id, std::string("ss"));
    const auto sl = st.active_remote_runs("slurm");
    QCOMPARE(int(sl.size()), 1);
    QCOMPARE(sl[0].run_id, std::string("sl"));
    QCOMPARE(sl[0].target, std::string("slurm"));
    RemoteRun no_kind = slurm;
    no_kind.target.clear();
    QVERIFY_THROWS_EXCEPTION(td::Error, st.note_remote_run(no_kind));

    // Jobs: recorded in order; a later state replaces the earlier one, submitted stays.
    QVERIFY(st.run_jobs("sl").empty());
    st.note_run_job("sl", {"4242", 200.0, "PENDING", "waiting for resources"});
    st.note_run_job("sl", {"4242", 250.0, "RUNNING", ""});
    st.note_run_job("sl", {"4250", 300.0, "PENDING", "waiting behind higher-priority jobs"});
    QVERIFY_THROWS_EXCEPTION(td::Error, st.note_run_job("sl", {"", 0, "RUNNING", ""}));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.note_run_job("nope", {"1", 0, "RUNNING", ""}));
    const auto jobs = st.run_jobs("sl");
    QCOMPARE(int(jobs.size()), 2);
    QCOMPARE(jobs[0].job_id, std::string("4242"));
    QCOMPARE(jobs[0].submitted, 200.0);
    QCOMPARE(jobs[0].state, std::string("RUNNING"));
    QCOMPARE(jobs[0].reason, std::string());
    QCOMPARE(jobs[1].job_id, std::string("4250"));
    QCOMPARE(jobs[1].reason, std::string("waiting behind higher-priority jobs"));
    QVERIFY(st.run_jobs("ss").empty());

    // The Run page's overview: the jobs of a Slurm run, none for an SSH or local run.
    const auto o = st.run_overview("sl");
    QVERIFY(o.info && o.remote);
    QCOMPARE(o.remote->target, std::string("slurm"));
    QCOMPARE(int(o.jobs.size()), 2);
    QCOMPARE(o.jobs[1].job_id, std::string("4250"));
    QVERIFY(!o.has_checkpoint);
    QVERIFY(st.run_overview("ss").jobs.empty());
    QVERIFY(!st.run_overview("loc").remote);
    QVERIFY(!st.run_overview("nope").info);
  }
};

QTEST_GUILESS_MAIN(TestClusters)
#include "test_clusters.moc"
