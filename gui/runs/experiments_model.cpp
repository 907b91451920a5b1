#include "gui/runs/experiments_model.h"

#include <QDateTime>
#include <QLocale>

#include "gui/core/run_text.h"
#include "gui/core/store_client.h"
#include "store/format.h"
#include "store/store.h"

namespace td::gui {

namespace {
// internalId of an index: 0 for experiment rows; experiment row + 1 for run rows.
constexpr quintptr kTop = 0;
}  // namespace

ExperimentsModel::ExperimentsModel(StoreClient* store, QObject* parent) : QAbstractItemModel(parent) {
  setStoreClient(store);
}

void ExperimentsModel::setStoreClient(StoreClient* store) {
  store_ = store;
  beginResetModel();
  exps_.clear();
  endResetModel();
  if (store_) reload();
}

void ExperimentsModel::reload() {
  if (!store_) return;
  using Loaded = std::pair<std::vector<Exp>, std::map<std::string, int>>;
  store_->run<Loaded>(
      this,
      [](td::store::Store& s) {
        std::vector<Exp> exps;
        for (auto& e : s.list_experiments()) exps.push_back({e, {}});
        auto runs = s.list_runs();
        for (auto& r : runs)
          for (auto& e : exps)
            if (e.info.name == r.experiment) e.runs.push_back(r);
        // Newest runs first, as a sidebar is read.
        for (auto& e : exps) std::reverse(e.runs.begin(), e.runs.end());
        return Loaded{std::move(exps), s.unseen_alert_counts()};
      },
      [this](Loaded got) {
        beginResetModel();
        exps_ = std::move(got.first);
        unseen_alerts_ = std::move(got.second);
        endResetModel();
        emit loaded();
      },
      [this](const QString& m) { emit error(m); });
}

void ExperimentsModel::edit(std::function<void(td::store::Store&)> fn) {
  if (!store_) return;
  store_->exec(this, std::move(fn), [this] { reload(); }, [this](const QString& m) {
    emit error(m);
    reload();
  });
}

void ExperimentsModel::markAlertsSeen(const QString& run_id) {
  if (!unseen_alerts_.count(run_id.toStdString())) return;
  edit([id = run_id.toStdString()](td::store::Store& s) { s.mark_alerts_seen(id); });
}

void ExperimentsModel::createExperiment(const QString& name) {
  const QString n = name.trimmed();
  if (n.isEmpty()) return emit error(tr("An experiment needs a name."));
  edit([n = n.toStdString()](td::store::Store& s) { s.ensure_experiment(n); });
}

void ExperimentsModel::renameExperiment(const QString& from, const QString& to) {
  const QString t = to.trimmed();
  if (t.isEmpty()) return emit error(tr("An experiment needs a name."));
  if (t == from) return;
  edit([f = from.toStdString(), t = t.toStdString()](td::store::Store& s) { s.rename_experiment(f, t); });
}

void ExperimentsModel::setExperimentNotes(const QString& name, const QString& notes) {
  edit([n = name.toStdString(), v = notes.toStdString()](td::store::Store& s) { s.set_experiment_notes(n, v); });
}

void ExperimentsModel::setExperimentTags(const QString& name, const QStringList& tags) {
  std::vector<std::string> t;
  for (const auto& tag : tags)
    if (!tag.trimmed().isEmpty()) t.push_back(tag.trimmed().toStdString());
  edit([n = name.toStdString(), t](td::store::Store& s) { s.set_experiment_tags(n, t); });
}

void ExperimentsModel::deleteExperiment(const QString& name) {
  for (const auto& e : exps_) {
    if (QString::fromStdString(e.info.name) != name) continue;
    for (const auto& r : e.runs) {
      const QString id = QString::fromStdString(r.run_id);
      if (is_active_ && is_active_(id))
        return emit error(tr("Experiment %1 holds run %2, which is running: stop it before deleting.").arg(name, id));
    }
  }
  edit([n = name.toStdString()](td::store::Store& s) { s.delete_experiment(n); });
}

void ExperimentsModel::setRunNotes(const QString& run_id, const QString& notes) {
  edit([id = run_id.toStdString(), v = notes.toStdString()](td::store::Store& s) { s.set_run_notes(id, v); });
}

void ExperimentsModel::renameRun(const QString& run_id, const QString& name) {
  edit([id = run_id.toStdString(), n = name.toStdString()](td::store::Store& s) { s.set_run_name(id, n); });
}

void ExperimentsModel::deleteRun(const QString& run_id) {
  if (is_active_ && is_active_(run_id))
    return emit error(tr("Run %1 is running: stop it before deleting.").arg(run_id));
  edit([id = run_id.toStdString()](td::store::Store& s) { s.delete_run(id); });
}

QModelIndex ExperimentsModel::experimentIndex(const QString& name, int column) const {
  for (size_t i = 0; i < exps_.size(); ++i)
    if (QString::fromStdString(exps_[i].info.name) == name) return index(static_cast<int>(i), column);
  return {};
}

QModelIndex ExperimentsModel::runIndex(const QString& run_id, int column) const {
  for (size_t i = 0; i < exps_.size(); ++i)
    for (size_t j = 0; j < exps_[i].runs.size(); ++j)
      if (QString::fromStdString(exps_[i].runs[j].run_id) == run_id)
        return createIndex(static_cast<int>(j), column, static_cast<quintptr>(i + 1));
  return {};
}

QStringList ExperimentsModel::experimentNames() const {
  QStringList names;
  for (const auto& e : exps_) names << QString::fromStdString(e.info.name);
  return names;
}

QString ExperimentsModel::experimentOfRun(const QString& run_id) const {
  const auto* r = run(run_id);
  return r ? QString::fromStdString(r->experiment) : QString();
}

const td::store::RunSummary* ExperimentsModel::run(const QString& run_id) const {
  const std::string id = run_id.toStdString();
  for (const auto& e : exps_)
    for (const auto& r : e.runs)
      if (r.run_id == id) return &r;
  return nullptr;
}

QModelIndex ExperimentsModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= ColumnCount) return {};
  if (!parent.isValid()) {
    if (row >= static_cast<int>(exps_.size())) return {};
    return createIndex(row, column, kTop);
  }
  if (parent.internalId() != kTop) return {};  // runs have no children
  const int e = parent.row();
  if (e >= static_cast<int>(exps_.size()) || row >= static_cast<int>(exps_[e].runs.size())) return {};
  return createIndex(row, column, static_cast<quintptr>(e + 1));
}

