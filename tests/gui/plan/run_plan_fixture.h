// A two-rank CPU run written as events by hand (docs/events.md), for the plan-vs-measured tests
// (tests/gui/plan/test_run_plan.cpp, tests/gui/app/test_run_view_plan.cpp). Every figure the
// tests expect is computed by hand in test_run_plan.cpp.
#pragma once

#include <QString>

#include "store/ingest.h"
#include "store/store.h"
#include "tests/store/events_fixture.h"

namespace td::gui::test {

using namespace td::store::test;

// Tied GPT-2, V = 257, T = 32, L = 2, C = 32, NH = 2, micro_batch 4: N = 34720 parameters,
// 226752 FLOPs per token (tests/engine/test_train.cpp, plan_counts_parameters_by_hand).
inline json engineConfig() {
  return {{"model", {{"vocab_size", 257}, {"seq_len", 32}, {"n_layer", 2}, {"n_head", 2}, {"d_model", 32}}},
          {"train", {{"threads", 2}, {"steps", 6}, {"micro_batch", 4}}},
          {"data", {{"path", "/data/x"}}}};
}

// Six steps on 2 ranks, peak 1e11 FLOP/s per device.
//   rss_bytes (rank 0) 20e6, 21e6, 21e6, 21e6, 21e6, 21e6 -> peak 21e6
//   tokens_per_s 100000 300000 | 380000 400000 410000 -> Store median after the first 3 of 6:
//     steps 4..6 = 380000, 400000, 410000 -> 400000 (step 3's 390000 skipped)
//   comm_bytes_sent (rank 0) 1e5 1e5 1e5 | 139000 140000 142000 -> median 140000
//   busbw_gb_s (rank 0) .1 .1 .1 | .25 .2 .3 -> median 0.25 GB/s = 2.5e8 B/s
//   data_read_mb_s 500 500 500 | 180 200 240 -> median 200 MB/s = 2e8 B/s
//   step_ms 100 each; data_wait_ms 50 50 50 | 10 10 10 -> steps 4..6 waited 30 of 300 ms = 10 %
//     of their time: input-bound (store/input_pipeline.h)
inline std::string planRunEvents() {
  json start = run_start("run-p", 1000);
  start["config"] = engineConfig();
  start["world_size"] = 2;
  start["peak_flops"] = 1e11;
  std::string t = line(start);
  const double rss[] = {20e6, 21e6, 21e6, 21e6, 21e6, 21e6};
  const double tps[] = {100000, 300000, 390000, 380000, 400000, 410000};
  const double sent[] = {1e5, 1e5, 1e5, 139000, 140000, 142000};
  const double bw[] = {0.1, 0.1, 0.1, 0.25, 0.2, 0.3};
  const double read_mb_s[] = {500, 500, 500, 180, 200, 240};
  const double wait_ms[] = {50, 50, 50, 10, 10, 10};
  for (int s = 1; s <= 6; ++s) {
    json j = step("run-p", 1000 + s, s, 5.0 - 0.1 * s);
    j["rss_bytes"] = rss[s - 1];
    j["tokens_per_s"] = tps[s - 1];
    j["step_ms"] = 100.0;
    j["data_wait_ms"] = wait_ms[s - 1];
    j["data_read_mb_s"] = read_mb_s[s - 1];
    json ranks = json::array();
    for (int r = 0; r < 2; ++r)
      ranks.push_back({{"rank", r}, {"host", "nodeA"}, {"tokens_per_s", tps[s - 1] / 2}, {"comm_bytes_sent", sent[s - 1] + r},
                       {"comm_bytes_received", sent[s - 1]}, {"comm_ms", 1.0}, {"busbw_gb_s", bw[s - 1] + r},
                       {"rss_bytes", rss[s - 1]}});
    j["ranks"] = ranks;
    t += line(j);
  }
  json end = ev("run_end", "run-p", 1010);
  end["status"] = "completed";
  end["reason"] = "reached train.steps";
  end["step"] = 6;
  t += line(end);
  return t;
}

/// Writes the run's events under `dir` and ingests them into `<dir>/td.db` (experiment "exp");
/// returns the store path.
inline QString makePlanRunStore(const QString& dir) {
  const std::string db = (dir + "/td.db").toStdString();
  td::store::Store st(db);
  const std::string path = (dir + "/p.jsonl").toStdString();
  write_file(path, planRunEvents());
  td::store::Ingester ing(st, path, "exp");
  ing.poll_all();
  return dir + "/td.db";
}

}  // namespace td::gui::test
