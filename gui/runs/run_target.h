// RunTarget: one place a run can go, behind one interface — this machine (RunController), an
// SSH node or an SSH cluster (RemoteRunController), a Slurm cluster (SlurmTarget), and later
// Kubernetes. Each target offers its "Train on" entries (placements()), starts, stops (the
// engine's graceful stop, then a hard one after killTimeoutMs()), cancels what a run waits for
// (a deploy, a queued job), resumes and re-attaches its runs, says what state each is in and
// where its files are, brings the run's events file to this machine (the local file itself, an
// SFTP mirror of the node's or the shared filesystem's file), which the store ingests exactly
// once (store/ingest.h: by byte offset, resumable after a restart), and, where checkpoints stay
// away from this machine, lists and fetches them.
//
// RunTargets (run_targets.h) holds every target, routes a Start run to the one that accepts
// the placement and a stop, resume or question about a run to the one that owns it. The window
// holds the router and nothing else.
//
// Adding a target takes: its implementation (a RunTarget subclass in gui/runs/; an SSH-reached
// one derives from RemoteTargetBase, remote_target_base.h), its registration
// (gui/runs/run_targets.cpp make_targets()), its settings on the Clusters page (gui/cluster)
// and its test. docs/targets.md describes each target.
//
// Threading rule: a GUI-thread QObject (Qt Core only: testable without widgets). Every call
// returns at once; network and store work runs on worker threads and reports by signals.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include <optional>

#include <nlohmann/json.hpp>

#include "remote/cluster.h"

namespace td::gui {

class StoreClient;

/// Where the person chose to train ("Train on" beside Start run).
struct RunPlacement {
  /// The saved cluster; nullopt: this machine.
  std::optional<td::remote::ClusterSpec> cluster;
  /// SSH clusters: the index of the node in cluster->nodes; -1: every node (one run across
  /// them, remote/multinode.h). Slurm clusters ignore it (Slurm places the ranks).
  int node = -1;

  /// The target kind that runs this placement: "local", "ssh" or the cluster's kind.
  QString kind() const;
};

/// One "Train on" entry a target offers (RunTarget::placements()).
struct PlacementChoice {
  QString label;           ///< what the list shows: "lab / gpu1 (2 GPUs)", "hpc (Slurm, 2 CPU nodes)"
  QString icon;            ///< the icon's name (gui/look/icons.h): "run" for this machine, "remote" else
  RunPlacement placement;  ///< what start() is given when the entry is chosen
};

/// One complete checkpoint of a run whose checkpoints stay on a node or a cluster's shared
/// filesystem, as the node lists it (td::remote::list_checkpoints).
struct RemoteCheckpointEntry {
  QString name;      ///< "step_00000030"
  int step = 0;      ///< optimizer steps done
  qint64 bytes = 0;  ///< its files' sizes, summed
};

/// A run's state as its target sees it (RunTarget::state()).
struct RunTargetState {
  enum class Phase {
    Unknown,    ///< not followed by this target
    Queued,     ///< submitted, waiting for the scheduler: detail = its reason ("waiting for resources")
    Deploying,  ///< bundle, dataset and config going to the node: detail = phase, done/total = bytes
    Running,    ///< the engine trains: detail = connection state in words ("connected", "reconnecting ...") or ""
    Stopping,   ///< a stop was asked for: the engine finishes its step and checkpoints
    Ended,      ///< detail = the store's status (completed, stopped, failed) and its reason
  };
  /// How a remote target reaches the run while it follows it (the SSH node, a Slurm cluster's
  /// login node); what the alerts read (gui/runs/alert_watch.h), while detail says it in words.
  enum class Connection {
    None,          ///< a run on this machine, or one not followed now
    Connecting,    ///< the first connection is being made
    Connected,     ///< the last poll reached it
    Reconnecting,  ///< the last poll could not: retried with backoff (reconnect_attempt)
  };

