// RemoteRunController: starts, follows, stops, resumes and re-attaches training runs on SSH
// nodes, and downloads their checkpoints: the remote counterpart of RunController.
//
// Threading rule: a GUI-thread object; every call returns at once. Each run has a RemoteTask
// (gui/runs/remote_task.h): a thread of its own that builds the engine bundle (once per engine
// build, cached under the runs root), deploys bundle, dataset and config to the node
// (remote/deploy.h; one deploy at a time per node work directory, a second one waits with the
// phase "waiting for another deploy to <node>"), launches the engine detached there, records the run in the store
// (Store::note_launch with the node's name as host, Store::note_remote_run with the node's JSON
// — never a secret — its run folder and pid) and then follows it with td::remote::RemoteFollower
// every ~0.5 s with a td::store::Store connection of its own. A checkpoint download is a task of
// its own. Sessions come from the connector, called on those threads (it may wait for the GUI
// thread to ask for a password or accept a host key: the GUI thread never waits on a task for
// longer than RemoteTask::kJoinWaitMs, when a task is dropped).
//
// A remote run lives locally in <runs root>/<run id>/ (gui/core/paths.h): config.json (what it
// was started with, data.path local), events.jsonl (the mirror of the node's file, which the
// store ingests) and engine.log (the mirror of the node's log). On the node it lives in
// <work_dir>/runs/<run id>/ (remote/deploy.h). The engine runs in its own session there, so
// closing the app (detachAll) leaves it training; reattach() finds it again through the store.
#pragma once

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

#include <functional>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "gui/runs/remote_run_job.h"
#include "gui/runs/remote_task.h"
#include "gui/runs/run_target.h"
#include "remote/cluster.h"
#include "remote/session.h"

namespace td::store {
struct RemoteRun;
}

namespace td::gui {

class StoreClient;
class RemoteTask;  // gui/runs/remote_task.h

/// One complete checkpoint of a remote run, as its node lists it (td::remote::list_checkpoints).
struct RemoteCheckpointEntry {
  QString name;      ///< "step_00000030"
  int step = 0;      ///< optimizer steps done
  qint64 bytes = 0;  ///< its files' sizes, summed
};

class RemoteRunController : public RunTarget {
  Q_OBJECT
 public:
  /// Opens an authenticated Session to a node (td::Error when it cannot); called on worker
  /// threads, possibly several at once for different runs. The lead wires NodeAccess::connector().
  using Connector = RemoteConnector;

  /// `store` must outlive the controller or be replaced with setStoreClient() first. Calls
  /// reattach() (for a non-null store and connector).
  RemoteRunController(StoreClient* store, Connector connector, QObject* parent = nullptr);
  ~RemoteRunController() override;  // detachAll(): runs keep training on their nodes

  /// Switches stores: detaches from the old store's runs (they keep training) and re-attaches
  /// the new store's.
  void setStoreClient(StoreClient* store) override;
  /// Replaces the connector (used by tasks started from now on).
  void setConnector(Connector connector);
  // killTimeoutMs() (RunTarget): between a stop's SIGTERM and the SIGKILL; default 30000 ms.
  /// Follow poll interval in ms (default 500).
  void setPollIntervalMs(int ms) { poll_ms_ = ms; }
  /// Folder of the cached engine bundles; default <runs root>/.cache/engine-bundle.
  void setBundleCacheDir(const QString& dir) { bundle_cache_ = dir; }
  QString bundleCacheDir() const;

