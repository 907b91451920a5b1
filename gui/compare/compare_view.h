// CompareView: two or more runs side by side — the charts (a Dashboard of the same runs,
// handed in by the integrator) on top, below them tabs with the summary table and the config
// diff (only the fields that differ; "N fields are equal (hidden)").
//
// Threading rule: GUI thread only. It never touches SQLite: its CompareModel reads through
// the StoreClient on the store thread.
#pragma once

#include <QAbstractItemModel>
#include <QStringList>
#include <QWidget>

class QLabel;
class QSortFilterProxyModel;
class QSplitter;
class QTabWidget;
class QTableView;
class QVBoxLayout;

namespace td::gui {

class CompareModel;
class StoreClient;

class CompareView : public QWidget {
  Q_OBJECT
 public:
  /// `store` may be null until setStoreClient().
  explicit CompareView(StoreClient* store, QWidget* parent = nullptr);

  /// Switches store files; the current runs are read again from the new one.
  void setStoreClient(StoreClient* store);
  /// Compares these runs (summary and diff; the charts widget is set up by its owner).
  void setRuns(const QStringList& run_ids);
  QStringList runs() const;
  /// Reads the same runs again (numbers of a running run move on).
  void refresh();
  /// Puts `charts` (e.g. a Dashboard showing the same runs overlaid) on top; the view takes
  /// ownership. A previous charts widget is deleted.
  void setChartsWidget(QWidget* charts);
  QWidget* chartsWidget() const { return charts_; }

  /// The models behind the tables (tests; source models, not the sorting proxy):
  /// summaryModel() is a CompareSummaryModel, diffModel() a ConfigDiffModel.
  QAbstractItemModel* summaryModel();
  QAbstractItemModel* diffModel();
  CompareModel* model() const { return model_; }
  /// The text above the diff table: "Select two or more runs to compare", "N fields are
  /// equal (hidden)", "Loading…", or an error.
  QString diffStatusText() const;

 private:
  void updateStatus();

  CompareModel* model_;
  QSplitter* splitter_;
  QWidget* charts_ = nullptr;
  QWidget* charts_slot_;  // holds charts_ (or the placeholder)
  QVBoxLayout* charts_layout_;
  QLabel* placeholder_;
  QTabWidget* tabs_;
  QTableView* summary_view_;
  QSortFilterProxyModel* summary_proxy_;
  QLabel* diff_status_;
  QTableView* diff_view_;
  QString error_;
};

}  // namespace td::gui
