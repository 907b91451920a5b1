// CompareModel: summary numbers and config diff of a set of runs (Qt Core only).
//
// setRuns() submits ONE StoreClient job that, on the store thread, reads each run's numbers
// (Store::run_numbers) and config, and computes the diff (computeConfigDiff); the result fills
// summaryModel() and diffModel() on the GUI thread, then loaded() is emitted. A newer setRuns()
// or refresh() supersedes an older job (its result is dropped). Runs not in the store are
// left out and reported by error(). Threading rule: create and call on the GUI thread; the GUI
// thread never waits on the store.
#pragma once

#include <QObject>
#include <QPointer>
#include <QStringList>

#include <vector>

#include "gui/compare/config_diff_model.h"
#include "gui/compare/summary_model.h"
#include "gui/core/store_client.h"

namespace td::gui {

/// What one compare job computes (on the store thread).
struct CompareResult {
  std::vector<td::store::Store::RunNumbers> runs;  // the runs found, in the order asked
  QStringList run_ids;                              // their ids
  QStringList labels;                               // their names, else ids (the diff's columns)
  QStringList missing;                              // asked for but not in the store
  ConfigDiff diff;                                  // over the runs found
};
/// Reads and compares `run_ids` in `store` (any thread that owns `store`). Throws td::Error on
/// a store error; unknown runs go to `missing`.
CompareResult computeComparison(td::store::Store& store, const QStringList& run_ids);

class CompareModel : public QObject {
  Q_OBJECT
 public:
  /// `store` may be null (nothing is loaded until setStoreClient()).
  explicit CompareModel(StoreClient* store = nullptr, QObject* parent = nullptr);

  /// Switches store files (e.g. File > Open) and reloads the current runs from it.
  void setStoreClient(StoreClient* store);
  /// Compares these runs (ids as in the store; order kept); an empty list clears both models.
  void setRuns(const QStringList& run_ids);
  QStringList runs() const { return runs_; }
  /// Reads the same runs again (e.g. a run that is still training moved on).
  void refresh();
  /// True from setRuns()/refresh() until its result or error arrived.
  bool isLoading() const { return job_ != 0; }

  CompareSummaryModel* summaryModel() { return summary_; }
  ConfigDiffModel* diffModel() { return diff_; }

 signals:
  /// The models hold the result for runs().
  void loaded();
  void loadingChanged(bool loading);
  /// A store error, or runs not found (the message names them).
  void error(const QString& message);

 private:
  void apply(quint64 generation, CompareResult result);

  QPointer<StoreClient> store_;
  QStringList runs_;
  CompareSummaryModel* summary_;
  ConfigDiffModel* diff_;
  quint64 job_ = 0;         // StoreClient id of the job in flight (0: none)
  quint64 generation_ = 0;  // bumped by every request; older results are dropped
};

}  // namespace td::gui
