// A run's alerts in the store (schema version 10, docs/store.md "Alerts"): the engine's `alert`
// events ingested exactly once with every field, the workbench's kept once by (source, kind,
// attempt, step), the unseen counts of the sidebar's badges, mark seen, and notifications handed
// out once; a version-9 store migrated with its rows kept.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include <sqlite3.h>

#include "engine/common/error.h"
#include "store/ingest.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "events_fixture.h"

using namespace td::store;
using namespace td::store::test;

namespace {

json alert_ev(const std::string& run_id, double t, const char* kind, int64_t step, json value, json threshold, int attempt = 0) {
  json j = ev("alert", run_id, t, attempt);
  j["kind"] = kind;
  j["severity"] = std::string(kind) == "nonfinite" ? "critical" : "warning";
  j["message"] = std::string("saw ") + kind;
  j["step"] = step;
  j["value"] = value;
  j["threshold"] = threshold;
  return j;
}

}  // namespace

class TestStoreAlerts : public QObject {
  Q_OBJECT
 private slots:
  void engine_alerts_are_ingested_once_with_their_fields() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    const std::string events = dir.filePath("events.jsonl").toStdString();
    std::string text = line(run_start("r1", 100.0)) + line(step("r1", 101.0, 1, 3.0));
    text += line(alert_ev("r1", 101.5, "disk_low", 1, 5.0e8, 1.073741824e9));
    text += line(alert_ev("r1", 102.0, "nonfinite", 2, nullptr, nullptr));
    json no_kind = alert_ev("r1", 102.5, "loss_spike", 3, 9.0, 4.5);
    no_kind.erase("kind");
    text += line(no_kind);  // malformed: skipped
    text += line(alert_ev("r1", 103.0, "loss_spike", 3, 30.25, 4.5));
    write_file(events, text);
    {
      Ingester in(st, events);
      const IngestStats s = in.poll_all();
      QCOMPARE(s.skipped, size_t(1));
    }
    // A second reader from offset 0 (the GUI reattaching to a file `train --db` already read).
    {
      Ingester again(st, events);
      again.reset();
      again.poll_all();
    }
    const auto a = st.alerts("r1");
    QCOMPARE(a.size(), size_t(3));
    QCOMPARE(a[0].kind, std::string("disk_low"));
    QCOMPARE(a[0].source, std::string("engine"));
    QCOMPARE(a[0].step, int64_t(1));
    QCOMPARE(a[0].t, 101.5);
    QCOMPARE(a[0].value, std::optional<double>(5.0e8));
    QCOMPARE(a[0].threshold, std::optional<double>(1.073741824e9));
    QCOMPARE(a[0].severity, std::string("warning"));
    QCOMPARE(a[0].message, std::string("saw disk_low"));
    QCOMPARE(a[1].kind, std::string("nonfinite"));
    QCOMPARE(a[1].severity, std::string("critical"));
    QVERIFY(!a[1].value && !a[1].threshold);  // null in the event: NULL in the store
    QCOMPARE(a[2].kind, std::string("loss_spike"));
    QCOMPARE(a[2].value, std::optional<double>(30.25));
    QCOMPARE(a[2].attempt, 0);
    QCOMPARE(count(st, "SELECT count(*) FROM alerts"), int64_t(3));
    // The same spike of a resumed attempt (step 3 trained again) is an alert of its own.
    write_file(events, line(run_start("r1", 200.0, 1, 2)) + line(alert_ev("r1", 201.0, "loss_spike", 3, 31.0, 4.5, 1)), true);
    Ingester more(st, events);
    more.poll_all();
    QCOMPARE(st.alerts("r1").size(), size_t(4));
    QCOMPARE(st.alerts("r1").back().attempt, 1);
  }

  void workbench_alerts_badges_and_notifications() {
    QTemporaryDir dir;
    Store st(dir.filePath("td.db").toStdString());
    // One events file per run (a file feeds one run).
    const std::string events1 = dir.filePath("r1.jsonl").toStdString(), events = dir.filePath("r2.jsonl").toStdString();
    write_file(events1, line(run_start("r1", 100.0)) + line(run_start("r1", 150.0, 1, 0)));
    Ingester(st, events1).poll_all();
    write_file(events, line(run_start("r2", 100.0)) + line(alert_ev("r2", 101.0, "loss_spike", 4, 8.0, 4.0)));
    Ingester(st, events).poll_all();
    write_file(events, line(step("r2", 102.0, 1, 3.0)) + line(step("r2", 103.0, 2, 2.9)) + line(step("r2", 104.0, 3, 2.8)), true);
    Ingester(st, events).poll_all();
    QCOMPARE(st.recent_metric_values("r2", "loss", 0, 2), (std::vector<double>{2.9, 2.8}));
    QCOMPARE(st.recent_metric_values("r2", "step_ms", 0, 50), (std::vector<double>{100.25, 100.25, 100.25}));
    QVERIFY(st.recent_metric_values("r2", "no_such", 0, 5).empty());
    QVERIFY(st.recent_metric_values("nope", "loss", 0, 5).empty());

    RunAlert stall;
    stall.kind = "stall";
    stall.severity = "warning";
    stall.message = "no step for 300 s";
    stall.step = 7;
    stall.value = 300.0;
    stall.threshold = 120.0;
    QVERIFY(st.add_alert("r1", stall));
    QVERIFY(!st.add_alert("r1", stall));  // the same stall seen again (a reattach): kept once
    auto a = st.alerts("r1");
    QCOMPARE(a.size(), size_t(1));
    QCOMPARE(a[0].source, std::string("workbench"));
    QCOMPARE(a[0].attempt, 1);  // attempt -1: the run's newest (two run_starts: attempts 0, 1)
    QVERIFY(a[0].t > 1.7e9);    // now
    QCOMPARE(a[0].value, std::optional<double>(300.0));
    RunAlert end;
    end.kind = "run_end";
    end.severity = "info";
    end.message = "run completed at step 9";
    end.step = 9;
    QVERIFY(st.add_alert("r1", end));
    bool threw = false;
    try {
      st.add_alert("nope", end);
    } catch (const td::Error&) {
      threw = true;
    }
    QVERIFY(threw);

    auto counts = st.unseen_alert_counts();
    QCOMPARE(counts.size(), size_t(2));
    QCOMPARE(counts["r1"], 2);
    QCOMPARE(counts["r2"], 1);
    st.mark_alerts_seen("r1");
    counts = st.unseen_alert_counts();
    QCOMPARE(counts.size(), size_t(1));
    QCOMPARE(counts["r2"], 1);
    st.mark_alerts_seen("unknown-run");  // no-op

    auto n = st.take_unnotified_alerts("r1");
    QCOMPARE(n.size(), size_t(2));
    QCOMPARE(n[0].kind, std::string("stall"));
    QCOMPARE(n[1].kind, std::string("run_end"));
    QVERIFY(st.take_unnotified_alerts("r1").empty());  // handed out once
    QCOMPARE(st.take_unnotified_alerts("r2").size(), size_t(1));
    QVERIFY(st.take_unnotified_alerts("unknown-run").empty());
  }

  void version_nine_store_is_migrated() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("v9.db").toStdString();
    {
      sqlite3* db = nullptr;
      QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
      migrate(db, path, migrations().first(9));  // a store written by the version-9 build
      exec_sql(db,
               "INSERT INTO experiments(id, name, created) VALUES (1, 'e', 5);"
               "INSERT INTO runs(id, run_id, experiment, status, attempts) VALUES (1, 'r9', 1, 'completed', 1);");
      QCOMPARE(read_user_version(db), 9);
      sqlite3_close(db);
    }
    Store st(path);
    QCOMPARE(read_user_version(st.handle()), schema_version());
    QVERIFY(schema_version() >= 10);
    QCOMPARE(st.find_run("r9")->status, std::string("completed"));
    QVERIFY(st.alerts("r9").empty());
    RunAlert a;
    a.kind = "run_end";
    a.severity = "info";
    a.message = "run completed";
    QVERIFY(st.add_alert("r9", a));
    QCOMPARE(st.alerts("r9")[0].attempt, 0);
    QCOMPARE(st.unseen_alert_counts()["r9"], 1);
  }
};

QTEST_GUILESS_MAIN(TestStoreAlerts)
#include "test_alerts.moc"
