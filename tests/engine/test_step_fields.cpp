// The step event's one field table (engine/metrics/step_fields.h, issue 16 section 1): real
// step events of a single-process and a two-rank run carry only fields the table knows, the
// store's ingest stores every one of them under the table's metric name with the value the
// event carries, a field outside the table is reported and not stored, and docs/events.md's
// "Step fields" section is the table's own output.
#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QFile>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "engine/data/manifest.h"
#include "engine/data/shard.h"
#include "engine/metrics/run_start_fields.h"
#include "engine/metrics/step_fields.h"
#include "store/ingest.h"
#include "store/store.h"
#include "test_util.h"

using json = nlohmann::json;
using namespace tdtest;

namespace {

const std::set<std::string> kCommon = {"type", "v", "t", "run_id", "attempt", "rank"};

// The fields of a step event (or of a `ranks` entry) that the table does not know.
std::vector<std::string> unknown_keys(const json& e, td::FieldScope scope) {
  std::vector<std::string> out;
  for (auto it = e.begin(); it != e.end(); ++it)
    if (!(scope == td::FieldScope::Global && kCommon.count(it.key())) &&
        !td::find_event_field(td::EventKind::Step, scope, it.key()))
      out.push_back(it.key());
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The stored value of `metric` of `rank` at `step`, NaN when there is no row.
double stored(td::store::Store& st, const std::string& run, const char* metric, int rank, int64_t step) {
  const auto s = st.metric_series(run, metric, rank, step, step);
  return s.size() == 1 ? s.value[0] : std::nan("");
}

}  // namespace

class TestStepFields : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString cfg_, single_, dp2_;  // run directories of the 1- and 2-rank runs ("" when they failed)

  // Trains the tiny run of test_util.h for 4 steps with `ranks` ranks into <dir>/<name>.
  QString train(const QString& name, int ranks) {
    const QString out = dir_.filePath(name);
    QStringList args{"train", "--config", cfg_, "--out", out, "--quiet", "--no-events-stdout", "--run-id", name,
                     "--set", "train.steps=4", "--set", "train.checkpoint_interval=0"};
    if (ranks > 1) args = QStringList{"launch", "--quiet", "--nproc", QString::number(ranks), "--"} + args +
                          QStringList{"--set", QString("train.micro_batch=%1").arg(4 / ranks)};
    const ProcResult r = engine(args, 300000);
    if (r.exit_code != 0) qWarning("%s", qPrintable(r.err));
    return r.exit_code == 0 ? out : QString();
  }

