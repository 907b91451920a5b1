// Ingest of a run's events.jsonl (docs/events.md) into the store, resumable by byte offset.
//
// An Ingester reads complete lines from the file's recorded byte offset, writes the rows they
// produce and the new offset in ONE transaction per batch, so an ingester killed at any
// moment resumes without losing or duplicating a row. A trailing line without its '\n' is left
// for a later poll. Semantics: docs/store.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/metrics/step_fields.h"
#include "store/lod.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace td::store {

/// What one poll (or poll_all) did.
struct IngestStats {
  size_t lines = 0;        // complete lines consumed (including skipped and ignored ones)
  size_t rows = 0;         // rows inserted or replaced: metrics + samples + checkpoints + warnings + alerts
  size_t metric_rows = 0;  // of which metric rows
  size_t skipped = 0;      // lines skipped: malformed (bad JSON, missing or mistyped fields, too
                           // long) or naming another run than the file's (counted in `foreign` too)
  size_t foreign = 0;      // of which lines naming another run than the file's ("line names run X,
                           // but this file is run Y's"): an events file feeds exactly one run
  size_t ignored = 0;      // well-formed lines of event types this build does not know
  size_t unknown_fields = 0;  // lines kept that carry fields this build does not know
  size_t bytes = 0;        // bytes consumed
  size_t batches = 0;      // transactions committed
  int64_t offset = 0;      // byte offset of the file ingested so far, after this call
  bool at_eof = false;     // every complete line has been read
  bool partial_line = false;  // an incomplete last line (no '\n' yet) waits at the end
  /// Warnings, first 20 per call, each "<path>:<line>: <what>": every skipped line ("...; line
  /// skipped"), and once per Ingester each unknown event type ("unknown event type \"T\" ...")
  /// and each unknown field of a type ("unknown field \"F\" in a \"T\" event ...").
  std::vector<std::string> messages;
  IngestStats& operator+=(const IngestStats& o);
};

/// The longest events line read (bytes, without its '\n'). A longer line is skipped without being
/// held in memory ("line longer than ..."), also when its end arrives polls or restarts later.
/// The engine's longest lines (run_start with its config, a step of a 4,096-rank run with its
/// per-rank figures) stay under 2 MiB.
constexpr size_t kMaxEventLineBytes = size_t(8) << 20;

struct IngestOptions {
  /// The run this events file feeds, when the caller knows it: a follower of a run it launched
  /// (RunTail), `train --db` and `runs ingest` after Store::claim_run. Empty: the run the store
  /// associates with the file (event_files.run, else the run recorded from this path), else, for
  /// a file the store has never seen, the run of its first valid line — unless the store records
  /// that run from another events file. Lines naming any other run are skipped and counted
  /// (IngestStats::foreign); no row of another run is ever created or changed.
  std::string run_id;
  size_t batch_lines = 10000;  // poll_all(): lines per transaction at most
  double batch_seconds = 0.1;  // a batch also ends after this much time (seconds)
  /// Test hook: called after every row written (or queued for the batch's multi-row insert)
  /// inside a batch with the batch's row count so far, before the commit. Throwing from it
  /// rolls the batch back (offset included).
  std::function<void(size_t rows_in_batch)> after_row;
};

/// Options that name the run the file feeds (IngestOptions::run_id), the rest at their defaults.
inline IngestOptions ingest_options_for(const std::string& run_id) {
  IngestOptions o;
  o.run_id = run_id;
  return o;
}

class Ingester {
 public:
  /// Ingests `events_path` into `store`, into the one run the file feeds (IngestOptions::run_id);
  /// a run first seen here goes to experiment `experiment` (created when missing); a run already
  /// in the store keeps its experiment. Touches neither the file nor the store until the first
  /// poll. `store` must outlive the Ingester.
  Ingester(Store& store, std::string events_path, std::string experiment = kDefaultExperiment,
           IngestOptions opts = {});

