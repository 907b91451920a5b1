// RunFacts: what a chart needs to know about a run besides its metric values: which series it
// has (and their step extents), tokens per optimizer step (x axis by tokens) and a sampled
// step -> wall-time mapping (x axis by elapsed time). Qt Core only; plain data, no threads.
#pragma once

#include <QString>

#include <cstdint>
#include <optional>
#include <vector>

#include "store/types.h"

namespace td::gui {

/// What the x axis of a chart counts.
enum class XAxis {
  Step,      // the engine's optimizer step (1-based)
  Tokens,    // tokens seen: step * tokens per step
  WallTime,  // seconds elapsed since the run's first stored step (pauses between attempts included)
};

struct RunFacts {
  QString run_id;
  QString name;                     // the run's name ("" when unnamed); label() shows it
  /// What legends and tables call the run: its name, else its id.
  QString label() const { return name.isEmpty() ? run_id : name; }
  QString status;                   // unknown | running | completed | stopped | failed
  std::optional<int64_t> last_step;  // last completed step the store knows
  int world_size = 1;
  /// The host each rank ran on, by rank (the run_start event's `hosts`); empty when unknown.
  std::vector<QString> hosts;
  /// Tokens per optimizer step: micro_batch * seq_len * grad_accum * world_size from the run's
  /// config; when the config lacks them, tokens_seen / step at the last step; 0 when unknown.
  double tokens_per_step = 0;
  /// Every (metric, rank) series of the run with its extents (Store::metric_extents).
  std::vector<td::store::MetricInfo> series;
  /// Sampled (step, Unix seconds) pairs by step (Store::metric_step_times of the run's longest
  /// rank-0 series); empty when the run has no rows.
  std::vector<int64_t> time_step;
  std::vector<double> time_t;
  /// Fills the interpolation tables from time_step / time_t; call after setting them.
  void prepareTimes();

  /// The series `metric` of `rank`, or nullptr.
  const td::store::MetricInfo* find(const QString& metric, int rank = 0) const;
  /// last value of `metric` / last value of `of_metric` (rank 0), when both end at the same
  /// step and the divisor is non-zero and finite; else 0. For a metric that is a constant
  /// multiple of another (mfu / tokens_per_s).
  double ratio(const QString& metric, const QString& of_metric) const;
  /// The x coordinate of `step` on axis `axis`: step, step * tokens_per_step (step when
  /// tokens_per_step is unknown), or seconds since the first sampled step (linear
  /// interpolation between samples; beyond the ends, the nearest segment's slope).
  double toX(XAxis axis, double step) const;
  /// The inverse of toX (the time mapping is made monotone).
  double toStep(XAxis axis, double x) const;

 private:
  std::vector<double> fwd_step_, fwd_sec_;  // step -> elapsed seconds (non-decreasing)
  std::vector<double> inv_sec_, inv_step_;  // elapsed seconds (increasing) -> step
};

/// Parses tokens per optimizer step from a run's config JSON (docs/config.md: model.seq_len,
/// train.micro_batch, train.grad_accum) times `world_size`; 0 when a field is missing.
double tokens_per_step_from_config(const QString& config_json, int world_size);

/// Exponential moving average for display (TensorBoard's smoothing): s_0 = y_0,
/// s_i = weight * s_{i-1} + (1 - weight) * y_i. weight in [0, 1): 0 returns y unchanged.
/// Non-finite values pass through without entering the average.
std::vector<double> ema(const std::vector<double>& y, double weight);

}  // namespace td::gui
