// RemoteTargetBase: what the run targets reached over SSH share — the "ssh" target
// (RemoteRunController: one node, or every node of an SSH cluster) and the "slurm" target
// (SlurmTarget: a cluster's login node) — so that each of them keeps only what differs: how a
// run is placed, deployed, launched and followed.
//
// Shared here: the store and connector, the table of followed runs (each a RemoteTask with a
// RemoteRunControl, its state, host and run folder), start's common checks, stop (graceful,
// then hard after killTimeoutMs(); during a deploy it cancels the deploy), cancel, resume's and
// reattach's store questions and refusals, detachAll, and checkpoint listing and fetching from
// the run folder where the run trained (over SSH to the node the store recorded: the node
// itself, or a Slurm cluster's login node, which sees the shared filesystem).
//
// A run of such a target lives locally in <runs root>/<run id>/ (gui/core/paths.h): config.json,
// events.jsonl (the mirror the store ingests) and engine.log (the mirror of rank 0's log).
//
// Threading rule: a GUI-thread object; every call returns at once. Network work runs on
// RemoteTasks (gui/runs/remote_task.h), store work on the StoreClient's thread; the GUI thread
// never waits on a task for longer than RemoteTask::kJoinWaitMs.
#pragma once

#include <QPointer>
#include <QString>
#include <QStringList>

#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "gui/runs/remote_run_job.h"
#include "gui/runs/remote_task.h"
#include "gui/runs/run_target.h"

namespace td::store {
struct RemoteRun;
struct RunInfo;
}  // namespace td::store

namespace td::gui {

class StoreClient;

class RemoteTargetBase : public RunTarget {
  Q_OBJECT
 public:
  /// `connect` opens an authenticated Session to a node (td::Error when it cannot); it is called
  /// on worker threads, possibly several at once. Derived constructors call setStoreClient().
  RemoteTargetBase(RemoteConnector connect, QObject* parent);
  ~RemoteTargetBase() override;

  /// Detaches from the old store's runs (they keep training) and re-attaches the new store's.
  void setStoreClient(StoreClient* store) override;
  /// Replaces the connector (used by tasks started from now on).
  void setConnector(RemoteConnector connect) { connect_ = std::move(connect); }
  /// Milliseconds between two polls of a followed run's files.
  void setPollIntervalMs(int ms) { poll_ms_ = ms; }
  /// Folder of the cached engine bundles; default <runs root>/.cache/engine-bundle.
  void setBundleCacheDir(const QString& dir) { bundle_cache_ = dir; }
  QString bundleCacheDir() const;
  /// <runs root>/<run_id>: the run's local folder (mirrors, config.json); "" without a store.
  QString runDir(const QString& run_id) const;

  QStringList activeRuns() const override;
  bool isActive(const QString& run_id) const override { return runs_.count(run_id) > 0; }
  RunTargetState state(const QString& run_id) const override;
  /// runDir()'s mirrors; host and remote_dir while the run is followed here.
  RunFiles files(const QString& run_id) const override;
  /// The graceful stop (then the hard one after killTimeoutMs()); during a deploy it also
  /// cancels the deploy. false with *error when the run is not followed here.
  bool stop(const QString& run_id, QString* error) override;
  /// Deploying: the deploy stops at its next file (startFailed() then); Queued: stop().
  bool cancel(const QString& run_id) override;
  /// Refused at once when followed here (still running) or no store or connector; then the
  /// store's checks through error(): unknown run, a run of another target, running, completed,
  /// no engine binary. A run that passes goes to resumeStored().
  bool resume(const QString& run_id, QString* error) override;
  /// Follows every run of this kind the store has as running (Store::active_remote_runs(kind()))
  /// that is not followed yet, through attachStored(); runAttached() for each.
  void reattach() override;
  /// Stops following every run without stopping it and cancels listings and fetches.
  void detachAll() override;

