// Plain records the store's queries return. Times are Unix seconds, sizes bytes, steps the
// engine's 1-based optimizer steps; "attempt" is 0 for a first start, +1 per --resume.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace td::store {

struct Experiment {
  int64_t id = 0;
  std::string name;
  std::string notes;
  std::vector<std::string> tags;
  double created = 0;  // Unix seconds
  int64_t run_count = 0;
};

/// One row of the runs list.
struct RunSummary {
  std::string run_id;
  std::string experiment;
  std::string status;  // unknown | running | completed | stopped | failed
  std::string host;
  std::optional<double> start_time;  // Unix seconds of the first run_start
  std::optional<double> end_time;    // Unix seconds of the last run_end; empty while running
  int attempts = 0;                  // attempts seen (last attempt + 1)
  std::optional<int64_t> last_step;
  std::optional<double> best_val_loss;      // min val_loss (nats/token) over rank 0's evals
  /// tokens/s: the run's one definition, Store::run_throughput (median of the last 100 steps).
  std::optional<double> tokens_per_s;
  std::optional<int64_t> total_steps;       // train.steps of the run's config; empty when unknown
  std::string notes;
  /// The run's name for people ("" when unnamed): train --run-name, or set at Start run and
  /// Rename (Store::set_run_name). The run_id stays the key.
  std::string name;
  /// What to show for the run: its name, else its id.
  const std::string& display_name() const { return name.empty() ? run_id : name; }
};

/// Everything the store knows about a run.
struct RunInfo : RunSummary {
  std::string config_json;  // the validated config as the engine wrote it; "" when unknown
  std::string device;
  std::string engine_version;
  std::string end_reason;
  std::string events_path;
  std::optional<int64_t> world_size;
  std::optional<int64_t> n_params;
  std::optional<double> flops_per_token;
  std::optional<double> peak_flops;  // FLOP/s
  std::optional<int64_t> pid;
  int64_t events_offset = 0;  // bytes of events_path ingested
  /// Malformed lines ingest skipped in the run's events files (event_files.skipped): lines that
  /// are in the file but not in the store (docs/store.md "Bad, unknown and partial lines").
  int64_t skipped_lines = 0;
};

/// One attempt (start or --resume) of a run.
struct RunAttempt {
  int attempt = 0;
  std::optional<double> start_time;
  std::optional<double> end_time;
  std::string status;
  std::optional<int64_t> resumed_from_step;
  std::string host;
};

/// How far a run is and how long it has taken (Store::run_progress). Steps are optimizer steps,
/// times seconds of wall-clock time.
struct RunProgress {
  std::string status;                    // unknown | running | completed | stopped | failed
  std::optional<int64_t> step;           // last completed step (runs.last_step)
  std::optional<int64_t> total_steps;    // train.steps of the run's config
  /// Wall time of the run's attempts, summed (the pauses between a stop and a resume are not
  /// counted); an attempt without an end counts to its last stored step's time, not to "now",
  /// so a stalled run does not look alive. Empty before any attempt started.
  std::optional<double> elapsed_s;
  /// Recent wall-clock seconds per step: over the last Store::kThroughputSteps steps of the loss
  /// series in the newest attempt, evaluations and checkpoints included. Needs two steps.
  std::optional<double> seconds_per_step;
  /// (total_steps - step) * seconds_per_step, for a running run only.
  std::optional<double> eta_s;
  /// step / total_steps in whole percent, rounded (89 of 1000: 9), but 99 at most until the
  /// last step (999 of 1000 is not "100 %"); empty without a total.
  std::optional<int> percent() const {
    if (!total_steps || *total_steps <= 0) return std::nullopt;
    const int64_t done = step.value_or(0);
    int64_t pct = (200 * done + *total_steps) / (2 * *total_steps);  // round half up
    if (done < *total_steps && pct > 99) pct = 99;
    return static_cast<int>(pct);
  }
};

/// Summary of one (metric, rank) series of a run.
struct MetricInfo {
  std::string name;
  int rank = 0;
  int64_t count = 0;
  int64_t first_step = 0;
  int64_t last_step = 0;
  double last_value = 0;  // value at last_step
  double min_value = 0;
  double max_value = 0;
};

/// A metric series: parallel vectors ordered by step (struct of arrays, ready for a chart).
struct MetricSeries {
  std::vector<int64_t> step;
  std::vector<double> t;      // Unix seconds
  std::vector<double> value;
  std::vector<int> attempt;   // attempt that produced each value
  size_t size() const { return step.size(); }
};

/// One bucket of a metric's level of detail: a summary of the raw values of the steps in
/// [first, last] of one bucket (docs/store.md "Level of detail"). A raw point is a bucket with
/// n == 1 and min == max == first == last == its value.
struct Bucket {
  int64_t step_min = 0;     // first step with a value in the bucket
  int64_t step_max = 0;     // last step with a value in the bucket
  int64_t step_at_min = 0;  // earliest step holding v_min
  int64_t step_at_max = 0;  // earliest step holding v_max
  double v_min = 0;
  double v_max = 0;
  double v_first = 0;       // value at step_min
  double v_last = 0;        // value at step_max
  double v_sum = 0;         // sum of the n values
  int64_t n = 0;            // raw values summarised (>= 1)
  double mean() const { return n > 0 ? v_sum / static_cast<double>(n) : 0.0; }
};

/// What Store::metric_envelope returns: buckets by step, at most max_points of them.
struct MetricEnvelope {
  int level = -1;             // -1: read from raw rows; else the LOD level used
  int64_t bucket_steps = 1;   // level -1: rows per bucket (1: one raw row each); else 64 * 4^level
  std::vector<Bucket> buckets;
  /// Every bucket is one stored row (exact values, no band to draw).
  bool raw() const { return level < 0 && bucket_steps == 1; }
  size_t size() const { return buckets.size(); }
};

