// The SQLite experiment store: experiments, runs and everything a run produced.
//
// A Store is one connection to one file (WAL journal, foreign keys on, busy timeout). It is
// not thread-safe: give each thread its own Store on the same file; WAL lets readers run
// while one writer (an Ingester) commits. Queries that take a run id throw td::Error when the
// run is unknown. Schema: store/schema.cpp and docs/store.md.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/types.h"

namespace td::store {

/// The store file used when no --db is given: $TRAINDECK_DB, else
/// $XDG_DATA_HOME/traindeck/traindeck.db, else ~/.local/share/traindeck/traindeck.db.
std::string default_db_path();

/// The experiment runs land in when none is named.
inline constexpr const char* kDefaultExperiment = "default";

class Store {
 public:
  struct Options {
    bool create = true;            // create the file (and its folder) when missing
    int busy_timeout_ms = 10000;   // wait this long for another writer's lock
  };

  /// Opens (creating when allowed) the store at `path` and migrates it to schema_version().
  /// Throws td::Error when the file is missing and !create, is not a SQLite file, has a newer
  /// schema version than this build, or cannot be written.
  explicit Store(const std::string& path, Options opts);
  explicit Store(const std::string& path) : Store(path, Options{}) {}
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }
  sqlite3* handle() { return db_; }

  /// Ends what a unit of work (a GUI store job, an ingest poll) must not leave behind, and says
  /// what it found: an open transaction (its writes would never be committed, and a killed
  /// process would lose them) is rolled back; a statement stepped but not reset (it holds a read
  /// snapshot, so this connection would go on seeing the store as it was) is reset. Returns one
  /// line per finding, naming the SQL; empty when the connection was clean (the normal case).
  /// Never throws.
  std::vector<std::string> release_open_state();

  // ---- experiments -------------------------------------------------------------------------

  /// The id of experiment `name`, created (empty notes and tags) when missing.
  int64_t ensure_experiment(const std::string& name);
  /// All experiments by name, with their run counts.
  std::vector<Experiment> list_experiments();
  /// Throws td::Error when `from` does not exist or `to` is taken.
  void rename_experiment(const std::string& from, const std::string& to);
  /// Deletes the experiment, its runs and all their rows (metrics, samples, ...) and the
  /// ingest offsets of their events files. Throws td::Error when it does not exist.
  void delete_experiment(const std::string& name);
  void set_experiment_notes(const std::string& name, const std::string& notes);
  void set_experiment_tags(const std::string& name, const std::vector<std::string>& tags);

  // ---- runs --------------------------------------------------------------------------------

  /// Runs by start time (oldest first); only experiment `experiment` when not empty.
  std::vector<RunSummary> list_runs(const std::string& experiment = "");
  std::optional<RunInfo> find_run(const std::string& run_id);
  /// Throws td::Error("no run '<id>' in store ...") when unknown.
  RunInfo get_run(const std::string& run_id);
  std::vector<RunAttempt> run_attempts(const std::string& run_id);
  /// Records the engine's process id (a launcher's knowledge; ingest also stores run_start's pid).
  void set_run_pid(const std::string& run_id, std::optional<int64_t> pid);
  void set_run_notes(const std::string& run_id, const std::string& notes);
  /// Names (or renames) a run: td::normalise_run_name (trimmed; "" clears it, the id is shown
  /// then). Throws td::Error when the run is unknown or the name is refused (over 120 bytes,
  /// control characters), saying why.
  void set_run_name(const std::string& run_id, const std::string& name);
  /// Moves a run to experiment `experiment` (created when missing).
  void move_run(const std::string& run_id, const std::string& experiment);
  /// Deletes the run, its rows and its events files' ingest offsets.
  void delete_run(const std::string& run_id);

  // ---- rows of a run -----------------------------------------------------------------------

