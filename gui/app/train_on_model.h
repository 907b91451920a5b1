// TrainOnModel: the "Train on" list beside Start run — every placement the app's run targets
// offer (RunTargets::placements(): this machine, each SSH cluster's nodes and "all nodes", each
// Slurm cluster), rebuilt when the saved clusters change. The window reads the chosen row's
// RunPlacement and hands it to RunTargets::start(); it never builds or parses an entry itself.
//
// Threading rule: GUI thread (an item model).
#pragma once

#include <QAbstractListModel>
#include <QList>
#include <QPointer>

#include "gui/runs/run_target.h"

namespace td::gui {

class RunTargets;

class TrainOnModel : public QAbstractListModel {
  Q_OBJECT
 public:
  /// `targets` says what each cluster offers; it must outlive the model or be null (no rows).
  explicit TrainOnModel(RunTargets* targets, QObject* parent = nullptr);

  /// Rebuilds the rows for `clusters` (the saved clusters, in the order listed).
  void setClusters(const QList<td::remote::ClusterSpec>& clusters);
  /// The row's entry, or nullptr for a row out of range.
  const PlacementChoice* choice(int row) const;
  /// The first row labelled `label`, or -1.
  int rowOf(const QString& label) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  /// DisplayRole and ToolTipRole: the label; DecorationRole: the entry's icon.
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  QPointer<RunTargets> targets_;
  QList<PlacementChoice> rows_;
};

}  // namespace td::gui
