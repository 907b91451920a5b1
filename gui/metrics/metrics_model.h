// MetricsModel: the charts' view of the store. Fetches level-of-detail envelopes of metric
// series (Store::metric_envelope) for a visible step range at a chart's pixel width, and the
// facts of runs (series extents, tokens per step, step -> wall time), through a StoreClient.
//
// Threading rule: create and call on the GUI thread. Every query runs as a StoreClient job on
// the store thread; results arrive queued and are announced by envelopeReady / factsReady. A
// request for a series supersedes the one before it: a job not started yet is cancelled
// (StoreClient::cancel), and a result is kept only when it is newer than the one delivered
// (so a continuous pan still shows the latest finished query). Only the last result per series
// is kept. Knows nothing of QCustomPlot.
#pragma once

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QString>

#include <cstdint>
#include <functional>

#include "gui/core/store_client.h"
#include "gui/metrics/run_facts.h"
#include "store/types.h"

namespace td::gui {

/// One stored series: metric `metric` of `rank` in run `run_id`.
struct SeriesKey {
  QString run_id;
  QString metric;  // loss, val_loss, tokens_per_s, mfu, rss_bytes, gpu_mem_bytes, comm_bytes, ...
  int rank = 0;
  bool operator==(const SeriesKey&) const = default;
};
size_t qHash(const SeriesKey& k, size_t seed = 0);

/// The last envelope delivered for a series, with what was asked.
struct SeriesEnvelope {
  int64_t step_lo = 0, step_hi = 0;  // step range asked (inclusive)
  int width = 0;                     // pixel columns asked (max_points)
  td::store::MetricEnvelope env;     // buckets by step; raw rows when env.raw()
};

class MetricsModel : public QObject {
  Q_OBJECT
 public:
  /// `store` may be null (nothing is fetched until setStoreClient()); not owned.
  explicit MetricsModel(StoreClient* store, QObject* parent = nullptr);
  ~MetricsModel() override;

  /// Switches stores: cancels pending jobs and forgets every cached result.
  void setStoreClient(StoreClient* store);
  StoreClient* storeClient() const { return store_; }

  /// Asks for the envelope of `key` over steps [step_lo, step_hi] for `width` pixel columns
  /// (clamped to >= 1). Returns at once; envelopeReady(key) follows. A request equal to the
  /// cached or pending one is dropped unless `force` (new rows were ingested). Supersedes any
  /// earlier request of `key`. step_lo > step_hi is swapped.
  void requestEnvelope(const SeriesKey& key, int64_t step_lo, int64_t step_hi, int width,
                       bool force = false);
  /// The last envelope delivered for `key`, or nullptr.
  const SeriesEnvelope* envelope(const SeriesKey& key) const;
  /// Forgets the cached envelope of `key` (a chart dropped the series).
  void forget(const SeriesKey& key);

  /// Asks for the facts of `run_id` (get_run, metric_extents, metric_step_times: a few hundred
  /// rows whatever the run's length). While one is pending, further calls are folded into one
  /// more request made when it arrives. factsReady(run_id) follows; an unknown run gives
  /// failed() and no facts.
  void requestFacts(const QString& run_id);
  /// Whether a facts request of `run_id` is on its way.
  bool factsPending(const QString& run_id) const { return pending_facts_.contains(run_id); }
  /// The last facts delivered for `run_id`, or nullptr.
  const RunFacts* facts(const QString& run_id) const;

  /// Writes every metric row of the runs as CSV (Store::export_metrics_csv: long format
  /// step,rank,attempt,t,name,value; with a leading run_id column when several) to `path` on
  /// the store thread; exportFinished follows (rows: data rows of all runs).
  void exportRunCsv(const QStringList& run_ids, const QString& path);

  /// Envelope and facts jobs submitted and not delivered (or dropped) yet.
  int pendingRequests() const { return pending_env_.size() + pending_facts_.size(); }

 signals:
  void envelopeReady(const td::gui::SeriesKey& key);
  void factsReady(const QString& run_id);
  /// rows: data rows written; error empty on success.
  void exportFinished(const QString& path, qint64 rows, const QString& error);
  /// A query failed (message from the store: what and, where known, what to do).
  void failed(const QString& message);

 private:
  struct Pending {
    quint64 job = 0;
    quint64 gen = 0;
    int64_t lo = 0, hi = 0;
    int width = 0;
  };
  void cancelAll();

  QPointer<StoreClient> store_;
  quint64 next_gen_ = 1;
  quint64 floor_ = 0;  // generation of the last setStoreClient(); older results are dropped
  QHash<SeriesKey, Pending> pending_env_;
  QHash<SeriesKey, quint64> delivered_gen_;
  QHash<SeriesKey, SeriesEnvelope> cache_;
  QHash<QString, quint64> pending_facts_;  // run -> job
  QHash<QString, bool> facts_again_;
  QHash<QString, RunFacts> facts_;
};

}  // namespace td::gui

Q_DECLARE_METATYPE(td::gui::SeriesKey)