  /// One entry per (metric, rank) the run has, by name then rank.
  std::vector<MetricInfo> list_metrics(const std::string& run_id);
  /// Values of metric `name` of `rank` with step_min <= step <= step_max, by step.
  /// An unknown metric gives an empty series.
  MetricSeries metric_series(const std::string& run_id, const std::string& name, int rank = 0,
                             int64_t step_min = std::numeric_limits<int64_t>::min(),
                             int64_t step_max = std::numeric_limits<int64_t>::max());
  /// The envelope of metric `name` of `rank` over steps [step_lo, step_hi] for a chart that
  /// can show `max_points` columns (docs/store.md "Level of detail"): about one bucket per
  /// column at any run length and zoom — at most max_points buckets, ordered by step, and more
  /// than max_points / 2 whenever the range holds that many rows — reading a bounded number of
  /// rows whatever the run's length:
  ///  * a range of at most 8 * max_points steps (or rows): its raw rows, exactly as one-point
  ///    buckets (level -1, raw()) when they fit, else summarised in memory, bucket_steps
  ///    adjacent rows per bucket (level -1);
  ///  * else the buckets of the finest level (16 * 4^level steps each) with at most
  ///    2 * max_points buckets over the range, merged in pairs when more than max_points.
  ///    Buckets overlapping the range are returned whole, so the first and last may reach
  ///    outside it (their step_min / step_max tell). Min/max are exact per bucket: a one-step
  ///    spike is always in some bucket's v_max (at step_at_max). Past the coarsest level (8:
  ///    1,048,576 steps) adjacent buckets are merged further.
  /// Steps are the engine's optimizer steps, values the metric's own unit. An unknown metric
  /// or an empty range gives no buckets. Throws td::Error when the run is unknown, when
  /// max_points < 1 or step_lo > step_hi.
  MetricEnvelope metric_envelope(const std::string& run_id, const std::string& name, int rank,
                                 int64_t step_lo, int64_t step_hi, int max_points);
  /// Rebuilds the run's level of detail from its raw metric rows (the ingester keeps it up to
  /// date; this repairs a store written by other means). Throws td::Error when unknown.
  void rebuild_lod(const std::string& run_id);
  // ---- progress and throughput (run page, sidebar, runs list/show, compare) ----------------

  /// Steps of the throughput window and of the ETA's rate.
  static constexpr int kThroughputSteps = 100;
  /// A run's tokens/s and MFU, the ONE definition every view shows (labelled there "tokens/s
  /// (median of last 100 steps)"): the median of rank 0's per-step tokens_per_s (tokens/s, the
  /// global batch's tokens over the step's own time, so eval and checkpoint pauses do not count)
  /// over the run's last kThroughputSteps stored steps, leaving out each attempt's first
  /// kWarmupSteps steps (a fresh process's start-up: steps <= resumed_from_step + 3); when that
  /// leaves none, over all of the window. An even count takes the mean of the two middle values.
  /// mfu (0..1) is the median of rank 0's mfu over the same rule. Cost: per metric one index
  /// seek to the run's last step and at most kThroughputSteps rows, plus the run's attempt rows;
  /// never a scan of the run. Throws td::Error when the run is unknown.
  struct RunThroughput {
    std::optional<double> tokens_per_s;
    std::optional<double> mfu;
    int steps = 0;  // values the tokens/s median is over (0: the run has no tokens_per_s rows)
  };
  RunThroughput run_throughput(const std::string& run_id);
  /// Step, train.steps, elapsed wall time and, for a running run, the time left (types.h
  /// RunProgress has each field's definition). The rate is wall-clock time between stored steps
  /// of the loss series (rank 0), so evaluations and checkpoints are part of it:
  /// seconds_per_step = (t_last - t_first) / (step_last - step_first) over the newest attempt's
  /// last kThroughputSteps + 1 rows. Cost: index seeks (a few rows per attempt plus
  /// kThroughputSteps + 1 rows), never a scan of the run. Throws td::Error when the run is
  /// unknown.
  RunProgress run_progress(const std::string& run_id);
  /// find_run, whether a checkpoint is recorded, remote_run, run_progress and (for a run of a
  /// target other than "ssh") run_jobs of `run_id` in one call: the Run page's status line.
  /// An unknown run gives an empty RunOverview (info nullopt), never an error.
  RunOverview run_overview(const std::string& run_id);

  /// The run's card (types.h RunCard: config, seed, dataset with its manifest hash and tokens,
  /// engine version and build, host and device, world size, where it ran): what "Run again"
  /// starts from (store/run_card.cpp). One query plus remote_run. Throws td::Error when the run
  /// is unknown.
  RunCard run_card(const std::string& run_id);
  /// The card as a JSON object (`traindeck-engine runs card RUN`): the RunCard fields by name,
  /// `config` as an object, unknown values null, `remote` {cluster, node, target} or null.
  static std::string run_card_json(const RunCard& card);

