// ChartView: the one adapter over QCustomPlot (the only code, with dashboard.cpp's helpers in
// this folder, that includes qcustomplot.h). Draws metric series of one or more runs from a
// MetricsModel: for each series a line through the bucket means (the stored values when zoomed
// in to single steps) and a min/max band (two QCPGraphs, the upper filled down to the lower),
// so a one-step spike hidden in a million steps stays visible at full zoom-out.
//
// Interaction: drag pans and the wheel zooms the x axis; the y axes fit the visible data. Each
// change of the visible range (and of the widget's width) re-queries the visible steps at the
// plot's pixel width (or the column count its page gives every chart: setColumns), coalesced
// (one query per series per event-loop pass). Hover shows the
// stored value of the nearest point (zoomed out: its bucket's min and max with their steps).
//
// Threading rule: GUI thread only. Queries go through MetricsModel (StoreClient jobs); replots
// are queued (QCustomPlot::rpQueuedReplot); nothing here waits on the store.
#pragma once

#include <QColor>
#include <QHash>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <vector>

#include "gui/metrics/metrics_model.h"

class QCustomPlot;
class QCPGraph;
class QCPItemText;
class QCPTextElement;
class QMouseEvent;
class QTextStream;

namespace td::gui {

enum class SeriesStyle { Line, Markers };
enum class YSide { Left, Right };
/// How a y axis writes its tick labels: plain numbers, or binary byte units (KiB, MiB, GiB).
enum class ValueFormat { Plain, Bytes, BytesPerSecond };

/// A metric a chart shows for each of its runs that has it.
struct MetricSpec {
  QString metric;  // stored name: loss, val_loss, tokens_per_s, mfu, rss_bytes, ...
  QString label;   // legend text (translated)
  SeriesStyle style = SeriesStyle::Line;
  YSide side = YSide::Left;
  bool all_ranks = false;  // one series per rank the run has (else rank 0 only)
  /// A noisy series (loss, gradient norm, throughput): the smoothing slider applies to it, its
  /// unsmoothed line stays faint behind. Series that are exact by construction (lr, memory,
  /// sparse val_loss markers) are never smoothed.
  bool smooth = false;
};

/// The x extent, in an axis' unit, of the rows some runs have stored of a chart's metrics: what
/// fitting the x axis shows (ChartView::extentOf; Dashboard joins its charts' into one).
struct XExtent {
  bool any = false;      // some series has a row (lo, hi meaningful)
  double lo = 0, hi = 0;
  bool markers = false;  // a marker series (val_loss) is among them: room after the last step
  void add(const XExtent& o);
};

/// The drawn point nearest to an x coordinate (hover read-out).
struct Readout {
  bool valid = false;
  SeriesKey key;
  QString label;            // the series' legend text
  bool raw = true;          // a stored row (zoomed in) or a bucket of several steps
  double x = 0;             // where it is drawn, in the x axis' unit
  int64_t step = 0;         // raw: its step; bucket: the step at its x (mid of the bucket)
  double value = 0;         // raw: the stored value; bucket: the mean of its values
  int64_t step_min = 0, step_max = 0, n = 1;  // steps covered and rows summarised
  double v_min = 0, v_max = 0;                // bucket min / max (raw: the value)
  int64_t step_at_min = 0, step_at_max = 0;   // earliest step holding v_min / v_max
  QString text;             // one line as the hover shows it
};

class ChartView : public QWidget {
  Q_OBJECT
 public:
  /// `model` is not owned and must outlive the view.
  explicit ChartView(MetricsModel* model, QWidget* parent = nullptr);
  ~ChartView() override;

