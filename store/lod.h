// The level of detail of metric series (table metric_lod, docs/store.md), kept up to date by
// the ingester inside its batch transaction. Internal to store/.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store/sqlite.h"
#include "store/types.h"

namespace td::store::lod {

inline constexpr int kLevels = 9;  // levels 0..8
/// log2 of the steps per bucket at `level`: 16 * 4^level steps (16 .. 1,048,576). Every
/// granularity is 4x the next finer one, so the finest level with <= 2 * max_points buckets
/// over a range has more than max_points / 2 (Store::metric_envelope).
constexpr int shift(int level) { return 4 + 2 * level; }

/// Folds values into a bucket summary (Bucket's fields); merge() is exact for disjoint steps.
struct Acc : Bucket {
  void add(int64_t step, double v);
  void merge(const Bucket& o);
};

/// The summary columns of a metric_lod row, in read_bucket()'s order.
inline constexpr const char* kBucketCols =
    "step_min, step_max, step_at_min, step_at_max, v_min, v_max, v_first, v_last, v_sum, n";
/// The bucket summary in columns c0 .. c0 + 9 of `st`'s current row (kBucketCols' order).
Bucket read_bucket(const Stmt& st, int c0);

/// Rebuilds metric_lod from the raw rows of run `run` (every run when nullopt) in one
/// sequential pass over `metrics`. The caller holds the write transaction.
void rebuild(sqlite3* db, std::optional<int64_t> run);

/// The LOD changes of one ingest batch. Call begin() at the start of each batch (it drops
/// any state of a rolled-back one); for each metric row upsert call is_append() BEFORE
/// writing it, then appended() or changed() when the write changed the row; flush() before
/// the commit writes every touched bucket.
class BatchLod {
 public:
  void begin(sqlite3* db);
  /// True when `step` is above every step the series has (stored or written this batch), so
  /// the upsert is certainly a plain insert and the row can be folded into the buckets.
  bool is_append(int64_t run, int64_t name, int rank, int64_t step);
  void appended(int64_t run, int64_t name, int rank, int64_t step, double value);
  /// The row at `step` was inserted into a gap or replaced: its buckets are recomputed.
  void changed(int64_t run, int64_t name, int rank, int64_t step);
  void flush();

 private:
  struct Key {
    int64_t run, name;
    int rank;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = static_cast<uint64_t>(k.run) * 0x9E3779B97F4A7C15ull;
      h ^= static_cast<uint64_t>(k.name) * 0xC2B2AE3D27D4EB4Full + (h << 6) + (h >> 2);
      h ^= static_cast<uint64_t>(k.rank) * 0x165667B19E3779F9ull + (h << 6) + (h >> 2);
      return static_cast<size_t>(h);
    }
  };
  struct Series {
    int64_t max_step;                                 // highest step stored or written
    bool has_rows;                                    // max_step is meaningful
    std::vector<std::pair<int64_t, Acc>> appended;    // level-0 buckets, ascending
    std::set<int64_t> dirty;                          // level-0 buckets to recompute
  };
  Series& series(int64_t run, int64_t name, int rank);
  void flush_series(const Key& k, Series& s);

  sqlite3* db_ = nullptr;
  std::unordered_map<Key, Series, KeyHash> series_;
  Key last_key_{-1, -1, -1};
  Series* last_ = nullptr;
  Stmt max_step_, merge_, replace_, raw_, children_, erase_;
};

}  // namespace td::store::lod
