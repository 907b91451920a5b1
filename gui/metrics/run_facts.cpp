#include "gui/metrics/run_facts.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cmath>

namespace td::gui {

const td::store::MetricInfo* RunFacts::find(const QString& metric, int rank) const {
  const std::string name = metric.toStdString();
  for (const auto& m : series)
    if (m.name == name && m.rank == rank) return &m;
  return nullptr;
}

double RunFacts::ratio(const QString& metric, const QString& of_metric) const {
  const td::store::MetricInfo* a = find(metric);
  const td::store::MetricInfo* b = find(of_metric);
  if (!a || !b || a->count == 0 || b->count == 0 || a->last_step != b->last_step) return 0;
  if (!std::isfinite(a->last_value) || !std::isfinite(b->last_value) || b->last_value == 0) return 0;
  return a->last_value / b->last_value;
}

namespace {

// Piecewise-linear map through (xs[i], ys[i]), xs ascending; beyond the ends, the nearest
// segment's slope (or identity slope 1 with one point).
double interp(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  const size_t n = xs.size();
  if (n == 0) return x;
  if (n == 1) return ys[0] + (x - xs[0]);
  size_t i = static_cast<size_t>(std::upper_bound(xs.begin(), xs.end(), x) - xs.begin());
  i = std::clamp<size_t>(i, 1, n - 1);  // segment [i-1, i]
  const double dx = xs[i] - xs[i - 1];
  if (dx <= 0) return ys[i];
  return ys[i - 1] + (x - xs[i - 1]) * (ys[i] - ys[i - 1]) / dx;
}

}  // namespace

void RunFacts::prepareTimes() {
  // Times made non-decreasing (a resumed attempt's replaced rows keep the mapping monotone);
  // for the inverse, flat stretches (equal times) map to their first step.
  fwd_step_.clear();
  fwd_sec_.clear();
  inv_sec_.clear();
  inv_step_.clear();
  if (time_t.empty()) return;
  const double t0 = time_t.front();
  double top = 0;
  for (size_t i = 0; i < time_step.size() && i < time_t.size(); ++i) {
    top = std::max(top, time_t[i] - t0);
    fwd_step_.push_back(static_cast<double>(time_step[i]));
    fwd_sec_.push_back(top);
    if (inv_sec_.empty() || top > inv_sec_.back()) {
      inv_sec_.push_back(top);
      inv_step_.push_back(static_cast<double>(time_step[i]));
    }
  }
}

double RunFacts::toX(XAxis axis, double step) const {
  switch (axis) {
    case XAxis::Step:
      return step;
    case XAxis::Tokens:
      return tokens_per_step > 0 ? step * tokens_per_step : step;
    case XAxis::WallTime:
      return interp(fwd_step_, fwd_sec_, step);
  }
  return step;
}

double RunFacts::toStep(XAxis axis, double x) const {
  switch (axis) {
    case XAxis::Step:
      return x;
    case XAxis::Tokens:
      return tokens_per_step > 0 ? x / tokens_per_step : x;
    case XAxis::WallTime:
      return interp(inv_sec_, inv_step_, x);
  }
  return x;
}

double tokens_per_step_from_config(const QString& config_json, int world_size) {
  const QJsonObject c = QJsonDocument::fromJson(config_json.toUtf8()).object();
  const QJsonObject model = c.value(QStringLiteral("model")).toObject();
  const QJsonObject train = c.value(QStringLiteral("train")).toObject();
  const double seq_len = model.value(QStringLiteral("seq_len")).toDouble(0);
  const double micro_batch = train.value(QStringLiteral("micro_batch")).toDouble(0);
  const double grad_accum = train.value(QStringLiteral("grad_accum")).toDouble(1);
  return seq_len * micro_batch * grad_accum * std::max(1, world_size);
}

std::vector<double> ema(const std::vector<double>& y, double weight) {
  std::vector<double> out(y.size());
  weight = std::clamp(weight, 0.0, 0.999999);
  bool have = false;
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      out[i] = y[i];
      continue;
    }
    s = have ? weight * s + (1.0 - weight) * y[i] : y[i];
    have = true;
    out[i] = s;
  }
  return out;
}

}  // namespace td::gui