struct Sample {
  int64_t step = 0;
  int rank = 0;
  int attempt = 0;
  double t = 0;
  std::string prompt;
  std::string text;
};

struct Checkpoint {
  int64_t step = 0;
  int rank = 0;
  int attempt = 0;
  double t = 0;
  std::string path;
  std::optional<int64_t> bytes;
};

struct RunWarning {
  std::optional<int64_t> step;
  int rank = 0;
  int attempt = 0;
  double t = 0;
  std::string code;
  std::string message;
};

/// One alert of a run (the alerts table, docs/store.md "Alerts"; kinds and units in
/// docs/events.md "Alerts").
struct RunAlert {
  int64_t id = 0;              // alerts.id (0 for one not stored yet)
  std::string source = "workbench";  // "engine" (an alert event) or "workbench" (the follower)
  int attempt = -1;            // the engine's attempt; -1: add_alert takes the run's newest
  int64_t step = 0;            // the run's last step when it fired
  double t = 0;                // Unix seconds; 0: add_alert takes now
  std::string kind, severity, message;
  std::optional<double> value, threshold;
  bool seen = false, notified = false;
};

/// A prepared dataset registered in the store (Store::register_dataset; gui/data). The numbers
/// are read from the dataset's manifest.json (docs/formats.md) when it was registered.
struct Dataset {
  std::string path;          // absolute dataset directory (the key)
  std::string name;          // the directory's name
  std::string tokenizer;     // byte | bpe
  int64_t vocab_size = 0;
  int64_t train_tokens = 0;
  int64_t val_tokens = 0;
  int64_t bytes_read = 0;    // input bytes in all
  int64_t files = 0;         // source files read
  int64_t skipped = 0;       // files skipped (manifest "skipped")
  double val_fraction = 0;
  std::string manifest_json; // manifest.json as prepare wrote it
  double created = 0;        // Unix seconds of the first registration
  double updated = 0;        // Unix seconds of the last registration
};

/// A saved cluster (Store::save_cluster; gui/cluster). `spec_json` is remote/cluster.h's JSON.
struct ClusterRow {
  std::string name;
  std::string spec_json;
  double created = 0;  // Unix seconds
  double updated = 0;
};

/// Where a remote run lives (Store::note_remote_run): enough to reconnect and reattach.
struct RemoteRun {
  std::string run_id;
  std::string cluster;    // cluster name at launch
  std::string node_json;  // remote/cluster.h NodeSpec JSON at launch (no secrets)
  std::string run_dir;    // run folder on the node
  std::optional<int64_t> pid;  // engine pid on the node
  double created = 0;     // Unix seconds
  /// A multi-node run: remote/multinode.h ClusterRun JSON (every node, run folder and rank pid;
  /// node_json/run_dir/pid are then rank 0's). "" for a run on one node.
  std::string layout_json;
  /// The kind of target the run went to (gui/runs/run_target.h): "ssh" or "slurm".
  std::string target = "ssh";
};

/// One scheduler job of a run (a Slurm job; schema version 8).
struct RunJob {
  std::string job_id;     // the scheduler's id
  double submitted = 0;   // Unix seconds it was first recorded
  std::string state;      // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL ...
  std::string reason;     // the pending reason or the end's exit code, for people
};

/// What the Run page's status line shows of a run (Store::run_overview): one store round trip.
struct RunOverview {
  std::optional<RunInfo> info;     // nullopt: no such run (yet)
  bool has_checkpoint = false;     // a checkpoint event was ingested (Resume needs one)
  std::optional<RemoteRun> remote; // where a remote run lives; nullopt for a local run
  RunProgress progress;            // Store::run_progress
  std::vector<RunJob> jobs;        // a scheduler's jobs (Slurm runs), oldest first; empty otherwise
};

/// What a run needs to be reproduced (Store::run_card; schema version 9): its config and the
/// facts of its start (the newest attempt's run_start event, docs/events.md). Text fields are ""
/// and numbers nullopt where the store does not know them (runs recorded by an older engine).
struct RunCard {
  std::string run_id;
  std::string name;          // for people ("" unnamed)
  std::string experiment;
  std::string status;        // unknown | running | completed | stopped | failed
  std::string config_json;   // the validated config as the engine wrote it; "" before run_start
  std::optional<uint64_t> seed;  // train.seed of the config (weights, data order, sampling)
  /// The dataset it read: run_start's dataset.path, else the config's data.path. For a remote
  /// run a folder on the node (<work>/datasets/<name>-<12 hex of manifest_sha256>).
  std::string dataset_path;
  std::string dataset_sha256;  // SHA-256 of its manifest.json (64 lowercase hex); "" unknown
  std::optional<int64_t> dataset_train_tokens, dataset_val_tokens;  // splits.train/val.tokens
  std::string engine_version;  // TD_VERSION of the engine that trained ("0.1.0")
  std::string engine_build;    // "gcc 12.2.0, Release, x86_64" (engine/metrics/sysinfo.h)
  std::string host;            // rank 0's host
  std::string device;          // train.device resolved: cpu, cuda, cuda:N
  std::string device_name;     // the GPU's name or the CPU model
  std::optional<int64_t> world_size;
  std::vector<std::string> hosts;  // every rank's host, by rank (data-parallel runs); else empty
  /// Where it ran (Store::run_target): "local", "ssh" or "slurm"; `remote` says which cluster
  /// and node for the two others.
  std::string target = "local";
  std::optional<RemoteRun> remote;
};

}  // namespace td::store
