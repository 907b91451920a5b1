#include "gui/charts/chart_view.h"

#include <QVBoxLayout>

#include <qcustomplot.h>

#include "gui/charts/axis_tickers.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace td::gui {

namespace {

// Tableau 10: distinct on light and dark backgrounds.
const QColor kPalette[] = {QColor(0x4E, 0x79, 0xA7), QColor(0xF2, 0x8E, 0x2B), QColor(0xE1, 0x57, 0x59),
                           QColor(0x76, 0xB7, 0xB2), QColor(0x59, 0xA1, 0x4F), QColor(0xED, 0xC9, 0x48),
                           QColor(0xB0, 0x7A, 0xA1), QColor(0xFF, 0x9D, 0xA7), QColor(0x9C, 0x75, 0x5F),
                           QColor(0xBA, 0xB0, 0xAC)};

QColor seriesColour(int i) { return kPalette[static_cast<size_t>(i) % std::size(kPalette)]; }

}  // namespace

ChartView::ChartView(MetricsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  plot_ = new QCustomPlot(this);
  plot_->setMinimumSize(240, 160);
  layout->addWidget(plot_);

  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  // Antialiased lines and band fills cost 5-10x the replot of a noisy band (bench_charts:
  // 54 ms -> 5 ms for a chart of two noisy series); text stays antialiased.
  plot_->setNotAntialiasedElements(QCP::aeFills | QCP::aePlottables);
  plot_->axisRect()->setRangeDrag(Qt::Horizontal);
  plot_->axisRect()->setRangeZoom(Qt::Horizontal);
  plot_->xAxis->setLabel(xAxisTitle(axis_));
  plot_->xAxis->setTicker(QSharedPointer<CountTicker>::create(true));
  plot_->xAxis->setNumberFormat(QStringLiteral("f"));  // steps: whole numbers
  plot_->xAxis->setNumberPrecision(0);
  plot_->yAxis->setTicker(QSharedPointer<CountTicker>::create());
  plot_->yAxis2->setTicker(QSharedPointer<CountTicker>::create());
  // The legend goes below the plot, never over the data: a row of the plot's layout, entries
  // side by side, two per line.
  plot_->legend->setVisible(false);
  plot_->legend->setFont(QFont(font().family(), std::max(7, font().pointSize() - 1)));
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  plot_->axisRect()->insetLayout()->simplify();
  // In a row of its own beside a stretching spacer: a cell's maximum width is the smallest of
  // its column's elements, and an empty legend's is a few pixels (it would squeeze the plot).
  auto* legend_row = new QCPLayoutGrid;
  plot_->plotLayout()->addElement(plot_->plotLayout()->rowCount(), 0, legend_row);
  plot_->plotLayout()->setRowStretchFactor(plot_->plotLayout()->rowCount() - 1, 0.001);
  legend_row->addElement(0, 0, plot_->legend);
  legend_row->addElement(0, 1, new QCPLayoutElement(plot_));
  legend_row->setColumnStretchFactor(0, 0.001);
  legend_row->setMargins(QMargins(0, 0, 0, 0));
  plot_->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot_->legend->setWrap(2);
  plot_->legend->setMargins(QMargins(4, 2, 4, 2));

  empty_ = new QCPItemText(plot_);
  empty_->position->setType(QCPItemPosition::ptAxisRectRatio);
  empty_->position->setCoords(0.5, 0.5);
  empty_->setPositionAlignment(Qt::AlignCenter);
  empty_->setTextAlignment(Qt::AlignCenter);
  empty_->setClipToAxisRect(false);
  empty_->setColor(palette().color(QPalette::PlaceholderText));
  empty_->setText(tr("No run selected."));
  applyPalette();

  query_timer_.setSingleShot(true);
  query_timer_.setInterval(0);
  connect(&query_timer_, &QTimer::timeout, this, &ChartView::query);
  connect(plot_->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this](const QCPRange& r) {
    if (!quiet_) fit_ = false;
    emit xRangeChanged(r.lower, r.upper);
    if (!quiet_) emit userXRangeChanged(r.lower, r.upper);
    onRangeChanged();
  });
  connect(plot_->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this](const QCPRange& r) {
    if (secondary_ratio_ > 0) plot_->yAxis2->setRange(r.lower * secondary_ratio_, r.upper * secondary_ratio_);
  });
  connect(plot_, &QCustomPlot::mouseMove, this, &ChartView::onMouseMove);
  connect(plot_, &QCustomPlot::afterReplot, this, &ChartView::replotted);
  connect(model_, &MetricsModel::envelopeReady, this, &ChartView::onEnvelope);
  connect(model_, &MetricsModel::factsReady, this, &ChartView::onFacts);
}

