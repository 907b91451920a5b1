// Datasets registered in the store (schema version 3): register from a manifest, upsert by
// absolute path, list, find, forget (files untouched), bad manifests, and a version-2 store
// migrated with its rows intact.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

#include <sqlite3.h>

#include "engine/common/error.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store/store.h"

using namespace td::store;
namespace fs = std::filesystem;

namespace {

// A manifest as prepare writes it (docs/formats.md), trimmed to what the store reads plus a
// few fields it keeps without reading.
std::string manifest(const std::string& kind, int vocab, int64_t train, int64_t val, int files,
                     int skipped) {
  std::string sources = "[";
  for (int i = 0; i < files; ++i)
    sources += std::string(i ? "," : "") + "{\"path\":\"/c/f" + std::to_string(i) +
               ".txt\",\"kind\":\"text\",\"bytes\":10,\"mtime_ns\":1,\"crc32\":\"00000000\"}";
  sources += "]";
  std::string skip = "[";
  for (int i = 0; i < skipped; ++i)
    skip += std::string(i ? "," : "") + "{\"path\":\"/c/s" + std::to_string(i) +
            ".bin\",\"reason\":\"binary (NUL byte at offset 0)\"}";
  skip += "]";
  return "{\"format\":\"traindeck-dataset\",\"format_version\":1,\"tokenizer\":{\"kind\":\"" + kind +
         "\",\"vocab_size\":" + std::to_string(vocab) + ",\"eot_id\":256},\"token_dtype\":\"uint16\","
         "\"val_fraction\":0.25,\"bytes_read\":" + std::to_string(10 * files) + ",\"sources\":" + sources +
         ",\"skipped\":" + skip + ",\"splits\":{\"train\":{\"tokens\":" + std::to_string(train) +
         ",\"shards\":[]},\"val\":{\"tokens\":" + std::to_string(val) + ",\"shards\":[]}}}";
}

int64_t count(sqlite3* db, const char* sql) {
  Stmt st(db, sql);
  st.step();
  return st.col_int(0);
}

}  // namespace

class TestDatasets : public QObject {
  Q_OBJECT
 private slots:
  void registerListFindForget() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    QVERIFY(st.list_datasets().empty());
    const std::string a = dir.filePath("datasets/a").toStdString();
    fs::create_directories(a);
    { std::ofstream(a + "/manifest.json") << "kept"; }

    const std::string ma = manifest("byte", 257, 1000, 250, 3, 2);
    Dataset d = st.register_dataset(a + "/", ma);  // trailing slash: the same directory
    QCOMPARE(d.path, a);
    QCOMPARE(d.name, std::string("a"));
    QCOMPARE(d.tokenizer, std::string("byte"));
    QCOMPARE(d.vocab_size, int64_t(257));
    QCOMPARE(d.train_tokens, int64_t(1000));
    QCOMPARE(d.val_tokens, int64_t(250));
    QCOMPARE(d.bytes_read, int64_t(30));
    QCOMPARE(d.files, int64_t(3));
    QCOMPARE(d.skipped, int64_t(2));
    QCOMPARE(d.val_fraction, 0.25);
    QCOMPARE(d.manifest_json, ma);
    QVERIFY(d.created > 1.6e9);
    QCOMPARE(d.created, d.updated);

    const std::string b = dir.filePath("datasets/b").toStdString();
    st.register_dataset(b, manifest("bpe", 8000, 5, 1, 1, 0));
    std::vector<Dataset> all = st.list_datasets();
    QCOMPARE(all.size(), size_t(2));
    QCOMPARE(all[0].path, b);  // newest registration first
    QCOMPARE(all[1].path, a);

    // Registering the same directory again (another spelling) updates its row.
    const std::string a_other = dir.filePath("datasets/b/../a").toStdString();
    Dataset again = st.register_dataset(a_other, manifest("bpe", 300, 7, 3, 1, 0));
    QCOMPARE(again.path, a);
    QCOMPARE(again.tokenizer, std::string("bpe"));
    QCOMPARE(again.vocab_size, int64_t(300));
    QCOMPARE(again.train_tokens, int64_t(7));
    QCOMPARE(again.created, d.created);
    QVERIFY(again.updated >= d.updated);
    QCOMPARE(count(st.handle(), "SELECT count(*) FROM datasets"), int64_t(2));
    QCOMPARE(st.list_datasets()[0].path, a);  // updated last: first

    QVERIFY(st.find_dataset(b).has_value());
    QVERIFY(!st.find_dataset(dir.filePath("datasets/c").toStdString()).has_value());

    QVERIFY(st.forget_dataset(a));
    QVERIFY(!st.forget_dataset(a));  // already gone
    QCOMPARE(st.list_datasets().size(), size_t(1));
    QVERIFY(fs::exists(a + "/manifest.json"));  // the files stay
  }

  void badManifestsAreRefused() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    const std::string p = dir.filePath("d").toStdString();
    auto message = [&](const std::string& text) -> std::string {
      try {
        st.register_dataset(p, text);
      } catch (const td::Error& e) {
        return e.what();
      }
      return "";
    };
    QVERIFY(message("not json").find("is not a JSON object") != std::string::npos);
    QVERIFY(message("{\"format\":\"other\"}").find("not a traindeck-dataset") != std::string::npos);
    std::string no_splits = manifest("byte", 257, 1, 1, 1, 0);
    no_splits = no_splits.substr(0, no_splits.find(",\"splits\"")) + "}";
    const std::string m = message(no_splits);
    QVERIFY2(m.find("has no \"splits\"") != std::string::npos, m.c_str());
    QVERIFY2(m.find(p) != std::string::npos, m.c_str());
    QVERIFY(st.list_datasets().empty());  // nothing registered
  }

  void versionTwoStoreIsMigratedWithRowsIntact() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("v2.db").toStdString();
    {
      sqlite3* db = nullptr;
      QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
      migrate(db, path, migrations().first(2));  // a store written by the version-2 build
      exec_sql(db,
               "INSERT INTO experiments(id, name, created) VALUES (1, 'e', 5);"
               "INSERT INTO runs(id, run_id, experiment, status, last_step) VALUES (1, 'r1', 1, 'completed', 3);"
               "INSERT INTO metric_names(id, name) VALUES (1, 'loss');"
               "INSERT INTO metrics VALUES (1, 1, 0, 1, 0, 10, 4.5), (1, 1, 0, 2, 0, 11, 4.0),"
               " (1, 1, 0, 3, 0, 12, 3.5);");
      QCOMPARE(read_user_version(db), 2);
      Stmt t(db, "SELECT 1 FROM sqlite_master WHERE name = 'datasets'");
      QVERIFY(!t.step());
      sqlite3_close(db);
    }
    Store st(path);
    QCOMPARE(read_user_version(st.handle()), schema_version());
    QVERIFY(schema_version() >= 3);
    const auto runs = st.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].run_id, std::string("r1"));
    QCOMPARE(runs[0].experiment, std::string("e"));
    QCOMPARE(runs[0].status, std::string("completed"));
    const MetricSeries s = st.metric_series("r1", "loss");
    QCOMPARE(s.size(), size_t(3));
    QCOMPARE(s.value[0], 4.5);
    QCOMPARE(s.value[2], 3.5);
    QVERIFY(st.list_datasets().empty());
    st.register_dataset(dir.filePath("ds").toStdString(), manifest("byte", 257, 12, 4, 2, 0));
    QCOMPARE(st.list_datasets().size(), size_t(1));
  }
};

QTEST_APPLESS_MAIN(TestDatasets)
#include "test_datasets.moc"
