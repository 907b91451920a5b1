// Store: a run's progress (step of train.steps, elapsed, time left) and its one tokens/s.
// Definitions, units and costs: store.h "progress and throughput", types.h RunProgress.
#include <algorithm>
#include <limits>
#include <map>

#include "store/sqlite.h"
#include "store/store.h"

namespace td::store {

namespace {

std::optional<int64_t> metric_id(sqlite3* db, const char* name) {
  Stmt st(db, "SELECT id FROM metric_names WHERE name = ?1");
  st.bind(1, name);
  if (!st.step()) return std::nullopt;
  return st.col_int(0);
}

// The run's attempts: attempt -> resumed_from_step (0 for a fresh start).
std::map<int64_t, int64_t> resumed_steps(sqlite3* db, int64_t run) {
  Stmt st(db, "SELECT attempt, coalesce(resumed_from_step, 0) FROM run_attempts WHERE run = ?1");
  st.bind(1, run);
  std::map<int64_t, int64_t> out;
  while (st.step()) out[st.col_int(0)] = st.col_int(1);
  return out;
}

// Median of `v` (sorted in place): the middle value, the mean of the two middle ones for an even
// count.
double median(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::optional<double> Store::recent_median(int64_t run, const char* name, int* steps) {
  if (steps) *steps = 0;
  const auto id = metric_id(db_, name);
  if (!id) return std::nullopt;
  // The (run, name, rank, step) key: one seek to the run's last step, then at most
  // kThroughputSteps rows backwards.
  Stmt st(db_,
          "SELECT step, attempt, value FROM metrics WHERE run = ?1 AND name = ?2 AND rank = 0"
          " ORDER BY step DESC LIMIT ?3");
  st.bind(1, run).bind(2, *id).bind(3, int64_t(kThroughputSteps));
  std::map<int64_t, int64_t> resumed;
  bool have_attempts = false;
  std::vector<double> all, kept;
  while (st.step()) {
    if (!have_attempts) {
      resumed = resumed_steps(db_, run);
      have_attempts = true;
    }
    const int64_t step = st.col_int(0);
    const auto it = resumed.find(st.col_int(1));
    const int64_t first = it == resumed.end() ? 0 : it->second;  // the attempt's steps are > first
    const double v = st.col_double(2);
    all.push_back(v);
    if (step > first + kWarmupSteps) kept.push_back(v);
  }
  std::vector<double>& use = kept.empty() ? all : kept;
  if (use.empty()) return std::nullopt;
  if (steps) *steps = static_cast<int>(use.size());
  return median(use);
}

Store::RunThroughput Store::run_throughput(const std::string& run_id) {
  const int64_t key = require_run(run_id);
  RunThroughput r;
  r.tokens_per_s = recent_median(key, "tokens_per_s", &r.steps);
  r.mfu = recent_median(key, "mfu");
  return r;
}

RunProgress Store::run_progress(const std::string& run_id) {
  const int64_t key = require_run(run_id);
  RunProgress p;
  {
    // json_valid first: json_extract raises an error on text that is not JSON.
    Stmt st(db_,
            "SELECT status, last_step,"
            " CASE WHEN json_valid(config) THEN json_extract(config, '$.train.steps') END"
            " FROM runs WHERE id = ?1");
    st.bind(1, key);
    st.step();
    p.status = st.col_text(0);
    p.step = st.col_opt_int(1);
    p.total_steps = st.col_opt_int(2);
  }
  const auto loss = metric_id(db_, "loss");

  // Elapsed: per attempt end - start; without an end, to the time of its last stored step. An
  // attempt's steps are those after its resumed_from_step up to the next attempt's (a resume
  // rewrites the steps after its checkpoint), so its last row is one seek below that bound.
  struct Attempt {
    int64_t attempt;
    double start;
    std::optional<double> end;
    int64_t resumed;
  };
  std::vector<Attempt> attempts;
  {
    Stmt st(db_,
            "SELECT attempt, start_time, end_time, coalesce(resumed_from_step, 0) FROM run_attempts"
            " WHERE run = ?1 AND start_time IS NOT NULL ORDER BY attempt");
    st.bind(1, key);
    while (st.step()) attempts.push_back({st.col_int(0), st.col_double(1), st.col_opt_double(2), st.col_int(3)});
  }
  if (!attempts.empty()) {
    Stmt last_row(db_,
                  "SELECT t, attempt FROM metrics WHERE run = ?1 AND name = ?2 AND rank = 0 AND step <= ?3"
                  " ORDER BY step DESC LIMIT 1");
    double sum = 0;
    for (size_t i = 0; i < attempts.size(); ++i) {
      const Attempt& a = attempts[i];
      std::optional<double> end = a.end;
      if (!end && loss) {
        const int64_t bound = i + 1 < attempts.size() ? attempts[i + 1].resumed : std::numeric_limits<int64_t>::max();
        last_row.reset();
        last_row.bind(1, key).bind(2, *loss).bind(3, bound);
        if (last_row.step() && last_row.col_int(1) == a.attempt) end = last_row.col_double(0);
      }
      if (end) sum += std::max(0.0, *end - a.start);
    }
    p.elapsed_s = sum;
  }

  // Rate: the newest attempt's last kThroughputSteps + 1 rows of the loss series.
  if (loss) {
    Stmt st(db_,
            "SELECT step, t, attempt FROM metrics WHERE run = ?1 AND name = ?2 AND rank = 0"
            " ORDER BY step DESC LIMIT ?3");
    st.bind(1, key).bind(2, *loss).bind(3, int64_t(kThroughputSteps) + 1);
    bool first = true;
    int64_t attempt = 0, step_hi = 0, step_lo = 0;
    double t_hi = 0, t_lo = 0;
    while (st.step()) {
      if (first) {
        attempt = st.col_int(2);
        step_hi = step_lo = st.col_int(0);
        t_hi = t_lo = st.col_double(1);
        first = false;
        continue;
      }
      if (st.col_int(2) != attempt) break;  // the gap between two attempts is no step's time
      step_lo = st.col_int(0);
      t_lo = st.col_double(1);
    }
    if (step_hi > step_lo && t_hi >= t_lo) p.seconds_per_step = (t_hi - t_lo) / static_cast<double>(step_hi - step_lo);
  }
  if (p.status == "running" && p.total_steps && p.seconds_per_step) {
    const int64_t done = p.step.value_or(0);
    p.eta_s = static_cast<double>(std::max<int64_t>(0, *p.total_steps - done)) * *p.seconds_per_step;
  }
  return p;
}

}  // namespace td::store
