#include "store/plan_measured.h"

#include <algorithm>
#include <vector>

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
  return f;
}

}  // namespace td::store
