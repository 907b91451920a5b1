// Store queries (experiments, runs list, series) and the `runs` CLI (list, show, export CSV).
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include "engine/cli/runs_cmd.h"
#include "engine/common/error.h"
#include "cli_fixture.h"
#include "events_fixture.h"
#include "store/format.h"
#include "store/ingest.h"
#include "store/sqlite.h"
#include "store/store.h"

using namespace td::store;
using namespace td::store::test;

namespace {

// A small run: two steps with loss and lr only, one eval.
std::string small_run(const std::string& run_id) {
  json a = ev("step", run_id, 101.5);
  a["step"] = 1;
  a["loss"] = 2.5;
  a["lr"] = 0.001;
  json b = ev("step", run_id, 102.25);
  b["step"] = 2;
  b["loss"] = 2.25;
  b["lr"] = 0.0005;
  json e = ev("eval", run_id, 102.5);
  e["step"] = 2;
  e["val_loss"] = 2.375;
  json end = ev("run_end", run_id, 103.0);
  end["status"] = "completed";
  end["reason"] = "done";
  end["step"] = 2;
  return line(run_start(run_id, 100.0)) + line(a) + line(b) + line(e) + line(end);
}

const char* kSmallCsv =
    "step,rank,attempt,t,name,value\n"
    "1,0,0,101.5,loss,2.5\n"
    "1,0,0,101.5,lr,0.001\n"
    "2,0,0,102.25,loss,2.25\n"
    "2,0,0,102.25,lr,0.0005\n"
    "2,0,0,102.5,val_loss,2.375\n";

// QCOMPARE on std::string prints no values; this does.
#define COMPARE_TEXT(actual, expected)                                                   \
  do {                                                                                   \
    const std::string a_ = (actual), e_ = (expected);                                    \
    QVERIFY2(a_ == e_, ("got:\n" + a_ + "\nexpected:\n" + e_).c_str());                 \
  } while (0)

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

class TestQueries : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string db_;

 private slots:
  void initTestCase() {
    qputenv("TZ", "UTC");
    tzset();
    db_ = dir_.filePath("td.db").toStdString();
    Store st(db_);
    const std::string e1 = dir_.filePath("a.jsonl").toStdString();
    const std::string e2 = dir_.filePath("b.jsonl").toStdString();
    write_file(e1, small_run("run-a"));
    std::string b = line(run_start("run-b", 50.0));
    for (int s = 1; s <= 20; ++s) b += line(step("run-b", 50.0 + s, s, 4.0 - 0.125 * s));
    write_file(e2, b);
    Ingester(st, e1, "exp-1").poll_all();
    Ingester(st, e2, "exp-2").poll_all();
  }

  void listsRunsWithSummaries() {
    Store st(db_);
    const auto runs = st.list_runs();
    QCOMPARE(runs.size(), size_t(2));
    QCOMPARE(runs[0].run_id, std::string("run-b"));  // started first (t = 50)
    QCOMPARE(runs[0].status, std::string("running"));
    QCOMPARE(*runs[0].last_step, int64_t(20));
    QVERIFY(!runs[0].best_val_loss.has_value());
    QCOMPARE(*runs[0].tokens_per_s, 2060.0);  // median of steps 4..20: 2052..2068
    QVERIFY(!runs[0].total_steps.has_value());  // the fixture's config has no train.steps
    QCOMPARE(runs[1].run_id, std::string("run-a"));
    QCOMPARE(runs[1].status, std::string("completed"));
    QCOMPARE(*runs[1].best_val_loss, 2.375);
    QVERIFY(!runs[1].tokens_per_s.has_value());
    QCOMPARE(st.list_runs("exp-1").size(), size_t(1));
    QCOMPARE(st.list_runs("nope").size(), size_t(0));
    QVERIFY(!st.find_run("nope").has_value());
    QVERIFY_THROWS_EXCEPTION(td::Error, st.get_run("nope"));
  }

