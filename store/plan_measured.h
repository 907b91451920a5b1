// What a run measured, gathered from the store for the planner's plan-vs-measured comparison
// (engine/plan/compare.h; docs/planner.md "Plan beside measured"). Uses only Store's public
// queries; same threading rule as Store (one thread per connection).
#pragma once

#include <optional>
#include <string>

#include "store/store.h"

namespace td::store {

struct MeasuredFigures {
  std::string config_json;                   // run_start.config ("" when the run never started)
  int world_size = 1;                        // run_start.world_size
  std::optional<double> peak_flops;          // run_start.peak_flops, FLOP/s per device
  std::optional<double> peak_rss_bytes;      // max rss_bytes of rank 0
  std::optional<double> gpu_mem_peak_bytes;  // max gpu_mem_peak_bytes of rank 0
  std::optional<double> tokens_per_s;        // Store::RunNumbers::tokens_per_s (median after warm-up)
  std::optional<double> comm_bytes_per_step; // median comm_bytes_sent of rank 0 after warm-up
  std::optional<double> busbw_bytes_per_s;   // median busbw_gb_s of rank 0 after warm-up, x 1e9
};

/// The figures of `run_id`. Medians skip the first Store::kWarmupSteps stored steps when the
/// series is longer than that (as RunNumbers does). Throws td::Error for an unknown run.
MeasuredFigures measured_figures(Store& s, const std::string& run_id);

}  // namespace td::store
