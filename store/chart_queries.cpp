// Queries for the GUI's charts (gui/metrics): a series' envelope over a step range, series
// extents and step -> wall-time samples, all read from the level of detail (docs/store.md
// "Level of detail", store/lod.h) so that their cost does not grow with the run's length; and
// the rebuild of a run's level of detail.
#include <algorithm>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "store/lod.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace td::store {

std::vector<MetricInfo> Store::metric_extents(const std::string& run_id) {
  const int64_t key = require_run(run_id);
  constexpr int kTop = lod::kLevels - 1;  // buckets of 1,048,576 steps
  // Index seeks only (the key is (run, name, rank, level, bucket)): for each metric name, skip
  // from rank to rank, then sum the few top-level buckets. A GROUP BY over the run's
  // metric_lod rows would read all its levels (~1/48 row per raw row).
  Stmt names(db_, "SELECT id, name FROM metric_names ORDER BY name");
  Stmt next_rank(db_,
                 "SELECT rank FROM metric_lod WHERE run = ?1 AND name = ?2 AND rank > ?3"
                 " ORDER BY rank LIMIT 1");
  Stmt agg(db_,
           "SELECT sum(n), min(step_min), max(step_max), min(v_min), max(v_max) FROM metric_lod"
           " WHERE run = ?1 AND name = ?2 AND rank = ?3 AND level = ?4");
  Stmt last(db_,
            "SELECT v_last FROM metric_lod WHERE run = ?1 AND name = ?2 AND rank = ?3 AND level = ?4"
            " ORDER BY bucket DESC LIMIT 1");
  std::vector<MetricInfo> out;
  while (names.step()) {
    const int64_t name = names.col_int(0);
    int64_t rank = std::numeric_limits<int64_t>::min();
    for (;;) {
      next_rank.bind(1, key).bind(2, name).bind(3, rank);
      const bool more = next_rank.step();
      if (more) rank = next_rank.col_int(0);
      next_rank.reset();
      if (!more) break;
      agg.bind(1, key).bind(2, name).bind(3, rank).bind(4, kTop);
      if (agg.step() && !agg.is_null(0)) {
        MetricInfo m;
        m.name = names.col_text(1);
        m.rank = static_cast<int>(rank);
        m.count = agg.col_int(0);
        m.first_step = agg.col_int(1);
        m.last_step = agg.col_int(2);
        m.min_value = agg.col_double(3);
        m.max_value = agg.col_double(4);
        last.bind(1, key).bind(2, name).bind(3, rank).bind(4, kTop);
        if (last.step()) m.last_value = last.col_double(0);
        last.reset();
        out.push_back(std::move(m));
      }
      agg.reset();
    }
  }
  return out;
}

Store::ChartRun Store::chart_run(const std::string& run_id) {
  require_run(run_id);
  Stmt st(db_, "SELECT status, last_step, world_size, coalesce(config, ''), coalesce(hosts, ''), name FROM runs"
               " WHERE run_id = ?1");
  st.bind(1, run_id);
  ChartRun r;
  if (st.step()) {
    r.status = st.col_text(0);
    r.last_step = st.col_opt_int(1);
    r.world_size = st.col_opt_int(2);
    r.config_json = st.col_text(3);
    r.name = st.col_text(5);
    // A JSON array of strings (ingest); anything else is ignored.
    const nlohmann::json hosts = nlohmann::json::parse(st.col_text(4), nullptr, false);
    if (hosts.is_array())
      for (const auto& h : hosts) r.hosts.push_back(h.is_string() ? h.get<std::string>() : std::string());
  }
  return r;
}