  Phase phase = Phase::Unknown;
  QString detail;
  qint64 done = 0;   ///< Deploying: bytes sent or checked
  qint64 total = 0;  ///< Deploying: bytes in all (0 while a phase has no byte count)
  Connection connection = Connection::None;
  int reconnect_attempt = 0;  ///< Reconnecting: 1 for the first retry, 2 for the next, ...
  /// Ranks of a multi-rank run the target found gone while the run goes on (an SSH cluster
  /// node no longer runs that rank's engine process), in rank order, each "rank 1 on node-b";
  /// empty when none is, or the target cannot tell.
  QStringList lost_ranks{};
};

/// Where a run's files are (RunTarget::files()).
struct RunFiles {
  QString local_dir;   ///< <runs root>/<run id> on this machine: config.json, the events file and log (or their mirrors)
  QString events;      ///< the events file the store ingests (a local path: the file itself or its mirror)
  QString log;         ///< the engine's log here (the file or its mirror); "" when none yet
  QString host;        ///< where rank 0 trains: "" this machine, else the node's name ("gpu1"; Slurm: the cluster)
  QString remote_dir;  ///< the run folder on the node or shared filesystem ("" for this machine)
};

class RunTarget : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  ~RunTarget() override = default;

  /// The kind this target runs: "local", "ssh", "slurm" (RunPlacement::kind()).
  virtual QString kind() const = 0;
  /// Whether start() can take `p` (normally: p.kind() == kind()).
  virtual bool accepts(const RunPlacement& p) const { return p.kind() == kind(); }
  /// The "Train on" entries this target offers for `cluster` (nullopt: this machine), in the
  /// order they are listed; none for a cluster it does not run (the default).
  virtual QList<PlacementChoice> placements(const std::optional<td::remote::ClusterSpec>& cluster) const {
    (void)cluster;
    return {};
  }

  /// Switches stores: stops following the old store's runs (they keep going) and re-attaches
  /// the new store's. nullptr: follows nothing.
  virtual void setStoreClient(StoreClient* store) = 0;

  /// Starts a run of `config` (a config document the engine accepts, data.path a prepared
  /// dataset on this machine) in `experiment` at `placement`, named `name` ("" for none).
  /// Returns the new run id (td::new_run_id()) at once, or "" with *error set when it cannot
  /// start; nothing is stored then. A run that needs a deploy or a scheduler reports
  /// stateChanged() (Deploying, Queued) and runStarted() once the engine trains.
  virtual QString start(const RunPlacement& placement, const QString& experiment, const nlohmann::json& config,
                        const QString& name, QString* error) = 0;
  /// Asks the run's engine to stop gracefully (finish the step, checkpoint, run_end 'stopped'),
  /// and stops it hard after killTimeoutMs(). false with *error when this target does not
  /// follow the run.
  virtual bool stop(const QString& run_id, QString* error) = 0;
  /// Continues a stopped or failed run of this target from its newest checkpoint (engine
  /// --resume) where it ran. false with *error for a refusal known at once (running here); the
  /// store's checks (unknown run, completed, no checkpoint) report through error().
  virtual bool resume(const QString& run_id, QString* error) = 0;
  /// Follows every run of this target the store has as running that is not followed yet (after
  /// a restart of the app); those whose engine is gone are ended.
  virtual void reattach() = 0;
  /// Stops following every run without stopping it (the window closes; runs keep training).
  virtual void detachAll() = 0;
  /// Sends every followed run the graceful stop.
  virtual void stopAll() {
    for (const QString& id : activeRuns()) stop(id, nullptr);
  }
  /// Cancels what a followed run waits for — a deploy in progress (nothing is launched, then
  /// startFailed()) or a job the scheduler has not started — and nothing else; false when the
  /// run is in neither phase here (the default).
  virtual bool cancel(const QString& run_id) {
    (void)run_id;
    return false;
  }

  // ---- Checkpoints kept away from this machine (optional) ----------------------------------
  // A local run's checkpoints are files here (the Checkpoints tab reads them). A target whose
  // runs write them on a node lists and fetches them; the others keep these defaults.

