// Test runs for the metrics model and the charts: events.jsonl lines (docs/events.md) written
// by hand and ingested through the store's own Ingester.
#pragma once

#include <QString>

#include <cmath>
#include <cstdio>
#include <string>

#include "store/ingest.h"
#include "store/store.h"

namespace td::gui::test {

/// A run_start whose config gives tokens per step = seq_len * micro_batch * grad_accum
/// (world_size 1).
inline std::string run_start_line(const std::string& run, double t, int seq_len = 64, int micro_batch = 4,
                                  int grad_accum = 2) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                R"({"type":"run_start","v":1,"t":%.3f,"run_id":"%s","attempt":0,"rank":0,"host":"h","device":"cpu",)"
                R"("world_size":1,"config":{"model":{"seq_len":%d},"train":{"micro_batch":%d,"grad_accum":%d}}})"
                "\n",
                t, run.c_str(), seq_len, micro_batch, grad_accum);
  return buf;
}

/// MFU / tokens_per_s of the test runs: a constant of a run, as the engine's (1/8192, exact).
inline constexpr double kMfuPerTokenPerS = 1.0 / 8192.0;

/// A step event with loss, lr, grad_norm, tokens_per_s (2000 + step), mfu (tokens_per_s *
/// kMfuPerTokenPerS), rss_bytes (values written so they read back exactly).
inline std::string step_line(const std::string& run, int64_t step, double t, double loss) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                R"({"type":"step","v":1,"t":%.17g,"run_id":"%s","attempt":0,"rank":0,"step":%lld,"loss":%.17g,)"
                R"("lr":0.001,"grad_norm":%.17g,"tokens_per_s":%.17g,"mfu":%.17g,"rss_bytes":%lld})"
                "\n",
                t, run.c_str(), static_cast<long long>(step), loss, 1.0 + static_cast<double>(step % 5),
                2000.0 + static_cast<double>(step), (2000.0 + static_cast<double>(step)) * kMfuPerTokenPerS,
                static_cast<long long>(100000000 + step));
  return buf;
}

inline std::string eval_line(const std::string& run, int64_t step, double t, double val_loss) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                R"({"type":"eval","v":1,"t":%.17g,"run_id":"%s","attempt":0,"rank":0,"step":%lld,"val_loss":%.17g})"
                "\n",
                t, run.c_str(), static_cast<long long>(step), val_loss);
  return buf;
}

/// Loss of the small run at `step`: 5 - step / 100.
inline double small_loss(int64_t step) { return 5.0 - static_cast<double>(step) / 100.0; }

/// Writes run `run` of `steps` steps (t = t0 + step / 2 s, loss small_loss(step), val_loss
/// 4 - step / 1000 at every 50th step) to `events` and ingests it into `db`.
inline void write_small_run(const QString& db, const QString& events, const std::string& run, int64_t steps,
                            double t0 = 1000.0) {
  std::FILE* f = std::fopen(events.toStdString().c_str(), "wb");
  const std::string start = run_start_line(run, t0);
  std::fwrite(start.data(), 1, start.size(), f);
  for (int64_t s = 1; s <= steps; ++s) {
    const std::string l = step_line(run, s, t0 + static_cast<double>(s) / 2, small_loss(s));
    std::fwrite(l.data(), 1, l.size(), f);
    if (s % 50 == 0) {
      const std::string e = eval_line(run, s, t0 + static_cast<double>(s) / 2 + 0.25, 4.0 - static_cast<double>(s) / 1000);
      std::fwrite(e.data(), 1, e.size(), f);
    }
  }
  std::fclose(f);
  td::store::Store st(db.toStdString());
  td::store::Ingester ing(st, events.toStdString(), "e");
  ing.poll_all();
}

}  // namespace td::gui::test