ChartView::~ChartView() = default;

void ChartView::applyPalette() {
  // The plot follows the widget palette (the app's theme: light, dark or the desktop's), so a
  // dark theme gets dark charts. Series colours are chosen to read on both.
  const QPalette pal = palette();
  const QColor base = pal.color(QPalette::Base), text = pal.color(QPalette::Text);
  QColor grid = text;
  grid.setAlpha(40);
  plot_->setBackground(pal.color(QPalette::Window));
  plot_->axisRect()->setBackground(base);
  for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis, plot_->xAxis2, plot_->yAxis2}) {
    axis->setBasePen(QPen(text));
    axis->setTickPen(QPen(text));
    axis->setSubTickPen(QPen(text));
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->grid()->setPen(QPen(grid, 0, Qt::DotLine));
  }
  plot_->legend->setBrush(base);
  plot_->legend->setTextColor(text);
  plot_->legend->setBorderPen(QPen(grid));
  if (title_) title_->setTextColor(text);
  empty_->setColor(pal.color(QPalette::PlaceholderText));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange) applyPalette();
  // QCustomPlot draws its texts itself: nothing of the i18n's widget walk reaches them.
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

QString ChartView::xAxisTitle(XAxis axis) const {
  return axis == XAxis::Tokens ? tr("tokens") : axis == XAxis::WallTime ? tr("elapsed time (h:m:s)") : tr("step");
}

