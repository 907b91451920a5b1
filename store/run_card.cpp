// Store::run_card: what a run needs to be reproduced (docs/store.md "Run card", schema
// version 9). Not in the fuzzers' store subset (tests/fuzz/CMakeLists.txt): it calls
// remote_run (store/clusters.cpp).
#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace td::store {

using json = nlohmann::json;

RunCard Store::run_card(const std::string& run_id) {
  const int64_t key = require_run(run_id);  // throws: "no run 'X' in store 'F'; list the runs with ..."
  Stmt st(db_,
          "SELECT r.run_id, r.name, e.name, r.status, coalesce(r.config, ''), coalesce(r.dataset_path, ''),"
          " coalesce(r.dataset_sha256, ''), r.dataset_train_tokens, r.dataset_val_tokens,"
          " coalesce(r.engine_version, ''), coalesce(r.engine_build, ''), coalesce(r.host, ''),"
          " coalesce(r.device, ''), coalesce(r.device_name, ''), r.world_size, coalesce(r.hosts, ''),"
          " coalesce((SELECT m.target FROM remote_runs m WHERE m.run = r.id), 'local')"
          " FROM runs r JOIN experiments e ON e.id = r.experiment WHERE r.id = ?1");
  st.bind(1, key);
  TD_CHECK(st.step(), "run '" + run_id + "' vanished from the store while its card was read");
  RunCard c;
  c.run_id = st.col_text(0);
  c.name = st.col_text(1);
  c.experiment = st.col_text(2);
  c.status = st.col_text(3);
  c.config_json = st.col_text(4);
  c.dataset_path = st.col_text(5);
  c.dataset_sha256 = st.col_text(6);
  c.dataset_train_tokens = st.col_opt_int(7);
  c.dataset_val_tokens = st.col_opt_int(8);
  c.engine_version = st.col_text(9);
  c.engine_build = st.col_text(10);
  c.host = st.col_text(11);
  c.device = st.col_text(12);
  c.device_name = st.col_text(13);
  c.world_size = st.col_opt_int(14);
  const std::string hosts = st.col_text(15);
  c.target = st.col_text(16);
  st.reset();
  // Text from an events file (another program's output): read defensively, never thrown on.
  const json cfg = json::parse(c.config_json, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_object()) {
    const auto train = cfg.find("train");
    if (train != cfg.end() && train->is_object()) {
      const auto seed = train->find("seed");
      if (seed != train->end() && seed->is_number_unsigned()) c.seed = seed->get<uint64_t>();
    }
    const auto data = cfg.find("data");
    if (c.dataset_path.empty() && data != cfg.end() && data->is_object()) {
      const auto path = data->find("path");
      if (path != data->end() && path->is_string()) c.dataset_path = path->get<std::string>();
    }
  }
  const json hs = json::parse(hosts, nullptr, false);
  if (hs.is_array())
    for (const auto& h : hs)
      if (h.is_string()) c.hosts.push_back(h.get<std::string>());
  if (c.target != "local") c.remote = remote_run(run_id);
  return c;
}

std::string Store::run_card_json(const RunCard& c) {
  auto text = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  auto num = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  json config = json::parse(c.config_json, nullptr, false);
  if (config.is_discarded()) config = nullptr;
  json remote = nullptr;
  if (c.remote) {
    json node = json::parse(c.remote->node_json, nullptr, false);
    remote = {{"cluster", c.remote->cluster}, {"node", node.is_discarded() ? json(nullptr) : node},
              {"target", c.remote->target}, {"run_dir", c.remote->run_dir}};
  }
  json j = {{"run_id", c.run_id},
            {"name", text(c.name)},
            {"experiment", c.experiment},
            {"status", c.status},
            {"config", config},
            {"seed", num(c.seed)},
            {"dataset",
             {{"path", text(c.dataset_path)},
              {"manifest_sha256", text(c.dataset_sha256)},
              {"train_tokens", num(c.dataset_train_tokens)},
              {"val_tokens", num(c.dataset_val_tokens)}}},
            {"engine_version", text(c.engine_version)},
            {"engine_build", text(c.engine_build)},
            {"host", text(c.host)},
            {"device", text(c.device)},
            {"device_name", text(c.device_name)},
            {"world_size", num(c.world_size)},
            {"hosts", c.hosts},
            {"target", c.target},
            {"remote", remote}};
  return j.dump(2);
}

}  // namespace td::store
