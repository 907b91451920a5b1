// SlurmTarget: the "slurm" run target (gui/runs/run_target.h): a run submitted to a Slurm
// cluster through its login node (remote/slurm.h), followed there, stopped with scancel.
//
// Start: on a worker (a RemoteTask), the engine bundle (cached per engine build), the dataset
// and the config go to the cluster's shared work directory over SFTP (what is there is
// skipped), the batch script is written to <run dir>/traindeck.sbatch there and kept in the
// local run folder, `sbatch --parsable` submits it and the store records the run (note_launch
// with the cluster's name as host, remote_runs with target "slurm": the login node, the run
// folder and the Slurm settings at submission; run_jobs: the job). State: Queued with the
// pending reason as people read it ("waiting for resources") while the job waits, Running
// ("job 42 on tdn[1-2]") once it runs (runStarted() then), Stopping, and at the end the run's
// status; a run continued in a new job after its time limit (requeue) is followed into it, and
// every job it took goes into run_jobs.
//
// Follow: every poll the events file on the shared filesystem is mirrored into
// <runs root>/<run id>/events.jsonl and ingested (td::remote::RemoteFollower without a process
// check: the engine runs on compute nodes, the job's state says whether it lives), rank 0's
// engine.log mirrored beside it; the job's state is asked every few polls (sacct, else scontrol,
// squeue). When the run's newest job has ended and no later job is listed in slurm-jobs, a run
// without run_end is marked failed with what Slurm said ("a node failed (NODE_FAIL)", "failed
// (exit code 1)", "cancelled").
//
// Stop: a pending job is cancelled at once; a running one gets the engine's graceful stop
// (`scancel --signal=TERM`: finish the step, checkpoint, run_end "stopped"), then `scancel`
// after killTimeoutMs(). Resume: a new job with --resume in the same run folder.
//
// Threading rule: a GUI-thread object; every call returns at once; the network work runs on a
// RemoteTask per run, with a Store connection of its own.
#pragma once

#include "gui/runs/remote_target_base.h"

namespace td::gui {

struct SlurmRunSpec;  // slurm_target.cpp: what one run's task does and where

class SlurmTarget : public RemoteTargetBase {
  Q_OBJECT
 public:
  /// `connect` opens an authenticated Session to the login node (on worker threads). Polls the
  /// events file every 1000 ms (setPollIntervalMs()); the job's state every third poll.
  SlurmTarget(StoreClient* store, RemoteConnector connect, QObject* parent = nullptr);
  ~SlurmTarget() override;  // detachAll(): jobs keep running on the cluster

  QString kind() const override { return QStringLiteral("slurm"); }
  /// One entry for a Slurm cluster (Slurm places the ranks): "hpc (Slurm, 2 nodes × 4 GPUs)".
  QList<PlacementChoice> placements(const std::optional<td::remote::ClusterSpec>& cluster) const override;
  /// Submits a run of `config` on the Slurm cluster `placement.cluster` (kind "slurm": its
  /// login node and remote/slurm.h settings). Returns the run id at once, or "" with *error for
  /// RemoteTargetBase::startChecks(), a cluster that is not a valid Slurm cluster (validate()'s
  /// first problem) or a refused name.
  QString start(const RunPlacement& placement, const QString& experiment, const nlohmann::json& config,
                const QString& name, QString* error) override;

  /// The job ids the run took so far, oldest first, as this target saw them (the store's
  /// run_jobs has them for every run).
  QStringList jobsOf(const QString& run_id) const;

  /// The batch script `cluster` (kind "slurm") would submit for a run `run_id`, with the paths
  /// it would have on the cluster (the bundle folder named "<bundle>"): what Start shows before
  /// it submits. "" with *error for an invalid cluster.
  static QString previewScript(const td::remote::ClusterSpec& cluster, const QString& run_id, QString* error);

 protected:
  /// A new job with --resume in the same run folder, with the stored login node and settings.
  void resumeStored(const td::store::RunInfo& info, const td::store::RemoteRun& row, const QString& engine) override;
  bool attachStored(const td::store::RemoteRun& row, const QString& experiment, const QString& local_dir,
                    QString* error) override;

 private:
  void launch(SlurmRunSpec spec);
};

}  // namespace td::gui
