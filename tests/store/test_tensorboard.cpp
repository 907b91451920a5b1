// `runs export RUN --tensorboard DIR` (store/tensorboard.h): the file's TFRecord framing is
// checked with a bitwise CRC-32C written here (not the table the product uses), and its Event
// protos are decoded by protoc (Debian's protobuf-compiler) against the field numbers of
// TensorBoard's event.proto and summary.proto; every value must equal the store's, as float32.
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli_fixture.h"
#include "engine/common/error.h"
#include "events_fixture.h"
#include "store/ingest.h"
#include "store/tensorboard.h"

using namespace td::store;
using namespace td::store::test;
namespace fs = std::filesystem;

namespace {

// CRC-32C bit by bit (RFC 3720 B.4: reflected polynomial 0x82F63B78).
uint32_t crc32c_bitwise(const std::string& data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}
uint32_t masked(const std::string& data) {
  const uint32_t c = crc32c_bitwise(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}
uint64_t le(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + size_t(i)]);
  return v;
}
std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
// Protobuf length-delimited field 1 (Records.event) around `data`.
std::string as_event_field(const std::string& data) {
  std::string out(1, char(0x0A));
  for (uint64_t v = data.size(); ; v >>= 7) {
    if (v < 0x80) { out.push_back(char(v)); break; }
    out.push_back(char((v & 0x7F) | 0x80));
  }
  return out + data;
}

}  // namespace

class TestTensorBoard : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void crc32c_matches_the_rfc_vectors() {
    // RFC 3720 B.4 and the common check value of "123456789".
    QCOMPARE(crc32c(std::string(32, '\0')), 0x8A9136AAu);
    QCOMPARE(crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
    QCOMPARE(crc32c("123456789"), 0xE3069283u);
    std::string ramp;
    for (int i = 0; i < 32; ++i) ramp.push_back(char(i));
    QCOMPARE(crc32c(ramp), 0x46DD794Eu);
    QCOMPARE(crc32c(ramp), crc32c_bitwise(ramp));
    QCOMPARE(masked_crc32c("123456789"), masked("123456789"));
  }

  void export_decodes_and_matches_the_store() {
    const std::string db = dir_.filePath("tb.db").toStdString();
    const std::string events = dir_.filePath("events.jsonl").toStdString();
    const std::string id = "run-tb";
    std::string text = line(run_start(id, 1000.0));
    for (int s = 1; s <= 12; ++s) {
      text += line(step(id, 1000.0 + s, s, 5.0 - 0.1 * s + 1e-7 * s));
      text += line(step(id, 1000.0 + s, s, 5.1 - 0.1 * s, 0, /*rank=*/1));
    }
    json e = ev("eval", id, 1012.5);
    e["step"] = 12;
    e["val_loss"] = 3.875;
    text += line(e);
    write_file(events, text);
    Store st(db);
    Ingester(st, events, "tb").poll_all();

    // The store's rows, as the export must reproduce them.
    std::map<std::pair<int64_t, std::string>, float> want;
    std::map<int64_t, double> first_t;  // per step: rank 0's first row
    int64_t rows = 0, rank1 = 0;
    st.for_each_metric_row(id, [&](const Store::MetricRow& r) {
      const std::string tag = r.rank == 0 ? std::string(r.name) : "rank" + std::to_string(r.rank) + "/" + std::string(r.name);
      want[{r.step, tag}] = static_cast<float>(r.value);
      if (r.rank == 0 && !first_t.count(r.step)) first_t[r.step] = r.t;
      ++rows;
      rank1 += r.rank == 1;
    });
    QVERIFY(rows > 12 * 8);
    QVERIFY2(rank1 > 0, "the fixture's rank-1 steps must reach the store (the export's rank<r>/ tags)");
    QVERIFY(want.count({12, "val_loss"}));

    const std::string out_dir = dir_.filePath("tb").toStdString();
    fs::create_directory(out_dir);
    const std::string said = run_cli({"runs", "export", id, "--db", db, "--tensorboard", out_dir});
    const TensorBoardExport again = write_tensorboard(st, id, out_dir);  // replaces the first
    QCOMPARE(again.path, out_dir + "/" + id + "/events.out.tfevents.1000.traindeck");
    QVERIFY2(said.find(again.path) != std::string::npos, said.c_str());
    QCOMPARE(again.values, rows);
    int files = 0;
    for (const auto& f : fs::directory_iterator(out_dir + "/" + id)) files += f.is_regular_file();
    QCOMPARE(files, 1);  // no temporary left, one file per run

    // Framing: every record's length and data CRCs, and nothing after the last record.
    const std::string file = read_all(again.path);
    std::vector<std::string> records;
    size_t at = 0;
    while (at < file.size()) {
      QVERIFY2(at + 12 <= file.size(), "a truncated record header");
      const uint64_t n = le(file, at, 8);
      QCOMPARE(uint32_t(le(file, at + 8, 4)), masked(file.substr(at, 8)));
      QVERIFY2(at + 12 + n + 4 <= file.size(), "a truncated record");
      const std::string data = file.substr(at + 12, n);
      QCOMPARE(uint32_t(le(file, at + 12 + n, 4)), masked(data));
      records.push_back(data);
      at += 12 + n + 4;
    }
    QCOMPARE(int64_t(records.size()), again.events + 1);

    const QString protoc = QStandardPaths::findExecutable("protoc");
    if (protoc.isEmpty()) QSKIP("protoc is not installed (Debian's protobuf-compiler; traindeck.sh test installs it)");
    std::string wrapped;
    for (const std::string& r : records) wrapped += as_event_field(r);
    QProcess p;
    p.start(protoc, {"--proto_path=" TD_TEST_SOURCE_DIR, "--decode=tdtest.Records", "tensorboard_event.proto"});
    QVERIFY(p.waitForStarted());
    p.write(QByteArray::fromStdString(wrapped));
    p.closeWriteChannel();
    QVERIFY2(p.waitForFinished(60000), "waited 60 s for protoc --decode");
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());