  void setTitle(const QString& title);
  QString title() const;
  /// The x axis' title ("step", "tokens", "elapsed time (h:m:s)": translated, set by setXAxis).
  QString xAxisLabel() const;
  /// Axis titles (units included, e.g. "tokens/s", "MFU"); the right axis shows only when a
  /// metric is on the right side.
  void setAxisLabels(const QString& left, const QString& right = QString());
  /// Makes the right y axis a second scale of the left one: right = left * (last value of
  /// `metric` / last value of `of_metric`) of the runs shown, for a metric that is a constant
  /// multiple of another (MFU = tokens/s * FLOPs per token / peak FLOP/s, docs/events.md), so
  /// one line carries both and neither hides the other. `label` titles the axis. The axis is
  /// hidden while the runs' ratios are unknown or differ (runs of different models overlaid);
  /// the hover then still names the metric's value per point. Empty `metric`: off.
  void setSecondaryScale(const QString& metric, const QString& of_metric, const QString& label);
  /// The ratio right/left in use; 0 when the secondary axis is hidden.
  double secondaryRatio() const { return secondary_ratio_; }
  /// Tick labels of one y axis: bytes as "12.5 MiB", bytes/s as "1.2 GiB/s" (stored values
  /// stay in bytes; hover and CSV show them unscaled).
  void setValueFormat(YSide side, ValueFormat format);
  /// The metrics drawn for every run; series exist only for metrics a run has stored.
  void setMetrics(const QList<MetricSpec>& metrics);
  /// The sentence shown in the plot while no series has a point, saying why it is empty.
  void setEmptyText(const QString& text);
  /// Runs overlaid (one colour per run when several; one per metric when one). Requests
  /// their facts when the model has none yet; fits the x axis to all of them.
  void setRuns(const QStringList& run_ids);
  QStringList runs() const { return runs_; }

  void setXAxis(XAxis axis);  // keeps the visible steps
  XAxis xAxis() const { return axis_; }
  /// EMA weight in [0, 1) applied to the drawn line of the noisy series only (MetricSpec::
  /// smooth; ema() in run_facts.h); 0: off.
  void setSmoothing(double weight);
  double smoothing() const { return smoothing_; }
  void setLogScale(bool on);
  bool logScale() const { return log_; }

  /// Shows [lo, hi] in the x axis' unit and re-queries it (as a user zoom would).
  void setXRange(double lo, double hi);
  QPair<double, double> xRange() const;
  /// Shows every step of every series again (and follows new steps as they arrive).
  void fitAll();
  /// Re-reads the model's facts of the runs (new series, new last step) and re-queries the
  /// visible range, following the tail when the newest step was in view. Call after
  /// MetricsModel::factsReady (Dashboard does).
  void refresh();

  int seriesCount() const { return static_cast<int>(series_.size()); }
  SeriesKey seriesKey(int i) const;
  QString seriesLabel(int i) const;
  QColor seriesColor(int i) const;
  /// Index of `key`, or -1.
  int seriesIndex(const SeriesKey& key) const;

  /// What is on the plot for series i, read back from its QCPGraphs: x (axis unit), the line
  /// (smoothed when smoothing is on), and the band's lower and upper edge (empty when the
  /// series is drawn from raw rows: the band would be the line).
  /// A bucketed series' line begins at its first bucket's first step with that step's stored
  /// value and ends at its last bucket's last step with its value, so the run's first and last
  /// values are drawn exactly; the band has one point per bucket (at its middle). `unsmoothed`: the faint line behind
  /// a smoothed one (empty when smoothing is off or the series is not noisy).
  struct Drawn {
    std::vector<double> x, line, band_x, lo, hi, unsmoothed;
    bool raw = true;
  };
  Drawn drawn(int i) const;

  /// The point of series `series` (all series when -1) whose x is nearest to `x`.
  Readout pointNear(double x, int series = -1) const;
  /// The hover text at `x`: one line per series with points (its nearest point's Readout
  /// text), "" when nothing is drawn.
  QString readoutAt(double x) const;
  /// The text the last hover showed.
  QString hoverText() const { return hover_text_; }

  /// Whether the empty-state sentence is showing (no series has a point).
  bool emptyTextVisible() const;
  QString emptyText() const { return empty_text_; }
  QStringList legendLabels() const;
  QList<QColor> legendColors() const;
  /// Pixel columns of the plot area (the plot's width in pixels once laid out).
  int plotColumns() const;
  /// The pixel columns every query asks for (its max_points) instead of plotColumns(): a page
  /// of charts (Dashboard) gives each the same count, so that charts of different widths draw
  /// the same buckets for the same x range. Re-queries when it changes; 0: plotColumns().
  void setColumns(int columns);
  /// The columns queries use: setColumns()'s, else plotColumns().
  int columns() const { return columns_ > 0 ? columns_ : plotColumns(); }

  /// The x extent of the rows `runs` have stored of this chart's metrics (their facts in the
  /// model; runs without facts yet add nothing), in `axis`' unit.
  XExtent extentOf(const QStringList& runs, XAxis axis) const;
  /// Where fitting and following the tail take the x extent from: a page of linked charts
  /// (Dashboard) gives every chart the same, so their x ranges stay equal. Empty: this chart's
  /// own (extentOf(runs(), xAxis())).
  void setExtentSource(std::function<XExtent()> source);

