// `train --db FILE`: records the run's events in the SQLite store while it trains.
// The trainer calls poll() after each event; the sink ingests at most every 200 ms (and once
// more in finish()), so the store trails the events file by well under a second. A store that
// cannot be written is reported once and training goes on (the events file stays the record:
// `traindeck-engine runs` can ingest it later).
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace td::store {
class Store;
class Ingester;
}  // namespace td::store

namespace td::cli {

class DbSink {
 public:
  /// Opens (creates) the store. For a fresh run (fresh = true) it refuses a run_id that the store
  /// already holds from another events file, and forgets a stale ingest offset of events_path
  /// (a run directory deleted and used again). Throws td::Error.
  DbSink(const std::string& db_path, const std::string& events_path, const std::string& experiment,
         const std::string& run_id, bool fresh);
  ~DbSink();
  void poll();
  void finish();

 private:
  void ingest(bool all);
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::Ingester> ingester_;
  std::chrono::steady_clock::time_point last_{};
  bool failed_ = false;
};

}  // namespace td::cli
