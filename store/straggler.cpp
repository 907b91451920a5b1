// The straggler of a data-parallel run (definition in straggler.h).
#include "store/straggler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "engine/metrics/step_fields.h"
#include "store/store.h"

namespace td::store {

namespace {

// The middle value of `v` (sorted in place); the mean of the two middle ones for an even count.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::optional<Straggler> find_straggler(const std::vector<MetricSeries>& per_rank, int window) {
  const size_t world = per_rank.size();
  if (world < 2 || window < 1) return std::nullopt;
  // step -> each rank's value; the steps every rank has, newest `window` of them.
  std::map<int64_t, std::vector<double>> by_step;
  for (size_t r = 0; r < world; ++r)
    for (size_t i = 0; i < per_rank[r].size(); ++i) {
      auto& v = by_step[per_rank[r].step[i]];
      if (v.empty()) v.assign(world, std::numeric_limits<double>::quiet_NaN());
      v[r] = per_rank[r].value[i];
    }
  std::vector<const std::vector<double>*> rows;
  for (auto it = by_step.rbegin(); it != by_step.rend() && rows.size() < size_t(window); ++it)
    if (std::none_of(it->second.begin(), it->second.end(), [](double x) { return std::isnan(x); })) rows.push_back(&it->second);
  if (rows.empty()) return std::nullopt;

  std::vector<double> medians(world);
  for (size_t r = 0; r < world; ++r) {
    std::vector<double> v;
    v.reserve(rows.size());
    for (const auto* row : rows) v.push_back((*row)[r]);
    medians[r] = median(std::move(v));
  }
  Straggler s;
  s.world_size = int(world);
  s.steps = int(rows.size());
  s.rank = int(std::max_element(medians.begin(), medians.end()) - medians.begin());  // the first of equals
  s.median_ms = medians[size_t(s.rank)];
  std::vector<double> others;
  for (size_t r = 0; r < world; ++r)
    if (int(r) != s.rank) others.push_back(medians[r]);
  s.others_median_ms = median(std::move(others));
  s.slower_pct = s.others_median_ms > 0 ? 100 * (s.median_ms / s.others_median_ms - 1) : 0;
  for (const auto* row : rows)
    if (std::max_element(row->begin(), row->end()) - row->begin() == s.rank) ++s.slowest_steps;
  return s;
}

std::optional<Straggler> run_straggler(Store& store, const std::string& run_id, int window) {
  if (window < 1 || !store.run_key(run_id)) return std::nullopt;
  const Store::ChartRun run = store.chart_run(run_id);
  const int64_t world = run.world_size.value_or(1);
  if (world < 2 || world > 65536 || !run.last_step) return std::nullopt;
  const int64_t hi = *run.last_step, lo = hi - window + 1;
  std::vector<MetricSeries> per_rank;
  per_rank.reserve(size_t(world));
  // ranks[].compute_ms's metric (rank_compute_ms) in the one field table.
  constexpr const EventField* kCompute = find_event_field(EventKind::Step, FieldScope::Rank, "compute_ms");
  static_assert(kCompute && kCompute->metric);
  for (int r = 0; r < int(world); ++r) per_rank.push_back(store.metric_series(run_id, kCompute->metric, r, lo, hi));
  auto s = find_straggler(per_rank, window);
  if (s && size_t(s->rank) < run.hosts.size()) s->host = run.hosts[size_t(s->rank)];
  return s;
}

}  // namespace td::store