MetricSeries Store::metric_step_times(const std::string& run_id, const std::string& name, int rank,
                                      int max_points) {
  const int64_t key = require_run(run_id);
  TD_CHECK(max_points >= 2, "metric_step_times: max_points is " + std::to_string(max_points) +
                                "; ask for at least 2 (the first and the last step)");
  MetricSeries out;
  std::optional<int64_t> name_id;
  {
    Stmt st(db_, "SELECT id FROM metric_names WHERE name = ?1");
    st.bind(1, name);
    if (st.step()) name_id = st.col_int(0);
  }
  if (!name_id) return out;

  auto push = [&out](const Stmt& st) {
    out.step.push_back(st.col_int(0));
    out.t.push_back(st.col_double(1));
    out.value.push_back(st.col_double(2));
    out.attempt.push_back(static_cast<int>(st.col_int(3)));
  };
  // Few rows: all of them (reads at most max_points + 1).
  {
    Stmt st(db_,
            "SELECT step, t, value, attempt FROM metrics WHERE run = ?1 AND name = ?2 AND rank = ?3"
            " ORDER BY step LIMIT ?4");
    st.bind(1, key).bind(2, *name_id).bind(3, rank).bind(4, static_cast<int64_t>(max_points) + 1);
    while (st.step()) push(st);
    if (out.size() <= static_cast<size_t>(max_points)) return out;
  }
  out = MetricSeries{};

  // The series' first and last step, from the coarsest level.
  int64_t first = 0, last = 0;
  {
    Stmt st(db_,
            "SELECT min(step_min), max(step_max) FROM metric_lod WHERE run = ?1 AND name = ?2"
            " AND rank = ?3 AND level = ?4");
    st.bind(1, key).bind(2, *name_id).bind(3, rank).bind(4, lod::kLevels - 1);
    if (!st.step() || st.is_null(0)) return out;  // no level of detail: rebuild_lod() repairs
    first = st.col_int(0);
    last = st.col_int(1);
  }
  // One sample per bucket: the finest level with at most max_points - 1 buckets (the last
  // step is added after them).
  const int64_t room = max_points - 1;
  int level = lod::kLevels - 1;
  for (int k = 0; k < lod::kLevels; ++k)
    if ((last >> lod::shift(k)) - (first >> lod::shift(k)) + 1 <= room) {
      level = k;
      break;
    }
  std::vector<int64_t> steps;
  {
    Stmt st(db_,
            "SELECT step_min FROM metric_lod WHERE run = ?1 AND name = ?2 AND rank = ?3"
            " AND level = ?4 ORDER BY bucket");
    st.bind(1, key).bind(2, *name_id).bind(3, rank).bind(4, level);
    while (st.step()) steps.push_back(st.col_int(0));
  }
  if (steps.size() > static_cast<size_t>(room)) {  // coarser than the top level: thin out
    const size_t group = (steps.size() + room - 1) / room;
    std::vector<int64_t> kept;
    for (size_t i = 0; i < steps.size(); i += group) kept.push_back(steps[i]);
    steps.swap(kept);
  }
  if (steps.empty() || steps.back() != last) steps.push_back(last);
  Stmt at(db_,
          "SELECT step, t, value, attempt FROM metrics WHERE run = ?1 AND name = ?2 AND rank = ?3"
          " AND step = ?4");
  at.bind(1, key).bind(2, *name_id).bind(3, rank);
  for (int64_t s : steps) {
    at.bind(4, s);
    if (at.step()) push(at);
    at.reset();
  }
  return out;
}

namespace {
// Merges runs of `group` adjacent buckets so that at most max_points remain; returns group
// (1 when nothing was merged).
int64_t merge_to_fit(std::vector<Bucket>& buckets, int max_points) {
  if (buckets.size() <= static_cast<size_t>(max_points)) return 1;
  const size_t group = (buckets.size() + max_points - 1) / max_points;
  std::vector<Bucket> merged;
  for (size_t i = 0; i < buckets.size(); i += group) {
    lod::Acc a;
    for (size_t j = i; j < std::min(buckets.size(), i + group); ++j) a.merge(buckets[j]);
    merged.push_back(a);
  }
  buckets.swap(merged);
  return static_cast<int64_t>(group);
}
}  // namespace