  /// Ingests at most `max_lines` complete lines (and at most opts.batch_seconds of work) in one
  /// transaction. A missing file gives empty stats (the engine may not have created it yet).
  /// Malformed lines, lines over kMaxEventLineBytes and lines naming another run are skipped and
  /// counted, never thrown. Throws td::Error when the file is a symbolic link or not a regular
  /// file (a FIFO never blocks the open), cannot be read or is now shorter than the ingested
  /// offset (it was replaced or truncated: reset() and ingest again), or on a store error; the
  /// batch is then rolled back.
  IngestStats poll(size_t max_lines = 10000);

  /// Polls in batches of opts.batch_lines until every complete line is ingested.
  IngestStats poll_all();

  /// The byte offset ingested so far, as recorded in the store.
  int64_t offset();

  /// Forgets the recorded offset, so the next poll reads the file from the start. Rows are
  /// upserted, so a re-ingest rewrites the same rows rather than duplicating them.
  void reset();

  const std::string& events_path() const { return path_; }

 private:
  struct Batch;
  // A line naming another run than the file's: thrown by claim_line, caught per line in poll()
  // (counted in skipped and foreign), never out of it.
  struct Foreign {
    std::string why;
  };
  void prepare();
  void process_line(const char* begin, const char* end, Batch& b);
  bool fast_step(const char* begin, const char* end, Batch& b);
  void track(Batch& b, int64_t run, std::optional<int64_t> step);
  void resolve_file_run(std::optional<int64_t> recorded);
  void claim_line(std::string_view run_id);
  int64_t file_run(Batch& b);
  int64_t metric_id(const std::string& name);
  void put_metric(Batch& b, int64_t run, int64_t name, int rank, int64_t step, int attempt,
                  double t, double value);
  void flush_appends();
  void wrote_rows(Batch& b, size_t n);
  bool warned(Batch& b, const std::string& key);  // true the first time `key` is seen
  void note(Batch& b, const std::string& why);    // adds "<path>:<line>: why" to messages
  void note_unknown_field(Batch& b, std::string_view type, std::string_view key);

  // A metric row queued for the batch's multi-row insert (put_metric, flush_appends).
  struct Row {
    int64_t run, name;
    int rank, attempt;
    int64_t step;
    double t, value;
  };

  Store& store_;
  std::string path_;
  std::string experiment_;
  IngestOptions opts_;
  bool prepared_ = false;
  Stmt metric_, metric_many_, sample_, checkpoint_, warning_, alert_, run_start_, attempt_start_, run_end_,
      attempt_end_, find_run_, new_run_;
  // The one run this file feeds (IngestOptions::run_id, or what the store records, or the first
  // valid line's run; "" while undecided) and its runs.id (-1 until looked up this batch).
  std::string file_run_id_;
  int64_t file_run_key_ = -1;
  std::unordered_map<std::string, int64_t> names_;   // metric name -> metric_names.id, one batch
  // metric_names.id of the step event's metric fields (kStepMetricFields) and of each rank's
  // (kRankMetricFields, engine/metrics/step_fields.h), or -1 while not looked up this batch.
  std::array<int64_t, kStepMetricFields.size()> step_ids_{};
  std::array<int64_t, kRankMetricFields.size()> rank_ids_{};
  lod::BatchLod lod_;         // level-of-detail changes of the current batch
  std::set<std::string> warned_;  // unknown types and "type.field"s reported (committed batches;
                                  // at most kMaxWarned, so a hostile file cannot grow it unbounded)
  std::vector<Row> appends_;  // appended metric rows not yet written (this batch only)
  std::vector<Row> sorted_;           // flush_appends(): appends_ grouped by series
  std::vector<uint32_t> series_of_;   // flush_appends(): series of each of appends_
};

/// The events file of run directory `run_dir` as the store records it: `<run_dir>/events.jsonl`,
/// absolute and lexically normal ("runs/a/./" and "runs/a" give the same path). `train --db` and
/// `runs ingest` both key their ingest offset by it, so either one continues the other's.
std::string events_path_of(const std::string& run_dir);

/// The run id of the first event line of the events file `path` that names one (a JSON object
/// with a non-empty "run_id" string; malformed lines before it are passed over), or "" when no
/// line does. Reads at most the first 1 MiB. The file is opened without following a symlink.
/// Throws td::Error naming the file when it is missing, a symlink or unreadable.
std::string events_run_id(const std::string& path);

}  // namespace td::store
