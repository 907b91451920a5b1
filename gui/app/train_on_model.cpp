#include "gui/app/train_on_model.h"

#include "gui/look/icons.h"
#include "gui/runs/run_targets.h"

namespace td::gui {

TrainOnModel::TrainOnModel(RunTargets* targets, QObject* parent) : QAbstractListModel(parent), targets_(targets) {}

void TrainOnModel::setClusters(const QList<td::remote::ClusterSpec>& clusters) {
  beginResetModel();
  rows_ = targets_ ? targets_->placements(clusters) : QList<PlacementChoice>{};
  endResetModel();
}

const PlacementChoice* TrainOnModel::choice(int row) const {
  return row >= 0 && row < rows_.size() ? &rows_[row] : nullptr;
}

int TrainOnModel::rowOf(const QString& label) const {
  for (int i = 0; i < rows_.size(); ++i)
    if (rows_[i].label == label) return i;
  return -1;
}

int TrainOnModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }

QVariant TrainOnModel::data(const QModelIndex& index, int role) const {
  const PlacementChoice* c = index.isValid() ? choice(index.row()) : nullptr;
  if (!c) return {};
  switch (role) {
    case Qt::DisplayRole:
    case Qt::ToolTipRole:
      return c->label;
    case Qt::DecorationRole:
      return icon(c->icon);
    default:
      return {};
  }
}

}  // namespace td::gui