  // Every field of every step event of the run in <out> is in the table; ingested, each
  // numeric one is stored under the table's metric name with the event's value (per rank for
  // the `ranks` entries); the ingest reports nothing unknown. Returns the number of values checked.
  size_t check_run(const QString& out, const std::string& run, int world) {
    const auto steps = events_of_type(read_events(out + "/events.jsonl"), "step");
    if (steps.size() != 4) {
      qWarning("expected 4 step events in %s, found %zu", qPrintable(out), steps.size());
      return 0;
    }
    size_t checked = 0;
    td::store::Store st(dir_.filePath(QString::fromStdString(run) + ".db").toStdString());
    td::store::Ingester ing(st, (out + "/events.jsonl").toStdString());
    const auto stats = ing.poll_all();
    [&] {
      QCOMPARE(stats.skipped, size_t(0));
      QCOMPARE(stats.unknown_fields, size_t(0));
      QVERIFY2(stats.messages.empty(), stats.messages.empty() ? "" : stats.messages[0].c_str());
    }();
    for (const json& e : steps) {
      const auto unknown = unknown_keys(e, td::FieldScope::Global);
      if (!unknown.empty()) {
        qWarning("step event with fields the table lacks: %s in %s", join(unknown).c_str(), e.dump().c_str());
        return 0;
      }
      const int64_t step = e["step"].get<int64_t>();
      for (const td::FieldIndex fi : td::kStepMetricFields) {
        const td::EventField& f = td::kEventFields[fi.i];
        // A field of every step (no `when`, not nullable) is there: the trainer writes the table.
        if (!*f.when && !f.nullable && !e.contains(f.key)) {
          qWarning("step %lld lacks \"%s\"", (long long)step, f.key);
          return 0;
        }
        if (!e.contains(f.key) || e[f.key].is_null()) continue;
        const bool int_ok = f.type != td::FieldType::Int || e[f.key].is_number_integer();
        const double want = e[f.key].get<double>(), got = stored(st, run, f.metric, 0, step);
        if (!int_ok || got != want) {
          qWarning("step %lld: \"%s\" is %s in the event, stored %s = %.17g", (long long)step, f.key, e[f.key].dump().c_str(), f.metric, got);
          return 0;
        }
        ++checked;
      }
      if (world > 1) {
        if (!e.contains("ranks") || e["ranks"].size() != (size_t)world) {
          qWarning("step %lld has no ranks entry per rank: %s", (long long)step, e.dump().c_str());
          return 0;
        }
        for (const json& r : e["ranks"]) {
          const auto unknown_r = unknown_keys(r, td::FieldScope::Rank);
          if (!unknown_r.empty()) {
            qWarning("ranks entry with fields the table lacks: %s", join(unknown_r).c_str());
            return 0;
          }
          const int rank = r["rank"].get<int>();
          for (const td::FieldIndex fi : td::kRankMetricFields) {
            const td::EventField& f = td::kEventFields[fi.i];
            if (!r.contains(f.key) && std::string(f.when) == "on a GPU") continue;  // CPU ranks: no gpu_*
            if (!r.contains(f.key)) {
              qWarning("step %lld rank %d lacks \"%s\"", (long long)step, rank, f.key);
              return 0;
            }
            const double want = r[f.key].get<double>(), got = stored(st, run, f.metric, rank, step);
            if (got != want) {
              qWarning("step %lld rank %d: \"%s\" is %.17g, stored %s = %.17g", (long long)step, rank, f.key, want, f.metric, got);
              return 0;
            }
            ++checked;
          }
        }
      } else if (e.contains("ranks")) {
        qWarning("a single-process step has ranks: %s", e.dump().c_str());
        return 0;
      }
    }
    // The checkpoint events (the run's last step writes one): known fields, figures stored.
    const auto ckpts = events_of_type(read_events(out + "/events.jsonl"), "checkpoint");
    if (ckpts.empty()) {
      qWarning("no checkpoint event in %s", qPrintable(out));
      return 0;
    }
    for (const json& e : ckpts) {
      for (auto it = e.begin(); it != e.end(); ++it)
        if (!kCommon.count(it.key()) && !td::find_event_field(td::EventKind::Checkpoint, td::FieldScope::Global, it.key())) {
          qWarning("checkpoint event with a field the table lacks: %s", it.key().c_str());
          return 0;
        }
      for (const td::EventField& f : td::kEventFields) {
        if (f.event != td::EventKind::Checkpoint || !f.metric) continue;
        if (!e.contains(f.key) || e[f.key].is_null()) {
          qWarning("checkpoint event without \"%s\": %s", f.key, e.dump().c_str());
          return 0;
        }
        const double want = e[f.key].get<double>(), got = stored(st, run, f.metric, 0, e["step"].get<int64_t>());
        if (got != want) {
          qWarning("checkpoint \"%s\" is %.17g, stored %s = %.17g", f.key, want, f.metric, got);
          return 0;
        }
        ++checked;
      }
    }
    return checked;
  }

