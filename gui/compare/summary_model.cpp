// The compare view's summary table (summary_model.h).
#include "gui/compare/summary_model.h"

#include "gui/compare/compare_format.h"
#include "gui/core/run_text.h"
#include "store/format.h"

namespace td::gui {

namespace fmt = compare_format;

CompareSummaryModel::CompareSummaryModel(QObject* parent) : QAbstractTableModel(parent) {}

void CompareSummaryModel::setRuns(std::vector<td::store::Store::RunNumbers> runs) {
  beginResetModel();
  runs_ = std::move(runs);
  endResetModel();
}

QString CompareSummaryModel::runId(int row) const {
  if (row < 0 || row >= static_cast<int>(runs_.size())) return {};
  return QString::fromStdString(runs_[static_cast<size_t>(row)].info.run_id);
}

int CompareSummaryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}

int CompareSummaryModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

namespace {
template <class T>
QVariant opt(const std::optional<T>& v) {
  if (!v) return {};
  if constexpr (std::is_integral_v<T>)
    return QVariant::fromValue(static_cast<qlonglong>(*v));
  else
    return QVariant::fromValue(*v);
}
}  // namespace

QVariant CompareSummaryModel::raw(const td::store::Store::RunNumbers& r, int column) const {
  switch (column) {
    case Run: return QString::fromStdString(r.info.display_name());  // its name, else its id
    case Experiment: return QString::fromStdString(r.info.experiment);
    case Status: return QString::fromStdString(r.info.status);
    case FinalLoss: return opt(r.final_loss);
    case BestLoss: return opt(r.best_loss);
    case FinalValLoss: return opt(r.final_val_loss);
    case BestValLoss: return opt(r.best_val_loss);
    case TokensPerS: return opt(r.tokens_per_s);
    case Mfu: return opt(r.mfu);
    case WallTime: return opt(r.wall_seconds);
    case TokensSeen: return opt(r.tokens_seen);
    case Parameters: return opt(r.info.n_params);
    case Steps: return opt(r.info.last_step);
    default: return {};
  }
}

QString CompareSummaryModel::text(const td::store::Store::RunNumbers& r, int column) const {
  const QVariant v = raw(r, column);
  if (!v.isValid()) return fmt::missing();
  switch (column) {
    case Run:
    case Experiment: return v.toString();
    case Status: return runStatusText(v.toString());  // in the UI's language; sorted on the stored word
    case FinalLoss:
    case BestLoss:
    case FinalValLoss:
    case BestValLoss: return fmt::loss(v.toDouble());
    case Mfu: return fmt::percent(v.toDouble());
    case WallTime: {
      QString s = fmt::duration(v.toDouble());
      if (r.info.status == "running") s += tr(" so far");
      return s;
    }
    case Steps: return QString::number(v.toLongLong());
    // The run page's and `runs show`'s text of the same number (store/format.h).
    case TokensPerS: return QString::fromStdString(td::store::format_tokens_per_s(v.toDouble()));
    default: return fmt::count(v.toDouble());  // tokens seen, parameters
  }
}

QVariant CompareSummaryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(runs_.size())) return {};
  const auto& r = runs_[static_cast<size_t>(index.row())];
  const int c = index.column();
  switch (role) {
    case Qt::DisplayRole: return text(r, c);
    case Qt::UserRole: return raw(r, c);
    case Qt::ToolTipRole: {
      const QVariant v = raw(r, c);
      if (c == Run && !r.info.notes.empty()) return QString::fromStdString(r.info.notes);
      return v.isValid() ? v.toString() : tr("not recorded for this run");
    }
    case Qt::TextAlignmentRole:
      return c <= Status ? QVariant(Qt::AlignLeft | Qt::AlignVCenter) : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    default: return {};
  }
}

QVariant CompareSummaryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return QAbstractTableModel::headerData(section, orientation, role);
  if (role == Qt::DisplayRole) {
    switch (section) {
      case Run: return tr("run");
      case Experiment: return tr("experiment");
      case Status: return tr("status");
      case FinalLoss: return tr("final loss");
      case BestLoss: return tr("best loss");
      case FinalValLoss: return tr("final val_loss");
      case BestValLoss: return tr("best val_loss");
      case TokensPerS: return tr("tokens/s (median of last %1 steps)").arg(td::store::Store::kThroughputSteps);
      case Mfu: return tr("MFU");
      case WallTime: return tr("wall time");
      case TokensSeen: return tr("tokens seen");
      case Parameters: return tr("parameters");
      case Steps: return tr("steps");
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case FinalLoss: return tr("Training loss (nats/token) at the last step");
      case BestLoss: return tr("Lowest training loss (nats/token)");
      case FinalValLoss: return tr("Validation loss (nats/token) of the last evaluation");
      case BestValLoss: return tr("Lowest validation loss (nats/token)");
      case TokensPerS:
        return tr("Median tokens/s of the last %1 steps, each attempt's first %2 (warm-up) left out")
            .arg(td::store::Store::kThroughputSteps)
            .arg(td::store::Store::kWarmupSteps);
      case Mfu:
        return tr("Median model FLOPs utilisation of the last %1 steps, each attempt's first %2 left out")
            .arg(td::store::Store::kThroughputSteps)
            .arg(td::store::Store::kWarmupSteps);
      case WallTime: return tr("Sum of the attempts' durations (pauses between a stop and a resume not counted)");
      case TokensSeen: return tr("Tokens trained on, at the last step");
      default: return {};
    }
  }
  return {};
}

}  // namespace td::gui