QModelIndex ExperimentsModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kTop) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, kTop);
}

int ExperimentsModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(exps_.size());
  if (parent.internalId() != kTop || parent.column() != 0) return 0;
  return static_cast<int>(exps_[parent.row()].runs.size());
}

int ExperimentsModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant ExperimentsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const QLocale locale;
  if (index.internalId() == kTop) {
    const auto& e = exps_[index.row()].info;
    QStringList tags;
    for (const auto& t : e.tags) tags << QString::fromStdString(t);
    switch (role) {
      case KindRole: return QStringLiteral("experiment");
      case KeyRole: return QString::fromStdString(e.name);
      case NotesRole: return QString::fromStdString(e.notes);
      case TagsRole: return tags;
      case Qt::ToolTipRole:
        return e.notes.empty() ? QVariant() : QVariant(QString::fromStdString(e.notes));
      case Qt::DisplayRole:
      case SortRole:
        if (index.column() == ColName) return QString::fromStdString(e.name);
        if (index.column() == ColStatus)
          return role == SortRole ? QVariant::fromValue<qlonglong>(e.run_count)
                                  : QVariant(tr("%n run(s)", "", static_cast<int>(e.run_count)));
        if (index.column() == ColStarted) return tags.join(QStringLiteral(", "));
        return {};
      default: return {};
    }
  }
  const auto& r = exps_[index.internalId() - 1].runs[index.row()];
  switch (role) {
    case KindRole: return QStringLiteral("run");
    case KeyRole: return QString::fromStdString(r.run_id);
    case StatusRole: return QString::fromStdString(r.status);
    case NotesRole: return QString::fromStdString(r.notes);
    case StepRole: return r.last_step ? QVariant::fromValue<qlonglong>(*r.last_step) : QVariant();
    case TotalStepsRole: return r.total_steps ? QVariant::fromValue<qlonglong>(*r.total_steps) : QVariant();
    case Qt::ToolTipRole:
      if (index.column() == ColStatus && unseen_alerts_.count(r.run_id))
        return tr("%n new alert(s): open the run to see them", "", unseen_alerts_.at(r.run_id));
      if (index.column() == ColTokensPerS) return tr("Median tokens/s of the last %1 steps").arg(td::store::Store::kThroughputSteps);
      // A named run's id in its tooltip (the key for the CLI), then its notes.
      if (index.column() == ColName && !r.name.empty())
        return tr("Run %1").arg(QString::fromStdString(r.run_id)) +
               (r.notes.empty() ? QString() : QStringLiteral("\n") + QString::fromStdString(r.notes));
      return r.notes.empty() ? QVariant() : QVariant(QString::fromStdString(r.notes));
    case RunNameRole: return QString::fromStdString(r.name);
    case AlertsRole: {
      const auto it = unseen_alerts_.find(r.run_id);
      return it == unseen_alerts_.end() ? 0 : it->second;
    }
    case Qt::DisplayRole:
      switch (index.column()) {
        case ColName: return QString::fromStdString(r.display_name());
        case ColStatus: {
          // The badge: the run's alerts not seen yet (the Run page marks them seen).
          const auto it = unseen_alerts_.find(r.run_id);
          const QString status = runStatusText(QString::fromStdString(r.status));  // StatusRole: the stored word
          return it == unseen_alerts_.end() ? status : tr("%1 ⚠ %2").arg(status).arg(it->second);
        }
        case ColStarted:
          return r.start_time ? locale.toString(QDateTime::fromMSecsSinceEpoch(qint64(*r.start_time * 1000)),
                                                QLocale::ShortFormat)
                              : QString();
        case ColBestVal: return r.best_val_loss ? QString::number(*r.best_val_loss, 'f', 4) : QString();
        case ColTokensPerS: return r.tokens_per_s ? QString::fromStdString(td::store::format_tokens_per_s(r.tokens_per_s)) : QString();
      }
      return {};
    case SortRole:
      switch (index.column()) {
        case ColName: return QString::fromStdString(r.display_name());
        case ColStatus: return QString::fromStdString(r.status);
        case ColStarted: return r.start_time.value_or(0);
        case ColBestVal: return r.best_val_loss.value_or(1e300);
        case ColTokensPerS: return r.tokens_per_s.value_or(0);
      }
      return {};
    default: return {};
  }
}

QVariant ExperimentsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ColName: return tr("Name");
    case ColStatus: return tr("Status");
    case ColStarted: return tr("Started");
    case ColBestVal: return tr("Best val loss");
    case ColTokensPerS: return tr("Tokens/s");
  }
  return {};
}

}  // namespace td::gui
