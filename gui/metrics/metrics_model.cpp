#include "gui/metrics/metrics_model.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "store/store.h"

namespace td::gui {

size_t qHash(const SeriesKey& k, size_t seed) {
  return ::qHash(k.run_id, seed) ^ (::qHash(k.metric, seed) * 31u) ^ (static_cast<size_t>(k.rank) * 0x9E3779B9u);
}

MetricsModel::MetricsModel(StoreClient* store, QObject* parent) : QObject(parent), store_(store) {
  qRegisterMetaType<td::gui::SeriesKey>();
}

MetricsModel::~MetricsModel() { cancelAll(); }

void MetricsModel::cancelAll() {
  if (store_) {
    for (const Pending& p : std::as_const(pending_env_)) store_->cancel(p.job);
    for (quint64 job : std::as_const(pending_facts_)) store_->cancel(job);
  }
  pending_env_.clear();
  pending_facts_.clear();
  facts_again_.clear();
}

void MetricsModel::setStoreClient(StoreClient* store) {
  cancelAll();
  delivered_gen_.clear();
  cache_.clear();
  facts_.clear();
  floor_ = ++next_gen_;  // results of jobs asked before this are dropped
  store_ = store;
}

void MetricsModel::requestEnvelope(const SeriesKey& key, int64_t step_lo, int64_t step_hi, int width,
                                   bool force) {
  if (!store_) return;
  if (step_lo > step_hi) std::swap(step_lo, step_hi);
  width = std::max(1, width);
  if (!force) {
    auto p = pending_env_.constFind(key);
    if (p != pending_env_.constEnd() && p->lo == step_lo && p->hi == step_hi && p->width == width) return;
    auto c = cache_.constFind(key);
    if (p == pending_env_.constEnd() && c != cache_.constEnd() && c->step_lo == step_lo &&
        c->step_hi == step_hi && c->width == width)
      return;
  }
  if (auto p = pending_env_.constFind(key); p != pending_env_.constEnd()) store_->cancel(p->job);

  const quint64 gen = next_gen_++;
  const std::string run = key.run_id.toStdString(), name = key.metric.toStdString();
  const int rank = key.rank;
  Pending pend{0, gen, step_lo, step_hi, width};
  pend.job = store_->run<td::store::MetricEnvelope>(
      this,
      [=](td::store::Store& s) { return s.metric_envelope(run, name, rank, step_lo, step_hi, width); },
      [this, key, gen, step_lo, step_hi, width](td::store::MetricEnvelope env) {
        auto p = pending_env_.find(key);
        if (p != pending_env_.end() && p->gen == gen) pending_env_.erase(p);
        // Keep it only when newer than what was delivered (a superseded job that had already
        // started still shows, until the newest arrives).
        if (gen < floor_ || gen <= delivered_gen_.value(key, 0)) return;
        delivered_gen_[key] = gen;
        cache_[key] = SeriesEnvelope{step_lo, step_hi, width, std::move(env)};
        emit envelopeReady(key);
      },
      [this, key, gen](const QString& message) {
        auto p = pending_env_.find(key);
        if (p != pending_env_.end() && p->gen == gen) pending_env_.erase(p);
        emit failed(message);
      });
  pending_env_[key] = pend;
}

const SeriesEnvelope* MetricsModel::envelope(const SeriesKey& key) const {
  auto it = cache_.constFind(key);
  return it == cache_.constEnd() ? nullptr : &*it;
}

void MetricsModel::forget(const SeriesKey& key) {
  if (auto p = pending_env_.constFind(key); p != pending_env_.constEnd() && store_) store_->cancel(p->job);
  pending_env_.remove(key);
  cache_.remove(key);
  delivered_gen_.remove(key);
}

void MetricsModel::requestFacts(const QString& run_id) {
  if (!store_) return;
  if (pending_facts_.contains(run_id)) {
    facts_again_[run_id] = true;
    return;
  }
  const std::string run = run_id.toStdString();
  const quint64 epoch = floor_;
  const quint64 job = store_->run<RunFacts>(
      this,
      [run](td::store::Store& s) {
        RunFacts f;
        const td::store::Store::ChartRun info = s.chart_run(run);
        f.run_id = QString::fromStdString(run);
        f.status = QString::fromStdString(info.status);
        f.last_step = info.last_step;
        f.world_size = static_cast<int>(info.world_size.value_or(1));
        for (const std::string& h : info.hosts) f.hosts.push_back(QString::fromStdString(h));
        f.name = QString::fromStdString(info.name);
        f.tokens_per_step = tokens_per_step_from_config(QString::fromStdString(info.config_json), f.world_size);
        f.series = s.metric_extents(run);
        // The clock: the longest rank-0 series (every step event writes loss and step_ms).
        const td::store::MetricInfo* longest = nullptr;
        for (const auto& m : f.series) {
          if (m.rank == 0 && (!longest || m.count > longest->count)) longest = &m;
          if (m.name == "tokens_seen" && m.rank == 0 && f.tokens_per_step <= 0 && m.last_step > 0)
            f.tokens_per_step = m.last_value / static_cast<double>(m.last_step);
        }
        if (longest) {
          const td::store::MetricSeries st = s.metric_step_times(run, longest->name, 0, 512);
          f.time_step = st.step;
          f.time_t = st.t;
        }
        f.prepareTimes();
        return f;
      },
      [this, run_id, epoch](RunFacts f) {
        pending_facts_.remove(run_id);
        if (epoch != floor_) return;  // asked of the previous store
        facts_[run_id] = std::move(f);
        emit factsReady(run_id);
        if (facts_again_.take(run_id)) requestFacts(run_id);
      },
      [this, run_id](const QString& message) {
        pending_facts_.remove(run_id);
        facts_again_.remove(run_id);
        emit failed(message);
      });
  pending_facts_[run_id] = job;
}

const RunFacts* MetricsModel::facts(const QString& run_id) const {
  auto it = facts_.constFind(run_id);
  return it == facts_.constEnd() ? nullptr : &*it;
}

void MetricsModel::exportRunCsv(const QStringList& run_ids, const QString& path) {
  if (!store_) {
    emit exportFinished(path, 0, tr("No store is open."));
    return;
  }
  std::vector<std::string> runs;
  for (const QString& r : run_ids) runs.push_back(r.toStdString());
  const std::string file = path.toStdString();
  store_->run<qint64>(
      this,
      [runs, file](td::store::Store& s) -> qint64 {
        std::ofstream out(file, std::ios::binary);
        if (!out) throw std::runtime_error("cannot write '" + file + "': check the folder exists and is writable");
        // Several runs: one file, a run_id column, one header.
        int64_t rows = 0;
        for (size_t i = 0; i < runs.size(); ++i) rows += s.export_metrics_csv(runs[i], out, runs.size() > 1, i == 0);
        out.flush();
        if (!out) throw std::runtime_error("writing '" + file + "' failed (disk full?)");
        return rows;
      },
      [this, path](qint64 rows) { emit exportFinished(path, rows, QString()); },
      [this, path](const QString& message) { emit exportFinished(path, 0, message); });
}

}  // namespace td::gui
