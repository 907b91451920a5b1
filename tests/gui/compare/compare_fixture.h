// Stores for the compare tests: three runs written as events.jsonl by hand and ingested by the
// store's Ingester. Every number the tests expect is computed by hand in the comments.
#pragma once

#include <QString>

#include "store/ingest.h"
#include "store/store.h"
#include "tests/store/events_fixture.h"

namespace td::gui::test {

using namespace td::store::test;

// The config of every run; `lr` and `d_model` vary. 7 fields: data.tokenizer, model.d_model,
// model.n_head, model.n_layer, train.lr, train.seed, train.steps.
inline json config(double lr, int d_model) {
  return json{{"model", {{"d_model", d_model}, {"n_layer", 2}, {"n_head", 4}}},
              {"train", {{"lr", lr}, {"steps", 6}, {"seed", 1337}}},
              {"data", {{"tokenizer", "byte"}}}};
}

inline json start(const std::string& run, double t, int attempt, json resumed, const json& cfg, int64_t n_params) {
  json j = run_start(run, t, attempt, resumed);
  j["config"] = cfg;
  j["n_params"] = n_params;
  j["pid"] = 4000 + attempt;
  return j;
}

inline json stepv(const std::string& run, double t, int64_t s, double loss, double tps, json mfu, int attempt = 0) {
  json j = step(run, t, s, loss, attempt);
  j["tokens_per_s"] = tps;
  j["mfu"] = mfu;
  return j;  // tokens_seen = 1024 * s
}

inline json eval(const std::string& run, double t, int64_t s, double val, int attempt = 0) {
  json j = ev("eval", run, t, attempt);
  j["step"] = s;
  j["val_loss"] = val;
  return j;
}

inline json end(const std::string& run, double t, const char* status, int64_t s, int attempt = 0) {
  json j = ev("run_end", run, t, attempt);
  j["status"] = status;
  j["reason"] = "test";
  j["step"] = s;
  return j;
}

// run-a, train.lr 1e-3: stopped after step 3 (attempt 0, t 1000..1035), resumed at 3 (attempt
// 1, t 2000..2040), completed at step 6.
//   loss 5, 4, 3.5, 3, 2.75, 2.9         -> final 2.9, best 2.75
//   val_loss 2.8 (step 3), 3.1 (step 6)  -> final 3.1, best 2.8
//   tokens/s 100 1500 1900 | 2000 2100 5000 -> each attempt's first 3 steps are warm-up (attempt
//     1 resumed from 3: steps 4..6), which leaves none: the median of all six, (1900 + 2000) / 2
//     = 1950 (the mean, 2100, differs)
//   mfu .05 .3 .35 | .40 .42 .5           -> median (.35 + .40) / 2 = 0.375
//   wall (1035 - 1000) + (2040 - 2000) = 75 s (not 2040 - 1000); tokens seen 6 * 1024 = 6144
inline std::string run_a() {
  const json cfg = config(0.001, 64);
  std::string t = line(start("run-a", 1000, 0, nullptr, cfg, 12345));
  t += line(stepv("run-a", 1010, 1, 5.0, 100, 0.05));
  t += line(stepv("run-a", 1020, 2, 4.0, 1500, 0.3));
  t += line(stepv("run-a", 1030, 3, 3.5, 1900, 0.35));
  t += line(eval("run-a", 1031, 3, 2.8));
  t += line(end("run-a", 1035, "stopped", 3));
  t += line(start("run-a", 2000, 1, 3, cfg, 12345));
  t += line(stepv("run-a", 2010, 4, 3.0, 2000, 0.40, 1));
  t += line(stepv("run-a", 2020, 5, 2.75, 2100, 0.42, 1));
  t += line(stepv("run-a", 2030, 6, 2.9, 5000, 0.5, 1));
  t += line(eval("run-a", 2031, 6, 3.1, 1));
  t += line(end("run-a", 2040, "completed", 6, 1));
  return t;
}

// run-b, train.lr 2e-3: still running (no run_end), 5 steps at t 510..550, start 500.
//   loss 6 5 4.5 4.25 4.125 -> final 4.125, best 4.125; no eval
//   tokens/s 100 1000 1200 | 1300 1500 -> median of steps 4, 5 (1..3 warm-up) = 1400; mfu null (no peak)
//   wall 550 - 500 = 50 s so far; tokens seen 5120
inline std::string run_b() {
  const json cfg = config(0.002, 64);
  std::string t = line(start("run-b", 500, 0, nullptr, cfg, 12345));
  const double loss[] = {6, 5, 4.5, 4.25, 4.125}, tps[] = {100, 1000, 1200, 1300, 1500};
  for (int s = 1; s <= 5; ++s) t += line(stepv("run-b", 500 + 10 * s, s, loss[s - 1], tps[s - 1], nullptr));
  return t;
}

// run-c, train.lr 1e-3 like run-a but d_model 128: two steps, completed.
//   final loss 4.5, tokens/s median over both steps (no more than 3): (800 + 900) / 2 = 850
//   wall 100 - 90 = 10 s
inline std::string run_c() {
  const json cfg = config(0.001, 128);
  std::string t = line(start("run-c", 90, 0, nullptr, cfg, 45678));
  t += line(stepv("run-c", 95, 1, 5.5, 800, 0.2));
  t += line(stepv("run-c", 99, 2, 4.5, 900, 0.3));
  t += line(end("run-c", 100, "completed", 2));
  return t;
}

/// Writes the three runs' events files under `dir` and ingests them into `<dir>/td.db`, in
/// experiments "exp" (a, b) and "other" (c). Returns the store path.
inline QString makeCompareStore(const QString& dir) {
  const std::string db = (dir + "/td.db").toStdString();
  td::store::Store st(db);
  auto ingest = [&](const char* name, const std::string& text, const char* experiment) {
    const std::string path = (dir + "/" + name + ".jsonl").toStdString();
    write_file(path, text);
    td::store::Ingester ing(st, path, experiment);
    ing.poll_all();
  };
  ingest("a", run_a(), "exp");
  ingest("b", run_b(), "exp");
  ingest("c", run_c(), "other");
  return dir + "/td.db";
}

}  // namespace td::gui::test