void ChartView::retranslate() {
  plot_->xAxis->setLabel(xAxisTitle(axis_));
  rebuildSeries();  // the labels (" rank %1"), in place: the graphs and their data stay
  if (runs_.isEmpty()) empty_->setText(tr("No run selected."));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString ChartView::title() const { return title_ ? title_->text() : QString(); }

QString ChartView::xAxisLabel() const { return plot_->xAxis->label(); }

void ChartView::setTitle(const QString& title) {
  if (!title_) {
    plot_->plotLayout()->insertRow(0);
    title_ = new QCPTextElement(plot_, title, QFont(font().family(), font().pointSize(), QFont::Bold));
    title_->setTextColor(palette().color(QPalette::Text));
    plot_->plotLayout()->addElement(0, 0, title_);
  }
  title_->setText(title);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartView::setAxisLabels(const QString& left, const QString& right) {
  plot_->yAxis->setLabel(left);
  plot_->yAxis2->setLabel(right);
}

void ChartView::setSecondaryScale(const QString& metric, const QString& of_metric, const QString& label) {
  secondary_metric_ = metric;
  secondary_of_ = of_metric;
  secondary_label_ = label;
  updateSecondary();
}

void ChartView::updateSecondary() {
  // One ratio per run from its last values (both metrics are written at every step); the axis
  // only when every run shown has the same (within float rounding: 1e-6 relative).
  double ratio = 0;
  bool agree = !secondary_metric_.isEmpty() && !runs_.isEmpty();
  for (const QString& run : std::as_const(runs_)) {
    const RunFacts* f = factsOf(run);
    const double r = f ? f->ratio(secondary_metric_, secondary_of_) : 0;
    if (!(r > 0)) continue;
    if (ratio == 0) ratio = r;
    else if (std::abs(r - ratio) > 1e-6 * ratio) agree = false;
  }
  secondary_ratio_ = agree ? ratio : 0;
  bool right = secondary_ratio_ > 0;
  for (const Series& ser : series_) right = right || ser.spec.side == YSide::Right;
  plot_->yAxis2->setVisible(right);
  if (secondary_ratio_ > 0) {
    plot_->yAxis2->setLabel(secondary_label_);
    const QCPRange r = plot_->yAxis->range();
    plot_->yAxis2->setRange(r.lower * secondary_ratio_, r.upper * secondary_ratio_);
  }
}

void ChartView::setValueFormat(YSide side, ValueFormat format) {
  QCPAxis* axis = side == YSide::Left ? plot_->yAxis : plot_->yAxis2;
  formats_[side == YSide::Left ? 0 : 1] = format;
  if (log_) return;  // the log ticker stays until log scale is turned off
  if (format == ValueFormat::Plain)
    axis->setTicker(QSharedPointer<QCPAxisTicker>(new CountTicker));
  else
    axis->setTicker(QSharedPointer<QCPAxisTicker>(new BytesTicker(format == ValueFormat::BytesPerSecond)));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartView::setMetrics(const QList<MetricSpec>& metrics) {
  metrics_ = metrics;
  rebuildSeries();
}

void ChartView::setEmptyText(const QString& text) {
  // Wrapped at about 50 characters (QCPItemText does not wrap).
  QStringList lines{QString()};
  for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    if (!lines.back().isEmpty() && lines.back().size() + 1 + word.size() > 50) lines << QString();
    lines.back() += (lines.back().isEmpty() ? QString() : QStringLiteral(" ")) + word;
  }
  empty_text_ = text;
  empty_->setText(lines.join(QLatin1Char('\n')));
  updateEmpty();
}

void ChartView::setRuns(const QStringList& run_ids) {
  runs_ = run_ids;
  fit_ = true;
  have_extent_ = false;
  for (const QString& r : runs_)
    if (!model_->facts(r) && !model_->factsPending(r)) model_->requestFacts(r);
  rebuildSeries();
  refresh();
}

const RunFacts* ChartView::factsOf(const QString& run) const { return model_->facts(run); }

void ChartView::rebuildSeries() {
  // The series the runs' facts say exist, in run order, then metric order, then rank.
  std::vector<Series> want;
  const bool overlay = runs_.size() > 1;
  for (int ri = 0; ri < runs_.size(); ++ri) {
    const RunFacts* f = factsOf(runs_[ri]);
    if (!f) continue;
    for (int mi = 0; mi < metrics_.size(); ++mi) {
      const MetricSpec& m = metrics_[mi];
      const std::string name = m.metric.toStdString();
      std::vector<int> ranks;
      for (const auto& info : f->series)
        if (info.name == name && (m.all_ranks || info.rank == 0)) ranks.push_back(info.rank);
      for (int rank : ranks) {
        Series s;
        s.key = SeriesKey{runs_[ri], m.metric, rank};
        s.spec = m;
        s.label = m.label;
        // A rank's series names its host where the run says (a multi-node run: one node each).
        if (ranks.size() > 1 || (m.all_ranks && f->world_size > 1)) {
          const bool host = rank >= 0 && size_t(rank) < f->hosts.size() && !f->hosts[size_t(rank)].isEmpty();
          s.label += host ? tr(" rank %1 (%2)").arg(rank).arg(f->hosts[size_t(rank)]) : tr(" rank %1").arg(rank);
        }
        if (overlay) s.label = f->label() + QStringLiteral(" · ") + s.label;  // the run's name
        const int colour = overlay ? ri : static_cast<int>(want.size());
        s.color = seriesColour(colour);
        want.push_back(std::move(s));
      }
    }
  }
  bool same = want.size() == series_.size();
  for (size_t i = 0; same && i < want.size(); ++i)
    same = want[i].key == series_[i].key && want[i].color == series_[i].color &&
           want[i].spec.style == series_[i].spec.style && want[i].spec.side == series_[i].spec.side &&
           want[i].spec.smooth == series_[i].spec.smooth;
  if (same) {
    // Only the texts may differ (a run renamed, another language): the legend, in place.
    for (size_t i = 0; i < want.size(); ++i) {
      series_[i].spec = want[i].spec;
      if (series_[i].label == want[i].label) continue;
      series_[i].label = want[i].label;
      series_[i].line->setName(want[i].label);
      plot_->replot(QCustomPlot::rpQueuedReplot);
    }
    updateSecondary();  // the runs' facts (and so their ratios) may be new
    return;
  }

  // Rebuild the graphs (keeping drawn data of series that stay).
  for (Series& s : series_) {
    if (std::none_of(want.begin(), want.end(), [&](const Series& w) { return w.key == s.key; }))
      model_->forget(s.key);
  }
  plot_->clearGraphs();
  bool right = false;
  for (size_t i = 0; i < want.size(); ++i) {
    Series& s = want[i];
    for (const Series& old : series_)
      if (old.key == s.key) {
        s.buckets = old.buckets;
        s.raw = old.raw;
      }
    QCPAxis* y = s.spec.side == YSide::Right ? plot_->yAxis2 : plot_->yAxis;
    right |= s.spec.side == YSide::Right;
    QColor band = s.color;
    band.setAlpha(60);
    s.lo = plot_->addGraph(plot_->xAxis, y);
    s.hi = plot_->addGraph(plot_->xAxis, y);
    for (QCPGraph* g : {s.lo, s.hi}) {
      g->setPen(Qt::NoPen);
      g->removeFromLegend();
      g->setAdaptiveSampling(false);  // every bucket's extreme drawn: the band is the point
    }
    s.hi->setBrush(band);
    s.hi->setChannelFillGraph(s.lo);
    if (s.spec.smooth) {
      QColor faint = s.color;
      faint.setAlpha(90);
      s.faint = plot_->addGraph(plot_->xAxis, y);
      s.faint->setPen(QPen(faint, 1.0));
      s.faint->removeFromLegend();
    }
    s.line = plot_->addGraph(plot_->xAxis, y);
    QPen pen(s.color, 1.6);
    // Several runs share a colour per run: a run's second line metric is dashed.
    if (runs_.size() > 1) {
      int nth = 0;
      for (size_t j = 0; j < i; ++j) nth += want[j].key.run_id == s.key.run_id && want[j].spec.style == SeriesStyle::Line;
      if (nth % 2 == 1 && s.spec.style == SeriesStyle::Line) pen.setStyle(Qt::DashLine);
    }
    s.line->setPen(pen);
    s.line->setName(s.label);
    if (s.spec.style == SeriesStyle::Markers) {
      s.line->setLineStyle(QCPGraph::lsNone);
      s.line->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, s.color, s.color, 6));
    }
  }
  series_ = std::move(want);
  plot_->yAxis2->setVisible(right);
  updateSecondary();
  plot_->legend->setVisible(!series_.empty());
  redrawAll();
}

