#include "store/input_pipeline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "store/sqlite.h"

namespace td::store {

InputPipeline input_pipeline(Store& s, const std::string& run_id) {
  // attempt -> resumed_from_step (0 for a fresh start); throws for an unknown run.
  std::map<int, int64_t> resumed;
  for (const RunAttempt& a : s.run_attempts(run_id)) resumed[a.attempt] = a.resumed_from_step.value_or(0);
  const std::optional<int64_t> key = s.run_key(run_id);
  InputPipeline out;
  if (!key) return out;

  // The window: rank 0's last kInputWindowSteps step_ms rows, newest first (the primary key
  // (run, name, rank, step): one seek, then a bounded read backwards).
  struct Row {
    int64_t step;
    bool warmup;
    double step_ms;
  };
  std::vector<Row> rows;
  {
    Stmt st(s.handle(),
            "SELECT step, attempt, value FROM metrics WHERE run = ?1"
            " AND name = (SELECT id FROM metric_names WHERE name = 'step_ms') AND rank = 0"
            " ORDER BY step DESC LIMIT ?2");
    st.bind(1, *key).bind(2, int64_t(kInputWindowSteps));
    while (st.step()) {
      const int64_t step = st.col_int(0);
      const auto it = resumed.find(static_cast<int>(st.col_int(1)));
      const int64_t first = it == resumed.end() ? 0 : it->second;  // the attempt's steps are > first
      rows.push_back({step, step <= first + Store::kWarmupSteps, st.col_double(2)});
    }
  }
  if (rows.empty()) return out;
  const int64_t lo = rows.back().step, hi = rows.front().step;
  const bool keep_warmup = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.warmup; });

  // The other two series over the same steps, by step.
  auto by_step = [&](const char* name) {
    const MetricSeries m = s.metric_series(run_id, name, 0, lo, hi);
    std::map<int64_t, double> v;
    for (size_t i = 0; i < m.step.size(); ++i) v[m.step[i]] = m.value[i];
    return v;
  };
  const std::map<int64_t, double> wait = by_step("data_wait_ms");
  const std::map<int64_t, double> read = by_step("data_read_mb_s");

  std::vector<double> mb_s;
  for (const Row& r : rows) {
    if (r.warmup && !keep_warmup) continue;
    if (const auto w = wait.find(r.step); w != wait.end() && std::isfinite(w->second) && std::isfinite(r.step_ms) && r.step_ms > 0) {
      out.wait_ms += w->second;
      out.step_ms += r.step_ms;
      ++out.steps;
      out.first_step = r.step;  // rows run newest first
      if (out.last_step == 0) out.last_step = r.step;
    }
    if (const auto m = read.find(r.step); m != read.end() && std::isfinite(m->second)) mb_s.push_back(m->second);
  }
  if (out.steps > 0 && out.step_ms > 0) {
    out.wait_pct = 100.0 * out.wait_ms / out.step_ms;
    out.input_bound = is_input_bound(*out.wait_pct);
  }
  if (!mb_s.empty()) {
    std::sort(mb_s.begin(), mb_s.end());
    const size_t n = mb_s.size();
    out.read_mb_s = n % 2 ? mb_s[n / 2] : 0.5 * (mb_s[n / 2 - 1] + mb_s[n / 2]);
  }
  return out;
}

}  // namespace td::store
