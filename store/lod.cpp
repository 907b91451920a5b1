// Level of detail of metric series: incremental upkeep during ingest and the rebuild (lod.h).
// The store's queries over it are in chart_queries.cpp. Layout and rules: docs/store.md
// "Level of detail".
#include "store/lod.h"

#include <algorithm>
#include <optional>

#include "engine/common/error.h"

#define TD_LOD_COLUMNS                                                                    \
  "run, name, rank, level, bucket, n, step_min, step_max, v_min, v_max, step_at_min,"     \
  " step_at_max, v_first, v_last, v_sum"

namespace td::store {

namespace lod {

void Acc::add(int64_t step, double v) {
  if (n == 0) {
    step_min = step_max = step_at_min = step_at_max = step;
    v_min = v_max = v_first = v_last = v_sum = v;
    n = 1;
    return;
  }
  Bucket one;
  one.step_min = one.step_max = one.step_at_min = one.step_at_max = step;
  one.v_min = one.v_max = one.v_first = one.v_last = one.v_sum = v;
  one.n = 1;
  merge(one);
}

void Acc::merge(const Bucket& o) {
  if (o.n == 0) return;
  if (n == 0) {
    static_cast<Bucket&>(*this) = o;
    return;
  }
  if (o.v_min < v_min || (o.v_min == v_min && o.step_at_min < step_at_min)) {
    v_min = o.v_min;
    step_at_min = o.step_at_min;
  }
  if (o.v_max > v_max || (o.v_max == v_max && o.step_at_max < step_at_max)) {
    v_max = o.v_max;
    step_at_max = o.step_at_max;
  }
  if (o.step_min < step_min) {
    step_min = o.step_min;
    v_first = o.v_first;
  }
  if (o.step_max > step_max) {
    step_max = o.step_max;
    v_last = o.v_last;
  }
  v_sum += o.v_sum;
  n += o.n;
}

Bucket read_bucket(const Stmt& st, int c0) {
  Bucket b;
  b.step_min = st.col_int(c0 + 0);
  b.step_max = st.col_int(c0 + 1);
  b.step_at_min = st.col_int(c0 + 2);
  b.step_at_max = st.col_int(c0 + 3);
  b.v_min = st.col_double(c0 + 4);
  b.v_max = st.col_double(c0 + 5);
  b.v_first = st.col_double(c0 + 6);
  b.v_last = st.col_double(c0 + 7);
  b.v_sum = st.col_double(c0 + 8);
  b.n = st.col_int(c0 + 9);
  return b;
}

namespace {

// Binds a bucket row: ?1 run, ?2 name, ?3 rank, ?4 level, ?5 bucket, ?6.. the summary.
void bind_row(Stmt& st, int64_t run, int64_t name, int rank, int level, int64_t bucket,
              const Bucket& b) {
  st.bind(1, run).bind(2, name).bind(3, rank).bind(4, level).bind(5, bucket);
  st.bind(6, b.n).bind(7, b.step_min).bind(8, b.step_max).bind(9, b.v_min).bind(10, b.v_max);
  st.bind(11, b.step_at_min).bind(12, b.step_at_max).bind(13, b.v_first).bind(14, b.v_last);
  st.bind(15, b.v_sum);
}

}  // namespace

void rebuild(sqlite3* db, std::optional<int64_t> run) {
  const std::string where = run ? " WHERE run = ?1" : "";
  {
    Stmt del(db, "DELETE FROM metric_lod" + where);
    if (run) del.bind(1, *run);
    del.exec();
  }
  // The primary key's order: no sort, one pass; one open bucket per level.
  Stmt rows(db, "SELECT run, name, rank, step, value FROM metrics" + where +
                    " ORDER BY run, name, rank, step");
  if (run) rows.bind(1, *run);
  Stmt ins(db, "INSERT INTO metric_lod(" TD_LOD_COLUMNS ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7,"
               " ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)");
  int64_t cur_run = 0, cur_name = 0;
  int cur_rank = -1;
  Acc open[kLevels];
  int64_t bucket[kLevels] = {};
  auto close = [&](int level) {
    if (open[level].n == 0) return;
    bind_row(ins, cur_run, cur_name, cur_rank, level, bucket[level], open[level]);
    ins.exec();
    open[level] = Acc{};
  };
  while (rows.step()) {
    const int64_t r = rows.col_int(0), nm = rows.col_int(1);
    const int rk = static_cast<int>(rows.col_int(2));
    const int64_t step = rows.col_int(3);
    const double v = rows.col_double(4);
    if (r != cur_run || nm != cur_name || rk != cur_rank) {
      for (int k = 0; k < kLevels; ++k) close(k);
      cur_run = r;
      cur_name = nm;
      cur_rank = rk;
    }
    for (int k = 0; k < kLevels; ++k) {
      const int64_t b = step >> shift(k);
      if (open[k].n > 0 && b != bucket[k]) close(k);
      bucket[k] = b;
      open[k].add(step, v);
    }
  }
  for (int k = 0; k < kLevels; ++k) close(k);
}

void BatchLod::begin(sqlite3* db) {
  series_.clear();
  last_ = nullptr;
  last_key_ = Key{-1, -1, -1};
  if (db_ == db) return;
  db_ = db;
  max_step_ = Stmt(db, "SELECT step FROM metrics WHERE run = ?1 AND name = ?2 AND rank = ?3"
                       " ORDER BY step DESC LIMIT 1");
  const std::string values = " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";
  merge_ = Stmt(db,
                "INSERT INTO metric_lod(" TD_LOD_COLUMNS ")" + values +
                    " ON CONFLICT(run, name, rank, level, bucket) DO UPDATE SET"
                    " n = metric_lod.n + excluded.n,"
                    " step_min = min(metric_lod.step_min, excluded.step_min),"
                    " step_max = max(metric_lod.step_max, excluded.step_max),"
                    " v_min = min(metric_lod.v_min, excluded.v_min),"
                    " v_max = max(metric_lod.v_max, excluded.v_max),"
                    " step_at_min = CASE WHEN excluded.v_min < metric_lod.v_min OR"
                    "  (excluded.v_min = metric_lod.v_min AND excluded.step_at_min < metric_lod.step_at_min)"
                    "  THEN excluded.step_at_min ELSE metric_lod.step_at_min END,"
                    " step_at_max = CASE WHEN excluded.v_max > metric_lod.v_max OR"
                    "  (excluded.v_max = metric_lod.v_max AND excluded.step_at_max < metric_lod.step_at_max)"
                    "  THEN excluded.step_at_max ELSE metric_lod.step_at_max END,"
                    " v_first = CASE WHEN excluded.step_min < metric_lod.step_min"
                    "  THEN excluded.v_first ELSE metric_lod.v_first END,"
                    " v_last = CASE WHEN excluded.step_max > metric_lod.step_max"
                    "  THEN excluded.v_last ELSE metric_lod.v_last END,"
                    " v_sum = metric_lod.v_sum + excluded.v_sum");
  replace_ = Stmt(db, "INSERT OR REPLACE INTO metric_lod(" TD_LOD_COLUMNS ")" + values);
  raw_ = Stmt(db, "SELECT step, value FROM metrics WHERE run = ?1 AND name = ?2 AND rank = ?3"
                  " AND step BETWEEN ?4 AND ?5 ORDER BY step");
  children_ = Stmt(db, std::string("SELECT ") + kBucketCols +
                           " FROM metric_lod WHERE run = ?1 AND name = ?2 AND rank = ?3"
                           " AND level = ?4 AND bucket BETWEEN ?5 AND ?6 ORDER BY bucket");
  erase_ = Stmt(db, "DELETE FROM metric_lod WHERE run = ?1 AND name = ?2 AND rank = ?3"
                    " AND level = ?4 AND bucket = ?5");
}

BatchLod::Series& BatchLod::series(int64_t run, int64_t name, int rank) {
  const Key k{run, name, rank};
  if (last_ && k == last_key_) return *last_;
  auto it = series_.find(k);
  if (it == series_.end()) {
    Series s{0, false, {}, {}};
    max_step_.bind(1, run).bind(2, name).bind(3, rank);
    if (max_step_.step()) {
      s.max_step = max_step_.col_int(0);
      s.has_rows = true;
    }
    max_step_.reset();
    it = series_.emplace(k, std::move(s)).first;
  }
  last_key_ = k;
  last_ = &it->second;
  return it->second;
}

bool BatchLod::is_append(int64_t run, int64_t name, int rank, int64_t step) {
  const Series& s = series(run, name, rank);
  return !s.has_rows || step > s.max_step;
}

void BatchLod::appended(int64_t run, int64_t name, int rank, int64_t step, double value) {
  Series& s = series(run, name, rank);
  s.max_step = step;
  s.has_rows = true;
  const int64_t b = step >> shift(0);
  if (s.appended.empty() || s.appended.back().first != b) s.appended.emplace_back(b, Acc{});
  s.appended.back().second.add(step, value);
}

void BatchLod::changed(int64_t run, int64_t name, int rank, int64_t step) {
  Series& s = series(run, name, rank);
  if (!s.has_rows || step > s.max_step) {
    s.max_step = step;
    s.has_rows = true;
  }
  s.dirty.insert(step >> shift(0));
}

void BatchLod::flush_series(const Key& k, Series& s) {
  std::vector<std::pair<int64_t, Acc>> cur = std::move(s.appended), next;
  std::set<int64_t> dirty = std::move(s.dirty), next_dirty;
  for (int level = 0; level < kLevels; ++level) {
    if (level > 0) {
      next.clear();
      for (const auto& [b, acc] : cur) {
        const int64_t p = b >> 2;
        if (next.empty() || next.back().first != p) next.emplace_back(p, Acc{});
        next.back().second.merge(acc);
      }
      cur.swap(next);
      next_dirty.clear();
      for (int64_t b : dirty) next_dirty.insert(b >> 2);
      dirty.swap(next_dirty);
    }
    for (const auto& [b, acc] : cur) {
      if (dirty.count(b)) continue;  // recomputed below, appended rows included
      bind_row(merge_, k.run, k.name, k.rank, level, b, acc);
      merge_.exec();
    }
    for (int64_t b : dirty) {
      Acc acc;
      if (level == 0) {
        const int64_t lo = b * (int64_t{1} << shift(0));
        raw_.bind(1, k.run).bind(2, k.name).bind(3, k.rank).bind(4, lo).bind(5, lo + (int64_t{1} << shift(0)) - 1);
        while (raw_.step()) acc.add(raw_.col_int(0), raw_.col_double(1));
        raw_.reset();
      } else {
        children_.bind(1, k.run).bind(2, k.name).bind(3, k.rank).bind(4, level - 1);
        children_.bind(5, b * 4).bind(6, b * 4 + 3);
        while (children_.step()) acc.merge(read_bucket(children_, 0));
        children_.reset();
      }
      if (acc.n == 0) {
        erase_.bind(1, k.run).bind(2, k.name).bind(3, k.rank).bind(4, level).bind(5, b).exec();
      } else {
        bind_row(replace_, k.run, k.name, k.rank, level, b, acc);
        replace_.exec();
      }
    }
  }
}

void BatchLod::flush() {
  for (auto& [k, s] : series_) flush_series(k, s);
  series_.clear();
  last_ = nullptr;
}

}  // namespace lod

}  // namespace td::store
