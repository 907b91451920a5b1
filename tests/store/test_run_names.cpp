// Run names (issue 14): set by the engine's run_start ("name", train --run-name) or by
// Store::set_run_name (Start run, Rename), shown instead of the id; the id stays the key.
// Checked by hand: trimming and refusals, a rename winning over a resumed attempt's start,
// list_runs / find_run / chart_run carrying it, and the suggested name of a new run (the fields
// that differ from the experiment's newest run).
#include <QTemporaryDir>
#include <QtTest>

#include "engine/common/error.h"
#include "engine/common/run_id.h"
#include "events_fixture.h"
#include "store/ingest.h"
#include "store/store.h"

using namespace td::store;
using namespace td::store::test;

class TestRunNames : public QObject {
  Q_OBJECT
 private slots:
  void normaliseByHand() {
    std::string problem;
    QCOMPARE(td::normalise_run_name("  lr=1e-3, 6 layers\t", &problem), std::string("lr=1e-3, 6 layers"));
    QVERIFY(problem.empty());
    QCOMPARE(td::normalise_run_name("", &problem), std::string());
    QVERIFY(problem.empty());
    QCOMPARE(td::normalise_run_name("Läuft · ü", &problem), std::string("Läuft · ü"));  // UTF-8 text is fine
    QVERIFY(problem.empty());
    td::normalise_run_name(std::string(121, 'x'), &problem);
    QVERIFY2(problem.find("at most 120 bytes (this one has 121)") != std::string::npos, problem.c_str());
    QCOMPARE(td::normalise_run_name(std::string(120, 'x'), &problem).size(), size_t(120));
    td::normalise_run_name("two\nlines", &problem);
    QVERIFY2(problem.find("control characters") != std::string::npos, problem.c_str());
    td::normalise_run_name("esc\x1b[31m", &problem);
    QVERIFY(!problem.empty());
  }

  void fromEventsAndRenames() {
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    json start = run_start("r1", 1000.0);
    start["name"] = "  baseline ";
    write_file(events, line(start) + line(step("r1", 1001.0, 1, 5.0)));
    Store st(dir.filePath("td.db").toStdString());
    Ingester ing(st, events, "e");
    ing.poll_all();
    QCOMPARE(st.get_run("r1").name, std::string("baseline"));  // trimmed
    QCOMPARE(st.get_run("r1").display_name(), std::string("baseline"));
    QCOMPARE(st.list_runs().at(0).name, std::string("baseline"));
    QCOMPARE(st.chart_run("r1").name, std::string("baseline"));

    // A rename wins over a resumed attempt's run_start carrying the old name (or another).
    st.set_run_name("r1", " warm-up 2k ");
    json again = run_start("r1", 2000.0, 1, 1);
    again["name"] = "baseline";
    write_file(events, line(again) + line(step("r1", 2001.0, 2, 4.0, 1)), /*append=*/true);
    ing.poll_all();
    QCOMPARE(st.get_run("r1").name, std::string("warm-up 2k"));
    // Cleared: the id is shown.
    st.set_run_name("r1", "");
    QCOMPARE(st.get_run("r1").name, std::string());
    QCOMPARE(st.get_run("r1").display_name(), std::string("r1"));
    // Refused names leave the stored one; unknown runs throw.
    st.set_run_name("r1", "kept");
    QVERIFY_THROWS_EXCEPTION(td::Error, st.set_run_name("r1", "a\nb"));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.set_run_name("r1", std::string(200, 'n')));
    QCOMPARE(st.get_run("r1").name, std::string("kept"));
    QVERIFY_THROWS_EXCEPTION(td::Error, st.set_run_name("nope", "x"));

    // An engine's name with a control character is left out (with a message), not stored.
    const std::string ev2 = dir.filePath("bad.jsonl").toStdString();
    json bad = run_start("r2", 3000.0);
    bad["name"] = "bell\x07";
    write_file(ev2, line(bad));
    Ingester ing2(st, ev2, "e");
    const IngestStats s = ing2.poll_all();
    QCOMPARE(st.get_run("r2").name, std::string());
    bool said = false;
    for (const auto& m : s.messages) said = said || m.find("\"name\" is refused") != std::string::npos;
    QVERIFY(said);
  }

  void suggestedNames() {
    const std::string base = R"({"model":{"n_layer":4,"d_model":128},"train":{"lr":0.001,"steps":1000},"data":{"path":"d"}})";
    // One field changed.
    QCOMPARE(Store::run_name_from_diff(R"({"model":{"n_layer":4,"d_model":128},"train":{"lr":0.003,"steps":1000},"data":{"path":"d"}})", base),
             std::string("lr=0.003"));
    // Two fields, in path order; a field new in this config counts.
    QCOMPARE(Store::run_name_from_diff(R"({"model":{"n_layer":6,"d_model":128},"train":{"lr":0.003,"steps":1000,"warmup":50},"data":{"path":"d"}})", base),
             std::string("n_layer=6, lr=0.003, warmup=50"));
    // More than three: the first three and "+N more".
    QCOMPARE(Store::run_name_from_diff(R"({"model":{"n_layer":6,"d_model":256},"train":{"lr":0.003,"steps":2000},"data":{"path":"d"}})", base),
             std::string("d_model=256, n_layer=6, lr=0.003 +1 more"));
    // Two leaves of one name: their whole paths.
    QCOMPARE(Store::run_name_from_diff(R"({"a":{"x":1},"b":{"x":2}})", R"({"a":{"x":0},"b":{"x":0}})"), std::string("a.x=1, b.x=2"));
    // Nothing differs, or no previous run: no name.
    QCOMPARE(Store::run_name_from_diff(base, base), std::string());
    QCOMPARE(Store::run_name_from_diff(base, ""), std::string());

    // From the store: the experiment's newest run with a config.
    QTemporaryDir dir;
    const std::string events = dir.filePath("events.jsonl").toStdString();
    write_file(events, line(run_start("old", 1000.0)) + line(run_start("new", 2000.0)));
    Store st(dir.filePath("td.db").toStdString());
    Ingester(st, events, "exp").poll_all();
    json cfg = run_start("x", 0)["config"];
    cfg["train"]["lr"] = 0.01;
    QCOMPARE(st.suggest_run_name("exp", cfg.dump()), std::string("lr=0.01"));
    QCOMPARE(st.suggest_run_name("no such experiment", cfg.dump()), std::string());
  }
};

QTEST_APPLESS_MAIN(TestRunNames)
#include "test_run_names.moc"