  /// Number of metric rows of a run (all names, ranks).
  int64_t count_metrics(const std::string& run_id);
  std::vector<Sample> samples(const std::string& run_id);
  std::vector<Checkpoint> checkpoints(const std::string& run_id);
  std::vector<RunWarning> warnings(const std::string& run_id);

  // ---- alerts (store/alerts.cpp, docs/store.md "Alerts") ----------------------------------

  /// Every alert of a run, oldest first (t, then id). Throws td::Error when the run is unknown.
  std::vector<RunAlert> alerts(const std::string& run_id);
  /// Records one of the workbench's alerts (a.source, kind, severity, message, step, value,
  /// threshold; attempt -1: the run's newest, t 0: now). Returns false when the same (source,
  /// kind, attempt, step) is already stored: an alert is kept once, also when a reattached
  /// follower sees the same stall or end again. Throws td::Error when the run is unknown or
  /// kind is empty.
  bool add_alert(const std::string& run_id, const RunAlert& a);
  /// run_id -> number of alerts not seen yet, for every run that has one (the sidebar's badges).
  std::map<std::string, int> unseen_alert_counts();
  /// Marks every alert of the run seen (the person opened its page). Unknown run: no-op.
  void mark_alerts_seen(const std::string& run_id);
  /// The run's alerts not yet notified, oldest first, marked notified in the same transaction:
  /// each alert is handed out once, whoever asks (the desktop notifier). Unknown run: none.
  std::vector<RunAlert> take_unnotified_alerts(const std::string& run_id);
  /// The values of metric `name` (rank `rank`) at the run's last `limit` steps that have one,
  /// oldest first (the stall rule's recent step_ms). Unknown run or metric: empty.
  std::vector<double> recent_metric_values(const std::string& run_id, const std::string& name, int rank, int limit);

  /// One stored metric value (a `metrics` row with its name).
  struct MetricRow {
    int64_t step = 0;
    int rank = 0;
    int attempt = 0;
    double t = 0;           ///< Unix seconds
    std::string_view name;  ///< valid during the callback only
    double value = 0;
  };
  /// Calls fn for every metric row of a run, ordered by step, rank, name (a full scan of the
  /// run's rows on this thread). Throws td::Error when the run is unknown; what fn throws.
  void for_each_metric_row(const std::string& run_id, const std::function<void(const MetricRow&)>& fn);

  /// Writes all metric rows of a run as CSV (long format, one row per value):
  /// header `step,rank,attempt,t,name,value`, rows ordered by step, rank, name; numbers in
  /// the shortest form that reads back to the same double. Returns the number of data rows.
  /// `run_id_column`: every row starts with the run's id (header `run_id,step,...`), for one
  /// file holding several runs; `header` false leaves the header line out (the runs after
  /// the first). Throws td::Error when the run is unknown or the stream fails.
  int64_t export_metrics_csv(const std::string& run_id, std::ostream& out, bool run_id_column = false,
                             bool header = true);

  // ---- compare queries (gui/compare) -------------------------------------------------------

  /// Summary numbers of one run for comparing runs (docs/store.md "Compare"). Losses are
  /// nats/token of rank 0; empty optionals where the run has no such rows.
  struct RunNumbers {
    RunInfo info;                            // the run's record (status, n_params, config ...)
    std::optional<double> final_loss;        // train loss at the last step
    std::optional<double> best_loss;         // min train loss
    std::optional<double> final_val_loss;    // val_loss of the last eval
    std::optional<double> best_val_loss;     // min val_loss
    /// tokens/s and mfu (0..1) of run_throughput: the medians over the last kThroughputSteps
    /// steps, each attempt's first kWarmupSteps left out.
    std::optional<double> tokens_per_s;
    std::optional<double> mfu;
    /// Seconds of training: run_progress's elapsed_s, the SUM of the attempts' durations (the
    /// pauses between a stop and a --resume are not counted). An attempt without an end
    /// (running, or killed) lasts until its last stored step: "so far".
    std::optional<double> wall_seconds;
    std::optional<int64_t> tokens_seen;      // tokens_seen at the last step
  };
  static constexpr int kWarmupSteps = 3;
  /// Throws td::Error when the run is unknown.
  RunNumbers run_numbers(const std::string& run_id);
  /// A config JSON object flattened to (dotted path, value) pairs sorted by path, e.g.
  /// ("model.d_model", "64"), ("train.lr", "0.001"), ("data.tokenizer", "byte"): strings
  /// without quotes, other values (numbers, true/false/null, arrays) as compact JSON; an
  /// empty object is a value "{}". "" or invalid JSON gives no pairs. Never throws.
  static std::vector<std::pair<std::string, std::string>> flatten_config(const std::string& config_json);
  /// A name for a new run of `config_json` in `experiment`: the fields that differ from the
  /// experiment's newest run's config (flatten_config paths), as "leaf=value" joined by ", "
  /// (the whole path when two leaves share a name), at most three, then "+N more": e.g.
  /// "lr=0.003, n_layer=6". "" when the experiment has no run with a config, or nothing
  /// differs. At most 120 bytes (td::normalise_run_name accepts it). One indexed read.
  std::string suggest_run_name(const std::string& experiment, const std::string& config_json);
  /// The naming rule of suggest_run_name on two configs (pure; "" when `previous_json` is "").
  static std::string run_name_from_diff(const std::string& config_json, const std::string& previous_json);

