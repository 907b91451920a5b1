// Helpers for store tests: build events.jsonl lines (docs/events.md) and write files.
#pragma once

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "store/sqlite.h"
#include "store/store.h"

namespace td::store::test {

using json = nlohmann::json;

inline json ev(const char* type, const std::string& run_id, double t, int attempt = 0, int rank = 0) {
  return json{{"type", type}, {"v", 1}, {"t", t}, {"run_id", run_id}, {"attempt", attempt}, {"rank", rank}};
}

inline json run_start(const std::string& run_id, double t, int attempt = 0,
                      json resumed_from_step = nullptr) {
  json j = ev("run_start", run_id, t, attempt);
  j["config"] = {{"model", {{"d_model", 64}, {"n_layer", 2}}}, {"train", {{"lr", 0.001}}}};
  j["n_params"] = 12345;
  j["flops_per_token"] = 74070.0;
  j["host"] = "nodeA";
  j["device"] = "cpu";
  j["threads"] = 2;
  j["world_size"] = 1;
  j["engine_version"] = "0.1.0";
  j["peak_flops"] = nullptr;
  j["resumed_from_step"] = resumed_from_step;
  return j;
}

// A step event with all eight metric fields; mfu null when mfu < 0.
inline json step(const std::string& run_id, double t, int64_t s, double loss, int attempt = 0,
                 int rank = 0, double mfu = 0.5) {
  json j = ev("step", run_id, t, attempt, rank);
  j["step"] = s;
  j["tokens_seen"] = 1024 * s;
  j["loss"] = loss;
  j["lr"] = 0.001;
  j["grad_norm"] = 1.5;
  j["step_ms"] = 100.25;
  j["tokens_per_s"] = 2048.0 + static_cast<double>(s);
  j["mfu"] = mfu < 0 ? json(nullptr) : json(mfu);
  j["rss_bytes"] = 100000000;
  return j;
}

/// The single integer a query returns (e.g. SELECT count(*) ...).
inline int64_t count(Store& st, const std::string& sql) {
  Stmt s(st.handle(), sql);
  s.step();
  return s.col_int(0);
}

inline std::string line(const json& j) { return j.dump() + "\n"; }

inline void write_file(const std::string& path, const std::string& text, bool append = false) {
  std::ofstream f(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  f << text;
}

}  // namespace td::store::test
