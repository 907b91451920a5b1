// `traindeck-engine runs list|show|export` (see runs_cmd.h).
#include "engine/cli/runs_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "engine/checkpoint/keep.h"
#include "engine/common/error.h"
#include "engine/common/process.h"
#include "engine/metrics/sysinfo.h"
#include "engine/plan/compare.h"
#include "store/format.h"
#include "store/ingest.h"
#include "store/plan_measured.h"
#include "store/store.h"
#include "store/tensorboard.h"

namespace td::cli {

namespace {

using store::format_short;
using store::format_time;

// A text table: column widths fit the widest cell; columns in `right` are right-aligned.
class Table {
 public:
  Table(std::vector<std::string> header, std::vector<bool> right)
      : rows_{std::move(header)}, right_(std::move(right)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const {
    std::vector<size_t> w(rows_[0].size(), 0);
    for (const auto& r : rows_)
      for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        const std::string pad(w[i] - r[i].size(), ' ');
        line += right_[i] ? pad + r[i] : r[i] + (i + 1 < r.size() ? pad : "");
        if (i + 1 < r.size()) line += "  ";
      }
      out << line << '\n';
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> right_;
};

std::string opt_int(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "-"; }

// How tokens/s is measured (store::Store::run_throughput), where a table shows it.
const std::string kTokensPerSLabel = "median of last " + std::to_string(store::Store::kThroughputSteps) + " steps";
const std::string kTokensPerSDefinition =
    "median of rank 0's tokens_per_s over the last " + std::to_string(store::Store::kThroughputSteps) +
    " steps, each attempt's first " + std::to_string(store::Store::kWarmupSteps) + " left out";

// "step 89 / 1000 (9 %), 2m05s elapsed, ~18m03s left": the run's progress (Store::run_progress);
// a run that is not running has no time left, and a percentage only while it runs.
std::string progress_text(const store::RunProgress& p) {
  std::string s = "step " + opt_int(p.step);
  if (p.total_steps) s += " / " + std::to_string(*p.total_steps);
  const bool running = p.status == "running";
  if (running && p.percent()) s += " (" + std::to_string(*p.percent()) + " %)";
  if (p.elapsed_s) s += ", " + store::format_duration(*p.elapsed_s) + (running ? " elapsed" : "");
  if (running && p.eta_s) s += ", ~" + store::format_duration(*p.eta_s) + " left";
  return s;
}

// 124439808 -> "124.4M"
std::string human_count(double v) {
  const char* units[] = {"", "K", "M", "B", "T"};
  int u = 0;
  while (std::abs(v) >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f%s" : "%.0f%s", v, units[u]);
  return buf;
}

std::string human_bytes(double v) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

// First line of `s`, at most `n` characters, "..." when cut.
std::string first_line(const std::string& s, size_t n) {
  std::string l = s.substr(0, s.find('\n'));
  if (l.size() > n || l.size() < s.size()) l = l.substr(0, std::min(l.size(), n)) + "...";
  return l;
}

// A run the store says is running on THIS machine whose engine process is gone: killed, crashed,
// or ended without its run_end reaching the events file (a full disk). The same check as the
// workbench's re-attach (td::process_alive with the engine's name and the run's folder): true
// only when the store records the engine's pid and this host, and no remote target holds it.
bool engine_gone(store::Store& st, const store::RunInfo& r) {
  if (r.status != "running" || r.end_time || !r.pid || *r.pid <= 0) return false;
  if (r.host.empty() || r.host != host_name() || st.remote_run(r.run_id)) return false;  // another machine's pid
  std::vector<std::string> marks{"traindeck-engine"};
  if (!r.events_path.empty()) marks.push_back(std::filesystem::path(r.events_path).parent_path().filename().string());
  return !process_alive(static_cast<pid_t>(*r.pid), marks);
}

std::unique_ptr<store::Store> open_existing(const std::string& db) {
  store::Store::Options o;
  o.create = false;
  return std::make_unique<store::Store>(db.empty() ? store::default_db_path() : db, o);
}

}  // namespace

void print_runs_table(store::Store& st, std::ostream& out, const std::string& experiment) {
  const auto runs = st.list_runs(experiment);
  if (runs.empty()) {
    out << "no runs" << (experiment.empty() ? "" : " in experiment '" + experiment + "'")
        << " in store '" << st.path() << "'\n";
    return;
  }
  // A NAME column once a run has a name (the RUN id stays the key the commands take).
  const bool names = std::any_of(runs.begin(), runs.end(), [](const store::RunSummary& r) { return !r.name.empty(); });
  std::vector<std::string> header{"RUN", "EXPERIMENT", "STATUS", "STARTED", "STEP", "BEST VAL_LOSS", "TOKENS/S", "HOST"};
  std::vector<bool> right{false, false, false, false, true, true, true, false};
  if (names) {
    header.insert(header.begin() + 1, "NAME");
    right.insert(right.begin() + 1, false);
  }
  Table t(header, right);
  bool any_gone = false;
  for (const auto& r : runs) {
    std::string status = r.status;
    if (r.status == "running" && engine_gone(st, st.get_run(r.run_id))) {
      status = "gone";
      any_gone = true;
    }
    std::vector<std::string> row{r.run_id, r.experiment, status, format_time(r.start_time), opt_int(r.last_step),
                                 format_short(r.best_val_loss, 4), store::format_tokens_per_s(r.tokens_per_s),
                                 r.host.empty() ? "-" : r.host};
    if (names) row.insert(row.begin() + 1, r.name.empty() ? "-" : r.name);
    t.add(std::move(row));
  }
  t.print(out);
  out << "TOKENS/S: " << kTokensPerSDefinition << '\n';
  if (any_gone)
    out << "gone: the store says running, but the engine's process on this machine has ended without writing its end "
           "(killed, crashed, or a full disk); `runs show RUN` says more\n";
}

void print_plan_vs_measured(store::Store& st, const std::string& run_id, std::ostream& out) {
  out << "\nplan vs measured (docs/planner.md)\n";
  const store::MeasuredFigures f = store::measured_figures(st, run_id);
  if (f.config_json.empty()) {
    out << "  (no config: the run has not started)\n";
    return;
  }
  RunConfig c;
  try {
    c = parse_config(nlohmann::json::parse(f.config_json));
  } catch (const std::exception& e) {
    out << "  (this engine cannot plan the run's config: " << first_line(e.what(), 100) << ")\n";
    return;
  }
  const RunMeasured& m = f.measured;
  out << plan_vs_measured_table(plan_vs_measured(c, m));
}

void print_run_details(store::Store& st, const std::string& run_id, std::ostream& out) {
  const store::RunInfo r = st.get_run(run_id);
  Table kv({"run", r.run_id}, {false, false});
  if (!r.name.empty()) kv.add({"name", r.name});
  kv.add({"experiment", r.experiment});
  const bool gone = engine_gone(st, r);
  if (gone)
    kv.add({"status", "gone: the store says running, but its engine (pid " + std::to_string(*r.pid) +
                          " on this machine) has ended without writing its end (killed, crashed, or a full disk); the "
                          "events file ends at step " + opt_int(r.last_step) + ". Continue it with: traindeck-engine train "
                          "--resume --out " + (r.events_path.empty() ? std::string("RUN_DIR") : std::filesystem::path(r.events_path).parent_path().string())});
  else
    kv.add({"status", r.status + (r.end_reason.empty() ? "" : " (" + r.end_reason + ")")});
  std::string host = r.host.empty() ? "-" : r.host;
  if (!r.device.empty()) host += ", device " + r.device;
  if (r.world_size) host += ", world_size " + std::to_string(*r.world_size);
  kv.add({"host", host});
  kv.add({"started", format_time(r.start_time)});
  std::string ended = format_time(r.end_time);
  if (r.start_time && r.end_time) ended += " (after " + store::format_duration(*r.end_time - *r.start_time) + ")";
  kv.add({"ended", ended});
  std::string attempts = std::to_string(r.attempts);
  for (const auto& a : st.run_attempts(run_id))
    if (a.resumed_from_step)
      attempts += "; attempt " + std::to_string(a.attempt) + " resumed from step " +
                  std::to_string(*a.resumed_from_step);
  kv.add({"attempts", attempts});
  kv.add({"last step", opt_int(r.last_step)});
  store::RunProgress progress = st.run_progress(run_id);
  if (gone) progress.status = "gone";  // no percentage, no time left: nothing is training
  kv.add({"progress", progress_text(progress)});
  kv.add({"best val_loss", format_short(r.best_val_loss, 6)});
  kv.add({"tokens/s", store::format_tokens_per_s(r.tokens_per_s) + " (" + kTokensPerSLabel + ")"});
  if (r.n_params) kv.add({"n_params", human_count(static_cast<double>(*r.n_params))});
  if (r.peak_flops) kv.add({"peak FLOP/s", human_count(*r.peak_flops)});
  if (!r.engine_version.empty()) kv.add({"engine", r.engine_version});
  if (r.pid) kv.add({"pid", std::to_string(*r.pid)});
  kv.add({"events", r.events_path.empty() ? "-"
                                          : r.events_path + " (" + std::to_string(r.events_offset) +
                                                " bytes ingested)"});
  if (r.skipped_lines > 0)
    kv.add({"skipped lines", std::to_string(r.skipped_lines) + " malformed line" + (r.skipped_lines == 1 ? "" : "s") +
                                 " of the events file (not recorded)"});
  if (!r.notes.empty()) kv.add({"notes", r.notes});
  kv.print(out);

  const auto metrics = st.list_metrics(run_id);
  out << "\nmetrics\n";
  if (metrics.empty()) {
    out << "  (none)\n";
  } else {
    Table t({"  NAME", "RANK", "POINTS", "STEPS", "LAST", "MIN", "MAX"},
            {false, true, true, false, true, true, true});
    for (const auto& m : metrics)
      t.add({"  " + m.name, std::to_string(m.rank), std::to_string(m.count),
             std::to_string(m.first_step) + ".." + std::to_string(m.last_step),
             format_short(m.last_value, 6), format_short(m.min_value, 6), format_short(m.max_value, 6)});
    t.print(out);
  }
  print_plan_vs_measured(st, run_id, out);
  const auto cps = st.checkpoints(run_id);
  out << "\ncheckpoints\n";
  if (cps.empty()) {
    out << "  (none)\n";
  } else {
    // Where the run's checkpoints are (its folder's checkpoints/, whatever an event says), and
    // whether each is still there: train.keep_checkpoints prunes the older ones, as the
    // workbench's Checkpoints tab shows. A remote run's are on its node.
    const bool remote = st.remote_run(run_id).has_value();
    const store::RunInfo info = st.get_run(run_id);
    const std::string root =
        info.events_path.empty() ? std::string() : (std::filesystem::path(info.events_path).parent_path() / "checkpoints").string();
    Table t({"  STEP", "SIZE", "ON DISK", "PATH"}, {true, true, false, false});
    size_t pruned = 0;
    for (const auto& c : cps) {
      std::string where = remote ? "on the node" : "?";
      std::string path = c.path;
      if (!remote && !root.empty()) {
        path = checkpoint_dir_of(root, static_cast<int>(c.step));
        struct stat sb;
        const bool there = ::lstat(path.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode);
        where = there ? (checkpoint_is_kept(root, static_cast<int>(c.step)) ? "yes, kept" : "yes") : "pruned";
        pruned += !there;
      }
      t.add({"  " + std::to_string(c.step), c.bytes ? human_bytes(static_cast<double>(*c.bytes)) : "-", where, path});
    }
    t.print(out);
    if (pruned > 0)
      out << "  " << pruned << " of " << cps.size() << " pruned (train.keep_checkpoints keeps the newest; marked ones stay)\n";
  }
  const auto samples = st.samples(run_id);
  out << "\nsamples (" << samples.size() << ")\n";
  const size_t first = samples.size() > 3 ? samples.size() - 3 : 0;  // the last three
  for (size_t i = first; i < samples.size(); ++i)
    out << "  step " << samples[i].step << ": " << first_line(samples[i].prompt, 40) << " | "
        << first_line(samples[i].text, 80) << '\n';
  const auto warns = st.warnings(run_id);
  out << "\nwarnings (" << warns.size() << ")\n";
  for (const auto& w : warns)
    out << "  step " << opt_int(w.step) << ": " << w.code << ": " << first_line(w.message, 100) << '\n';
}

int64_t export_run_csv(store::Store& st, const std::string& run_id, const std::string& out_path,
                       std::ostream& out) {
  st.get_run(run_id);  // a clear error for an unknown run before any file is touched
  if (out_path.empty()) return st.export_metrics_csv(run_id, out);
  const std::string tmp = out_path + ".tmp-" + std::to_string(::getpid());
  int64_t rows = 0;
  try {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    TD_CHECK(f.is_open(), "cannot write '" + tmp + "': " + std::strerror(errno) +
                              "; check that the folder of --out exists and is writable");
    rows = st.export_metrics_csv(run_id, f);
    f.close();
    TD_CHECK(!f.fail(), "writing '" + tmp + "' failed; check disk space");
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out_path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error("cannot move the CSV export to '" + out_path + "': " + ec.message() +
                "; check that --out names a writable file");
  }
  return rows;
}

store::IngestStats ingest_run_dir(store::Store& st, const std::string& run_dir, const std::string& experiment,
                                  std::ostream& out) {
  const std::string events = store::events_path_of(run_dir);
  std::error_code ec;
  TD_CHECK(std::filesystem::exists(std::filesystem::symlink_status(events, ec)),
           "no events file '" + events + "': RUN_DIR must be a run directory (the --out of traindeck-engine train)");
  const std::string run_id = store::events_run_id(events);  // refuses a symlink
  TD_CHECK(!run_id.empty(), "the events file '" + events + "' names no run (no line with a run_id); nothing to ingest");
  std::string other;
  if (st.claim_run(run_id, experiment, events, std::nullopt, &other) == store::Store::Claim::other_file)
    throw Error("run '" + run_id + "' is already in the store '" + st.path() + "' from another events file (" + other +
                "); two runs with one id are never merged: ingest this one into another --db");
  store::Ingester ing(st, events, experiment, store::ingest_options_for(run_id));
  const store::IngestStats s = ing.poll_all();
  for (const auto& m : s.messages) std::cerr << "warning: " << m << '\n';
  out << "ingested " << s.lines << " new lines (" << s.rows << " rows, " << s.skipped << " skipped) of " << events
      << " into " << st.path() << '\n';
  const store::RunInfo r = st.get_run(run_id);
  out << "run " << run_id << ": " << r.status << " at step " << opt_int(r.last_step) << '\n';
  return s;
}

void add_runs_command(CLI::App& app, std::ostream& out) {
  CLI::App* runs = app.add_subcommand("runs", "List, show, export and ingest the runs in the experiment store");
  runs->require_subcommand(1);
  const std::string db_help =
      "Store file (default: $TRAINDECK_DB, else $XDG_DATA_HOME/traindeck/traindeck.db, else "
      "~/.local/share/traindeck/traindeck.db)";

  // State shared with the callbacks; lives as long as the app.
  struct Args {
    std::string db, experiment, run_id, out_path, run_dir, tensorboard;
    bool csv = false;
  };
  auto a = std::make_shared<Args>();
  std::ostream* os = &out;

  CLI::App* list = runs->add_subcommand("list", "A table of runs: status, start, step, best val_loss");
  list->add_option("--db", a->db, db_help);
  list->add_option("--experiment,-e", a->experiment, "Only runs of this experiment");
  list->callback([a, os] { print_runs_table(*open_existing(a->db), *os, a->experiment); });

  CLI::App* show = runs->add_subcommand("show", "Everything the store knows about one run");
  show->add_option("--db", a->db, db_help);
  show->add_option("RUN", a->run_id, "Run id (see `runs list`)")->required();
  show->callback([a, os] { print_run_details(*open_existing(a->db), a->run_id, *os); });

  CLI::App* card = runs->add_subcommand("card", "A run's card as JSON: config, seed, dataset (manifest SHA-256, tokens), "
                                                "engine version and build, host, device, world size (docs/store.md \"Run card\")");
  card->add_option("--db", a->db, db_help);
  card->add_option("RUN", a->run_id, "Run id (see `runs list`)")->required();
  card->callback([a, os] { *os << store::Store::run_card_json(open_existing(a->db)->run_card(a->run_id)) << "\n"; });

  CLI::App* exp = runs->add_subcommand("export", "Export a run's metrics");
  exp->add_option("--db", a->db, db_help);
  exp->add_option("RUN", a->run_id, "Run id (see `runs list`)")->required();
  exp->add_flag("--csv", a->csv, "CSV, one row per value: step,rank,attempt,t,name,value");
  exp->add_option("--out,-o", a->out_path, "Write to this file instead of stdout");
  exp->add_option("--tensorboard", a->tensorboard,
                  "Write a TensorBoard event file into DIR/RUN/ (tensorboard --logdir DIR); values as float32");
  exp->callback([a, os] {
    TD_CHECK(a->csv != !a->tensorboard.empty(),
             "runs export: choose one format: --csv (to --out or stdout) or --tensorboard DIR");
    if (a->csv) {
      export_run_csv(*open_existing(a->db), a->run_id, a->out_path, *os);
      return;
    }
    TD_CHECK(a->out_path.empty(), "runs export: --out is for --csv; --tensorboard names the folder itself");
    const store::TensorBoardExport r = store::write_tensorboard(*open_existing(a->db), a->run_id, a->tensorboard);
    *os << "wrote " << r.values << " values in " << r.events << " events to " << r.path << '\n';
  });

  CLI::App* ing = runs->add_subcommand("ingest", "Catch the store up with a run directory's events.jsonl (exactly once)");
  ing->add_option("--db", a->db, db_help + "; created when missing");
  ing->add_option("RUN_DIR", a->run_dir, "Run directory (the --out of train)")->required();
  ing->add_option("--experiment,-e", a->experiment, "Experiment of a run new to the store (default: default)");
  ing->callback([a, os] {
    store::Store st(a->db.empty() ? store::default_db_path() : a->db);
    ingest_run_dir(st, a->run_dir, a->experiment, *os);
  });
}

}  // namespace td::cli