  /// Starts a run of `config` (an engine config whose data.path is a prepared dataset on this
  /// machine) in `experiment` on `node` of cluster `cluster`. Returns the new run id at once, or
  /// "" with *error set when it cannot start (no store, no connector, RunController::
  /// datasetProblem(), no engine binary); nothing is stored then. The deploy goes on on a worker:
  /// deployProgress() reports it, runStarted() comes once the engine runs on the node and the
  /// store has the run, startFailed() (and error() unless cancelled) when deploy or launch fail.
  /// A node with several GPUs starts one rank per GPU there (startClusterRun with that node).
  QString startRun(const QString& cluster, const td::remote::NodeSpec& node, const QString& experiment,
                   const nlohmann::json& config, QString* error = nullptr);
  /// Starts a run across every node of `cluster` (remote/multinode.h): one rank per GPU, one per
  /// CPU node; deploy to each node, rendezvous on the first node (its address as the others
  /// reach it, or its NodeSpec::address), ranks started detached, rank 0 (first node) followed
  /// like a single-node run; a stop signals every rank; the layout (every node, run folder and
  /// pid) goes into the store for reattach and resume. A cluster with one rank in all is a
  /// plain startRun() on its node. Returns the run id or "" with *error as startRun() (also for
  /// a cluster that mixes GPU and CPU nodes).
  QString startClusterRun(const td::remote::ClusterSpec& cluster, const QString& experiment,
                          const nlohmann::json& config, QString* error = nullptr);
  /// Stops run `run_id` (followed here): the engine's graceful stop (SIGTERM: finish the step,
  /// checkpoint, run_end 'stopped'), then SIGKILL after killTimeoutMs(); during the deploy it
  /// cancels the deploy. Returns false with *error when the run is not followed here.
  bool stopRun(const QString& run_id, QString* error = nullptr);
  /// Cancels a deploy in progress (nothing is launched); false when `run_id` is not deploying.
  bool cancelDeploy(const QString& run_id);
  /// Continues a stopped or failed remote run on the same node from its newest checkpoint
  /// (engine --resume), with <runs root>/<run id>/config.json; the deploy skips what is already
  /// on the node. Returns false with *error when the run is followed here already; the store
  /// checks (unknown run, not remote, still running) report through error().
  bool resumeRun(const QString& run_id, QString* error = nullptr);

  /// Follows every remote run the store has as running (Store::active_remote_runs) that is not
  /// followed yet; the node comes from the stored node JSON. A node that cannot be reached is
  /// retried with backoff (connectionState "reconnecting (attempt n): ..."); a run whose engine
  /// is gone is marked failed with its log tail. Called by the constructor and setStoreClient().
  void reattach() override;
  /// Stops following every run without stopping them (they keep training on their nodes) and
  /// cancels deploys and downloads in progress. Never waits on the network for long (see
  /// RemoteTask).
  void detachAll() override;

  /// True while `run_id` is being deployed (before runStarted()).
  bool isDeploying(const QString& run_id) const;
  /// The last connectionState() text of a followed run ("" when none).
  QString connectionStateOf(const QString& run_id) const { return states_.value(run_id); }
  /// The node's display name of a followed run ("" when not followed here).
  QString nodeOf(const QString& run_id) const { return nodes_.value(run_id); }
  /// <runs root>/<run_id>: the local folder of a remote run (mirrors, config.json).
  QString runDir(const QString& run_id) const;

  /// Downloads checkpoint `name` ("step_00000030"; empty: the newest) of remote run `run_id`
  /// (any status) from its node into `local_dir`/step_NNNNNNNN/ on a worker:
  /// checkpointProgress(), then checkpointDownloaded() or error(). Returns false with *error
  /// when no store is open, `name` is not step_ + 8 digits, or a download of that run is going
  /// on; "the run is not remote", "no checkpoint" and "no such checkpoint on the node" (naming
  /// those that are) report through error().
  bool downloadCheckpoint(const QString& run_id, const QString& local_dir, QString* error = nullptr,
                          const QString& name = {});
  /// Lists the complete checkpoints of remote run `run_id` on its node (one SSH command, on a
  /// worker): checkpointsListed() (oldest first; empty when none yet), or error() for a run
  /// that is not remote, a node that cannot be reached or a listing it refuses (a hostile
  /// node's names). A call while a listing of that run is going on is merged into it.
  void listCheckpoints(const QString& run_id);
  bool isListing(const QString& run_id) const { return listings_.count(run_id) > 0; }
  /// Cancels a download in progress (the .part files stay for the next try).
  void cancelDownload(const QString& run_id);
  bool isDownloading(const QString& run_id) const { return downloads_.count(run_id) > 0; }

