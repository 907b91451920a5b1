// What a run measured, gathered from the store for the planner's plan-vs-measured comparison
// (engine/plan/compare.h; docs/planner.md "Plan beside measured"). Uses only Store's public
// queries; same threading rule as Store (one thread per connection).
#pragma once

#include <optional>
#include <string>

#include "engine/plan/compare.h"  // td::RunMeasured (a plain struct: no engine library is linked)
#include "store/store.h"

namespace td::store {

/// measured: world_size and peak_flops from run_start; peak_rss_bytes and gpu_mem_peak_bytes the
/// max of rank 0's rss_bytes / gpu_mem_peak_bytes; tokens_per_s Store::RunNumbers::tokens_per_s
/// (median after warm-up); comm_bytes_per_step and busbw_bytes_per_s the medians of rank 0's
/// comm_bytes_sent and busbw_gb_s (x 1e9) after warm-up; storage_read_bytes_per_s the median
/// data_read_mb_s (x 1e6) of store/input_pipeline.h's InputPipeline (the Run page's input line).
struct MeasuredFigures {
  std::string config_json;  // run_start.config ("" when the run never started)
  RunMeasured measured;
};

/// The figures of `run_id`. Medians skip the first Store::kWarmupSteps stored steps when the
/// series is longer than that (as RunNumbers does). Throws td::Error for an unknown run.
MeasuredFigures measured_figures(Store& s, const std::string& run_id);

/// The MFU this engine reaches on this machine, for the planner's tokens/s estimate: the median
/// of rank 0's last `mfu` value over the newest `last_runs` completed runs that report one
/// (docs/planner.md, "checks estimates against what runs measure"). nullopt when none does.
std::optional<double> measured_mfu(Store& s, size_t last_runs = 9);

}  // namespace td::store
