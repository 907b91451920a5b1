// RunTargets: every run target of the app in one place (run_target.h), itself a RunTarget that
// routes: start() goes to the target that accepts the placement, stop(), state() and files()
// to the target that follows the run, resume() to the target the run ran on (asked of the
// store: Store::run_target). Every target's signals come out of it, so a window wires one
// object whatever the number of targets.
//
// Threading rule: a GUI-thread QObject; calls return at once (resume's store question runs on
// the StoreClient's thread).
#pragma once

#include <QPointer>
#include <QVector>

#include "gui/runs/run_target.h"

namespace td::gui {

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
  QStringList activeRuns() const override;
  bool isActive(const QString& run_id) const override { return owner(run_id) != nullptr; }
  RunTargetState state(const QString& run_id) const override;
  RunFiles files(const QString& run_id) const override;
  /// Sets the kill timeout of every target.
  void setKillTimeoutMs(int ms) override;

 private:
  QVector<RunTarget*> targets_;
  QPointer<StoreClient> store_;
};

}  // namespace td::gui
