// An events file feeds exactly one run, and hostile events input is bounded (issue 35, part 1):
// a hand-written file or lines appended to a followed run's file cannot change another run;
// over-long lines, impossible steps and ranks, huge names and a FIFO are refused.
// engine/metrics/events.h declares EventWriter::emit: before Qt's `emit` macro.
#include "engine/metrics/events.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

#include "engine/common/error.h"
#include "events_fixture.h"
#include "store/ingest.h"
#include "store/run_tail.h"
#include "store/sqlite.h"
#include "store/store.h"

using namespace td::store;
using namespace td::store::test;

namespace {

// Run `id`: run_start, steps 1..n with loss 5 - 0.5 s, then run_end completed at step n.
std::string finished_run(const std::string& id, int n, double t0 = 100.0) {
  std::string text = line(run_start(id, t0));
  for (int s = 1; s <= n; ++s) text += line(step(id, t0 + s, s, 5.0 - 0.5 * s));
  json end = ev("run_end", id, t0 + n + 1);
  end["status"] = "completed";
  end["reason"] = "reached train.steps";
  end["step"] = n;
  return text + line(end);
}

// Lines a forger writes about run `victim`: losses of 999 at steps 1..3, a new attempt 6 and a
// failed end at step 3.
std::string forged_lines(const std::string& victim) {
  std::string text;
  for (int s = 1; s <= 3; ++s) text += line(step(victim, 500.0 + s, s, 999.0, 6));
  text += line(run_start(victim, 600.0, 6, 0));
  json end = ev("run_end", victim, 601.0, 6);
  end["status"] = "failed";
  end["reason"] = "failed (forged by C)";
  end["step"] = 3;
  return text + line(end);
}

bool has_message(const IngestStats& s, const std::string& part) {
  for (const auto& m : s.messages)
    if (m.find(part) != std::string::npos) return true;
  return false;
}

// Run A as it must stay: 4 steps of loss 4.5 .. 3.0, completed, one attempt, last step 4.
void check_untouched(Store& st, const std::string& id) {
  const RunInfo r = st.get_run(id);
  QCOMPARE(r.status, std::string("completed"));
  QCOMPARE(r.end_reason, std::string("reached train.steps"));
  QCOMPARE(r.attempts, 1);
  QCOMPARE(*r.last_step, int64_t(4));
  QCOMPARE(st.metric_series(id, "loss").value, (std::vector<double>{4.5, 4.0, 3.5, 3.0}));
  QCOMPARE(st.run_attempts(id).size(), size_t(1));
}

}  // namespace

class TestIngestIntegrity : public QObject {
  Q_OBJECT
 private slots:
  // `runs ingest` of a hand-written file whose first line is its own run C and whose later lines
  // name run A: A keeps every value; C gets only its own lines; each foreign line is reported.
  void handWrittenFileCannotRewriteAnotherRun() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    const std::string a = dir.filePath("a.jsonl").toStdString();
    write_file(a, finished_run("runA", 4));
    QCOMPARE(Ingester(st, a).poll_all().skipped, size_t(0));
    check_untouched(st, "runA");