  /// Whether this target's runs keep their checkpoints away from this machine and can be
  /// listed and fetched (false by default).
  virtual bool fetchesCheckpoints() const { return false; }
  /// Lists the complete checkpoints of `run_id` (any status) where it ran, on a worker:
  /// checkpointsListed() (oldest first), or error() (also the default: "not kept elsewhere").
  virtual void listCheckpoints(const QString& run_id);
  /// Copies checkpoint `name` ("step_00000030"; "" the newest) of `run_id` into
  /// `local_dir`/step_NNNNNNNN/ on a worker: checkpointProgress(), then checkpointFetched() or
  /// error(). false with *error for a refusal known at once (the default: not kept elsewhere).
  virtual bool fetchCheckpoint(const QString& run_id, const QString& local_dir, const QString& name, QString* error);
  /// Cancels a fetch in progress (what arrived stays for the next try).
  virtual void cancelFetch(const QString& run_id) { (void)run_id; }
  virtual bool isFetching(const QString& run_id) const {
    (void)run_id;
    return false;
  }
  virtual bool isListing(const QString& run_id) const {
    (void)run_id;
    return false;
  }

  /// Runs this target follows (or deploys, or has queued) now.
  virtual QStringList activeRuns() const = 0;
  virtual bool isActive(const QString& run_id) const { return activeRuns().contains(run_id); }
  /// The state of a followed run; Phase::Unknown for one not followed here.
  virtual RunTargetState state(const QString& run_id) const = 0;
  /// Where a followed run's files are; empty fields where unknown.
  virtual RunFiles files(const QString& run_id) const = 0;

  /// Milliseconds between a stop's graceful signal and the hard one (default 30 s).
  virtual void setKillTimeoutMs(int ms) { kill_timeout_ms_ = ms; }
  int killTimeoutMs() const { return kill_timeout_ms_; }

 signals:
  /// The engine trains and the store has the run (after a start or a resume).
  void runStarted(const QString& run_id);
  /// reattach() follows `run_id` again.
  void runAttached(const QString& run_id);
  /// Rows of the run were ingested; `last_step` is its last step in the store.
  void runIngested(const QString& run_id, qint64 last_step);
  /// New text of the run's engine log (rank 0's).
  void logAppended(const QString& run_id, const QString& text);
  /// The run has its end in the store: completed, stopped or failed.
  void runEnded(const QString& run_id, const QString& status);
  /// state(run_id) changed (queued reason, deploy progress, connection state ...).
  void stateChanged(const QString& run_id);
  /// A start or resume ended before the engine trained (deploy, submission or launch failed,
  /// or cancel()); nothing runs. `message` says why (error() also says it unless cancelled).
  void startFailed(const QString& run_id, const QString& message);
  /// listCheckpoints()'s answer: the run's complete checkpoints where it ran, oldest first.
  void checkpointsListed(const QString& run_id, const QList<td::gui::RemoteCheckpointEntry>& entries);
  /// fetchCheckpoint(): bytes done and in all.
  void checkpointProgress(const QString& run_id, qint64 done, qint64 total);
  /// fetchCheckpoint() is done: `local_path` is the checkpoint's folder here (…/step_NNNNNNNN).
  void checkpointFetched(const QString& run_id, const QString& local_path);
  void error(const QString& message);

 protected:
  /// `name` as the store keeps it (td::normalise_run_name: trimmed, at most 120 bytes, no
  /// control characters) in *normalised; false with *error ("The run name is refused: ...").
  static bool acceptRunName(const QString& name, QString* normalised, QString* error);
  /// The files of run folder `dir` here: local_dir, its events.jsonl, and its engine.log when it
  /// exists ("" otherwise); nothing for an empty `dir`. host and remote_dir stay empty.
  static RunFiles runFolderFiles(const QString& dir);

  int kill_timeout_ms_ = 30000;
};

}  // namespace td::gui

Q_DECLARE_METATYPE(td::gui::RemoteCheckpointEntry)
