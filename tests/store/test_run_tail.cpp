// RunTail (store/run_tail.h), the one component every target's follower ingests through: new
// lines exactly once across calls, a time-budgeted backfill that yields and resumes at its byte
// offset, finish() ending a run without run_end with the target's reason (and ingesting the last
// lines first), and leaving a run whose run_end arrived, or that the store does not know, alone.
#include <QTemporaryDir>
#include <QtTest>

#include "events_fixture.h"
#include "store/run_tail.h"
#include "store/store.h"

using namespace td::store;
using namespace td::store::test;

namespace {
void append(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::app);
  f << text;
}
}  // namespace

class TestRunTail : public QObject {
  Q_OBJECT
 private slots:
  void ingestsOnceAndFinishes() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    Store st(dir.filePath("td.db").toStdString());
    RunTail tail(st, "r1", events, "exp");
    QCOMPARE(tail.ingest().rows, size_t(0));  // no file yet: nothing, no error
    QVERIFY(!tail.run());
    append(events, line(run_start("r1", 1000)) + line(step("r1", 1001, 1, 4.0)) + line(step("r1", 1002, 2, 3.5)));
    const IngestStats a = tail.ingest();
    QCOMPARE(a.lines, size_t(3));
    QVERIFY(a.at_eof);
    QCOMPARE(tail.run()->last_step.value_or(-1), int64_t(2));
    QVERIFY(!tail.ended());
    // A half-written line waits; the rest arrives with the finish.
    append(events, line(step("r1", 1003, 3, 3.25)) + "{\"type\":\"step\",\"v\":1");
    QCOMPARE(tail.ingest().lines, size_t(1));
    const auto end = tail.finish("failed", "the engine process 42 ended without a run_end event: killed", 1010);
    QVERIFY(end.marked);
    QCOMPARE(end.status, std::string("failed"));
    QCOMPARE(end.end_reason, std::string("the engine process 42 ended without a run_end event: killed"));
    QVERIFY(tail.ended());
    QCOMPARE(*tail.run()->end_time, 1010.0);
    QCOMPARE(count(st, "SELECT count(*) FROM metrics m JOIN metric_names n ON n.id = m.name WHERE n.name = 'loss'"),
             int64_t(3));
    // A second finish changes nothing.
    const auto again = tail.finish("stopped", "other", 2000);
    QVERIFY(!again.marked);
    QCOMPARE(again.status, std::string("failed"));
  }

  void runEndWins() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    Store st(dir.filePath("td.db").toStdString());
    json end = ev("run_end", "r2", 1005);
    end["status"] = "completed";
    end["reason"] = "";
    end["step"] = 1;
    append(events, line(run_start("r2", 1000)) + line(step("r2", 1001, 1, 4.0)) + line(end));
    RunTail tail(st, "r2", events);
    // finish() reads the run_end first: the target's reason is not written over it.
    const auto e = tail.finish("failed", "job 7: a node failed (NODE_FAIL)");
    QVERIFY(!e.marked);
    QCOMPARE(e.status, std::string("completed"));
    // Unknown to the store: left alone.
    RunTail none(st, "nobody", dir.filePath("none.jsonl").toStdString());
    QCOMPARE(none.finish("failed", "x").status, std::string("unknown"));
    QVERIFY(!st.find_run("nobody"));
  }

  void budgetYieldsAndResumes() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    std::string text = line(run_start("r3", 1000));
    const int n = 30000;
    for (int s = 1; s <= n; ++s) text += line(step("r3", 1000 + s * 0.01, s, 4.0 - s * 1e-5));
    append(events, text);
    Store st(dir.filePath("td.db").toStdString());
    RunTail tail(st, "r3", events);
    // A budget this small ends after the first batch; the next calls continue where it stopped.
    size_t lines = 0;
    int calls = 0;
    IngestStats s;
    do {
      s = tail.ingest(1e-9);
      lines += s.lines;
      ++calls;
    } while (!s.at_eof && calls < 100000);
    QVERIFY(s.at_eof);
    QVERIFY2(calls > 1, "a tiny budget yielded before the end");
    QCOMPARE(lines, size_t(n + 1));
    QCOMPARE(tail.offset(), int64_t(text.size()));
    QCOMPARE(count(st, "SELECT count(*) FROM metrics m JOIN metric_names n ON n.id = m.name WHERE n.name = 'loss'"),
             int64_t(n));
  }
};

QTEST_MAIN(TestRunTail)
#include "test_run_tail.moc"
