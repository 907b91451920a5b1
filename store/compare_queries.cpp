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
  const RunThroughput tp = run_throughput(run_id);
  r.tokens_per_s = tp.tokens_per_s;
  r.mfu = tp.mfu;
  r.tokens_seen = [&]() -> std::optional<int64_t> {
    const LastAndMin t = last_and_min(db_, key, "tokens_seen");
    if (!t.last) return std::nullopt;
    return static_cast<int64_t>(*t.last);
  }();
  r.wall_seconds = run_progress(run_id).elapsed_s;
  return r;
}

std::string Store::run_name_from_diff(const std::string& config_json, const std::string& previous_json) {
  if (previous_json.empty()) return {};
  const auto now = flatten_config(config_json), before = flatten_config(previous_json);
  if (before.empty()) return {};
  std::vector<std::pair<std::string, std::string>> diff;  // (path, value) that changed
  for (const auto& kv : now) {
    const auto it = std::lower_bound(before.begin(), before.end(), std::make_pair(kv.first, std::string()));
    if (it == before.end() || it->first != kv.first || it->second != kv.second) diff.push_back(kv);
  }
  auto leaf = [](const std::string& path) {
    const size_t dot = path.rfind('.');
    return dot == std::string::npos ? path : path.substr(dot + 1);
  };
  std::string out;
  const size_t shown = std::min<size_t>(diff.size(), 3);
  for (size_t i = 0; i < shown; ++i) {
    const std::string l = leaf(diff[i].first);
    bool shared = false;
    for (const auto& d : diff) shared = shared || (d.first != diff[i].first && leaf(d.first) == l);
    if (!out.empty()) out += ", ";
    out += (shared ? diff[i].first : l) + "=" + diff[i].second;
  }
  if (diff.size() > shown) out += " +" + std::to_string(diff.size() - shown) + " more";
  if (out.size() > 120) out = out.substr(0, 117) + "...";
  // Only printable ASCII and UTF-8 text survive normalise_run_name; a value with a control
  // character (a string field holding a newline) is dropped from the name.
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

std::string Store::suggest_run_name(const std::string& experiment, const std::string& config_json) {
  Stmt st(db_,
          "SELECT coalesce(r.config, '') FROM runs r JOIN experiments e ON e.id = r.experiment"
          " WHERE e.name = ?1 AND r.config IS NOT NULL ORDER BY r.start_time DESC, r.id DESC LIMIT 1");
  st.bind(1, experiment);
  if (!st.step()) return {};
  return run_name_from_diff(config_json, st.col_text(0));
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
