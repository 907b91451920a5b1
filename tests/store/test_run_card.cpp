// A run's card (Store::run_card, schema version 9; issue 16 part 5): the run_start facts beside
// the config, checked field by field against values written by hand into run_start lines; an
// older engine's run_start (no dataset, no build) and fields of the wrong type; a remote run's
// place; `runs card` printing the same as JSON; a version-8 store migrated with its rows kept.
#include <QTemporaryDir>
#include <QtTest>

#include "cli_fixture.h"
#include "engine/common/error.h"
#include "events_fixture.h"
#include "store/ingest.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store/store.h"

using namespace td::store;
using namespace td::store::test;

namespace {

const std::string kSha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";  // sha256("test")

json card_start(const std::string& run_id, double t, int attempt = 0) {
  json j = run_start(run_id, t, attempt, attempt ? json(4) : json(nullptr));
  j["config"]["train"]["seed"] = 42;
  j["config"]["data"] = {{"path", "/data/tiny"}};
  j["device_name"] = "Test CPU @ 2.0GHz";
  j["engine_build"] = "gcc 12.2.0, Release, x86_64";
  j["dataset"] = {{"path", "/data/tiny"}, {"manifest_sha256", kSha}, {"train_tokens", 12345}, {"val_tokens", 678}};
  return j;
}

}  // namespace

