// CompareSummaryModel: one row per compared run, summary numbers in columns (Qt Core only).
//
// Qt::DisplayRole gives numbers formatted for people (compare_format.h; "—" when unknown),
// Qt::UserRole the raw value for sorting and tests (QVariant() when unknown): double for
// losses (nats/token), tokens_per_s (tokens/s), mfu (0..1) and wall time (seconds); qlonglong
// for tokens seen, parameters and steps; QString for run, experiment and status.
// Threading rule: GUI thread only; filled by CompareModel from a store job's result.
#pragma once

#include <QAbstractTableModel>
#include <QStringList>

#include <vector>

#include "store/store.h"

namespace td::gui {

class CompareSummaryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Run,
    Experiment,
    Status,
    FinalLoss,     // train loss at the last step
    BestLoss,      // min train loss
    FinalValLoss,  // val_loss of the last eval
    BestValLoss,   // min val_loss
    TokensPerS,    // Store::run_throughput: median tokens/s of the last 100 steps, warm-up left out
    Mfu,           // median MFU, same rule
    WallTime,      // sum of the attempts' durations (running: so far), seconds
    TokensSeen,    // tokens_seen at the last step
    Parameters,    // n_params
    Steps,         // last step
    ColumnCount
  };

  explicit CompareSummaryModel(QObject* parent = nullptr);

  /// Replaces the rows (one per run, in this order).
  void setRuns(std::vector<td::store::Store::RunNumbers> runs);
  void clear() { setRuns({}); }
  /// The run id of `row` ("" when out of range).
  QString runId(int row) const;

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant raw(const td::store::Store::RunNumbers& r, int column) const;
  QString text(const td::store::Store::RunNumbers& r, int column) const;

  std::vector<td::store::Store::RunNumbers> runs_;
};

}  // namespace td::gui
