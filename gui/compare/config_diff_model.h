// ConfigDiffModel: the config fields that differ among compared runs (Qt Core only).
//
// Rows are dotted config paths (model.d_model, train.lr, ...) whose values are not the same in
// every run, sorted by path; columns are the runs in compare order. The vertical header gives
// the path, the horizontal header the run id. DisplayRole: the value (strings without quotes,
// numbers as the engine wrote them) or "—" when the run's config lacks the field; UserRole: the
// value, or QVariant() when absent. equalCount() counts the fields equal in every run (hidden).
// Threading rule: GUI thread only; the rows are computed by computeConfigDiff on the store
// thread (compare_model.h).
#pragma once

#include <QAbstractTableModel>
#include <QStringList>

#include <optional>
#include <vector>

namespace td::gui {

/// One differing field: its path and, per run, its value (nullopt: not in that run's config).
struct ConfigDiffRow {
  QString path;
  std::vector<std::optional<QString>> values;
};

/// The diff of flattened configs (each (path, value) pairs, sorted by path, as
/// td::store::Store::flatten_config gives them): rows for the paths whose value differs or is
/// missing somewhere, and the number of paths equal in all. With fewer than two configs there
/// is nothing to compare: no rows, and every path of the one config counts as equal.
struct ConfigDiff {
  std::vector<ConfigDiffRow> rows;
  int equal = 0;
};
ConfigDiff computeConfigDiff(const std::vector<std::vector<std::pair<std::string, std::string>>>& configs);

class ConfigDiffModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  explicit ConfigDiffModel(QObject* parent = nullptr);

  /// Replaces the content: one column per run, titled `run_labels` (its name, else its id);
  /// `diff.rows` the rows.
  void setDiff(const QStringList& run_labels, ConfigDiff diff);
  void clear() { setDiff({}, {}); }
  /// Fields whose value is the same in every compared run (not shown as rows).
  int equalCount() const { return equal_; }
  QStringList runIds() const { return runs_; }
  /// The path of `row` ("" when out of range).
  QString path(int row) const;

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QStringList runs_;
  std::vector<ConfigDiffRow> rows_;
  int equal_ = 0;
};

}  // namespace td::gui
