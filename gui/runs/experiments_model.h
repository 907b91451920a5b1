// ExperimentsModel: the sidebar's tree of experiments and their runs, from the store.
//
// Threading rule: GUI thread. reload() and every edit run as StoreClient jobs; the model
// resets when their results arrive (loaded() then), so views never wait. Edits that would lose
// a live run's data are refused: deleting a run (or an experiment holding one) that
// `isRunActive` says is running gives error().
//
// Rows: experiments at the top level (columns: name, runs, tags), their runs beneath (columns:
// run id, status, start time, best val loss in nats/token, tokens/s as Store::run_throughput
// defines it, printed by store::format_tokens_per_s).
#pragma once

#include <QAbstractItemModel>
#include <QPointer>
#include <QStringList>

#include <functional>
#include <map>
#include <vector>

#include "store/types.h"

namespace td::store {
class Store;
}

namespace td::gui {

class StoreClient;

class ExperimentsModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { ColName = 0, ColStatus, ColStarted, ColBestVal, ColTokensPerS, ColumnCount };
  enum Role {
    KindRole = Qt::UserRole,  // "experiment" | "run"
    KeyRole,                  // experiment name | run id
    StatusRole,               // run status (runs only)
    NotesRole,                // notes (experiments and runs)
    TagsRole,                 // QStringList (experiments)
    SortRole,                 // raw value for sorting (numbers, Unix seconds)
    StepRole,                 // qlonglong last completed step (runs; invalid when none)
    TotalStepsRole,           // qlonglong train.steps of the run's config (runs; invalid when unknown)
    RunNameRole,              // the run's name ("" when unnamed; DisplayRole shows the id then)
    AlertsRole,               // int: the run's alerts not seen yet (Store::unseen_alert_counts; the badge)
  };

  explicit ExperimentsModel(StoreClient* store, QObject* parent = nullptr);

  void setStoreClient(StoreClient* store);
  /// Used to refuse deleting runs that are running (RunController::isActive).
  void setRunActivePredicate(std::function<bool(const QString&)> is_active) { is_active_ = std::move(is_active); }
  bool isRunActive(const QString& run_id) const { return is_active_ && is_active_(run_id); }

  /// Re-reads experiments and runs (async; loaded() when done).
  void reload();

  // Edits (async; reload and loaded() follow; error() on failure with the store's message).
  void createExperiment(const QString& name);
  void renameExperiment(const QString& from, const QString& to);
  void setExperimentNotes(const QString& name, const QString& notes);
  void setExperimentTags(const QString& name, const QStringList& tags);
  void deleteExperiment(const QString& name);
  void setRunNotes(const QString& run_id, const QString& notes);
  /// Names a run (Store::set_run_name: "" clears the name, the id is shown then); a refused
  /// name (over 120 bytes, control characters) comes back through error().
  void renameRun(const QString& run_id, const QString& name);
  void deleteRun(const QString& run_id);
  /// The person has looked at the run: its alerts are seen, its badge goes (Store::mark_alerts_seen).
  void markAlertsSeen(const QString& run_id);

  QModelIndex experimentIndex(const QString& name, int column = 0) const;
  QModelIndex runIndex(const QString& run_id, int column = 0) const;
  QStringList experimentNames() const;
  /// The experiment a run belongs to ("" when unknown).
  QString experimentOfRun(const QString& run_id) const;
  const td::store::RunSummary* run(const QString& run_id) const;

  // QAbstractItemModel
  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void loaded();
  void error(const QString& message);

 private:
  struct Exp {
    td::store::Experiment info;
    std::vector<td::store::RunSummary> runs;
  };
  void edit(std::function<void(td::store::Store&)> fn);

  QPointer<StoreClient> store_;
  std::vector<Exp> exps_;
  std::map<std::string, int> unseen_alerts_;  // run_id -> alerts not seen yet
  std::function<bool(const QString&)> is_active_;
};

}  // namespace td::gui