    // protoc's text format: event { wall_time step file_version summary { value { tag simple_value } } }
    std::istringstream in(p.readAllStandardOutput().toStdString());
    std::string tok, file_version, tag;
    int64_t step = -1;
    double wall = 0;
    int events_seen = 0, values = 0;
    std::map<int64_t, double> walls;
    while (in >> tok) {
      if (tok == "event") {
        ++events_seen;
        step = 0;  // proto3 leaves a 0 step out
      } else if (tok == "wall_time:") {
        in >> wall;
        walls[step] = wall;
      } else if (tok == "step:") {
        in >> step;
        walls[step] = wall;
      } else if (tok == "file_version:") {
        in >> file_version;
      } else if (tok == "tag:") {
        in >> std::quoted(tag);
      } else if (tok == "simple_value:") {
        std::string v;
        in >> v;
        const auto it = want.find({step, tag});
        QVERIFY2(it != want.end(), ("a value the store does not have: step " + std::to_string(step) + " " + tag).c_str());
        QCOMPARE(std::stof(v), it->second);
        want.erase(it);
        ++values;
      }
    }
    QCOMPARE(file_version, std::string("\"brain.Event:2\""));
    QCOMPARE(events_seen, int(records.size()));
    QCOMPARE(int64_t(values), rows);
    QVERIFY2(want.empty(), "every stored value is in the file");
    for (const auto& [s, t] : first_t) QCOMPARE(walls[s], t);
  }

  void bad_targets_are_refused() {
    const std::string db = dir_.filePath("tb.db").toStdString();
    Store st(db);
    const std::string out = dir_.filePath("refused").toStdString();
    fs::create_directory(out);
    auto error_of = [&](const std::function<void()>& fn) -> std::string {
      try {
        fn();
      } catch (const td::Error& e) {
        return e.what();
      }
      return "(no error)";
    };
    QVERIFY(error_of([&] { write_tensorboard(st, "no-such-run", out); }).find("no-such-run") != std::string::npos);
    QVERIFY(error_of([&] { write_tensorboard(st, "run-tb", out + "/missing"); }).find("is not a folder") != std::string::npos);
    // DIR/RUN a symlink to elsewhere: never followed, nothing written there.
    const std::string elsewhere = dir_.filePath("elsewhere").toStdString();
    fs::create_directory(elsewhere);
    fs::create_directory_symlink(elsewhere, out + "/run-tb");
    QVERIFY(error_of([&] { write_tensorboard(st, "run-tb", out); }).find("symlink") != std::string::npos);
    QVERIFY(fs::is_empty(elsewhere));
    // One format at a time.
    QVERIFY(error_of([&] { run_cli({"runs", "export", "run-tb", "--db", db, "--csv", "--tensorboard", out}); })
                .find("choose one format") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestTensorBoard)
#include "test_tensorboard.moc"