  // ---- end of compare queries ----------------------------------------------------------------

  /// The internal integer key of a run, or nullopt.
  std::optional<int64_t> run_key(const std::string& run_id);

  // ---- launches (gui/runs) -----------------------------------------------------------------

  /// Records a run a launcher has just started, before the engine wrote any event: creates
  /// the run row in `experiment` (created when missing) with status 'running', start_time `t`
  /// (Unix seconds), `events_path`, `pid` and `host`; a run already in the store (a resume)
  /// gets status 'running', the new pid and no end time. Its events, once ingested, fill the
  /// rest. Throws td::Error on a store error.
  void note_launch(const std::string& run_id, const std::string& experiment, const std::string& events_path,
                   int64_t pid, const std::string& host, double t);
  /// Ends a run whose engine process is gone without a run_end event (killed, crashed, failed
  /// before its first event): status `status`, end_time `t`, end_reason `reason`, pid cleared.
  /// Does nothing (returns false) when the run already has an end (its run_end was ingested).
  /// Throws td::Error when the run is unknown.
  bool mark_run_ended(const std::string& run_id, const std::string& status, const std::string& reason, double t);
  /// Replaces the end reason of an ended run when it still is `expected` (compare and set: a
  /// newer end, e.g. of a resumed attempt, is never overwritten): a follower that knows more than
  /// the engine did (the scheduler, not the user, stopped the run) says so. Status and times stay.
  /// Returns whether it wrote. Throws td::Error when the run is unknown or on a store error.
  bool replace_end_reason(const std::string& run_id, const std::string& expected, const std::string& reason);

  /// What claim_run found.
  enum class Claim {
    created,    // a new run row, recorded from events_path
    same_file,  // the run was already recorded from events_path (or from no file: it now is)
    other_file  // the run is recorded from another events file: nothing was written
  };
  /// Claims run id `run_id` for the events file `events_path` (absolute: events_path_of) in ONE
  /// write transaction, so that two processes starting the same run id at once cannot both
  /// record it (runs.run_id is unique; the second finds the first's row): a missing run gets a
  /// row in `experiment` (created when missing) with status 'running', pid `pid` and
  /// events_path, and no start time until its run_start is ingested. For other_file, `*other`
  /// (when given) names the file the run is recorded from. Throws td::Error on a store error.
  Claim claim_run(const std::string& run_id, const std::string& experiment, const std::string& events_path,
                  std::optional<int64_t> pid, std::string* other = nullptr);
  /// Gives back a claim of a run that never started: deletes the row of `run_id` when it is
  /// recorded from `events_path` and holds no run_start (attempts = 0) and no metric row. Returns
  /// whether it did. Throws td::Error on a store error.
  bool release_claim(const std::string& run_id, const std::string& events_path);

  // ---- datasets (gui/data) -----------------------------------------------------------------

  /// Registers the prepared dataset at directory `path` (made absolute and normalised) from the
  /// text of its manifest.json, or updates its row when that path is registered already
  /// (`created` kept, `updated` now). Returns the stored row. Throws td::Error when the text is
  /// not JSON or not a traindeck-dataset manifest (format, tokenizer, splits missing).
  Dataset register_dataset(const std::string& path, const std::string& manifest_json);
  /// Registered datasets, newest registration first.
  std::vector<Dataset> list_datasets();
  /// The row of dataset directory `path` (made absolute and normalised), or nullopt.
  std::optional<Dataset> find_dataset(const std::string& path);
  /// Removes the row of `path` (never its files). Returns whether there was one.
  bool forget_dataset(const std::string& path);

