// The compare view's config diff (config_diff_model.h).
#include "gui/compare/config_diff_model.h"

#include <map>

#include "gui/compare/compare_format.h"

namespace td::gui {

ConfigDiff computeConfigDiff(const std::vector<std::vector<std::pair<std::string, std::string>>>& configs) {
  ConfigDiff d;
  const size_t n = configs.size();
  // path -> value per config (sorted by path: std::map).
  std::map<std::string, std::vector<const std::string*>> by_path;
  for (size_t c = 0; c < n; ++c)
    for (const auto& [path, value] : configs[c]) {
      auto& v = by_path[path];
      v.resize(n, nullptr);
      v[c] = &value;
    }
  for (const auto& [path, values] : by_path) {
    bool same = true;
    for (size_t c = 0; c < n && same; ++c)
      same = values[c] != nullptr && *values[c] == *values[0];
    if (same || n < 2) {
      ++d.equal;
      continue;
    }
    ConfigDiffRow row;
    row.path = QString::fromStdString(path);
    for (size_t c = 0; c < n; ++c)
      row.values.push_back(values[c] ? std::optional<QString>(QString::fromStdString(*values[c])) : std::nullopt);
    d.rows.push_back(std::move(row));
  }
  return d;
}

ConfigDiffModel::ConfigDiffModel(QObject* parent) : QAbstractTableModel(parent) {}

void ConfigDiffModel::setDiff(const QStringList& run_labels, ConfigDiff diff) {
  beginResetModel();
  runs_ = run_labels;
  rows_ = std::move(diff.rows);
  equal_ = diff.equal;
  endResetModel();
}

QString ConfigDiffModel::path(int row) const {
  if (row < 0 || row >= static_cast<int>(rows_.size())) return {};
  return rows_[static_cast<size_t>(row)].path;
}

int ConfigDiffModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ConfigDiffModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}

QVariant ConfigDiffModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const ConfigDiffRow& r = rows_[static_cast<size_t>(index.row())];
  if (index.column() < 0 || index.column() >= static_cast<int>(r.values.size())) return {};
  const auto& v = r.values[static_cast<size_t>(index.column())];
  switch (role) {
    case Qt::DisplayRole: return v ? *v : compare_format::missing();
    case Qt::UserRole: return v ? QVariant(*v) : QVariant();
    case Qt::ToolTipRole:
      return v ? QStringLiteral("%1 = %2").arg(r.path, *v) : tr("%1 is not in this run's config").arg(r.path);
    default: return {};
  }
}

QVariant ConfigDiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  if (orientation == Qt::Horizontal) {
    if (section < 0 || section >= runs_.size()) return {};
    return runs_[section];
  }
  return path(section);
}

}  // namespace td::gui
