#include "store/plan_measured.h"

#include <algorithm>
#include <vector>

#include "store/input_pipeline.h"

namespace td::store {

namespace {

// Median of a series after its first `skip` values (all of them when it has no more).
std::optional<double> median_after(std::vector<double> v, size_t skip) {
  if (v.empty()) return std::nullopt;
  if (v.size() > skip) v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(skip));
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

MeasuredFigures measured_figures(Store& s, const std::string& run_id) {
  const Store::RunNumbers numbers = s.run_numbers(run_id);
  MeasuredFigures f;
  f.config_json = numbers.info.config_json;
  f.measured.world_size = numbers.info.world_size ? static_cast<int>(*numbers.info.world_size) : 1;
  f.measured.peak_flops = numbers.info.peak_flops;
  f.measured.tokens_per_s = numbers.tokens_per_s;
  for (const MetricInfo& m : s.list_metrics(run_id)) {
    if (m.rank != 0 || m.count == 0) continue;
    if (m.name == "rss_bytes") f.measured.peak_rss_bytes = m.max_value;
    if (m.name == "gpu_mem_peak_bytes") f.measured.gpu_mem_peak_bytes = m.max_value;
  }
  f.measured.comm_bytes_per_step = median_after(s.metric_series(run_id, "comm_bytes_sent", 0).value, Store::kWarmupSteps);
  if (auto bw = median_after(s.metric_series(run_id, "busbw_gb_s", 0).value, Store::kWarmupSteps)) f.measured.busbw_bytes_per_s = *bw * 1e9;
  // The input-bound line's read speed (the same steps as the tokens/s above), in bytes/s.
  if (const auto mb_s = input_pipeline(s, run_id).read_mb_s) f.measured.storage_read_bytes_per_s = *mb_s * 1e6;
  return f;
}

std::optional<double> measured_mfu(Store& s, size_t last_runs) {
  std::vector<double> mfu;
  const auto runs = s.list_runs();
  for (auto it = runs.rbegin(); it != runs.rend() && mfu.size() < last_runs; ++it) {
    if (it->status != "completed") continue;
    for (const auto& m : s.list_metrics(it->run_id))
      if (m.name == "mfu" && m.rank == 0 && m.last_value > 0) mfu.push_back(m.last_value);
  }
  if (mfu.empty()) return std::nullopt;
  std::sort(mfu.begin(), mfu.end());
  return mfu[mfu.size() / 2];
}

}  // namespace td::store