MetricEnvelope Store::metric_envelope(const std::string& run_id, const std::string& name, int rank,
                                      int64_t step_lo, int64_t step_hi, int max_points) {
  const int64_t key = require_run(run_id);
  TD_CHECK(max_points >= 1, "metric_envelope: max_points is " + std::to_string(max_points) +
                                "; pass the chart's width in pixel columns (>= 1)");
  TD_CHECK(step_lo <= step_hi, "metric_envelope: step range [" + std::to_string(step_lo) + ", " +
                                   std::to_string(step_hi) + "] is empty (lo > hi)");
  MetricEnvelope env;
  std::optional<int64_t> name_id;
  {
    Stmt st(db_, "SELECT id FROM metric_names WHERE name = ?1");
    st.bind(1, name);
    if (st.step()) name_id = st.col_int(0);
  }
  if (!name_id) return env;

  // The steps of the range that hold rows: two index lookups (SQLite's min/max optimisation
  // applies to a query with a single min() or max() only; both in one query scan the range).
  auto edge = [&](const char* order) -> std::optional<int64_t> {
    Stmt st(db_, std::string("SELECT step FROM metrics WHERE run = ?1 AND name = ?2 AND rank = ?3"
                             " AND step BETWEEN ?4 AND ?5 ORDER BY step ") + order + " LIMIT 1");
    st.bind(1, key).bind(2, *name_id).bind(3, rank).bind(4, step_lo).bind(5, step_hi);
    if (!st.step()) return std::nullopt;
    return st.col_int(0);
  };
  const auto lo_row = edge("ASC");
  if (!lo_row) return env;
  const int64_t first = *lo_row, last = edge("DESC").value_or(first);
  // About one bucket per pixel column at any run length and zoom: between max_points / 2 and
  // max_points buckets whenever the range holds more than max_points / 2 rows.
  const int64_t cols = max_points, span = last - first + 1;
  // A span of at most kRawPerColumn rows per column is read raw (one row per step at most: a
  // later attempt replaces a value) and summarised in memory; level 0 (16 steps) then has
  // more than cols / 2 buckets for the longer spans.
  constexpr int64_t kRawPerColumn = 8;
  auto read_raw = [&] {
    Stmt st(db_,
            "SELECT step, value FROM metrics WHERE run = ?1 AND name = ?2 AND rank = ?3"
            " AND step BETWEEN ?4 AND ?5 ORDER BY step");
    st.bind(1, key).bind(2, *name_id).bind(3, rank).bind(4, step_lo).bind(5, step_hi);
    while (st.step()) {
      lod::Acc a;
      a.add(st.col_int(0), st.col_double(1));
      env.buckets.push_back(a);
    }
    env.level = -1;
    env.bucket_steps = merge_to_fit(env.buckets, max_points);
    return env;
  };
  if (span <= kRawPerColumn * cols) return read_raw();
  // The finest level with at most 2 * max_points buckets over [first, last] (more than
  // max_points / 2 of them, since the next finer level had more than 2 * max_points).
  int level = lod::kLevels - 1;
  for (int k = 0; k < lod::kLevels; ++k)
    if ((last >> lod::shift(k)) - (first >> lod::shift(k)) + 1 <= 2 * cols) {
      level = k;
      break;
    }
  std::vector<Bucket> lod_buckets;
  int64_t rows = 0;  // the rows of the buckets read: a bound of the rows in the range
  {
    Stmt st(db_, std::string("SELECT ") + lod::kBucketCols +
                     " FROM metric_lod WHERE run = ?1 AND name = ?2 AND rank = ?3 AND level = ?4"
                     " AND bucket BETWEEN ?5 AND ?6 ORDER BY bucket");
    st.bind(1, key).bind(2, *name_id).bind(3, rank).bind(4, level);
    st.bind(5, first >> lod::shift(level)).bind(6, last >> lod::shift(level));
    while (st.step()) {
      lod_buckets.push_back(lod::read_bucket(st, 0));
      rows += lod_buckets.back().n;
    }
  }
  // A sparse series (val_loss every few hundred steps) over a long span: few rows, read raw.
  if (rows <= kRawPerColumn * cols) return read_raw();
  env.level = level;
  env.buckets = std::move(lod_buckets);
  // Buckets whole; more than max_points of them are merged in pairs (or more, past level 8).
  env.bucket_steps = (int64_t{1} << lod::shift(level)) * merge_to_fit(env.buckets, max_points);
  return env;
}

void Store::rebuild_lod(const std::string& run_id) {
  const int64_t key = require_run(run_id);
  Transaction tx(db_);
  lod::rebuild(db_, key);
  tx.commit();
}

}  // namespace td::store