  // ---- clusters and remote runs (gui/cluster, gui/runs; schema version 4) ------------------

  /// Saves cluster `name` with `spec_json` (remote/cluster.h's JSON, without secrets): inserted,
  /// or replaced with `created` kept. Throws td::Error when the name is empty, the text is not a
  /// JSON object, or it holds a "password", "passphrase" or "secret" field anywhere (secrets are
  /// never stored; nothing is written then).
  void save_cluster(const std::string& name, const std::string& spec_json);
  /// Saved clusters by name.
  std::vector<ClusterRow> list_clusters();
  std::optional<ClusterRow> find_cluster(const std::string& name);
  /// Removes a cluster's row (runs launched on it keep their remote_runs rows). Returns whether
  /// there was one.
  bool forget_cluster(const std::string& name);
  /// Records where remote run `r.run_id` lives (after note_launch created its run row):
  /// inserted or replaced (a resume on the node gets the new pid). Throws td::Error when the run
  /// is unknown or `r.node_json` holds a secret field.
  void note_remote_run(const RemoteRun& r);
  /// The remote record of a run, or nullopt for a local run.
  std::optional<RemoteRun> remote_run(const std::string& run_id);
  /// Remote runs of target kind `target` ("ssh", "slurm") whose status is 'running' or
  /// 'unknown' (to reattach at start), oldest first.
  std::vector<RemoteRun> active_remote_runs(const std::string& target = "ssh");
  /// The kind of target run `run_id` went to: its remote_runs.target ("ssh", "slurm"), else
  /// "local". Throws td::Error when the run is unknown.
  std::string run_target(const std::string& run_id);
  /// Records scheduler job `job.job_id` of run `run_id`, or updates its state and reason
  /// (submitted is kept from the first call). Throws td::Error when the run is unknown or the
  /// job id is empty.
  void note_run_job(const std::string& run_id, const RunJob& job);
  /// The scheduler jobs of a run, in the order they were first recorded.
  std::vector<RunJob> run_jobs(const std::string& run_id);

  // ---- chart queries (gui/metrics) ---------------------------------------------------------

  /// One entry per (metric, rank) series of a run, like list_metrics (same order, same
  /// fields), but read from the level of detail's coarsest level (buckets of 1,048,576 steps),
  /// so it reads about one row per series per million steps whatever the run's length
  /// (list_metrics scans every row). last_value is the value at last_step. Throws td::Error
  /// when the run is unknown.
  std::vector<MetricInfo> metric_extents(const std::string& run_id);
  /// The fields of a run's row a chart needs, without get_run's aggregates over its metric
  /// rows (best_val_loss reads every val_loss row). Throws td::Error when the run is unknown.
  struct ChartRun {
    std::string status;                   // unknown | running | completed | stopped | failed
    std::optional<int64_t> last_step;
    std::optional<int64_t> world_size;
    std::string config_json;              // "" when unknown
    std::vector<std::string> hosts;       // host of each rank (run_start `hosts`); empty when unknown
    std::string name;                     // the run's name for people; "" when unnamed
  };
  ChartRun chart_run(const std::string& run_id);
  /// About `max_points` (step, t) pairs of metric `name` of `rank`, spread over all its steps
  /// and always holding its first and last step: every row when it has at most max_points,
  /// else the first step of each level-of-detail bucket (the finest level with at most
  /// max_points buckets, thinned when the coarsest has more) plus the last step. Filled:
  /// step, t (Unix seconds), value, attempt, by step. A chart maps steps to wall time by
  /// interpolating between them. Reads at most about 2 * max_points rows. An unknown metric
  /// gives an empty series. Throws td::Error when the run is unknown or max_points < 2.
  MetricSeries metric_step_times(const std::string& run_id, const std::string& name, int rank,
                                 int max_points);

 private:
  int64_t require_run(const std::string& run_id);
  // run_throughput's median of metric `name` for the run with key `run` (progress_queries.cpp).
  std::optional<double> recent_median(int64_t run, const char* name, int* steps = nullptr);
  int64_t require_experiment(const std::string& name);

  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace td::store
