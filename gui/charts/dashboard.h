// Dashboard: the live charts of one run, or several runs overlaid for comparison.
//
// Charts (ChartView, names for chart()); the lines of each are the step event's fields that
// name it in the one field table (engine/metrics/step_fields.h): "loss" (train loss line, val_loss markers),
// "throughput" (tokens_per_s and each rank's rank_tokens_per_s left, mfu right), "memory"
// (rss_bytes, gpu_mem_bytes per rank left, the process's cpu_util_pct right), "network" (comm_bytes_sent left, busbw_gb_s right, per
// rank; a rank's series names its host), "optimizer" (lr left, grad_norm right), "input"
// (data_wait_pct left, data_read_mb_s right), "checkpoints" (checkpoint_write_mb_s left,
// checkpoint_pause_s right, a marker per checkpoint). Controls: x axis by step | tokens | wall time, smoothing (EMA weight 0..0.99),
// log scale, export PNG / CSV. The dashboard owns its MetricsModel; every query goes through
// the StoreClient given.
//
// The charts of a page are linked: one x range (fitted to all of them, zoomed and panned
// together) and one column count, the narrowest plot's, so that every chart asks the store for
// the same level of detail and draws the same buckets (a spike is a point in all or none).
// A language switch (QEvent::LanguageChange) re-sets every text the charts draw (titles, axis
// titles, legends, placeholders) from chartSpecs(); the data drawn stays.
//
// Threading rule: GUI thread only; nothing here blocks on the store.
#pragma once

#include <QHash>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include "gui/charts/chart_view.h"
#include "gui/core/store_client.h"
#include "gui/metrics/metrics_model.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
class QToolButton;

namespace td::gui {

class Dashboard : public QWidget {
  Q_OBJECT
 public:
  /// `store` may be null (charts stay empty until setStoreClient()); not owned.
  explicit Dashboard(StoreClient* store, QWidget* parent = nullptr);
  ~Dashboard() override;

  /// Switches stores (a File > Open): forgets every cached query; runs are kept and re-read.
  void setStoreClient(StoreClient* store);
  /// One run: its live dashboard. Several: overlaid (a colour per run, legend). Empty: all
  /// charts show "No run selected.".
  void setRuns(const QStringList& run_ids);
  QStringList runs() const { return runs_; }
  /// New rows of these runs were ingested: re-reads their facts and the visible ranges,
  /// coalesced (calls within one event-loop pass make one query per run and series); a chart
  /// showing the newest step scrolls to keep showing it.
  void refresh();

  /// "loss", "throughput", "memory", "network", "optimizer", "input", "checkpoints"; nullptr
  /// for other names.
  ChartView* chart(const QString& name) const;
  QStringList chartNames() const { return names_; }
  /// The lines chart `chart` draws: the fields of the step table (kEventFields,
  /// engine/metrics/step_fields.h) that name it, in table order, labels translated; a field
  /// drawn as a second scale of the right axis (MFU) is not among them.
  static QList<MetricSpec> chartMetrics(const QString& chart);
  MetricsModel* model() const { return model_; }

  void setXAxis(XAxis axis);  // also the combo box
  XAxis xAxis() const { return axis_; }
  /// EMA weight in [0, 0.99] (also the slider, which moves in steps of 0.01).
  void setSmoothing(double weight);
  double smoothing() const;
  void setLogScale(bool on);  // also the checkbox

  /// Saves the charts area as one PNG. Returns false when it cannot be written.
  bool exportPng(const QString& path);
  /// Writes the points every chart currently draws (ChartView::writeCsv rows, one header;
  /// stored values, never smoothed). Returns false on write errors.
  bool exportCsv(const QString& path) const;
  /// The pixel columns every chart's queries ask for (ChartView::setColumns): the narrowest
  /// plot's, chosen again when a chart is resized, at each zoom or pan, at setRuns() and
  /// refresh(). 0 before the first choice.
  int columns() const { return columns_; }

  /// The last query error shown beside the controls ("" when none is showing).
  QString errorText() const;
  /// Writes all metric rows of every run shown (Store::export_metrics_csv; a run_id column
  /// when several) on the store thread; MetricsModel::exportFinished reports the outcome.
  void exportRunCsv(const QString& path);
  /// The file name the export dialogs suggest: "<run ids joined by +>-<what>.<suffix>".
  QString suggestedFileName(const QString& what, const QString& suffix) const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  struct ChartSpec;
  /// Every chart of the page (name, texts in the language installed now, metrics, place).
  static QList<ChartSpec> chartSpecs();
  void buildCharts();
  /// Sets every chart's texts (and metric labels) from chartSpecs().
  void applyTexts();
  /// The narrowest plot's columns, given to every chart when it changed.
  void chooseColumns();
  /// The x extent of every chart's rows of the runs shown: the one range all charts fit to.
  XExtent pageExtent() const;
  /// A chart was zoomed or panned: the others show the same range.
  void linkRange(ChartView* from, double lo, double hi);
  void onExportPng();
  void onExportCsv();
  void onExportRunCsv();
  void doRefresh();

  StoreClient* store_ = nullptr;
  MetricsModel* model_ = nullptr;
  QStringList runs_;
  QStringList names_;
  QHash<QString, ChartView*> charts_;
  QWidget* grid_ = nullptr;
  QComboBox* x_combo_ = nullptr;
  QSlider* smooth_ = nullptr;
  QLabel* smooth_label_ = nullptr;
  QCheckBox* log_ = nullptr;
  QToolButton* export_csv_ = nullptr;
  QLabel* error_ = nullptr;
  XAxis axis_ = XAxis::Step;
  int columns_ = 0;
  bool linking_ = false;  // inside linkRange(): the others' range changes are not the user's
  QTimer refresh_timer_;
  QTimer columns_timer_;  // a resize: columns chosen once the plots are laid out
};

}  // namespace td::gui