  // Relative closeness for figures the trainer derives from the same doubles in another order.
  static bool close(double a, double b) { return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b)); }

  // The input-pipeline and checkpoint figures of the run in <out> against their definitions:
  // bytes read = windows x (seq_len + 1) tokens x the token width of the shard's header.
  void check_input_and_checkpoints(const QString& out, int micro_batch_per_rank) {
    const auto ev = read_events(out + "/events.jsonl");
    const json cfg = events_of_type(ev, "run_start").at(0)["config"];
    const int T = cfg["model"]["seq_len"].get<int>(), accum = cfg["train"]["grad_accum"].get<int>();
    QCOMPARE(cfg["train"]["micro_batch"].get<int>(), micro_batch_per_rank);
    const std::string data = cfg["data"]["path"].get<std::string>();
    const auto shards = td::read_dataset_manifest(data).split("train");
    QVERIFY(!shards.empty());
    const int width = td::read_shard_header(data + "/" + shards[0].file).width;
    QCOMPARE(width, 2);  // a 257-token vocabulary needs 2 bytes a token
    const uint64_t want_bytes = uint64_t(micro_batch_per_rank) * accum * (T + 1) * width;  // 4*1*17*2 = 136 (1 rank)
    for (const json& e : events_of_type(ev, "step")) {
      QCOMPARE(e["data_read_bytes"].get<uint64_t>(), want_bytes);
      const double wait = e["data_wait_ms"].get<double>(), step_ms = e["step_ms"].get<double>();
      QVERIFY2(wait >= 0 && wait <= step_ms, e.dump().c_str());
      QVERIFY2(close(e["data_wait_pct"].get<double>(), 100 * wait / step_ms), e.dump().c_str());
      if (!e["data_read_mb_s"].is_null()) QVERIFY2(e["data_read_mb_s"].get<double>() > 0, e.dump().c_str());
      if (e.contains("ranks"))
        for (const json& r : e["ranks"]) QVERIFY2(r["data_wait_ms"].get<double>() >= 0, r.dump().c_str());
    }
    for (const json& c : events_of_type(ev, "checkpoint")) {
      // bytes = the sizes of the files in the checkpoint directory, summed here.
      uint64_t on_disk = 0;
      QDirIterator it(QString::fromStdString(c["path"].get<std::string>()), QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
      while (it.hasNext()) on_disk += uint64_t(QFileInfo(it.next()).size());
      QCOMPARE(c["bytes"].get<uint64_t>(), on_disk);
      const double write_s = c["write_s"].get<double>();
      QVERIFY2(write_s > 0, c.dump().c_str());
      QVERIFY2(close(c["write_mb_s"].get<double>(), double(on_disk) / write_s / 1e6), c.dump().c_str());
      QVERIFY2(c["pause_s"].get<double>() >= write_s, c.dump().c_str());
    }
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const TinyRun t = write_tiny_run(dir_.path(), generated_text(2000));
    QVERIFY2(t.prepare.exit_code == 0, qPrintable(t.prepare.err));
    cfg_ = t.cfg;
    single_ = train("single", 1);
    dp2_ = train("dp2", 2);
  }

  void table_is_consistent() {
    // Keys are unique per event and scope, stored metric names unique, and the names of the
    // stores written before the table keep their meaning (old stores stay readable).
    std::set<std::string> keys, metrics;
    for (const td::EventField& f : td::kEventFields) {
      QVERIFY2(keys.insert(std::string(td::to_string(f.event)) + "/" + td::to_string(f.scope) + "/" + f.key).second, f.key);
      if (f.metric) QVERIFY2(metrics.insert(f.metric).second, f.metric);
      if (f.metric) QVERIFY2(f.type == td::FieldType::Int || f.type == td::FieldType::Number, f.key);
      if (f.chart.chart && f.chart.axis != td::ChartAxis::RightScale) QVERIFY2(f.chart.label && *f.chart.label, f.key);
      QVERIFY2(*f.meaning, f.key);
    }
    for (const char* old : {"loss", "lr", "grad_norm", "step_ms", "tokens_per_s", "mfu", "rss_bytes", "tokens_seen", "gpu_mem_bytes",
                            "gpu_mem_peak_bytes"}) {
      const td::EventField* f = td::find_event_field(td::EventKind::Step, td::FieldScope::Global, old);
      QVERIFY2(f && f->metric && f->metric == std::string(old), old);
    }
    const std::pair<const char*, const char*> old_rank[] = {{"tokens_per_s", "rank_tokens_per_s"}, {"comm_bytes_sent", "comm_bytes_sent"},
                                                            {"comm_bytes_received", "comm_bytes_received"}, {"comm_ms", "comm_ms"},
                                                            {"busbw_gb_s", "busbw_gb_s"}, {"rss_bytes", "rank_rss_bytes"}};
    for (const auto& [key, metric] : old_rank)
      QCOMPARE(std::string(td::find_event_field(td::EventKind::Step, td::FieldScope::Rank, key)->metric), std::string(metric));
  }

  void figures_pack_and_write_json() {
    // Per-rank figures round-trip through the packed doubles bit for bit; Int fields are JSON
    // integers, a nullable field never set is null, a field never set is absent.
    td::StepFigures mine;
    mine.set(td::rank_field("tokens_per_s"), 1234.5678901234567);
    mine.set(td::rank_field("comm_bytes_sent"), 3.0 * (1ull << 40));
    mine.set(td::rank_field("comm_ms"), 0.1);
    const auto packed = mine.pack_rank();
    QCOMPARE(packed.size(), td::kRankMetricFields.size());
    const td::StepFigures back = td::StepFigures::unpack_rank(packed.data());
    QCOMPARE(back.get(td::rank_field("tokens_per_s")), 1234.5678901234567);
    QVERIFY(!back.has(td::rank_field("busbw_gb_s")));
    td::StepFigures step;
    step.set(td::step_field("step"), 7);
    step.set(td::step_field("loss"), 2.5);
    step.set(td::step_field("rss_bytes"), 4096.0);
    const json j = td::step_event_json(step, {back, back}, {"a", "b"});
    QCOMPARE(j["step"].get<int64_t>(), int64_t(7));
    QVERIFY(j["step"].is_number_integer());
    QVERIFY(j["rss_bytes"].is_number_integer());
    QCOMPARE(j["loss"].get<double>(), 2.5);
    QVERIFY(j.contains("mfu") && j["mfu"].is_null());
    QVERIFY(!j.contains("gpu_mem_bytes"));
    QCOMPARE(j["ranks"].size(), size_t(2));
    QCOMPARE(j["ranks"][1]["host"].get<std::string>(), std::string("b"));
    QCOMPARE(j["ranks"][1]["rank"].get<int>(), 1);
    QCOMPARE(j["ranks"][0]["comm_bytes_sent"].get<uint64_t>(), uint64_t(3) << 40);
    QVERIFY(!j["ranks"][0].contains("busbw_gb_s"));
    // A non-finite figure that may not be null is refused (the trainer skips such steps).
    td::StepFigures bad;
    bad.set(td::step_field("loss"), std::nan(""));
    QVERIFY_THROWS_EXCEPTION(std::exception, td::step_event_json(bad));
  }

  void a_real_step_is_stored_field_by_field() {
    const QString out = single_;
    QVERIFY2(!out.isEmpty(), "the 4-step training run failed (its stderr is above)");
    const size_t n = check_run(out, "single", 1);
    // 4 steps x the table's global metrics a CPU step has (gpu_mem_* are GPU-only).
    size_t cpu_fields = 0;
    for (const td::FieldIndex fi : td::kStepMetricFields) cpu_fields += std::string(td::kEventFields[fi.i].when) != "on a GPU";
    qInfo("1 rank: %zu stored values equal to the events'", n);
    QVERIFY2(n >= 4 * (cpu_fields - 1), qPrintable(QString("checked %1 values").arg(n)));  // mfu may be null
  }

  void a_real_two_rank_step_is_stored_per_rank() {
    const QString out = dp2_;
    QVERIFY2(!out.isEmpty(), "the 2-rank training run failed (its stderr is above)");
    const size_t n = check_run(out, "dp2", 2);
    qInfo("2 ranks: %zu stored values equal to the events'", n);
    // The per-rank figures a CPU rank has (gpu_* are GPU-only).
    size_t cpu_rank_fields = 0;
    for (const td::FieldIndex fi : td::kRankMetricFields) cpu_rank_fields += std::string(td::kEventFields[fi.i].when) != "on a GPU";
    QVERIFY2(n >= 4 * 2 * cpu_rank_fields, qPrintable(QString("checked %1 values").arg(n)));
  }

  void input_and_checkpoint_figures_by_hand() {
    QVERIFY2(!single_.isEmpty() && !dp2_.isEmpty(), "a training run failed (its stderr is above)");
    check_input_and_checkpoints(single_, 4);
    check_input_and_checkpoints(dp2_, 2);
  }

  // cpu_util_pct of real CPU runs: above 0 (a step does work) and at most what the threads the
  // process has can use (train.threads GEMM threads and the loader's prefetch thread, never
  // more than the cores it may run on; 10 points of slack). In the 2-rank run every ranks entry
  // carries the rank's step time and its compute time, step_ms - comm_ms, and rank 0's step_ms
  // is the event's own.
  void cpu_utilization_and_per_rank_step_time() {
    QVERIFY2(!single_.isEmpty() && !dp2_.isEmpty(), "a training run failed (its stderr is above)");
    for (const QString& out : {single_, dp2_}) {
      const auto ev = read_events(out + "/events.jsonl");
      const int threads = events_of_type(ev, "run_start").at(0)["threads"].get<int>();
      QCOMPARE(threads, 1);  // test_util.h's tiny run
      const double bound = 100.0 * std::min(threads + 1, QThread::idealThreadCount()) + 10;
      for (const json& e : events_of_type(ev, "step")) {
        const double cpu = e["cpu_util_pct"].get<double>();
        qInfo("%s step %d: cpu_util_pct %.1f (step_ms %.2f)", qPrintable(QFileInfo(out).fileName()), e["step"].get<int>(), cpu,
              e["step_ms"].get<double>());
        QVERIFY2(cpu > 0 && cpu <= bound, qPrintable(QString("cpu_util_pct %1 outside (0, %2]: %3").arg(cpu).arg(bound).arg(QString::fromStdString(e.dump()))));
        if (!e.contains("ranks")) continue;
        QCOMPARE(e["ranks"].size(), size_t(2));
        for (const json& r : e["ranks"]) {
          const double step_ms = r["step_ms"].get<double>(), compute_ms = r["compute_ms"].get<double>(), comm_ms = r["comm_ms"].get<double>();
          QVERIFY2(step_ms > 0 && compute_ms > 0 && compute_ms <= step_ms, r.dump().c_str());
          QVERIFY2(std::fabs(compute_ms + comm_ms - step_ms) <= 1e-9 * step_ms, r.dump().c_str());
          const double rcpu = r["cpu_util_pct"].get<double>();
          QVERIFY2(rcpu > 0 && rcpu <= bound, r.dump().c_str());
          if (r["rank"].get<int>() == 0) {
            QCOMPARE(step_ms, e["step_ms"].get<double>());
            QCOMPARE(rcpu, cpu);
          }
        }
      }
    }
  }

  void run_start_follows_its_table() {
    // A real run_start (one rank, and two: `hosts`) has exactly the table's fields
    // (engine/metrics/run_start_fields.h), each of its type; a forged one is caught field by field.
    for (const QString& out : {single_, dp2_}) {
      QVERIFY2(!out.isEmpty(), "a training run failed (its stderr is above)");
      const json s = events_of_type(read_events(out + "/events.jsonl"), "run_start").at(0);
      const auto problems = td::run_start_problems(s);
      QVERIFY2(problems.empty(), problems.empty() ? "" : problems[0].c_str());
      QCOMPARE(s.contains("hosts"), out == dp2_);
      size_t always = 0;
      for (const td::RunStartField& f : td::kRunStartFields) always += !*f.when;
      QCOMPARE(s.size(), always + 6 + (out == dp2_ ? 1 : 0));  // + type, v, t, run_id, attempt, rank (+ hosts)
    }
    json forged = events_of_type(read_events(single_ + "/events.jsonl"), "run_start").at(0);
    forged["made_up"] = 1;
    forged["n_params"] = "many";
    forged["peak_flops"] = nullptr;  // nullable: fine
    forged.erase("gelu_fusion");
    const auto p = td::run_start_problems(forged);
    QCOMPARE(p.size(), size_t(3));
    QCOMPARE(p[0], std::string("unknown field \"made_up\""));
    QVERIFY2(p[1].rfind("field \"n_params\" has the wrong type", 0) == 0, p[1].c_str());
    QCOMPARE(p[2], std::string("field \"gelu_fusion\" is missing"));
    // The store's ingest knows every field of the table: a run_start with every optional field
    // (metrics_url, name, the GPU's) is stored with no "unknown field" report (the ingest kept
    // its own list before, which lacked metrics_url: a run with --metrics-port was reported).
    json full = events_of_type(read_events(single_ + "/events.jsonl"), "run_start").at(0);
    full["metrics_url"] = "http://127.0.0.1:9400/metrics";
    full["name"] = "every field";
    full["hosts"] = json::array({"a"});
    full["compute_capability"] = "9.0";
    full["gpu_memory_total"] = 85899345920LL;
    full["gpu_memory_free"] = 84000000000LL;
    QVERIFY(td::run_start_problems(full).empty());
    QDir().mkpath(dir_.filePath("full"));
    const std::string events = td::store::events_path_of(dir_.filePath("full").toStdString());
    std::ofstream(events) << full.dump() << "\n";
    td::store::Store st(dir_.filePath("run_start.db").toStdString());
    td::store::Ingester ing(st, events, "default");
    const auto stats = ing.poll();
    QCOMPARE(stats.lines, size_t(1));
    for (const std::string& m : stats.messages) QVERIFY2(m.find("unknown field") == std::string::npos, m.c_str());
    QCOMPARE(st.chart_run(full["run_id"].get<std::string>()).name, std::string("every field"));
  }

  void a_field_outside_the_table_is_reported_not_stored() {
    // A real step line with one field the table lacks in the event and one in a ranks entry.
    QVERIFY2(!dp2_.isEmpty(), "the 2-rank training run failed (its stderr is above)");
    auto steps = events_of_type(read_events(dp2_ + "/events.jsonl"), "step");
    QVERIFY2(!steps.empty(), "the 2-rank run wrote no step event");
    json e = steps[0];
    e["run_id"] = "forged";
    e["made_up_ms"] = 12.5;
    e["ranks"][1]["made_up_bytes"] = 7;
    QCOMPARE(unknown_keys(e, td::FieldScope::Global), std::vector<std::string>{"made_up_ms"});
    const QString events = dir_.filePath("forged.jsonl");
    write_file(events, QByteArray::fromStdString(e.dump() + "\n"));
    td::store::Store st(dir_.filePath("forged.db").toStdString());
    td::store::Ingester ing(st, events.toStdString());
    const auto s = ing.poll_all();
    QCOMPARE(s.unknown_fields, size_t(1));
    QCOMPARE(s.messages.size(), size_t(2));
    QVERIFY2(s.messages[0].find("unknown field \"ranks[].made_up_bytes\" in a \"step\" event") != std::string::npos, s.messages[0].c_str());
    QVERIFY2(s.messages[1].find("unknown field \"made_up_ms\" in a \"step\" event") != std::string::npos, s.messages[1].c_str());
    QVERIFY(st.metric_series("forged", "made_up_ms").size() == 0);
    QVERIFY(st.metric_series("forged", "made_up_bytes", 1).size() == 0);
    QCOMPARE(stored(st, "forged", "loss", 0, e["step"].get<int64_t>()), e["loss"].get<double>());
  }

  void events_reference_is_up_to_date() {
    // docs/events.md's "Step fields" section is `traindeck-engine events --markdown`'s output.
    const auto r = engine({"events", "--markdown"});
    QCOMPARE(r.exit_code, 0);
    QFile f(TD_SOURCE_DIR "/docs/events.md");
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString doc = QString::fromUtf8(f.readAll());
    const qsizetype b = doc.indexOf("<!-- step-fields:begin"), e = doc.indexOf("<!-- step-fields:end -->\n");
    QVERIFY2(b >= 0 && e > b, "docs/events.md lacks the <!-- step-fields:begin --> ... <!-- step-fields:end --> lines");
    const QString section = doc.mid(b, e + qsizetype(strlen("<!-- step-fields:end -->\n")) - b);
    QVERIFY2(section == r.out,
             "docs/events.md's \"Step fields\" section is stale: regenerate it with tools/update-events-doc "
             "(it puts the output of traindeck-engine events --markdown between the step-fields lines)");
    // `events` alone: the table as JSON.
    const auto j = engine({"events"});
    QCOMPARE(j.exit_code, 0);
    const json table = json::parse(j.out.toStdString());
    QCOMPARE(table["fields"].size(), td::kEventFieldCount);
  }
};

QTEST_GUILESS_MAIN(TestStepFields)
#include "test_step_fields.moc"