void ChartView::refresh() {
  rebuildSeries();
  const XExtent e = extent_source_ ? extent_source_() : extentOf(runs_, axis_);
  if (e.any) {
    double lo = e.lo, hi = e.hi;
    if (hi - lo < 1) {
      lo = std::max(0.0, lo - 0.5);  // steps, tokens and elapsed time are never negative
      hi = lo + 1;
    }
    // Markers (val loss) at the last step are drawn whole: 2% of room on the right.
    if (e.markers) hi += 0.02 * (hi - lo);
    const QCPRange r = plot_->xAxis->range();
    if (fit_) {
      setRangeQuietly(lo, hi);
    } else if (have_extent_ && hi > extent_hi_ && r.upper >= extent_hi_) {
      setRangeQuietly(r.lower + (hi - extent_hi_), r.upper + (hi - extent_hi_));  // follow the tail
    }
    extent_hi_ = hi;
    have_extent_ = true;
  } else if (fit_) {
    // Nothing to show (a new run's first step not stored yet): not the last run's ranges.
    setRangeQuietly(0, 1);
    plot_->yAxis->setRange(0, 1);
  }
  updateEmpty();
  // Re-read the visible range only of series whose stored rows changed (count, last step,
  // extremes, last value): new rows past a zoomed-in window cost nothing. A moved range
  // (following the tail) is re-queried anyway.
  bool changed = false;
  for (const Series& ser : series_) {
    const RunFacts* f = factsOf(ser.key.run_id);
    const td::store::MetricInfo* m = f ? f->find(ser.key.metric, ser.key.rank) : nullptr;
    if (!m) continue;
    const QString sig = QStringLiteral("%1 %2 %3 %4 %5").arg(m->count).arg(m->last_step).arg(m->min_value, 0, 'g', 17).arg(m->max_value, 0, 'g', 17).arg(m->last_value, 0, 'g', 17);
    changed = changed || signature_.value(ser.key) != sig;
    signature_[ser.key] = sig;
  }
  scheduleQuery(changed);
}

