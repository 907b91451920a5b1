// Store: queries for comparing runs (gui/compare): summary numbers and flattened configs.
// Definitions and rules: store.h "compare queries", docs/store.md "Compare".
#include <algorithm>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace td::store {

namespace {

// The value of metric `name` (rank 0) at the run's highest step with one, and the minimum.
struct LastAndMin {
  std::optional<double> last, min;
};

LastAndMin last_and_min(sqlite3* db, int64_t run, const char* name) {
  // Both read the (run, name, rank, step) key: one seek to the end, one range scan.
  Stmt st(db,
          "SELECT (SELECT value FROM metrics WHERE run = ?1 AND name = n.id AND rank = 0"
          "        ORDER BY step DESC LIMIT 1),"
          "       (SELECT min(value) FROM metrics WHERE run = ?1 AND name = n.id AND rank = 0)"
          " FROM metric_names n WHERE n.name = ?2");
  st.bind(1, run).bind(2, name);
  LastAndMin out;
  if (st.step()) {
    out.last = st.col_opt_double(0);
    out.min = st.col_opt_double(1);
  }
  return out;
}

// Median of metric `name` (rank 0) over the steps after the first `skip` stored ones (all of
// them when there are no more than `skip`): the mean of the two middle values for an even count.
std::optional<double> median_after(sqlite3* db, int64_t run, const char* name, int skip) {
  Stmt ids(db, "SELECT id FROM metric_names WHERE name = ?1");
  ids.bind(1, name);
  if (!ids.step()) return std::nullopt;
  const int64_t id = ids.col_int(0);
  Stmt cnt(db, "SELECT count(*) FROM metrics WHERE run = ?1 AND name = ?2 AND rank = 0");
  cnt.bind(1, run).bind(2, id);
  cnt.step();
  const int64_t n_all = cnt.col_int(0);
  if (n_all == 0) return std::nullopt;
  const int64_t skipped = n_all > skip ? skip : 0;
  const int64_t n = n_all - skipped;
  // Values of the kept steps (those after the first `skipped` steps), sorted; the middle one(s).
  Stmt mid(db,
           "SELECT value FROM (SELECT value FROM metrics WHERE run = ?1 AND name = ?2 AND rank = 0"
           " ORDER BY step LIMIT -1 OFFSET ?3) ORDER BY value LIMIT ?4 OFFSET ?5");
  mid.bind(1, run).bind(2, id).bind(3, skipped).bind(4, int64_t(n % 2 == 0 ? 2 : 1)).bind(5, (n - 1) / 2);
  double sum = 0;
  int got = 0;
  while (mid.step()) {
    sum += mid.col_double(0);
    ++got;
  }
  if (got == 0) return std::nullopt;
  return sum / got;
}

void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  out.emplace_back(prefix, j.is_string() ? j.get<std::string>()
                                         : j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

Store::RunNumbers Store::run_numbers(const std::string& run_id) {
  RunNumbers r;
  r.info = get_run(run_id);  // throws for an unknown run
  const int64_t key = require_run(run_id);
  const LastAndMin loss = last_and_min(db_, key, "loss");
  r.final_loss = loss.last;
  r.best_loss = loss.min;
  const LastAndMin val = last_and_min(db_, key, "val_loss");
  r.final_val_loss = val.last;
  r.best_val_loss = val.min;
  r.tokens_per_s = median_after(db_, key, "tokens_per_s", kWarmupSteps);
  r.mfu = median_after(db_, key, "mfu", kWarmupSteps);
  r.tokens_seen = [&]() -> std::optional<int64_t> {
    const LastAndMin t = last_and_min(db_, key, "tokens_seen");
    if (!t.last) return std::nullopt;
    return static_cast<int64_t>(*t.last);
  }();
  // Sum over attempts of (end - start); an attempt without an end runs to its last metric row.
  Stmt wall(db_,
            "SELECT sum(max(0, coalesce(a.end_time,"
            "   (SELECT max(m.t) FROM metrics m WHERE m.run = a.run AND m.attempt = a.attempt),"
            "   a.start_time) - a.start_time)), count(a.start_time)"
            " FROM run_attempts a WHERE a.run = ?1 AND a.start_time IS NOT NULL");
  wall.bind(1, key);
  if (wall.step() && wall.col_int(1) > 0) r.wall_seconds = wall.col_double(0);
  return r;
}

std::vector<std::pair<std::string, std::string>> Store::flatten_config(const std::string& config_json) {
  std::vector<std::pair<std::string, std::string>> out;
  if (config_json.empty()) return out;
  const nlohmann::json j = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return out;
  flatten(j, "", out);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace td::store
