// ChartView's read-back half (chart_view.h): the series accessors, the hover readout, the legend
// and the exports (PNG, CSV). Building, querying and drawing the series are in chart_view.cpp.
#include "gui/charts/chart_view.h"

#include <QFile>
#include <QLocale>
#include <QMouseEvent>
#include <QTextStream>
#include <QToolTip>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace td::gui {

namespace {

// The shortest text that reads back to the same double (CSV).
QString num(double v) { return QString::number(v, 'g', QLocale::FloatingPointShortest); }
// A value as the hover shows it: 5 significant digits (2.4837, 11748, 0.00030000 -> 0.0003).
QString shown(double v) { return QString::number(v, 'g', 5); }

}  // namespace

SeriesKey ChartView::seriesKey(int i) const { return series_.at(static_cast<size_t>(i)).key; }
QString ChartView::seriesLabel(int i) const { return series_.at(static_cast<size_t>(i)).label; }
QColor ChartView::seriesColor(int i) const { return series_.at(static_cast<size_t>(i)).color; }

int ChartView::seriesIndex(const SeriesKey& key) const {
  for (size_t i = 0; i < series_.size(); ++i)
    if (series_[i].key == key) return static_cast<int>(i);
  return -1;
}

ChartView::Drawn ChartView::drawn(int i) const {
  Drawn d;
  const Series& s = series_.at(static_cast<size_t>(i));
  d.raw = s.raw;
  for (auto it = s.line->data()->constBegin(); it != s.line->data()->constEnd(); ++it) {
    d.x.push_back(it->key);
    d.line.push_back(it->value);
  }
  for (auto it = s.lo->data()->constBegin(); it != s.lo->data()->constEnd(); ++it) {
    d.band_x.push_back(it->key);
    d.lo.push_back(it->value);
  }
  for (auto it = s.hi->data()->constBegin(); it != s.hi->data()->constEnd(); ++it) d.hi.push_back(it->value);
  if (s.faint)
    for (auto it = s.faint->data()->constBegin(); it != s.faint->data()->constEnd(); ++it) d.unsmoothed.push_back(it->value);
  return d;
}

QStringList ChartView::legendLabels() const {
  QStringList out;
  for (int i = 0; i < plot_->legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot_->legend->item(i))) out << item->plottable()->name();
  return out;
}

QList<QColor> ChartView::legendColors() const {
  QList<QColor> out;
  for (int i = 0; i < plot_->legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot_->legend->item(i)))
      out << item->plottable()->pen().color();
  return out;
}

Readout ChartView::readoutOf(const Series& s, size_t i) const {
  const td::store::Bucket& b = s.buckets[i];
  Readout r;
  r.valid = true;
  r.key = s.key;
  r.label = s.label;
  r.raw = b.n == 1;
  r.x = s.xs[i];
  r.step = r.raw ? b.step_min : static_cast<int64_t>(std::llround(midStep(b)));
  r.value = r.raw ? b.v_first : b.mean();
  r.step_min = b.step_min;
  r.step_max = b.step_max;
  r.n = b.n;
  r.v_min = b.v_min;
  r.v_max = b.v_max;
  r.step_at_min = b.step_at_min;
  r.step_at_max = b.step_at_max;
  if (r.raw)
    r.text = tr("%1: %2 at step %3").arg(s.label, shown(r.value)).arg(r.step);
  else
    r.text = tr("%1: steps %2-%3 (%4 values): min %5 at step %6, max %7 at step %8, mean %9")
                 .arg(s.label)
                 .arg(b.step_min)
                 .arg(b.step_max)
                 .arg(b.n)
                 .arg(shown(b.v_min))
                 .arg(b.step_at_min)
                 .arg(shown(b.v_max))
                 .arg(b.step_at_max)
                 .arg(shown(b.mean()));
  // The second scale's value of the same point (MFU of a tokens/s point), per run.
  if (!secondary_metric_.isEmpty() && s.key.metric == secondary_of_ && s.key.rank == 0) {
    const RunFacts* f = factsOf(s.key.run_id);
    const double k = f ? f->ratio(secondary_metric_, secondary_of_) : 0;
    if (k > 0) r.text += tr(" · %1: %2").arg(secondary_label_, shown(r.value * k));
  }
  return r;
}

Readout ChartView::pointNear(double x, int series) const {
  Readout best;
  double best_d = std::numeric_limits<double>::max();
  for (size_t si = 0; si < series_.size(); ++si) {
    if (series >= 0 && static_cast<size_t>(series) != si) continue;
    const Series& s = series_[si];
    if (s.xs.empty()) continue;
    size_t i = static_cast<size_t>(std::lower_bound(s.xs.begin(), s.xs.end(), x) - s.xs.begin());
    if (i == s.xs.size() || (i > 0 && std::abs(s.xs[i - 1] - x) <= std::abs(s.xs[i] - x))) i = i == 0 ? 0 : i - 1;
    const double d = std::abs(s.xs[i] - x);
    if (d < best_d) {
      best_d = d;
      best = readoutOf(s, i);
    }
  }
  return best;
}

QString ChartView::readoutAt(double x) const {
  QStringList lines;
  for (int i = 0; i < seriesCount(); ++i) {
    const Readout r = pointNear(x, i);
    if (r.valid) lines << r.text;
  }
  return lines.join(QLatin1Char('\n'));
}

void ChartView::onMouseMove(QMouseEvent* e) {
  if (!plot_->axisRect()->rect().contains(e->pos())) {
    QToolTip::hideText();
    return;
  }
  hover_text_ = readoutAt(plot_->xAxis->pixelToCoord(e->pos().x()));
  if (!hover_text_.isEmpty()) QToolTip::showText(e->globalPosition().toPoint(), hover_text_, plot_);
}

void ChartView::replotNow() { plot_->replot(QCustomPlot::rpImmediateRefresh); }

QWidget* ChartView::plotWidget() const { return plot_; }

QPoint ChartView::pixelOf(double x) const {
  return QPoint(static_cast<int>(std::lround(plot_->xAxis->coordToPixel(x))), plot_->axisRect()->center().y());
}

bool ChartView::exportPng(const QString& path, int width, int height) {
  return plot_->savePng(path, width, height);
}

bool ChartView::exportCsv(const QString& path) const {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) return false;
  QTextStream out(&f);
  writeCsv(out, title_ ? title_->text() : QString(), true);
  out.flush();
  return out.status() == QTextStream::Ok && f.error() == QFile::NoError;
}

void ChartView::writeCsv(QTextStream& out, const QString& chart, bool header) const {
  if (header) out << "chart,run_id,metric,rank,x,step_min,step_max,n,value,min,max\n";
  for (const Series& s : series_)
    for (size_t i = 0; i < s.buckets.size(); ++i) {
      const td::store::Bucket& b = s.buckets[i];
      out << chart << ',' << s.key.run_id << ',' << s.key.metric << ',' << s.key.rank << ',' << num(s.xs[i]) << ','
          << b.step_min << ',' << b.step_max << ',' << b.n << ',' << num(b.n == 1 ? b.v_first : b.mean()) << ','
          << num(b.v_min) << ',' << num(b.v_max) << '\n';
    }
}

}  // namespace td::gui
