// Is a run input-bound? Its data-loader wait over its recent steps, from the store's rows of the
// step fields data_wait_ms, step_ms and data_read_mb_s (engine/metrics/step_fields.h,
// docs/events.md "Step fields"). The Run page's "input-bound" line and the planner's storage row
// (store/plan_measured.h) read it. Uses only Store's public API and its connection; same
// threading rule as Store (one thread per connection).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "store/store.h"

namespace td::store {

/// A run is input-bound when its steps waited for the data loader for at least this share of
/// their wall time, in percent: 5 %, TensorFlow Profiler's limit between "NOT input-bound" and
/// "MODERATELY input-bound" (kModeratelyInfeedBoundThresholdInPercent in
/// tensorflow/core/profiler/convert/op_stats_to_input_pipeline_analysis.cc; 20 % is its "HIGHLY"
/// limit). Below it, a faster input pipeline would gain at most 5 % of the throughput, about
/// the step-to-step jitter of a CPU step; above it the loader is worth fixing.
constexpr double kInputBoundWaitPct = 5.0;

/// Steps the judgement looks back over: the throughput window (Store::kThroughputSteps, 100),
/// so that the share and the tokens/s beside it describe the same steps.
constexpr int kInputWindowSteps = Store::kThroughputSteps;

/// The rule: `wait_pct` >= kInputBoundWaitPct (at the limit counts as input-bound, as in
/// TensorFlow Profiler, whose "NOT input-bound" is "below 5 %"). NaN is never input-bound.
inline bool is_input_bound(double wait_pct) { return wait_pct >= kInputBoundWaitPct; }

/// A run's input pipeline over its recent steps.
struct InputPipeline {
  /// Steps the figures describe: rank 0's last kInputWindowSteps stored steps with a step_ms,
  /// leaving out each attempt's first Store::kWarmupSteps steps (a fresh process opens its shards
  /// and fills the page cache: steps <= resumed_from_step + 3) unless that leaves none, as
  /// Store::run_throughput does; of those, the ones with both data_wait_ms and step_ms > 0.
  int steps = 0;
  int64_t first_step = 0, last_step = 0;  // the first and last of those steps (0 when none)
  double wait_ms = 0;                     // sum of data_wait_ms over `steps` steps, ms
  double step_ms = 0;                     // sum of step_ms over the same steps, ms
  /// 100 wait_ms / step_ms: the share of the steps' wall time spent waiting for data, in %
  /// (the time-weighted mean of data_wait_pct; empty when no step has both figures). Weighted by
  /// time, not a median of the per-step %: a loader that stalls every tenth step (a new shard, a
  /// cold page cache) costs that time although the median step never waits, and the share is
  /// what a loader that never blocks would give back (TensorFlow Profiler's "% of the total step
  /// time sampled is waiting for input" is the same ratio).
  std::optional<double> wait_pct;
  /// Median data_read_mb_s (10^6 bytes/s) over the window's kept steps that have one (the engine
  /// writes none for a step whose reads took no measurable time); empty when none has.
  std::optional<double> read_mb_s;
  bool input_bound = false;  // wait_pct && is_input_bound(*wait_pct)
};

/// The figures of `run_id` (definitions above). Cost: one index seek to rank 0's last step_ms and
/// at most kInputWindowSteps rows of each of step_ms, data_wait_ms and data_read_mb_s, plus the
/// run's attempt rows; never a scan of the run. A run without these fields (an older engine, no
/// step yet) gives steps 0 and no figures. Throws td::Error when the run is unknown.
InputPipeline input_pipeline(Store& s, const std::string& run_id);

}  // namespace td::store