  bool fetchesCheckpoints() const override { return true; }
  /// One SSH command to the stored node; a call while a listing of that run goes on is merged
  /// into it. error() for a run that did not run on a node, an unreachable node or a listing
  /// it refuses (a hostile node's names).
  void listCheckpoints(const QString& run_id) override;
  /// false with *error when no store or connector is set, `name` is not step_ + 8 digits, or a
  /// fetch of that run is going on; "no checkpoint" and "no such checkpoint on the node"
  /// (naming those that are) report through error().
  bool fetchCheckpoint(const QString& run_id, const QString& local_dir, const QString& name, QString* error) override;
  void cancelFetch(const QString& run_id) override;
  bool isFetching(const QString& run_id) const override { return fetches_.count(run_id) > 0; }
  bool isListing(const QString& run_id) const override { return listings_.count(run_id) > 0; }

 protected:
  /// One followed run (deploying, queued, running or stopping).
  struct Run {
    std::shared_ptr<RemoteRunControl> control;
    std::unique_ptr<RemoteTask> task;
    quint64 serial = 0;     ///< reports of an earlier task of the same run id are dropped
    RunTargetState state;   ///< what state() answers
    QString host;           ///< files().host: the node(s) or the cluster
    QString remote_dir;     ///< the run folder there, once known
    QString name;           ///< start(): set on the run's row once it exists (nameRun())
    bool started = false;   ///< runStarted() was sent
    QStringList jobs;       ///< a scheduler's job ids, oldest first
  };

  /// A store is open and a connector set; else false with *error saying which is missing.
  bool canReachNodes(QString* error) const;
  /// What every start checks first: a store and a connector, the run name (its normalised form
  /// in *run_name), the dataset (RunController::datasetProblem) and the engine binary. The
  /// engine's path, or "" with *error.
  QString startChecks(const nlohmann::json& config, const QString& name, QString* run_name, QString* error) const;
  /// A new entry for `run_id` in phase `phase` with a fresh control and serial (its task is
  /// the caller's to set).
  Run& addRun(const QString& run_id, RunTargetState::Phase phase, const QString& detail = {});
  /// The run a report of task `serial` is about, or nullptr when that task is no longer current.
  Run* current(const QString& run_id, quint64 serial);
  /// Sets the name chosen at start on the run's row (once: the row exists now).
  void nameRun(const QString& run_id, Run& run);
  /// The run ended here (its task's body is returning).
  void finish(const QString& run_id) { runs_.erase(run_id); }

  /// resume(): launch a resume of the stopped or failed run `info` from its stored row.
  virtual void resumeStored(const td::store::RunInfo& info, const td::store::RemoteRun& row, const QString& engine) = 0;
  /// reattach(): follow the running `row` again; `local_dir` is where its events were ingested
  /// from ("" when unknown). false with *error when the row is unreadable.
  virtual bool attachStored(const td::store::RemoteRun& row, const QString& experiment, const QString& local_dir,
                            QString* error) = 0;

  QPointer<StoreClient> store_;
  RemoteConnector connect_;
  int poll_ms_ = 1000;
  QString bundle_cache_;
  std::map<QString, Run> runs_;
  quint64 serial_ = 0;
  quint64 generation_ = 0;  // bumped by detachAll: store answers for older generations are dropped

 private:
  using NodeTaskBody = std::function<void(RemoteTask::Shared&, const td::remote::NodeSpec&, const std::string& run_dir)>;
  // Looks up `run_id`'s stored node and run folder, then runs body on a RemoteTask kept in
  // tasks[run_id] (the caller put a placeholder there; the body's report erases it).
  void startNodeTask(const QString& run_id, std::map<QString, std::unique_ptr<RemoteTask>>& tasks, NodeTaskBody body);

  std::map<QString, std::unique_ptr<RemoteTask>> fetches_;
  std::map<QString, std::unique_ptr<RemoteTask>> listings_;
};

}  // namespace td::gui