void ChartView::onFacts(const QString& run_id) {
  if (runs_.contains(run_id)) refresh();
}

void XExtent::add(const XExtent& o) {
  markers = markers || o.markers;
  if (!o.any) return;
  lo = any ? std::min(lo, o.lo) : o.lo;
  hi = any ? std::max(hi, o.hi) : o.hi;
  any = true;
}

XExtent ChartView::extentOf(const QStringList& runs, XAxis axis) const {
  // The series rebuildSeries() makes of these runs (by their facts, not by series_, so that a
  // page can ask before a chart has caught up with new runs).
  XExtent e;
  for (const QString& run : runs) {
    const RunFacts* f = factsOf(run);
    if (!f) continue;
    for (const MetricSpec& spec : metrics_) {
      const std::string name = spec.metric.toStdString();
      for (const auto& info : f->series) {
        if (info.name != name || !(spec.all_ranks || info.rank == 0)) continue;
        e.markers = e.markers || spec.style == SeriesStyle::Markers;
        if (info.count == 0) continue;
        XExtent one;
        one.any = true;
        one.lo = f->toX(axis, static_cast<double>(info.first_step));
        one.hi = f->toX(axis, static_cast<double>(info.last_step));
        e.add(one);
      }
    }
  }
  return e;
}

void ChartView::setExtentSource(std::function<XExtent()> source) { extent_source_ = std::move(source); }

void ChartView::setRangeQuietly(double lo, double hi) {
  quiet_ = true;
  plot_->xAxis->setRange(lo, hi);
  quiet_ = false;
}

void ChartView::setXAxis(XAxis axis) {
  if (axis == axis_) return;
  // Keep the visible steps: through the first run with facts.
  const QCPRange r = plot_->xAxis->range();
  const RunFacts* f = runs_.isEmpty() ? nullptr : factsOf(runs_.front());
  const XAxis old = axis_;
  axis_ = axis;
  plot_->xAxis->setLabel(xAxisTitle(axis));
  if (axis == XAxis::WallTime) {
    auto t = QSharedPointer<QCPAxisTickerTime>::create();
    t->setTimeFormat(QStringLiteral("%h:%m:%s"));
    plot_->xAxis->setTicker(t);
  } else {
    plot_->xAxis->setTicker(QSharedPointer<CountTicker>::create(true));
  }
  // Steps and tokens as whole numbers, 10k / 1.5M / 2B from ten thousand up.
  plot_->xAxis->setNumberFormat(QStringLiteral("f"));
  plot_->xAxis->setNumberPrecision(0);
  if (f) {
    const double s0 = f->toStep(old, r.lower), s1 = f->toStep(old, r.upper);
    const bool was_fit = fit_;
    setRangeQuietly(f->toX(axis, s0), f->toX(axis, s1));
    fit_ = was_fit;
  }
  have_extent_ = false;
  redrawAll();
  refresh();
}

void ChartView::setSmoothing(double weight) {
  smoothing_ = std::clamp(weight, 0.0, 0.999);
  redrawAll();
}

