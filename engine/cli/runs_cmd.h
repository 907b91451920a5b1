// `traindeck-engine runs ...`: look at the runs in the experiment store.
//
//   runs list [--experiment NAME]       a table of runs (status, start, step, best val_loss)
//   runs show RUN                       everything known about one run
//   runs export RUN --csv [--out FILE]  the run's metrics as CSV (store/store.h, docs/store.md)
//   runs ingest RUN_DIR [-e EXPERIMENT] catch the store up with RUN_DIR/events.jsonl
//
// Each takes --db FILE (default: td::store::default_db_path()); only ingest creates a missing
// store. Errors are td::Error.
#pragma once

#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

namespace td::store {
class Store;
struct IngestStats;
}

namespace td::cli {

/// Registers the `runs` subcommand and its four subcommands on `app`; tables and CSV
/// without --out are written to `out`.
void add_runs_command(CLI::App& app, std::ostream& out = std::cout);

/// The `runs list` table: one line per run (of experiment `experiment` when not empty).
void print_runs_table(store::Store& st, std::ostream& out, const std::string& experiment = "");

/// The `runs show` report of run `run_id`. Throws td::Error when the run is unknown.
void print_run_details(store::Store& st, const std::string& run_id, std::ostream& out);

/// The "plan vs measured" section of `runs show`: the planner's memory per rank, tokens/s and
/// (data parallel) collective bytes and bus bandwidth beside the run's measurements, with the
/// error in percent (engine/plan/compare.h, store/plan_measured.h).
void print_plan_vs_measured(store::Store& st, const std::string& run_id, std::ostream& out);

/// `runs export --csv`: the run's metrics as CSV to `out_path`, or to `out` when `out_path` is
/// empty. A file is written under a temporary name then renamed, so a failed export leaves an
/// earlier file intact. Returns the number of data rows. Throws td::Error.
int64_t export_run_csv(store::Store& st, const std::string& run_id, const std::string& out_path,
                       std::ostream& out);

/// `runs ingest`: ingests what is new in `run_dir`/events.jsonl (store::events_path_of) into
/// `st`, exactly once (from the byte offset the store keeps, the one `train --db` keeps too); a run
/// new to the store goes to `experiment` ("": the default one). Writes "ingested N new lines (R
/// rows, S skipped) of FILE into STORE" and "run ID: STATUS at step N" to `out`, each skipped
/// line's reason to stderr. Throws td::Error when there is no events file (or it is a symlink),
/// it names no run, or the store holds that run id from another events file (nothing written).
store::IngestStats ingest_run_dir(store::Store& st, const std::string& run_dir, const std::string& experiment,
                                  std::ostream& out);

}  // namespace td::cli
