// CompareModel and the compare job (compare_model.h).
#include "gui/compare/compare_model.h"

namespace td::gui {

CompareResult computeComparison(td::store::Store& store, const QStringList& run_ids) {
  CompareResult r;
  std::vector<std::vector<std::pair<std::string, std::string>>> configs;
  for (const QString& id : run_ids) {
    const std::string run_id = id.toStdString();
    if (!store.find_run(run_id)) {
      r.missing << id;
      continue;
    }
    r.runs.push_back(store.run_numbers(run_id));
    r.run_ids << id;
    r.labels << QString::fromStdString(r.runs.back().info.display_name());
    configs.push_back(td::store::Store::flatten_config(r.runs.back().info.config_json));
  }
  r.diff = computeConfigDiff(configs);
  return r;
}

CompareModel::CompareModel(StoreClient* store, QObject* parent)
    : QObject(parent), store_(store), summary_(new CompareSummaryModel(this)), diff_(new ConfigDiffModel(this)) {}

void CompareModel::setStoreClient(StoreClient* store) {
  if (store_ && job_) store_->cancel(job_);
  store_ = store;
  job_ = 0;
  refresh();
}

void CompareModel::setRuns(const QStringList& run_ids) {
  runs_ = run_ids;
  refresh();
}

void CompareModel::refresh() {
  const bool was_loading = isLoading();
  if (store_ && job_) store_->cancel(job_);
  job_ = 0;
  const quint64 gen = ++generation_;
  if (!store_ || runs_.isEmpty()) {
    summary_->clear();
    diff_->clear();
    if (was_loading) emit loadingChanged(false);
    if (runs_.isEmpty()) emit loaded();
    return;
  }
  const QStringList ids = runs_;
  job_ = store_->run<CompareResult>(
      this, [ids](td::store::Store& s) { return computeComparison(s, ids); },
      [this, gen](CompareResult r) { apply(gen, std::move(r)); },
      [this, gen](const QString& message) {
        if (gen != generation_) return;
        job_ = 0;
        emit loadingChanged(false);
        emit error(tr("Could not compare the runs: %1").arg(message));
      });
  if (!was_loading) emit loadingChanged(true);
}

void CompareModel::apply(quint64 generation, CompareResult result) {
  if (generation != generation_) return;  // superseded by a newer request
  job_ = 0;
  summary_->setRuns(std::move(result.runs));
  diff_->setDiff(result.labels, std::move(result.diff));  // columns titled by run name
  emit loadingChanged(false);
  if (!result.missing.isEmpty())
    emit error(tr("Not in this store (deleted, or another store file is open): %1").arg(result.missing.join(", ")));
  emit loaded();
}

}  // namespace td::gui