  void seriesAndMetricSummaries() {
    Store st(db_);
    const MetricSeries s = st.metric_series("run-b", "loss", 0, 5, 8);
    QCOMPARE(s.step, (std::vector<int64_t>{5, 6, 7, 8}));
    QCOMPARE(s.value, (std::vector<double>{3.375, 3.25, 3.125, 3.0}));
    const auto ms = st.list_metrics("run-b");
    QCOMPARE(ms.size(), size_t(8));
    const auto loss = std::find_if(ms.begin(), ms.end(), [](const MetricInfo& m) { return m.name == "loss"; });
    QVERIFY(loss != ms.end());
    QCOMPARE(loss->count, int64_t(20));
    QCOMPARE(loss->first_step, int64_t(1));
    QCOMPARE(loss->last_step, int64_t(20));
    QCOMPARE(loss->last_value, 1.5);
    QCOMPARE(loss->min_value, 1.5);
    QCOMPARE(loss->max_value, 3.875);
    QCOMPARE(st.count_metrics("run-b"), int64_t(160));
  }

  void numbersReadBackExactly() {
    QCOMPARE(format_number(0.0005), std::string("0.0005"));
    QCOMPARE(format_number(183500800.0), std::string("183500800"));
    QCOMPARE(format_number(1764470000.25), std::string("1764470000.25"));
    QCOMPARE(format_number(1e-8), std::string("1e-08"));
    QCOMPARE(format_number(-3.0), std::string("-3"));
    for (double v : {0.1 + 0.2, 1.0 / 3.0, 6.02214076e23, -2.5e-300})
      QCOMPARE(std::stod(format_number(v)), v);
    QCOMPARE(csv_field("a,b"), std::string("\"a,b\""));
    QCOMPARE(csv_field("say \"hi\""), std::string("\"say \"\"hi\"\"\""));
    QCOMPARE(format_duration(3723), std::string("1h02m03s"));
  }

  void exportsCsv() {
    Store st(db_);
    std::ostringstream out;
    QCOMPARE(st.export_metrics_csv("run-a", out), int64_t(5));
    COMPARE_TEXT(out.str(), kSmallCsv);
  }