  /// Saves the chart as PNG (QCustomPlot::savePng) at the widget's size when width/height are
  /// 0. Returns false when the file cannot be written.
  bool exportPng(const QString& path, int width = 0, int height = 0);
  /// Writes the points currently drawn (not the whole run: MetricsModel::exportRunCsv does
  /// that) as CSV with a header; stored values, never smoothed. Returns false on write errors.
  bool exportCsv(const QString& path) const;
  /// CSV rows `chart,run_id,metric,rank,x,step_min,step_max,n,value,min,max` per drawn point
  /// (value: the stored value, or the bucket mean); the header line first when `header`.
  void writeCsv(QTextStream& out, const QString& chart, bool header) const;

  /// The QCustomPlot inside (for the dashboard's layout and the benchmark's timing).
  QCustomPlot* plot() const { return plot_; }
  /// Replots at once (QCustomPlot::rpImmediateRefresh); the view itself only queues replots.
  /// For benchmarks and screenshots.
  void replotNow();
  /// The same as a plain QWidget (tests send mouse events to it without qcustomplot.h).
  QWidget* plotWidget() const;
  /// Where x (axis unit) is on plotWidget(): pixel position at the plot area's vertical middle.
  QPoint pixelOf(double x) const;

 signals:
  /// New data went onto the plot (a queued replot follows).
  void dataDrawn();
  /// A replot finished (QCustomPlot::afterReplot).
  void replotted();
  /// The visible x range changed (user zoom/pan or a call), in the x axis' unit.
  void xRangeChanged(double lo, double hi);
  /// The visible x range was changed by the user (drag, wheel) or setXRange(), not by fitting
  /// or following the tail: a page links its charts' zoom and pan through it.
  void userXRangeChanged(double lo, double hi);
  /// The widget was resized (its plot's columns may have changed).
  void resized();

 protected:
  void resizeEvent(QResizeEvent* e) override;
  void changeEvent(QEvent* event) override;

 private:
  ValueFormat formats_[2] = {ValueFormat::Plain, ValueFormat::Plain};  // left, right y axis
  void applyPalette();
  /// Re-sets every text QCustomPlot draws that this view made (x axis title, series labels,
  /// the "No run selected." placeholder) in the language installed now; the data stays.
  void retranslate();
  QString xAxisTitle(XAxis axis) const;
  struct Series {
    SeriesKey key;
    MetricSpec spec;
    QString label;
    QColor color;
    QCPGraph* line = nullptr;
    QCPGraph* hi = nullptr;
    QCPGraph* lo = nullptr;
    QCPGraph* faint = nullptr;  // the unsmoothed line behind a smoothed one
    std::vector<td::store::Bucket> buckets;  // what is drawn, by step
    std::vector<double> xs;                  // x of each bucket
    bool raw = true;
  };
  void rebuildSeries();
  void drawSeries(Series& s);
  void redrawAll();
  void fitY();
  void onEnvelope(const SeriesKey& key);
  void onFacts(const QString& run_id);
  void onRangeChanged();
  void scheduleQuery(bool force);
  void query();
  void onMouseMove(QMouseEvent* e);
  void updateEmpty();
  void updateSecondary();
  void setRangeQuietly(double lo, double hi);
  Readout readoutOf(const Series& s, size_t i) const;
  // The middle of a bucket's step span (where a bucket of several steps is drawn).
  static double midStep(const td::store::Bucket& b);
  const RunFacts* factsOf(const QString& run) const;

  MetricsModel* model_;
  QCustomPlot* plot_ = nullptr;
  QCPTextElement* title_ = nullptr;
  QCPItemText* empty_ = nullptr;
  QString empty_text_;
  QList<MetricSpec> metrics_;
  QStringList runs_;
  std::vector<Series> series_;
  XAxis axis_ = XAxis::Step;
  double smoothing_ = 0;
  bool log_ = false;
  bool fit_ = true;             // showing everything: refit when runs grow
  bool quiet_ = false;          // range being set by code, not by the user
  double extent_hi_ = 0;        // data extent's upper x at the last refresh
  bool have_extent_ = false;
  bool force_next_ = false;
  QHash<SeriesKey, QString> signature_;  // per series: its extents at the last refresh
  QString secondary_metric_, secondary_of_, secondary_label_;
  double secondary_ratio_ = 0;
  int columns_ = 0;  // setColumns(); 0: plotColumns()
  std::function<XExtent()> extent_source_;
  QTimer query_timer_;
  QString hover_text_;
};

}  // namespace td::gui