  // ---- RunTarget: the "ssh" target (a node, or every node of an SSH cluster) ----------------
  QString kind() const override { return QStringLiteral("ssh"); }
  /// placement.node >= 0: startRun() on that node; -1: startClusterRun() (a cluster of one
  /// node: startRun() on it). A non-empty `name` is set on the run once its row exists
  /// (Store::set_run_name). Errors: as those, or a node index out of range.
  QString start(const RunPlacement& placement, const QString& experiment, const nlohmann::json& config,
                const QString& name, QString* error) override;
  bool stop(const QString& run_id, QString* error) override { return stopRun(run_id, error); }
  bool resume(const QString& run_id, QString* error) override { return resumeRun(run_id, error); }
  /// Runs followed (or being deployed) here, by id.
  QStringList activeRuns() const override { return runs_keys(); }
  bool isActive(const QString& run_id) const override { return runs_.count(run_id) > 0; }
  /// Deploying (deployProgress's phase and bytes), Stopping, Running (connectionState's text).
  RunTargetState state(const QString& run_id) const override;
  /// The local mirrors under runDir(); host: the node(s); remote_dir: the run folder on the
  /// node once launched.
  RunFiles files(const QString& run_id) const override;

 signals:
  // runStarted, runAttached, runIngested, logAppended (the node's engine.log, also appended to
  // the local mirror), runEnded, stateChanged and error: RunTarget's.
  /// Deploy of a start or resume: bytes done and total (0/0 while a phase has no byte count)
  /// and the phase ("preparing the engine bundle", "connecting to gpu1", "uploading ...",
  /// "starting the engine on the node").
  void deployProgress(const QString& run_id, qint64 done, qint64 total, const QString& phase);
  /// Deploy or launch failed or was cancelled; nothing runs and nothing was stored.
  void startFailed(const QString& run_id, const QString& message);
  /// "connecting", "connected", "reconnecting (attempt n): <why>", "stopping", "ended".
  void connectionState(const QString& run_id, const QString& state);
  void checkpointProgress(const QString& run_id, qint64 done, qint64 total);
  /// `local_path` is the downloaded checkpoint folder (…/step_NNNNNNNN).
  void checkpointDownloaded(const QString& run_id, const QString& local_path);
  /// listCheckpoints()'s answer: the node's complete checkpoints of the run, oldest first.
  void checkpointsListed(const QString& run_id, const QList<td::gui::RemoteCheckpointEntry>& entries);

 private:
  struct Run {
    std::shared_ptr<RemoteRunControl> control;
    std::unique_ptr<RemoteTask> task;
    bool deploying = false;
    quint64 serial = 0;  // events of an earlier task of the same run id are dropped
    RunTargetState state;  // what state() answers
    QString name;          // start(): set on the run's row once it exists
  };
  QStringList runs_keys() const;
  // A store is open and a connector set; else false with *error saying which is missing.
  bool canReachNodes(QString* error) const;
  // The checks every start makes (store, connector, the nodes' problems, dataset, engine); the
  // engine binary's path, or "" with *error set.
  QString startProblem(const td::remote::ClusterSpec& nodes, const nlohmann::json& config, QString* error) const;
  // Fills spec's node/nodes (and layout) from a stored remote_runs row; false with *error.
  static bool placeFromStore(const td::store::RemoteRun& row, RemoteRunSpec& spec, QString* error);
  void launchTask(RemoteRunSpec spec);
  void onEvent(const QString& run_id, quint64 serial, const RemoteRunEvent& e);
  void finish(const QString& run_id);
  // Looks up remote run `run_id`'s node and run folder in the store, then runs body on a
  // RemoteTask kept in tasks[run_id] (the caller has put a placeholder there; the body's report
  // erases it). A run that is not remote, an unreadable stored node or a store error: error()
  // prefixed by `what`, and tasks[run_id] erased.
  using NodeTaskBody = std::function<void(RemoteTask::Shared&, const td::remote::NodeSpec&, const std::string& run_dir)>;
  void startNodeTask(const QString& run_id, std::map<QString, std::unique_ptr<RemoteTask>>& tasks, NodeTaskBody body);

  QPointer<StoreClient> store_;
  Connector connector_;
  int poll_ms_ = 500;
  QString bundle_cache_;
  std::map<QString, Run> runs_;
  std::map<QString, std::unique_ptr<RemoteTask>> downloads_;
  std::map<QString, std::unique_ptr<RemoteTask>> listings_;
  QHash<QString, QString> states_;
  QHash<QString, QString> nodes_;
  QHash<QString, QString> remote_dirs_;  // run folder on the node, once launched or attached
  quint64 generation_ = 0;
  quint64 serial_ = 0;  // bumped by detachAll: store answers for older generations are dropped
};

}  // namespace td::gui

Q_DECLARE_METATYPE(td::gui::RemoteCheckpointEntry)