    const std::string c = dir.filePath("c.jsonl").toStdString();
    write_file(c, line(run_start("runC", 700.0)) + line(step("runC", 701.0, 1, 2.5)) + forged_lines("runA"));
    const IngestStats s = Ingester(st, c).poll_all();
    QCOMPARE(s.lines, size_t(7));
    QCOMPARE(s.foreign, size_t(5));
    QCOMPARE(s.skipped, size_t(5));
    QVERIFY(has_message(s, c + ":3: line names run 'runA', but this file is run 'runC''s (an events file feeds one run); line skipped"));
    check_untouched(st, "runA");
    QCOMPARE(st.metric_series("runC", "loss").value, (std::vector<double>{2.5}));
    // The counts are kept per file.
    QCOMPARE(count(st, "SELECT foreign_lines FROM event_files WHERE path = '" + c + "'"), int64_t(5));
    QCOMPARE(count(st, "SELECT count(*) FROM event_files e JOIN runs r ON r.id = e.run WHERE r.run_id = 'runC'"), int64_t(1));
  }

  // A file whose FIRST line names run A, which the store records from another file: nothing of
  // it is written, and no run is created for it.
  void fileOfAnotherRunsIdIsRefused() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    const std::string a = dir.filePath("a.jsonl").toStdString();
    write_file(a, finished_run("runA", 4));
    Ingester(st, a).poll_all();
    const std::string f = dir.filePath("forged.jsonl").toStdString();
    write_file(f, forged_lines("runA"));
    const IngestStats s = Ingester(st, f).poll_all();
    QCOMPARE(s.foreign, size_t(5));
    QVERIFY(has_message(s, "line names run 'runA', which the store records from another events file ('" + a + "')"));
    check_untouched(st, "runA");
    QCOMPARE(count(st, "SELECT count(*) FROM runs"), int64_t(1));
  }

  // The Slurm follower's case: lines with an older run's id appended to the followed run's file
  // (a shared filesystem, a hostile node). The follower writes run B only, creates no row for any
  // other id, and A's losses and last step stay.
  void followerIngestsOnlyItsRun() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    const std::string a = dir.filePath("a.jsonl").toStdString();
    write_file(a, finished_run("runA", 4));
    Ingester(st, a).poll_all();

    const std::string b = dir.filePath("b.jsonl").toStdString();
    write_file(b, line(run_start("runB", 800.0)) + line(step("runB", 801.0, 1, 3.0)));
    RunTail tail(st, "runB", b, "slurm");
    QCOMPARE(tail.ingest().foreign, size_t(0));
    std::string appended;
    for (int s = 1; s <= 199; ++s) appended += line(step("runA", 900.0 + s, s, 42.0));
    appended += line(step("runZ", 1100.0, 1, 1.0));  // an id the store has never seen
    appended += line(step("runB", 802.0, 2, 2.75));
    write_file(b, appended, true);
    const IngestStats s = tail.ingest();
    QCOMPARE(s.foreign, size_t(200));
    QCOMPARE(s.messages.size(), size_t(20));  // reported, at most 20 a call
    check_untouched(st, "runA");
    QVERIFY(!st.find_run("runZ"));
    QCOMPARE(st.metric_series("runB", "loss").value, (std::vector<double>{3.0, 2.75}));
    QCOMPARE(*st.get_run("runB").last_step, int64_t(2));
    // A follower started later for the same file (the GUI restarted) keeps to run B as well,
    // and so does a plain Ingester: the store associates the file with run B.
    write_file(b, line(step("runA", 950.0, 1, 43.0)), true);
    QCOMPARE(Ingester(st, b).poll_all().foreign, size_t(1));
    check_untouched(st, "runA");
  }

  // A line longer than kMaxEventLineBytes is skipped without being held whole, also when its end
  // arrives in a later poll of a new Ingester (a restart); the lines around it are kept.
  void overlongLinesAreSkippedInBoundedMemory() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    const std::string f = dir.filePath("events.jsonl").toStdString();
    const std::string filler(td::store::kMaxEventLineBytes + 100, 'x');
    write_file(f, line(run_start("rl", 1.0)) + "{\"type\":\"step\",\"pad\":\"" + filler + "\"}\n" + line(step("rl", 2.0, 1, 4.0)));
    IngestStats s = Ingester(st, f).poll_all();
    QCOMPARE(s.skipped, size_t(1));
    QVERIFY(has_message(s, f + ":2: line longer than 8388608 bytes (no event is); line skipped"));
    QCOMPARE(st.metric_series("rl", "loss").value, (std::vector<double>{4.0}));

    // Half of an over-long line (no end yet): consumed, remembered across a restart.
    write_file(f, "{\"type\":\"step\",\"pad\":\"" + filler, true);
    s = Ingester(st, f).poll_all();
    QCOMPARE(s.skipped, size_t(0));
    QVERIFY(s.partial_line);
    QCOMPARE(count(st, "SELECT long_line FROM event_files"), int64_t(1));
    // Its end is a valid-looking event: still part of the skipped line, never stored.
    write_file(f, "\",\"type\":\"step\",\"run_id\":\"rl\",\"t\":3,\"step\":99,\"loss\":1}\n" + line(step("rl", 3.0, 2, 3.5)), true);
    s = Ingester(st, f).poll_all();
    QCOMPARE(s.skipped, size_t(1));
    QVERIFY(has_message(s, f + ":4: line longer than"));
    QCOMPARE(st.metric_series("rl", "loss").value, (std::vector<double>{4.0, 3.5}));
    QCOMPARE(count(st, "SELECT long_line FROM event_files"), int64_t(0));
    QCOMPARE(count(st, "SELECT lines FROM event_files"), int64_t(5));  // line numbers stay true
  }

  // Steps outside 0..kMaxStep and ranks outside 0..kMaxRank are malformed, on the fast path
  // (flat step lines) and the full one (other types, optional steps).
  void impossibleStepsAndRanksAreRefused() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    const std::string f = dir.filePath("events.jsonl").toStdString();
    std::string text = line(run_start("rs", 1.0));
    text += line(step("rs", 2.0, 1, 4.0));
    text += line(step("rs", 3.0, -5, 4.0));                                  // 3: negative
    text += line(step("rs", 4.0, int64_t(1) << 52, 4.0));                    // 4: beyond kMaxStep
    text += line(step("rs", 5.0, td::kMaxStep + 1, 4.0));                    // 5
    json big_rank = step("rs", 6.0, 2, 3.0);
    big_rank["rank"] = int64_t(1) << 40;                                      // 6: rank overflows int
    text += line(big_rank);
    json w = ev("warning", "rs", 7.0);
    w["step"] = -1;                                                           // 7: a warning's step
    w["code"] = "x";
    text += line(w);
    json end = ev("run_end", "rs", 8.0);
    end["status"] = "completed";
    end["step"] = int64_t(9223372036854775807);                               // 8: run_end's step
    text += line(end);
    text += line(step("rs", 9.0, td::kMaxStep, 3.0));                         // the largest step: kept
    write_file(f, text);
    const IngestStats s = Ingester(st, f).poll_all();
    QCOMPARE(s.skipped, size_t(6));
    QVERIFY(has_message(s, f + ":3: \"step\" event's \"step\" is outside 0..1000000000000; line skipped"));
    QVERIFY(has_message(s, f + ":6: \"rank\" is not an integer in 0..1000000; line skipped"));
    QVERIFY(has_message(s, f + ":8: \"run_end\" event's \"step\" is outside 0..1000000000000; line skipped"));
    QCOMPARE(st.metric_series("rs", "loss").step, (std::vector<int64_t>{1, td::kMaxStep}));
    QCOMPARE(*st.get_run("rs").last_step, td::kMaxStep);
    QCOMPARE(st.get_run("rs").status, std::string("running"));
  }

  // A 5 MB field name (and a long type name) reaches a warning cut to 64 bytes with its length.
  void hugeNamesAreCutInWarnings() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    const std::string f = dir.filePath("events.jsonl").toStdString();
    const std::string name(5 * 1000 * 1000, 'n');
    json s1 = step("rn", 2.0, 1, 4.0);
    s1[name] = 1;
    json odd = ev("x", "rn", 3.0);
    odd["type"] = std::string(3000, 't');
    write_file(f, line(run_start("rn", 1.0)) + line(s1) + line(odd));
    const IngestStats s = Ingester(st, f).poll_all();
    QCOMPARE(s.messages.size(), size_t(2));
    for (const auto& m : s.messages) QVERIFY2(m.size() < 400, m.substr(0, 400).c_str());
    QVERIFY(has_message(s, "unknown field \"" + std::string(64, 'n') + "...\" (5000000 bytes)"));
    QVERIFY(has_message(s, "unknown event type \"" + std::string(64, 't') + "...\" (3000 bytes)"));
    QCOMPARE(st.metric_series("rn", "loss").value, (std::vector<double>{4.0}));
  }

  // A FIFO as events.jsonl is refused at once with a message saying what to do; a poll never
  // waits for a writer. (Were it to block, the test opens the FIFO's write end to free it.)
  void fifoIsRefusedNotWaitedOn() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    const std::string f = dir.filePath("events.jsonl").toStdString();
    QCOMPARE(::mkfifo(f.c_str(), 0600), 0);
    auto polled = std::async(std::launch::async, [&] {
      try {
        Ingester(st, f).poll_all();
        return std::string("no error");
      } catch (const td::Error& e) {
        return std::string(e.what());
      }
    });
    if (polled.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      const int w = ::open(f.c_str(), O_WRONLY | O_NONBLOCK);
      polled.wait();
      if (w >= 0) ::close(w);
      QFAIL("Ingester::poll on a FIFO was still blocked after 60 s");
    }
    const std::string what = polled.get();
    QVERIFY2(what.find("is not a regular file") != std::string::npos, what.c_str());
    QCOMPARE(count(st, "SELECT count(*) FROM runs"), int64_t(0));
  }
};

QTEST_GUILESS_MAIN(TestIngestIntegrity)
#include "test_ingest_integrity.moc"
