// Schema and migrations of the experiment store: fresh files, version 0 files, newer files,
// a failing migration step, files that are not stores.
#include <QTemporaryDir>
#include <QtTest>

#include <vector>

#include <sqlite3.h>

#include "engine/common/error.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store/store.h"

using namespace td::store;

namespace {

// user_version, journal_mode, ... of a file, read through a plain connection.
std::string pragma(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  std::string v;
  {
    Stmt st(db, sql);
    if (st.step()) v = st.col_text(0);
  }
  sqlite3_close(db);
  return v;
}

void exec_on(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  exec_sql(db, sql);
  sqlite3_close(db);
}

bool has_table(sqlite3* db, const char* name) {
  Stmt st(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  st.bind(1, name);
  return st.step();
}

}  // namespace

class TestSchema : public QObject {
  Q_OBJECT
 private slots:
  void freshFileGetsLatestSchema() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("sub/dir/td.db").toStdString();  // folders created
    {
      Store st(path);
      QCOMPARE(read_user_version(st.handle()), schema_version());
      for (const char* t : {"experiments", "runs", "run_attempts", "event_files", "metric_names",
                            "metrics", "samples", "checkpoints", "warnings"})
        QVERIFY2(has_table(st.handle(), t), t);
      Stmt fk(st.handle(), "PRAGMA foreign_keys");
      QVERIFY(fk.step());
      QCOMPARE(fk.col_int(0), 1);
    }
    QCOMPARE(pragma(path, "PRAGMA journal_mode"), std::string("wal"));
    QCOMPARE(pragma(path, "PRAGMA user_version"), std::to_string(schema_version()));
  }

  void versionZeroDatabaseIsMigrated() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("v0.db").toStdString();
    exec_on(path, "CREATE TABLE unrelated(x); INSERT INTO unrelated VALUES (42);");  // version 0
    QCOMPARE(pragma(path, "PRAGMA user_version"), std::string("0"));
    Store st(path);
    QCOMPARE(read_user_version(st.handle()), schema_version());
    QVERIFY(has_table(st.handle(), "metrics"));
    QVERIFY(has_table(st.handle(), "metric_lod"));
    Stmt keep(st.handle(), "SELECT x FROM unrelated");
    QVERIFY(keep.step());
    QCOMPARE(keep.col_int(0), 42);
  }

  void reopeningKeepsData() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("td.db").toStdString();
    {
      Store st(path);
      st.ensure_experiment("kept");
    }
    Store st(path);
    const auto ex = st.list_experiments();
    QCOMPARE(ex.size(), size_t(1));
    QCOMPARE(ex[0].name, std::string("kept"));
  }

  void newerVersionIsRefused() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("new.db").toStdString();
    { Store st(path); }
    exec_on(path, "PRAGMA user_version = 99");
    try {
      Store st(path);
      QFAIL("opening a store with a newer schema version must throw");
    } catch (const td::Error& e) {
      const std::string msg = e.what();
      QVERIFY2(msg.find("schema version 99") != std::string::npos, e.what());
      QVERIFY2(msg.find("newer") != std::string::npos, e.what());
      QVERIFY2(msg.find(path) != std::string::npos, e.what());
    }
    QCOMPARE(pragma(path, "PRAGMA user_version"), std::string("99"));  // untouched
  }

  void laterMigrationStepApplies() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("td.db").toStdString();
    { Store st(path); st.ensure_experiment("e"); }
    // Every step this build knows, plus one more.
    const int v = schema_version();
    std::vector<Migration> steps(migrations().begin(), migrations().end());
    steps.push_back({v + 1, "ALTER TABLE experiments ADD COLUMN color TEXT DEFAULT 'red';"});
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    QCOMPARE(migrate(db, path, steps), v);
    QCOMPARE(read_user_version(db), v + 1);
    {
      Stmt st(db, "SELECT name, color FROM experiments");
      QVERIFY(st.step());
      QCOMPARE(st.col_text(0), std::string("e"));
      QCOMPARE(st.col_text(1), std::string("red"));
    }
    QCOMPARE(migrate(db, path, steps), v + 1);  // nothing left to do
    sqlite3_close(db);
    // This build (version v) now refuses the file.
    QVERIFY_THROWS_EXCEPTION(td::Error, Store st(path));
  }

  void failingStepLeavesFileUnchanged() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("td.db").toStdString();
    exec_on(path, "CREATE TABLE unrelated(x)");
    const Migration steps[] = {migrations()[0],
                               {2, "CREATE TABLE t2(x); THIS IS NOT SQL;"}};
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    try {
      migrate(db, path, steps);
      QFAIL("a failing migration must throw");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("migration to schema version 2 failed") != std::string::npos,
               e.what());
    }
    // Both steps ran in one transaction: version 1's tables are gone too.
    QCOMPARE(read_user_version(db), 0);
    QVERIFY(!has_table(db, "metrics"));
    QVERIFY(!has_table(db, "t2"));
    QVERIFY(has_table(db, "unrelated"));
    sqlite3_close(db);
  }

  void notADatabaseIsRefused() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("notes.txt").toStdString();
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("this is a text file, not a store; it is long enough to have a header......\n", f);
    std::fclose(f);
    try {
      Store st(path);
      QFAIL("a text file must be refused");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find(path) != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).find("not a") != std::string::npos, e.what());
    }
  }

  void missingFileWithoutCreateIsRefused() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("missing.db").toStdString();
    Store::Options o;
    o.create = false;
    try {
      Store st(path, o);
      QFAIL("a missing store must be refused when create is false");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("no store at") != std::string::npos, e.what());
    }
    QVERIFY(!QFile::exists(QString::fromStdString(path)));
  }

  void defaultPathFollowsEnvironment() {
    qputenv("TRAINDECK_DB", "/x/td.db");
    QCOMPARE(default_db_path(), std::string("/x/td.db"));
    qunsetenv("TRAINDECK_DB");
    qputenv("XDG_DATA_HOME", "/xdg");
    QCOMPARE(default_db_path(), std::string("/xdg/traindeck/traindeck.db"));
    qunsetenv("XDG_DATA_HOME");
    qputenv("HOME", "/home/u");
    QCOMPARE(default_db_path(), std::string("/home/u/.local/share/traindeck/traindeck.db"));
  }
};

QTEST_APPLESS_MAIN(TestSchema)
#include "test_schema.moc"
