// RunTargets: every run target of the app in one place (run_target.h), itself a RunTarget that
// routes: start() goes to the target that accepts the placement, stop(), cancel(), state() and
// files() to the target that follows the run, resume() and the checkpoint calls to the target
// the run ran on (the one following it, else asked of the store: Store::run_target);
// placements() lists every target's "Train on" entries. Every target's signals come out of it,
// so a window wires one object whatever the number of targets. make_targets() is the one place
// the app's targets are registered.
//
// Threading rule: a GUI-thread QObject; calls return at once (resume's store question runs on
// the StoreClient's thread).
#pragma once

#include <QPointer>
#include <QVector>

#include <functional>

#include "gui/runs/remote_run_job.h"
#include "gui/runs/run_target.h"

namespace td::gui {

class RunTargets;

/// The app's run targets, in "Train on" order: this machine (RunController), SSH nodes and
/// clusters (RemoteRunController), Slurm clusters (SlurmTarget); with no store yet
/// (setStoreClient() attaches them). `connect` opens sessions to nodes and login nodes (on
/// worker threads). The one registration point: a new target is added here.
RunTargets* make_targets(const RemoteConnector& connect, QObject* parent);

class RunTargets : public RunTarget {
  Q_OBJECT
 public:
  explicit RunTargets(QObject* parent = nullptr);
  ~RunTargets() override;

  /// Adds `target` (its parent becomes this object) and forwards its signals. One target per
  /// kind(): a second one of a kind replaces nothing and is refused (false).
  bool add(RunTarget* target);
  /// The target of `kind` ("local", "ssh", "slurm"), or nullptr.
  RunTarget* target(const QString& kind) const;
  /// The target that follows `run_id` now, or nullptr.
  RunTarget* owner(const QString& run_id) const;
  QList<RunTarget*> targets() const;

  QString kind() const override { return QStringLiteral("all"); }
  bool accepts(const RunPlacement& p) const override;
  /// Every target's entries for `cluster`, in registration order.
  QList<PlacementChoice> placements(const std::optional<td::remote::ClusterSpec>& cluster) const override;
  /// The whole "Train on" list: this machine's entries, then each cluster's, in `clusters`' order.
  QList<PlacementChoice> placements(const QList<td::remote::ClusterSpec>& clusters) const;
  void setStoreClient(StoreClient* store) override;
  /// Errors: as the accepting target's start(), or "nothing can run <kind>" when none accepts.
  QString start(const RunPlacement& placement, const QString& experiment, const nlohmann::json& config,
                const QString& name, QString* error) override;
  bool stop(const QString& run_id, QString* error) override;
  /// A run followed here is refused at once ("still running"); otherwise the store says which
  /// target it ran on (Store::run_target) and that target resumes it; an unknown run or a
  /// target not registered report through error().
  bool resume(const QString& run_id, QString* error) override;
  void reattach() override;
  void detachAll() override;
  void stopAll() override;
  bool cancel(const QString& run_id) override;
  /// Whether any target fetches checkpoints (target(kind)->fetchesCheckpoints() says it of one).
  bool fetchesCheckpoints() const override;
  void listCheckpoints(const QString& run_id) override;
  /// The following target's answer; for a run followed nowhere, true at once (unless a fetch
  /// of it goes on) and the store says whose run it is: its target's refusals through error().
  bool fetchCheckpoint(const QString& run_id, const QString& local_dir, const QString& name, QString* error) override;
  void cancelFetch(const QString& run_id) override;
  bool isFetching(const QString& run_id) const override;
  bool isListing(const QString& run_id) const override;
  QStringList activeRuns() const override;
  bool isActive(const QString& run_id) const override { return owner(run_id) != nullptr; }
  RunTargetState state(const QString& run_id) const override;
  RunFiles files(const QString& run_id) const override;
  /// Sets the kill timeout of every target.
  void setKillTimeoutMs(int ms) override;

 private:
  // fn(the target that follows run_id, else the one the store says it ran on); a store error
  // or an unknown kind through error(), prefixed by what.arg(run_id).
  void withTargetOf(const QString& run_id, const QString& what, std::function<void(RunTarget*)> fn);

  QVector<RunTarget*> targets_;
  QPointer<StoreClient> store_;
};

}  // namespace td::gui