class TestRunCard : public QObject {
  Q_OBJECT
 private slots:
  void fromRunStart() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    write_file(events, line(card_start("r1", 1000.0)) + line(step("r1", 1001.0, 1, 5.0)));
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events, "exp");
    const IngestStats s = ing.poll_all();
    QCOMPARE(s.unknown_fields, size_t(0));  // engine_build and dataset are known fields
    RunCard c = st.run_card("r1");
    QCOMPARE(c.run_id, std::string("r1"));
    QCOMPARE(c.experiment, std::string("exp"));
    QCOMPARE(c.status, std::string("running"));
    QCOMPARE(*c.seed, uint64_t(42));
    QCOMPARE(c.dataset_path, std::string("/data/tiny"));
    QCOMPARE(c.dataset_sha256, kSha);
    QCOMPARE(*c.dataset_train_tokens, int64_t(12345));
    QCOMPARE(*c.dataset_val_tokens, int64_t(678));
    QCOMPARE(c.engine_version, std::string("0.1.0"));
    QCOMPARE(c.engine_build, std::string("gcc 12.2.0, Release, x86_64"));
    QCOMPARE(c.host, std::string("nodeA"));
    QCOMPARE(c.device, std::string("cpu"));
    QCOMPARE(c.device_name, std::string("Test CPU @ 2.0GHz"));
    QCOMPARE(*c.world_size, int64_t(1));
    QVERIFY(c.hosts.empty());
    QCOMPARE(c.target, std::string("local"));
    QVERIFY(!c.remote);
    QCOMPARE(json::parse(c.config_json)["train"]["seed"].get<int>(), 42);

    // A resumed attempt on another host with a new build: the newest start's facts.
    json again = card_start("r1", 2000.0, 1);
    again["host"] = "nodeB";
    again["engine_build"] = "gcc 12.2.0, Debug, x86_64";
    again["dataset"]["val_tokens"] = 700;
    again["hosts"] = {"nodeB", "nodeC"};
    write_file(events, line(again), /*append=*/true);
    ing.poll_all();
    c = st.run_card("r1");
    QCOMPARE(c.host, std::string("nodeB"));
    QCOMPARE(c.engine_build, std::string("gcc 12.2.0, Debug, x86_64"));
    QCOMPARE(*c.dataset_val_tokens, int64_t(700));
    QCOMPARE(*c.dataset_train_tokens, int64_t(12345));
    QCOMPARE(c.hosts, (std::vector<std::string>{"nodeB", "nodeC"}));

    // `runs card` prints the same card as JSON.
    const json j = json::parse(run_cli({"runs", "card", "r1", "--db", dir.filePath("td.db").toStdString()}));
    QCOMPARE(j["run_id"].get<std::string>(), std::string("r1"));
    QCOMPARE(j["seed"].get<int>(), 42);
    QCOMPARE(j["dataset"]["manifest_sha256"].get<std::string>(), kSha);
    QCOMPARE(j["dataset"]["train_tokens"].get<int>(), 12345);
    QCOMPARE(j["dataset"]["val_tokens"].get<int>(), 700);
    QCOMPARE(j["engine_build"].get<std::string>(), std::string("gcc 12.2.0, Debug, x86_64"));
    QCOMPARE(j["device_name"].get<std::string>(), std::string("Test CPU @ 2.0GHz"));
    QCOMPARE(j["world_size"].get<int>(), 1);
    QCOMPARE(j["config"]["data"]["path"].get<std::string>(), std::string("/data/tiny"));
    QCOMPARE(j["target"].get<std::string>(), std::string("local"));
    QVERIFY(j["remote"].is_null());
    QVERIFY(j["name"].is_null());

    QVERIFY_THROWS_EXCEPTION(td::Error, st.run_card("no-such-run"));
    QVERIFY_THROWS_EXCEPTION(td::Error, run_cli({"runs", "card", "no-such-run", "--db", dir.filePath("td.db").toStdString()}));
  }

  void olderEngineAndBadFields() {
    QTemporaryDir dir;
    // An older engine: no dataset, no engine_build, no device_name; the config's data.path.
    json old = run_start("old", 1000.0);
    old["config"]["data"] = {{"path", "/data/older"}};
    // Wrong types from a hostile or broken file: kept out, the rest of the line kept.
    json bad = card_start("bad", 1000.0);
    bad["dataset"] = {{"path", 7}, {"manifest_sha256", kSha}, {"train_tokens", -5}, {"val_tokens", "many"}};
    bad["config"]["train"]["seed"] = "not a number";
    json worse = card_start("worse", 1000.0);
    worse["dataset"] = "everything";
    Store st(dir.filePath("td.db").toStdString());
    for (const json& j : {old, bad, worse}) {  // a file per run: a file feeds one run
      const std::string f = dir.filePath(QString::fromStdString(j["run_id"].get<std::string>()) + ".jsonl").toStdString();
      write_file(f, line(j));
      QCOMPARE(Ingester(st, f, "exp").poll_all().skipped, size_t(0));
    }
    RunCard c = st.run_card("old");
    QCOMPARE(c.dataset_path, std::string("/data/older"));
    QCOMPARE(c.dataset_sha256, std::string());
    QVERIFY(!c.dataset_train_tokens && !c.dataset_val_tokens);
    QCOMPARE(c.engine_build, std::string());
    QCOMPARE(c.device_name, std::string());
    QVERIFY(!c.seed);  // the fixture's config has no train.seed
    c = st.run_card("bad");
    QCOMPARE(c.dataset_path, std::string("/data/tiny"));  // from the config: the event's is no string
    QCOMPARE(c.dataset_sha256, kSha);
    QVERIFY(!c.dataset_train_tokens && !c.dataset_val_tokens);
    QVERIFY(!c.seed);
    c = st.run_card("worse");
    QCOMPARE(c.dataset_sha256, std::string());
    QCOMPARE(c.engine_build, std::string("gcc 12.2.0, Release, x86_64"));
  }

  void remoteRunsPlace() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    Store st(dir.filePath("td.db").toStdString());
    st.note_launch("rr", "exp", events, 0, "gpu1", 100.0);
    td::store::RemoteRun r{"rr", "lab", R"({"host":"gpu1","name":"g1"})", "/w/runs/rr", 77, 0, {}};
    st.note_remote_run(r);
    write_file(events, line(card_start("rr", 1000.0)));
    Ingester(st, events, "exp").poll_all();
    const RunCard c = st.run_card("rr");
    QCOMPARE(c.target, std::string("ssh"));
    QVERIFY(c.remote);
    QCOMPARE(c.remote->cluster, std::string("lab"));
    QCOMPARE(c.remote->node_json, std::string(R"({"host":"gpu1","name":"g1"})"));
    const json j = json::parse(Store::run_card_json(c));
    QCOMPARE(j["remote"]["cluster"].get<std::string>(), std::string("lab"));
    QCOMPARE(j["remote"]["node"]["name"].get<std::string>(), std::string("g1"));
    QCOMPARE(j["remote"]["target"].get<std::string>(), std::string("ssh"));
  }

  void versionEightStoreIsMigrated() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("v8.db").toStdString();
    {
      sqlite3* db = nullptr;
      QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
      migrate(db, path, migrations().first(8));  // a store written by the version-8 build
      exec_sql(db,
               "INSERT INTO experiments(id, name, created) VALUES (1, 'e', 5);"
               "INSERT INTO runs(id, run_id, experiment, status, config, host, device, world_size, engine_version)"
               " VALUES (1, 'r8', 1, 'completed', '{\"train\":{\"seed\":7},\"data\":{\"path\":\"/d/v8\"}}',"
               " 'h8', 'cpu', 2, '0.0.9');");
      QCOMPARE(read_user_version(db), 8);
      sqlite3_close(db);
    }
    Store st(path);
    QCOMPARE(read_user_version(st.handle()), schema_version());
    QVERIFY(schema_version() >= 9);
    RunCard c = st.run_card("r8");
    QCOMPARE(c.status, std::string("completed"));
    QCOMPARE(*c.seed, uint64_t(7));
    QCOMPARE(c.dataset_path, std::string("/d/v8"));
    QCOMPARE(c.dataset_sha256, std::string());  // unknown before version 9
    QVERIFY(!c.dataset_train_tokens);
    QCOMPARE(c.engine_version, std::string("0.0.9"));
    QCOMPARE(c.engine_build, std::string());
    QCOMPARE(c.host, std::string("h8"));
    QCOMPARE(*c.world_size, int64_t(2));
    // The new columns fill from the next run_start of the run.
    const std::string events = dir.filePath("events.jsonl").toStdString();
    write_file(events, line(card_start("r8", 3000.0, 1)));
    Ingester(st, events, "e").poll_all();
    c = st.run_card("r8");
    QCOMPARE(c.dataset_sha256, kSha);
    QCOMPARE(*c.dataset_train_tokens, int64_t(12345));
    QCOMPARE(c.device_name, std::string("Test CPU @ 2.0GHz"));
  }
};

QTEST_APPLESS_MAIN(TestRunCard)
#include "test_run_card.moc"
