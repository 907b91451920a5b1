// RunController: starts, stops, resumes and re-attaches local training runs: the "local" run
// target (gui/runs/run_target.h).
//
// Threading rule: a GUI-thread object. Its calls return at once: starting a run writes a small
// config file and forks the engine detached (gui/runs/launcher.h); everything that touches the
// store or reads the run's files happens on the RunFollower's thread, and on the StoreClient's.
//
// A local run lives in <runs root>/<run id>/ (gui/core/paths.h): config.json (what the GUI
// started it with), engine.log (the engine's stderr), events.jsonl and checkpoints/ (written by
// the engine). The engine runs in its own session, so it outlives the window; at the next start
// reattach() finds the runs the store still has as 'running', follows those whose process is
// alive (backfilling every event written meanwhile) and ends the others.
#pragma once

#include <QObject>
#include <QPointer>
#include <QSet>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "gui/runs/run_target.h"

namespace td::gui {

class StoreClient;
class RunFollower;

class RunController : public RunTarget {
  Q_OBJECT
 public:
  /// `store` must outlive the controller or be replaced with setStoreClient() first.
  explicit RunController(StoreClient* store, QObject* parent = nullptr);
  ~RunController() override;  // runs keep going; following stops

  /// Switches stores: stops following the old store's runs (they keep going) and re-attaches
  /// the new store's live runs.
  void setStoreClient(StoreClient* store) override;

  /// Why `config`'s dataset cannot be trained on, checked before anything is launched or
  /// stored: no data.path, no manifest.json there (not prepared), or a model.vocab_size that
  /// differs from the dataset tokenizer's (the engine's own rule, engine/train/training_run.cpp).
  /// "" when it can. Reads the manifest (a small JSON file).
  static QString datasetProblem(const nlohmann::json& config);

  /// Finds runs the store has as 'running' and follows the live ones; the dead ones are ended.
  /// Called by setStoreClient(); call again to rescan.
  void reattach() override;
  /// Stops following every run; the engines keep training (the window closes, runs stay).
  void detachAll() override;
  /// Sends every followed run the stop request.
  void stopAll() override;

  /// Runs followed now (launched here or re-attached), by id.
  QStringList activeRuns() const override { return active_.values(); }
  bool isActive(const QString& run_id) const override { return active_.contains(run_id); }
  /// <runs root>/<run_id> for runs started here.
  QString runDir(const QString& run_id) const;
  RunFollower* follower() const { return follower_.get(); }

  // ---- RunTarget: the "local" target ------------------------------------------------------
  QString kind() const override { return QStringLiteral("local"); }
  /// One entry, "This machine", for the placement without a cluster.
  QList<PlacementChoice> placements(const std::optional<td::remote::ClusterSpec>& cluster) const override;
  /// Starts a run of `config` (a config document the engine accepts) in `experiment` on this
  /// machine: the run folder, its config.json, the engine launched detached and followed;
  /// runStarted() before it returns. Returns the new run id, or "" with *error set (a
  /// placement with a cluster, datasetProblem(), no engine binary, folder not writable, fork
  /// failed); nothing is stored or written then. `name`: the run's name for people (train
  /// --run-name; td::normalise_run_name, refused with *error when over 120 bytes or holding
  /// control characters); "" for none.
  QString start(const RunPlacement& placement, const QString& experiment, const nlohmann::json& config,
                const QString& name, QString* error) override;
  /// Asks the run's engine to stop gracefully (SIGTERM: finish the step, checkpoint, run_end
  /// 'stopped'), and kills it (SIGKILL) when it still runs killTimeoutMs() later (the follower
  /// then marks it failed). Returns false with *error when the run is not running here.
  bool stop(const QString& run_id, QString* error) override;
  /// Continues a stopped or failed run from its newest valid checkpoint (engine --resume), with
  /// its run directory's config.json (written from the stored config when missing). The engine
  /// itself refuses when there is no checkpoint; its message ends up in the run's log and the
  /// run is marked failed again. Returns false with *error when the run is unknown, running or
  /// has no run directory here.
  bool resume(const QString& run_id, QString* error) override;
  /// Running (or Stopping after stop()) while followed; Unknown otherwise.
  RunTargetState state(const QString& run_id) const override;
  /// runDir(): config.json, events.jsonl, engine.log; host "" (this machine).
  RunFiles files(const QString& run_id) const override;

  // Signals: RunTarget's (runStarted, runAttached, runIngested, logAppended, runEnded,
  // stateChanged, error).

 private:
  bool launch(const QString& run_id, const QString& experiment, const QString& dir, bool resume, QString* error,
              const QString& name = QString());
  void follow(const QString& run_id, const QString& experiment, const QString& events, qint64 pid,
              bool note_launch, qint64 log_offset);

  QPointer<StoreClient> store_;
  std::unique_ptr<RunFollower> follower_;
  QSet<QString> active_;
  QHash<QString, qint64> pids_;
  QSet<QString> stopping_;
};

}  // namespace td::gui