  void runsCliExportsCsv() {
    COMPARE_TEXT(run_cli({"runs", "export", "run-a", "--csv", "--db", db_}), kSmallCsv);
    const std::string out = dir_.filePath("out.csv").toStdString();
    QCOMPARE(run_cli({"runs", "export", "--db", db_, "run-a", "--csv", "--out", out}), std::string());
    QCOMPARE(read_all(out), std::string(kSmallCsv));
    // An unknown run fails with a message and leaves the earlier file intact.
    try {
      run_cli({"runs", "export", "--db", db_, "nope", "--csv", "--out", out});
      QFAIL("exporting an unknown run must throw");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("no run 'nope'") != std::string::npos, e.what());
    }
    QCOMPARE(read_all(out), std::string(kSmallCsv));
    QVERIFY_THROWS_EXCEPTION(td::Error, run_cli({"runs", "export", "--db", db_, "run-a"}));  // no format
  }

  void runsCliListAndShow() {
    const std::string list = run_cli({"runs", "list", "--db", db_});
    const std::string expected =
        "RUN    EXPERIMENT  STATUS     STARTED              STEP  BEST VAL_LOSS  TOKENS/S  HOST\n"
        "run-b  exp-2       running    1970-01-01 00:00:50    20              -      2060  nodeA\n"
        "run-a  exp-1       completed  1970-01-01 00:01:40     2          2.375         -  nodeA\n"
        "TOKENS/S: median of rank 0's tokens_per_s over the last 100 steps, each attempt's first 3 left out\n";
    COMPARE_TEXT(list, expected);
    QCOMPARE(run_cli({"runs", "list", "--db", db_, "-e", "exp-9"}),
             "no runs in experiment 'exp-9' in store '" + db_ + "'\n");

    const std::string show = run_cli({"runs", "show", "run-a", "--db", db_});
    QVERIFY2(show.find("status         completed (done)\n") != std::string::npos, show.c_str());
    QVERIFY2(show.find("ended          1970-01-01 00:01:43 (after 3.0s)\n") != std::string::npos, show.c_str());
    QVERIFY2(show.find("  val_loss     0       1  2..2    2.375   2.375  2.375\n") != std::string::npos, show.c_str());
    QVERIFY2(show.find("n_params       12.3K\n") != std::string::npos, show.c_str());

    // A missing store is an error, not a new empty file.
    const std::string missing = dir_.filePath("missing.db").toStdString();
    QVERIFY_THROWS_EXCEPTION(td::Error, run_cli({"runs", "list", "--db", missing}));
    QVERIFY(!QFile::exists(QString::fromStdString(missing)));
  }

  // Issue 13, finding 5: the malformed lines ingest skipped are counted per run and shown.
  void runsShowCountsSkippedLines() {
    QTemporaryDir d;
    const std::string db = d.filePath("skip.db").toStdString();
    const std::string events = d.filePath("events.jsonl").toStdString();
    write_file(events, line(run_start("run-s", 10.0)) + "not json\n" + line(step("run-s", 11.0, 1, 2.0)) +
                           "{\"type\":\"step\",\"v\":1,\"t\":12,\"run_id\":\"run-s\",\"st\n");
    {
      Store st(db);
      QCOMPARE(Ingester(st, events).poll_all().skipped, size_t(2));
    }
    const std::string show = run_cli({"runs", "show", "run-s", "--db", db});
    QVERIFY2(show.find("skipped lines  2 malformed lines of the events file (not recorded)\n") != std::string::npos,
             show.c_str());
    // A clean run says nothing about skipped lines.
    const std::string clean = run_cli({"runs", "show", "run-a", "--db", db_});
    QVERIFY2(clean.find("skipped lines") == std::string::npos, clean.c_str());
  }

  void experimentsEditAndDelete() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("td.db").toStdString();
    Store st(db);
    const std::string ev1 = dir.filePath("x.jsonl").toStdString();
    write_file(ev1, small_run("x1"));
    Ingester(st, ev1, "first").poll_all();
    st.ensure_experiment("second");
    QVERIFY_THROWS_EXCEPTION(td::Error, st.rename_experiment("first", "second"));  // taken
    QVERIFY_THROWS_EXCEPTION(td::Error, st.rename_experiment("none", "third"));
    st.rename_experiment("first", "renamed");
    st.set_experiment_notes("renamed", "lr sweep, 2 nodes");
    st.set_experiment_tags("renamed", {"sweep", "gpt2-small"});
    auto ex = st.list_experiments();
    QCOMPARE(ex.size(), size_t(2));
    QCOMPARE(ex[0].name, std::string("renamed"));
    QCOMPARE(ex[0].notes, std::string("lr sweep, 2 nodes"));
    QCOMPARE(ex[0].tags, (std::vector<std::string>{"sweep", "gpt2-small"}));
    QCOMPARE(ex[0].run_count, int64_t(1));
    QCOMPARE(st.get_run("x1").experiment, std::string("renamed"));

    st.move_run("x1", "second");
    QCOMPARE(st.get_run("x1").experiment, std::string("second"));
    st.set_run_pid("x1", 4242);
    QCOMPARE(*st.get_run("x1").pid, int64_t(4242));
    st.delete_experiment("second");
    QVERIFY(!st.find_run("x1").has_value());
    QCOMPARE(count(st, "SELECT count(*) FROM metrics"), int64_t(0));
    QCOMPARE(count(st, "SELECT count(*) FROM run_attempts"), int64_t(0));
    QCOMPARE(count(st, "SELECT count(*) FROM event_files"), int64_t(0));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.delete_experiment("second"));
    // With its offset gone, the file can be ingested again from the start.
    Ingester(st, ev1).poll_all();
    QCOMPARE(st.count_metrics("x1"), int64_t(5));
    st.delete_run("x1");
    QCOMPARE(count(st, "SELECT count(*) FROM metrics"), int64_t(0));
  }
};

QTEST_APPLESS_MAIN(TestQueries)
#include "test_queries.moc"