void ChartView::setLogScale(bool on) {
  log_ = on;
  for (QCPAxis* y : {plot_->yAxis, plot_->yAxis2}) {
    y->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (on)
      y->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    y->setNumberFormat(on ? QStringLiteral("eb") : QStringLiteral("gb"));
  }
  if (!on) {
    setValueFormat(YSide::Left, formats_[0]);
    setValueFormat(YSide::Right, formats_[1]);
  }
  fitY();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartView::setXRange(double lo, double hi) {
  fit_ = false;
  plot_->xAxis->setRange(lo, hi);  // rangeChanged -> query
}

QPair<double, double> ChartView::xRange() const {
  const QCPRange r = plot_->xAxis->range();
  return {r.lower, r.upper};
}

void ChartView::fitAll() {
  fit_ = true;
  refresh();
}

void ChartView::onRangeChanged() {
  fitY();
  plot_->replot(QCustomPlot::rpQueuedReplot);
  scheduleQuery(false);
}

void ChartView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  scheduleQuery(false);
  emit resized();
}

void ChartView::setColumns(int columns) {
  columns = std::max(0, columns);
  if (columns == columns_) return;
  columns_ = columns;
  scheduleQuery(false);
}

int ChartView::plotColumns() const {
  const int w = plot_->axisRect()->width();
  // Not laid out yet (hidden): the widget's width is the best guess.
  return std::max(16, w > 16 ? w : width() - 80);
}

void ChartView::scheduleQuery(bool force) {
  force_next_ = force_next_ || force;
  if (!query_timer_.isActive()) query_timer_.start();
}

void ChartView::query() {
  const bool force = force_next_;
  force_next_ = false;
  const QCPRange r = plot_->xAxis->range();
  const int cols = columns();
  for (Series& s : series_) {
    const RunFacts* f = factsOf(s.key.run_id);
    const td::store::MetricInfo* m = f ? f->find(s.key.metric, s.key.rank) : nullptr;
    if (!m || m->count == 0) continue;
    const double a = f->toStep(axis_, r.lower), b = f->toStep(axis_, r.upper);
    const int64_t lo = std::max<int64_t>(m->first_step, static_cast<int64_t>(std::floor(std::min(a, b))));
    const int64_t hi = std::min<int64_t>(m->last_step, static_cast<int64_t>(std::ceil(std::max(a, b))));
    if (lo > hi) continue;  // nothing of this series in view: its last data stays off-screen
    // Pixel columns the series' part of the range spans: never more points than columns.
    const double span = std::max(1e-9, std::abs(b - a));
    const int width = std::clamp(static_cast<int>(std::ceil(cols * (static_cast<double>(hi - lo) + 1) / span)), 1, cols);
    model_->requestEnvelope(s.key, lo, hi, width, force);
  }
}

void ChartView::onEnvelope(const SeriesKey& key) {
  const int i = seriesIndex(key);
  if (i < 0) return;
  const SeriesEnvelope* e = model_->envelope(key);
  if (!e) return;
  Series& s = series_[static_cast<size_t>(i)];
  s.buckets = e->env.buckets;
  s.raw = e->env.raw();
  drawSeries(s);
  fitY();
  updateEmpty();
  plot_->replot(QCustomPlot::rpQueuedReplot);
  emit dataDrawn();
}

