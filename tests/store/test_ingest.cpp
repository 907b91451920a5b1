// Ingest of events.jsonl into the store: exact values, resume semantics, crash safety
// (a failing batch, a SIGKILLed ingester), partial and malformed lines.
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "engine/common/error.h"
#include "events_fixture.h"
#include "store/flat_json.h"
#include "store/ingest.h"
#include "store/sqlite.h"
#include "store/store.h"

using namespace td::store;
using namespace td::store::test;

namespace {


// A file of one run: run_start, then `steps` step events (8 metric rows each).
std::string big_run(const std::string& run_id, int steps) {
  std::string text = line(run_start(run_id, 1000.0));
  for (int s = 1; s <= steps; ++s) text += line(step(run_id, 1000.0 + s, s, 10.0 - s * 1e-4));
  return text;
}

}  // namespace

class TestIngest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    qputenv("TZ", "UTC");
    tzset();
  }

  void roundTrip() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    std::string text = line(run_start("r1", 1000.0));
    text += line(step("r1", 1001.0, 1, 4.0, 0, 0, -1));  // mfu null: 7 rows
    text += line(step("r1", 1002.0, 2, 3.5));
    json w = ev("warning", "r1", 1002.5);
    w["step"] = 2;
    w["code"] = "nonfinite_grad";
    w["message"] = "grad_norm was inf; step skipped";
    text += line(w);
    text += line(step("r1", 1003.0, 3, 3.25));
    json e = ev("eval", "r1", 1003.5);
    e["step"] = 3;
    e["val_loss"] = 3.75;
    text += line(e);
    json s = ev("sample", "r1", 1004.0);
    s["step"] = 3;
    s["prompt"] = "Once upon";
    s["text"] = " a time, \"quoted\"\nsecond line";
    text += line(s);
    json c = ev("checkpoint", "r1", 1005.0);
    c["step"] = 3;
    c["path"] = "/runs/r1/ckpt-3";
    c["bytes"] = 4096;
    text += line(c);
    json end = ev("run_end", "r1", 1010.0);
    end["status"] = "completed";
    end["reason"] = "max_steps reached";
    end["step"] = 3;
    text += line(end);
    write_file(events, text);

    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events, "exp-a");
    const IngestStats stats = ing.poll_all();
    QCOMPARE(stats.lines, size_t(9));
    QCOMPARE(stats.skipped, size_t(0));
    QCOMPARE(stats.metric_rows, size_t(7 + 8 + 8 + 1));
    QCOMPARE(stats.rows, size_t(24 + 3));  // + warning, sample, checkpoint
    QCOMPARE(stats.bytes, text.size());
    QCOMPARE(stats.offset, int64_t(text.size()));
    QVERIFY(stats.at_eof);
    QVERIFY(!stats.partial_line);
    QCOMPARE(ing.offset(), int64_t(text.size()));
    QCOMPARE(count(st, "SELECT count(*) FROM metrics"), int64_t(24));

    const RunInfo r = st.get_run("r1");
    QCOMPARE(r.experiment, std::string("exp-a"));
    QCOMPARE(r.status, std::string("completed"));
    QCOMPARE(r.end_reason, std::string("max_steps reached"));
    QCOMPARE(r.host, std::string("nodeA"));
    QCOMPARE(r.device, std::string("cpu"));
    QCOMPARE(*r.start_time, 1000.0);
    QCOMPARE(*r.end_time, 1010.0);
    QCOMPARE(r.attempts, 1);
    QCOMPARE(*r.last_step, int64_t(3));
    QCOMPARE(*r.n_params, int64_t(12345));
    QCOMPARE(*r.world_size, int64_t(1));
    QVERIFY(!r.peak_flops.has_value());
    QCOMPARE(*r.best_val_loss, 3.75);
    QCOMPARE(*r.tokens_per_s, 2050.0);  // 2049, 2050, 2051: all warm-up, so the median of all three
    QCOMPARE(r.events_path, events);
    QCOMPARE(r.events_offset, int64_t(text.size()));
    QCOMPARE(json::parse(r.config_json)["model"]["d_model"].get<int>(), 64);

    const MetricSeries loss = st.metric_series("r1", "loss");
    QCOMPARE(loss.step, (std::vector<int64_t>{1, 2, 3}));
    QCOMPARE(loss.value, (std::vector<double>{4.0, 3.5, 3.25}));
    QCOMPARE(loss.t, (std::vector<double>{1001.0, 1002.0, 1003.0}));
    QCOMPARE(st.metric_series("r1", "mfu").step, (std::vector<int64_t>{2, 3}));
    QCOMPARE(st.metric_series("r1", "tokens_seen").value, (std::vector<double>{1024, 2048, 3072}));
    QCOMPARE(st.metric_series("r1", "rss_bytes").value[0], 1e8);
    QCOMPARE(st.metric_series("r1", "step_ms").value[2], 100.25);
    QCOMPARE(st.metric_series("r1", "val_loss").value, (std::vector<double>{3.75}));
    QCOMPARE(st.metric_series("r1", "loss", 0, 2, 2).value, (std::vector<double>{3.5}));
    QCOMPARE(st.metric_series("r1", "no_such_metric").size(), size_t(0));
    QCOMPARE(st.metric_series("r1", "loss", 1).size(), size_t(0));  // no rank 1

    const auto samples = st.samples("r1");
    QCOMPARE(samples.size(), size_t(1));
    QCOMPARE(samples[0].prompt, std::string("Once upon"));
    QCOMPARE(samples[0].text, std::string(" a time, \"quoted\"\nsecond line"));
    QCOMPARE(samples[0].step, int64_t(3));
    const auto cps = st.checkpoints("r1");
    QCOMPARE(cps.size(), size_t(1));
    QCOMPARE(cps[0].path, std::string("/runs/r1/ckpt-3"));
    QCOMPARE(*cps[0].bytes, int64_t(4096));
    const auto ws = st.warnings("r1");
    QCOMPARE(ws.size(), size_t(1));
    QCOMPARE(ws[0].code, std::string("nonfinite_grad"));
    QCOMPARE(*ws[0].step, int64_t(2));

    // Nothing new: a second poll reads nothing and writes nothing.
    const IngestStats again = ing.poll_all();
    QCOMPARE(again.lines, size_t(0));
    QCOMPARE(again.batches, size_t(0));
    // A re-ingest from byte 0 rewrites the same rows: no duplicates.
    ing.reset();
    QCOMPARE(ing.poll_all().lines, size_t(9));
    QCOMPARE(count(st, "SELECT count(*) FROM metrics"), int64_t(24));
    QCOMPARE(count(st, "SELECT count(*) FROM warnings"), int64_t(1));
    QCOMPARE(count(st, "SELECT count(*) FROM samples"), int64_t(1));
  }

  void resumedAttemptReplacesRedoneSteps() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    std::string text = line(run_start("r2", 100.0));
    for (int s = 1; s <= 10; ++s) text += line(step("r2", 100.0 + s, s, 5.0 - 0.1 * s));
    json end0 = ev("run_end", "r2", 111.0);
    end0["status"] = "stopped";
    end0["reason"] = "killed";
    end0["step"] = 10;
    text += line(end0);
    text += line(run_start("r2", 200.0, 1, 6));
    for (int s = 7; s <= 12; ++s) text += line(step("r2", 200.0 + s, s, 9.0 - 0.1 * s, 1));
    write_file(events, text);

    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events);
    ing.poll(5);  // batches cut across the attempt boundary too
    ing.poll_all();
    const MetricSeries loss = st.metric_series("r2", "loss");
    QCOMPARE(loss.step, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
    for (int s = 1; s <= 12; ++s) {
      const size_t i = static_cast<size_t>(s - 1);
      const bool redone = s >= 7;
      QCOMPARE(loss.value[i], redone ? 9.0 - 0.1 * s : 5.0 - 0.1 * s);
      QCOMPARE(loss.attempt[i], redone ? 1 : 0);
      QCOMPARE(loss.t[i], redone ? 200.0 + s : 100.0 + s);
    }
    QCOMPARE(count(st, "SELECT count(*) FROM metrics"), int64_t(12 * 8));
    const RunInfo r = st.get_run("r2");
    QCOMPARE(r.status, std::string("running"));  // attempt 1 has no run_end yet
    QVERIFY(!r.end_time.has_value());
    QCOMPARE(r.attempts, 2);
    QCOMPARE(*r.last_step, int64_t(12));
    QCOMPARE(*r.start_time, 100.0);
    const auto attempts = st.run_attempts("r2");
    QCOMPARE(attempts.size(), size_t(2));
    QCOMPARE(attempts[0].status, std::string("stopped"));
    QCOMPARE(*attempts[1].resumed_from_step, int64_t(6));

    // An old attempt's line replayed after the new one's does not win.
    write_file(events, line(step("r2", 105.0, 8, 123.0, 0)), true);
    ing.poll_all();
    QCOMPARE(st.metric_series("r2", "loss", 0, 8, 8).value, (std::vector<double>{9.0 - 0.8}));
  }

  void ranksAreSeparateSeries() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    write_file(events, line(step("r3", 1.0, 1, 2.0, 0, 0)) + line(step("r3", 1.0, 1, 2.5, 0, 1)));
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events);
    QCOMPARE(ing.poll_all().metric_rows, size_t(16));
    QCOMPARE(st.metric_series("r3", "loss", 0).value, (std::vector<double>{2.0}));
    QCOMPARE(st.metric_series("r3", "loss", 1).value, (std::vector<double>{2.5}));
    // A run seen without run_start still exists, in the default experiment.
    QCOMPARE(st.get_run("r3").status, std::string("unknown"));
    QCOMPARE(st.get_run("r3").experiment, std::string("default"));
  }

  void failedBatchRollsBackWithItsOffset() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    const std::string text = big_run("r4", 100);
    write_file(events, text);
    Store st(dir.filePath("td.db").toStdString());
    bool fail = true;
    IngestOptions opts;
    opts.batch_lines = 30;
    opts.after_row = [&](size_t rows_in_batch) {
      if (fail && rows_in_batch == 100) throw std::runtime_error("simulated crash");
    };
    Ingester ing(st, events, "default", opts);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, ing.poll(30));
    QCOMPARE(count(st, "SELECT count(*) FROM metrics"), int64_t(0));
    QCOMPARE(ing.offset(), int64_t(0));
    fail = false;
    QCOMPARE(ing.poll(30).lines, size_t(30));  // run_start + 29 steps
    fail = true;
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, ing.poll(30));
    QCOMPARE(count(st, "SELECT count(*) FROM metrics"), int64_t(29 * 8));
    fail = false;
    const IngestStats rest = ing.poll_all();
    QCOMPARE(rest.lines, size_t(71));
    QCOMPARE(rest.metric_rows, size_t(71 * 8));
    QCOMPARE(count(st, "SELECT count(*) FROM metrics"), int64_t(100 * 8));
    QCOMPARE(ing.offset(), int64_t(text.size()));
  }

  // A child process ingests a large file and is SIGKILLed mid-batch (by itself, at a fixed
  // row, and by the parent at an arbitrary moment); a fresh ingester then finishes the job.
  void killedIngesterResumesExactlyOnce_data() {
    QTest::addColumn<bool>("self_kill");
    QTest::newRow("killed at a fixed row") << true;
    QTest::newRow("killed by the parent") << false;
  }
  void killedIngesterResumesExactlyOnce() {
    QFETCH(bool, self_kill);
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    const std::string db = dir.filePath("td.db").toStdString();
    const int steps = 20000;
    const std::string text = big_run("r5", steps);
    write_file(events, text);
    { Store st(db); }  // create the file before forking

    const pid_t pid = fork();
    QVERIFY(pid >= 0);
    if (pid == 0) {
      try {
        Store st(db);
        IngestOptions opts;
        opts.batch_lines = 1000;
        opts.batch_seconds = 0;  // batches end on the line count only
        size_t total = 0;
        // Batch 1 (run_start + 999 steps) writes 7992 rows, batches 2-5 8000 each: this row
        // is in the middle of batch 6.
        opts.after_row = [&](size_t) {
          if (self_kill && ++total == 7992 + 4 * 8000 + 2345) raise(SIGKILL);
        };
        Ingester ing(st, events, "default", opts);
        ing.poll_all();
      } catch (...) {
        _exit(2);
      }
      _exit(0);
    }
    if (!self_kill) {
      Store watch(db);
      Ingester probe(watch, events);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);  // a limit for a loaded machine, not a pace
      while (probe.offset() < int64_t(text.size() / 4) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      kill(pid, SIGKILL);
    }
    int status = 0;
    QCOMPARE(waitpid(pid, &status, 0), pid);
    QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the ingester was not killed");

    Store st(db);
    Ingester ing(st, events);
    const int64_t offset = ing.offset();
    QVERIFY(offset > 0 && offset < int64_t(text.size()));
    // What survived is exactly the committed lines: whole lines, 8 rows per step line.
    QCOMPARE(text[size_t(offset) - 1], '\n');
    const int64_t lines_done = std::count(text.begin(), text.begin() + offset, '\n');
    const int64_t rows_before = count(st, "SELECT count(*) FROM metrics");
    QCOMPARE(rows_before, (lines_done - 1) * 8);
    if (self_kill) QCOMPARE(lines_done, int64_t(5000));

    const IngestStats rest = ing.poll_all();
    QCOMPARE(int64_t(rest.lines), steps + 1 - lines_done);  // no line read twice
    QCOMPARE(int64_t(rest.metric_rows), (steps + 1 - lines_done) * 8);
    QCOMPARE(count(st, "SELECT count(*) FROM metrics"), int64_t(steps) * 8);
    QCOMPARE(count(st, "SELECT count(DISTINCT step) FROM metrics"), int64_t(steps));
    QCOMPARE(count(st, "SELECT lines FROM event_files"), int64_t(steps + 1));
    const MetricSeries loss = st.metric_series("r5", "loss");
    QCOMPARE(loss.size(), size_t(steps));
    for (int s = 1; s <= steps; s += 997) QCOMPARE(loss.value[size_t(s - 1)], 10.0 - s * 1e-4);
  }

  void truncatedLastLineWaitsForItsEnd() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    const std::string first = line(run_start("r6", 1.0)) + line(step("r6", 2.0, 1, 3.0));
    const std::string second = line(step("r6", 3.0, 2, 2.0));
    const size_t cut = second.size() / 2;
    write_file(events, first + second.substr(0, cut));
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events);
    IngestStats s = ing.poll_all();
    QCOMPARE(s.lines, size_t(2));
    QCOMPARE(s.skipped, size_t(0));
    QVERIFY(s.partial_line);
    QCOMPARE(s.messages.size(), size_t(0));  // an engine mid-write: no warning, it waits
    QCOMPARE(ing.offset(), int64_t(first.size()));
    QCOMPARE(st.metric_series("r6", "loss").size(), size_t(1));
    s = ing.poll_all();  // still incomplete: nothing happens
    QCOMPARE(s.lines, size_t(0));
    QVERIFY(s.partial_line);

    write_file(events, second.substr(cut), true);
    s = ing.poll_all();
    QCOMPARE(s.lines, size_t(1));
    QCOMPARE(s.skipped, size_t(0));
    QCOMPARE(s.metric_rows, size_t(8));
    QCOMPARE(s.messages.size(), size_t(0));
    QVERIFY(!s.partial_line);
    QCOMPARE(st.metric_series("r6", "loss").value, (std::vector<double>{3.0, 2.0}));
    QCOMPARE(ing.offset(), int64_t(first.size() + second.size()));
  }

  // Issue 3's four cases: a malformed line, a truncated last line (completed later: above), an
  // unknown event type and unknown fields. Each gives exactly one warning; nothing else is lost.
  void malformedSkippedUnknownIgnored() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    json start = run_start("r7", 1.0);
    start["gpu_name"] = "H200";                                           // unknown field
    std::string text = line(start);                                       // line 1: kept
    text += "{\"type\":\"step\",\"v\":1,\"t\":2,\"run_id\":\"r7\",\"st\n";  // 2: cut by a crash
    text += "[1,2,3]\n";                                                  // 3: not an object
    json no_run = step("r7", 3.0, 1, 1.0);
    no_run.erase("run_id");
    text += line(no_run);                                                 // 4: no run_id
    json bad_step = step("r7", 3.0, 1, 1.0);
    bad_step["step"] = "one";
    text += line(bad_step);                                               // 5: step not an int
    json v2 = step("r7", 3.0, 1, 1.0);
    v2["v"] = 2;
    text += line(v2);                                                     // 6: newer schema
    text += "\n";                                                         // 7: blank
    json unknown = ev("gpu_stats", "r7", 4.0);
    unknown["util"] = 0.9;
    text += line(unknown);                                                // 8: unknown type
    json extra = step("r7", 5.0, 1, 1.25);
    extra["gpu_fan_pct"] = 61;                                             // unknown fields,
    extra["nested"] = {{"a", {1, 2}}};                                    // full parser
    text += line(extra);                                                  // 9: kept
    text += "{\"type\":\"eval\",\"v\":1,\"t\":6,\"run_id\":\"r7\",\"step\":1,\"val_loss\":null}\r\n";  // 10
    json flat_extra = step("r7", 7.0, 2, 1.125);
    flat_extra["gpu_util"] = 0.5;                                         // unknown, fast path
    text += line(flat_extra);                                             // 11: kept
    text += line(unknown);                                                // 12: again, no warning
    json gpu = step("r7", 8.0, 3, 1.0);
    gpu["gpu_mem_bytes"] = 4096;                                          // a GPU run's memory:
    gpu["gpu_mem_peak_bytes"] = 8192;                                     // stored metrics
    text += line(gpu);                                                    // 13: kept
    write_file(events, text);

    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events);
    IngestStats s = ing.poll_all();
    QCOMPARE(s.lines, size_t(13));
    QCOMPARE(s.skipped, size_t(6));  // lines 2, 3, 4, 5, 6, 10
    QCOMPARE(s.ignored, size_t(2));  // lines 8, 12
    QCOMPARE(s.unknown_fields, size_t(3));  // lines 1, 9, 11
    QCOMPARE(s.metric_rows, size_t(3 * 8 + 2));  // lines 9, 11, 13 (+ its two GPU memory figures)
    const std::string at = events + ":";
    const std::vector<std::string> want = {
        at + "1: unknown field \"gpu_name\" in a \"run_start\" event (from a newer engine?); the field is "
             "ignored, the rest of the line kept",
        at + "2: not valid JSON; line skipped",
        at + "3: not a JSON object; line skipped",
        at + "4: no \"run_id\" string; line skipped",
        at + "5: \"step\" event without an integer \"step\"; line skipped",
        at + "6: events schema version 2 is newer than this TrainDeck reads (1); update TrainDeck; line skipped",
        at + "8: unknown event type \"gpu_stats\" (from a newer engine?); its lines are ignored",
        at + "9: unknown field \"gpu_fan_pct\" in a \"step\" event (from a newer engine?); the field is "
             "ignored, the rest of the line kept",
        at + "9: unknown field \"nested\" in a \"step\" event (from a newer engine?); the field is ignored, "
             "the rest of the line kept",
        at + "10: \"eval\" event without a \"val_loss\" number; line skipped",
        at + "11: unknown field \"gpu_util\" in a \"step\" event (from a newer engine?); the field is "
             "ignored, the rest of the line kept",
    };
    QCOMPARE(s.messages.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) QCOMPARE(s.messages[i], want[i]);
    QCOMPARE(st.metric_series("r7", "loss").value, (std::vector<double>{1.25, 1.125, 1.0}));
    QCOMPARE(st.metric_series("r7", "loss").step, (std::vector<int64_t>{1, 2, 3}));
    QCOMPARE(count(st, "SELECT count(*) FROM metrics"), int64_t(26));
    QCOMPARE(count(st, "SELECT count(*) FROM metric_names WHERE name IN ('gpu_util', 'gpu_fan_pct', 'util')"),
             int64_t(0));
    QCOMPARE(st.metric_series("r7", "gpu_mem_bytes").value, (std::vector<double>{4096}));
    QCOMPARE(st.metric_series("r7", "gpu_mem_peak_bytes").step, (std::vector<int64_t>{3}));
    QCOMPARE(st.get_run("r7").host, std::string("nodeA"));  // line 1 kept despite its extra field
    QCOMPARE(count(st, "SELECT skipped FROM event_files"), int64_t(6));
    QCOMPARE(ing.offset(), int64_t(text.size()));

    // Later lines: skipped ones warn each time, known unknowns are counted but not repeated.
    const std::string more = line(unknown) + line(flat_extra) + "not json\n";
    write_file(events, more, true);
    s = ing.poll_all();
    QCOMPARE(s.lines, size_t(3));
    QCOMPARE(s.ignored, size_t(1));
    QCOMPARE(s.unknown_fields, size_t(1));
    QCOMPARE(s.skipped, size_t(1));
    QCOMPARE(s.messages, (std::vector<std::string>{at + "16: not valid JSON; line skipped"}));
    QCOMPARE(count(st, "SELECT skipped FROM event_files"), int64_t(7));
  }

  // runs.pid follows the latest attempt's run_start (the GUI re-attaches by it).
  void runStartRecordsPid() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    json s0 = run_start("rp", 10.0);
    s0["pid"] = 4242;
    write_file(events, line(s0) + line(step("rp", 11.0, 1, 2.0)));
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events);
    QCOMPARE(ing.poll_all().messages.size(), size_t(0));  // pid is a known field
    QCOMPARE(*st.get_run("rp").pid, int64_t(4242));
    json s1 = run_start("rp", 20.0, 1, 1);
    s1["pid"] = 5151;
    write_file(events, line(s1), true);
    ing.poll_all();
    QCOMPARE(*st.get_run("rp").pid, int64_t(5151));
    // A re-ingest from byte 0 replays attempt 0's run_start after attempt 1's was stored: the
    // latest attempt's pid stays.
    ing.reset();
    ing.poll_all();
    QCOMPARE(*st.get_run("rp").pid, int64_t(5151));
    // A run_start without pid (an older engine) keeps the launcher's.
    const std::string other = dir.filePath("other.jsonl").toStdString();
    write_file(other, line(step("rq", 1.0, 1, 2.0)));
    Ingester ing2(st, other);
    ing2.poll_all();
    st.set_run_pid("rq", 777);
    write_file(other, line(run_start("rq", 2.0)), true);
    ing2.poll_all();
    QCOMPARE(*st.get_run("rq").pid, int64_t(777));
  }

  // Issue 13, finding 4: an attempt outside 0..kMaxAttempt is a malformed line, and a run_end
  // counts only for the attempt that is running (the newest run_start's): a forged run_end of
  // another attempt changes neither the status nor the attempts.
  void forgedAttemptsAreRefused() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    std::string text = line(run_start("rf", 100.0));
    for (int s = 1; s <= 3; ++s) text += line(step("rf", 100.0 + s, s, 5.0 - 0.5 * s));
    text += line(step("rf", 104.0, 4, 7.0, 2147483647));    // line 5: attempt out of range
    json forged = ev("run_end", "rf", 105.0, 5);            // line 6: an attempt that never started
    forged["status"] = "failed";
    forged["reason"] = "forged";
    forged["step"] = 3;
    text += line(forged);
    for (int s = 4; s <= 6; ++s) text += line(step("rf", 100.0 + s, s, 5.0 - 0.5 * s));
    json end = ev("run_end", "rf", 110.0, 0);
    end["status"] = "completed";
    end["reason"] = "reached train.steps";
    end["step"] = 6;
    text += line(end);
    write_file(events, text);

    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events);
    const IngestStats s = ing.poll_all();
    QCOMPARE(s.skipped, size_t(1));
    QCOMPARE(s.messages, (std::vector<std::string>{events + ":5: \"attempt\" is not an integer in 0..1000000; line skipped"}));
    RunInfo r = st.get_run("rf");
    QCOMPARE(r.status, std::string("completed"));
    QCOMPARE(r.end_reason, std::string("reached train.steps"));
    QCOMPARE(*r.last_step, int64_t(6));
    QCOMPARE(r.attempts, 1);
    QCOMPARE(st.run_attempts("rf").size(), size_t(1));
    QCOMPARE(st.metric_series("rf", "loss").value, (std::vector<double>{4.5, 4.0, 3.5, 3.0, 2.5, 2.0}));
    QCOMPARE(st.metric_series("rf", "loss").attempt, (std::vector<int>{0, 0, 0, 0, 0, 0}));

    // A resumed attempt ends the run; a later forged run_end of attempt 0 (or 7) does not.
    std::string more = line(run_start("rf", 200.0, 1, 6));
    more += line(step("rf", 207.0, 7, 1.5, 1));
    json end1 = ev("run_end", "rf", 208.0, 1);
    end1["status"] = "stopped";
    end1["reason"] = "stop requested (signal)";
    end1["step"] = 7;
    more += line(end1);
    json old = ev("run_end", "rf", 209.0, 0);
    old["status"] = "failed";
    old["reason"] = "forged";
    old["step"] = 2;
    more += line(old);
    forged["attempt"] = 7;
    more += line(forged);
    write_file(events, more, true);
    ing.poll_all();
    r = st.get_run("rf");
    QCOMPARE(r.status, std::string("stopped"));
    QCOMPARE(r.end_reason, std::string("stop requested (signal)"));
    QCOMPARE(*r.end_time, 208.0);
    QCOMPARE(*r.last_step, int64_t(7));
    QCOMPARE(r.attempts, 2);
    const auto attempts = st.run_attempts("rf");
    QCOMPARE(attempts.size(), size_t(2));  // no row for the forged attempt 7
    QCOMPARE(attempts[1].status, std::string("stopped"));
  }

  // Appended rows are queued and written in multi-row statements, grouped by series; batches
  // of more rows than the queue holds, two ranks, a remainder, and a resumed attempt's
  // replacements in the same batch give exactly the rows and level of detail of a row-by-row
  // write (checked against values computed here and a rebuild of the level of detail).
  void queuedAppendsKeepEveryRow() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    std::string text = line(run_start("rb", 0.0));
    const int steps = 1500;  // 2 ranks x 8 metrics x 1500 = 24,000 rows: above one queue
    for (int s = 1; s <= steps; ++s)
      for (int rank = 0; rank < 2; ++rank) text += line(step("rb", s, s, 100.0 - s * 0.01 - rank, 0, rank));
    text += line(run_start("rb", 5000.0, 1, 1495));
    for (int s = 1496; s <= steps + 3; ++s) text += line(step("rb", 5000.0 + s, s, 7.0 + s, 1, 0));
    write_file(events, text);
    Store st(dir.filePath("td.db").toStdString());
    IngestOptions opts;
    opts.batch_lines = 1000000;
    opts.batch_seconds = 0;
    Ingester ing(st, events, "default", opts);
    const IngestStats s = ing.poll_all();
    QCOMPARE(s.batches, size_t(1));
    QCOMPARE(s.metric_rows, size_t(steps * 2 * 8 + 8 * 8));  // 5 replaced + 3 new steps of rank 0
    QCOMPARE(count(st, "SELECT count(*) FROM metrics"), int64_t(steps * 2 * 8 + 3 * 8));
    const MetricSeries r0 = st.metric_series("rb", "loss", 0);
    const MetricSeries r1 = st.metric_series("rb", "loss", 1);
    QCOMPARE(r0.size(), size_t(steps + 3));
    QCOMPARE(r1.size(), size_t(steps));
    for (int i = 1; i <= steps + 3; ++i) {
      const size_t k = size_t(i - 1);
      QCOMPARE(r0.step[k], int64_t(i));
      QCOMPARE(r0.value[k], i > 1495 ? 7.0 + i : 100.0 - i * 0.01);
      QCOMPARE(r0.attempt[k], i > 1495 ? 1 : 0);
      if (i <= steps) QCOMPARE(r1.value[k], 100.0 - i * 0.01 - 1);
    }
    QCOMPARE(st.metric_series("rb", "tokens_seen", 1).value[999], 1024.0 * 1000);
    // The level of detail kept during ingest equals one rebuilt from the raw rows (sums up to
    // their summation order).
    const char* lod = "SELECT group_concat(name || ':' || rank || ':' || level || ':' || bucket || ':' ||"
                      " n || ':' || step_min || ':' || step_max || ':' || v_min || ':' || v_max || ':' ||"
                      " step_at_min || ':' || step_at_max || ':' || v_first || ':' || v_last || ':' ||"
                      " round(v_sum, 6), ';') FROM"
                      " (SELECT * FROM metric_lod ORDER BY run, name, rank, level, bucket)";
    Stmt before(st.handle(), lod);
    QVERIFY(before.step());
    const std::string kept = before.col_text(0);
    before.reset();
    st.rebuild_lod("rb");
    Stmt after(st.handle(), lod);
    QVERIFY(after.step());
    QVERIFY(!kept.empty());
    QCOMPARE(after.col_text(0), kept);
  }

  void batchesRespectLineLimit() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    const std::string l0 = line(run_start("r8", 1.0)), l1 = line(step("r8", 2.0, 1, 3.0));
    write_file(events, l0 + l1 + line(step("r8", 3.0, 2, 2.0)));
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events);
    IngestStats s = ing.poll(2);
    QCOMPARE(s.lines, size_t(2));
    QCOMPARE(s.batches, size_t(1));
    QVERIFY(!s.at_eof);
    QCOMPARE(ing.offset(), int64_t(l0.size() + l1.size()));
    s = ing.poll(2);
    QCOMPARE(s.lines, size_t(1));
    QVERIFY(s.at_eof);
  }

  // The fast path accepts exactly the flat objects nlohmann-json reads the same way.
  void flatScannerAgreesWithFullParser_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("flat");
    QTest::newRow("step") << QString::fromStdString(step("r", 1.5, 3, 2.75).dump()) << true;
    QTest::newRow("spaces") << " { \"a\" : -0.5e-3 , \"b\":true,\"c\":null, \"d\":\"x\" } " << true;
    QTest::newRow("empty") << "{}" << true;
    QTest::newRow("big int") << "{\"a\":123456789012345678901}" << false;
    QTest::newRow("nested") << "{\"a\":{\"b\":1}}" << false;
    QTest::newRow("array") << "{\"a\":[1]}" << false;
    QTest::newRow("escape") << "{\"a\":\"x\\ny\"}" << false;
    QTest::newRow("leading zero") << "{\"a\":01}" << false;
    QTest::newRow("bare dot") << "{\"a\":1.}" << false;
    QTest::newRow("plus") << "{\"a\":+1}" << false;
    QTest::newRow("trailing comma") << "{\"a\":1,}" << false;
    QTest::newRow("trailing text") << "{\"a\":1} x" << false;
    QTest::newRow("cut") << "{\"a\":1" << false;
    QTest::newRow("nan") << "{\"a\":NaN}" << false;
  }
  void flatScannerAgreesWithFullParser() {
    QFETCH(QString, text);
    QFETCH(bool, flat);
    const std::string s = text.toStdString();
    FlatObject o;
    QCOMPARE(scan_flat(s.data(), s.data() + s.size(), o), flat);
    if (!flat) return;
    const json j = json::parse(s);
    QCOMPARE(size_t(o.n), j.size());
    for (int i = 0; i < o.n; ++i) {
      const json& v = j.at(std::string(o.key[i]));
      const FlatValue& f = o.value[i];
      if (v.is_number()) QCOMPARE(f.d, v.get<double>());
      if (v.is_number_integer()) QCOMPARE(f.kind, FlatValue::Int);
      if (v.is_number_float()) QCOMPARE(f.kind, FlatValue::Float);
      if (v.is_string()) QCOMPARE(std::string(f.s), v.get<std::string>());
      if (v.is_null()) QCOMPARE(f.kind, FlatValue::Null);
      if (v.is_boolean()) QCOMPARE(f.i, int64_t(v.get<bool>()));
    }
  }

  void missingAndShrunkFiles() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events);
    const IngestStats none = ing.poll_all();  // the engine has not written it yet
    QCOMPARE(none.lines, size_t(0));
    QCOMPARE(st.list_experiments().size(), size_t(0));
    write_file(events, line(run_start("r9", 1.0)) + line(step("r9", 2.0, 1, 3.0)));
    QCOMPARE(ing.poll_all().lines, size_t(2));
    write_file(events, line(run_start("r9", 1.0)));  // replaced by a shorter file
    try {
      ing.poll();
      QFAIL("a file shorter than the ingested offset must throw");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("truncated or replaced") != std::string::npos, e.what());
    }
    ing.reset();
    QCOMPARE(ing.poll_all().lines, size_t(1));
  }

  void eventsFileThroughALinkIsRefused() {
    // A link planted as a run's events.jsonl (the engine never writes one) would make the store
    // read whatever file it names: refused, nothing recorded, the file it names untouched.
    QTemporaryDir dir;
    const std::string real = dir.filePath("elsewhere.jsonl").toStdString();
    const std::string text = line(run_start("r10", 1.0)) + line(step("r10", 2.0, 1, 3.0));
    write_file(real, text);
    const std::string events = dir.filePath("events.jsonl").toStdString();
    QCOMPARE(::symlink(real.c_str(), events.c_str()), 0);
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events);
    try {
      ing.poll_all();
      QFAIL("an events file that is a symbolic link must be refused");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("is a symbolic link") != std::string::npos, e.what());
    }
    QCOMPARE(st.list_experiments().size(), size_t(0));
    QVERIFY(!st.find_run("r10").has_value());
    std::ifstream in(real, std::ios::binary);
    QCOMPARE(std::string(std::istreambuf_iterator<char>(in), {}), text);
  }
};

QTEST_APPLESS_MAIN(TestIngest)
#include "test_ingest.moc"
