// RemoteRunController: the "ssh" run target (gui/runs/run_target.h): runs on one SSH node, or
// across every node of an SSH cluster, started, followed, stopped, resumed and re-attached there;
// what it shares with the Slurm target (stop, cancel, resume's and reattach's store questions,
// checkpoint listing and fetching) is RemoteTargetBase's.
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

#include <QString>
#include <QStringList>

#include <nlohmann/json.hpp>

#include "gui/runs/remote_target_base.h"
#include "remote/cluster.h"

namespace td::gui {

class RemoteRunController : public RemoteTargetBase {
  Q_OBJECT
 public:
  /// Opens an authenticated Session to a node (td::Error when it cannot); called on worker
  /// threads, possibly several at once for different runs. The lead wires NodeAccess::connector().
  using Connector = RemoteConnector;

  /// `store` must outlive the controller or be replaced with setStoreClient() first. Calls
  /// reattach() (for a non-null store and connector). Polls every 500 ms.
  RemoteRunController(StoreClient* store, Connector connector, QObject* parent = nullptr);
  ~RemoteRunController() override;  // detachAll(): runs keep training on their nodes

  QString kind() const override { return QStringLiteral("ssh"); }
  /// Every node of an SSH cluster (one run across them: one rank per GPU, one per CPU node;
  /// none for a cluster mixing GPU and CPU nodes, which remote/multinode.h refuses), then each
  /// node. Nothing for this machine or a cluster of another kind.
  QList<PlacementChoice> placements(const std::optional<td::remote::ClusterSpec>& cluster) const override;
  /// Starts a run of `config` (data.path a prepared dataset on this machine) in `experiment` at
  /// `placement`: node >= 0 (or a cluster of one node) on that node, one rank per GPU there;
  /// node -1 across every node of the cluster (remote/multinode.h: deploy to each, rendezvous
  /// on the first node, rank 0 followed like a single-node run, a stop signals every rank, the
  /// layout stored for reattach and resume). Returns the run id at once, or "" with *error
  /// (RemoteTargetBase::startChecks(), a cluster without nodes, a node out of range, the
  /// nodes' own problems, a cluster mixing GPU and CPU nodes); nothing is stored then. The
  /// deploy goes on on a worker: stateChanged() (Deploying: phase and bytes), runStarted() once
  /// the engine runs and the store has the run, startFailed() (and error() unless cancelled)
  /// when deploy or launch fail. A non-empty `name` is set on the run's row once it exists.
  QString start(const RunPlacement& placement, const QString& experiment, const nlohmann::json& config,
                const QString& name, QString* error) override;

 protected:
  /// The same node(s) from the run's newest checkpoint (engine --resume), with
  /// <local dir>/config.json; the deploy skips what is already on the node.
  void resumeStored(const td::store::RunInfo& info, const td::store::RemoteRun& row, const QString& engine) override;
  /// A node that cannot be reached is retried with backoff (state(): Reconnecting); a run whose
  /// engine is gone is marked failed with its log tail.
  bool attachStored(const td::store::RemoteRun& row, const QString& experiment, const QString& local_dir,
                    QString* error) override;

 private:
  // The nodes' own checks (hosts, validate(), one device kind); false with *error.
  bool nodesProblem(const td::remote::ClusterSpec& nodes, QString* error) const;
  // Fills spec's node/nodes (and layout) from a stored remote_runs row; false with *error.
  static bool placeFromStore(const td::store::RemoteRun& row, RemoteRunSpec& spec, QString* error);
  void launchTask(RemoteRunSpec spec);
  void onEvent(const QString& run_id, quint64 serial, const RemoteRunEvent& e);
};

}  // namespace td::gui