void ChartView::drawSeries(Series& s) {
  const RunFacts* f = factsOf(s.key.run_id);
  const size_t n = s.buckets.size();
  auto xOf = [&](double step) { return f ? f->toX(axis_, step) : step; };
  s.xs.resize(n);
  for (size_t i = 0; i < n; ++i) s.xs[i] = xOf(midStep(s.buckets[i]));
  // The line: every bucket's mean at its middle; a bucketed series also starts at its first
  // step's stored value and ends at its last step's, so the run's first and last values are
  // drawn exactly (a 64-step bucket's mean of 3.3 hid a first loss of 5.5).
  QVector<double> x, y, bx, lo, hi;  // the line; the band (one point per bucket)
  const bool anchors = !s.raw && n > 0;
  if (anchors && s.buckets.front().step_min < midStep(s.buckets.front())) {
    x << xOf(static_cast<double>(s.buckets.front().step_min));
    y << s.buckets.front().v_first;
  }
  for (size_t i = 0; i < n; ++i) {
    const td::store::Bucket& b = s.buckets[i];
    x << s.xs[i];
    y << b.mean();
    bx << s.xs[i];
    lo << b.v_min;
    hi << b.v_max;
  }
  if (anchors && s.buckets.back().step_max > midStep(s.buckets.back())) {
    x << xOf(static_cast<double>(s.buckets.back().step_max));
    y << s.buckets.back().v_last;
  }
  const bool smoothed = smoothing_ > 0 && s.spec.smooth;
  if (smoothed) {
    const std::vector<double> line = ema(std::vector<double>(y.begin(), y.end()), smoothing_);
    s.faint->setData(x, y, true);
    s.line->setData(x, QVector<double>(line.begin(), line.end()), true);
  } else {
    if (s.faint) s.faint->data()->clear();
    s.line->setData(x, y, true);
  }
  if (s.raw) {
    s.lo->data()->clear();
    s.hi->data()->clear();
  } else {
    s.lo->setData(bx, lo, true);
    s.hi->setData(bx, hi, true);
  }
}

void ChartView::redrawAll() {
  for (Series& s : series_) drawSeries(s);
  fitY();
  updateEmpty();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartView::fitY() {
  // Each y axis fits the band (or line) of its series inside the visible x range, 5% margin.
  const QCPRange xr = plot_->xAxis->range();
  for (QCPAxis* axis : {plot_->yAxis, plot_->yAxis2}) {
    double lo = std::numeric_limits<double>::max(), hi = std::numeric_limits<double>::lowest();
    for (const Series& s : series_) {
      if (s.line->valueAxis() != axis) continue;
      for (QCPGraph* g : {s.line, s.lo, s.hi})
        for (auto it = g->data()->findBegin(xr.lower); it != g->data()->findEnd(xr.upper); ++it) {
          const double v = it->value;
          if (!std::isfinite(v) || (log_ && v <= 0)) continue;
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
    }
    if (lo > hi) continue;
    // Bytes: at least 2% of the value in view (205 MiB +- 0.05 MiB is flat, not a cliff),
    // so that the binary-unit ticks land on distinct whole labels.
    if (!log_ && formats_[axis == plot_->yAxis ? 0 : 1] != ValueFormat::Plain) {
      const double min_span = 0.02 * std::max(std::abs(lo), std::abs(hi));
      if (hi - lo < min_span) {
        const double c = 0.5 * (lo + hi);
        lo = std::max(0.0, c - 0.5 * min_span);
        hi = lo + min_span;
      }
    }
    if (log_) {
      axis->setRange(lo / 1.15, hi * 1.15);
    } else {
      // A flat series (lr after warmup; a mean that differs from its values in the last bit)
      // gets +-5% of its value rather than a range too narrow to label.
      const double scale = std::max(std::abs(lo), std::abs(hi));
      const double pad = std::max({0.05 * (hi - lo), 0.05 * scale * (hi - lo < 1e-6 * scale), 1e-12});
      axis->setRange(lo - pad, hi + pad);
      // Enough significant digits that neighbouring ticks differ (RSS of 1.00002e8 bytes).
      const double span = std::max(hi - lo + 2 * pad, 1e-300);
      const int digits = static_cast<int>(std::ceil(std::log10(std::max(scale, 1e-300) / span))) + 2;
      axis->setNumberPrecision(std::clamp(digits, 3, 12));
    }
  }
}

void ChartView::updateEmpty() {
  bool any = false;
  for (const Series& s : series_) any = any || !s.line->data()->isEmpty();
  if (runs_.isEmpty()) empty_->setText(tr("No run selected."));
  else if (empty_->text() == tr("No run selected.")) setEmptyText(empty_text_);
  empty_->setVisible(!any);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool ChartView::emptyTextVisible() const { return empty_->visible(); }

double ChartView::midStep(const td::store::Bucket& b) {
  return 0.5 * (static_cast<double>(b.step_min) + static_cast<double>(b.step_max));
}

}  // namespace td::gui
