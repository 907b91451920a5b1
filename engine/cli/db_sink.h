// `train --db FILE`: records the run's events in the SQLite store while it trains.
//
// The trainer calls poll() after each event; the sink ingests at most every 200 ms (and all that
// is left in finish()), so the store trails the events file by well under a second. The events
// file is the record; the store catches up with it from the byte offset it keeps, exactly once
// (store/ingest.h):
//  * a store that cannot be written (locked by another program or a backup for longer than the
//    busy timeout, a full disk) is retried with backoff (0.25 s doubling to 4 s), with a warning
//    on stderr when it starts failing and a note when it has caught up; training never waits
//    more than kBusyMs for it;
//  * finish() waits up to its patience for such a store, then says how to catch it up by hand:
//    `traindeck-engine runs ingest RUN_DIR --db FILE`;
//  * malformed lines ingest skipped are reported on stderr (the first few, and their count).
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace td::store {
class Store;
class Ingester;
struct IngestStats;
}  // namespace td::store

namespace td::cli {

class DbSink {
 public:
  /// Longest wait (milliseconds) of one poll for another connection's lock on the store.
  static constexpr int kBusyMs = 250;

  /// Opens (creates) the store at `db_path` and claims `run_id` for `events_path` (absolute,
  /// store::events_path_of) in one transaction (Store::claim_run), so that two processes started
  /// together with one --run-id cannot both record it. For a fresh run (fresh = true) it refuses
  /// a run_id that the store already holds from another events file, and forgets a stale ingest
  /// offset of events_path (a run directory deleted and used again). Throws td::Error (the run
  /// must not start then).
  DbSink(const std::string& db_path, const std::string& events_path, const std::string& experiment,
         const std::string& run_id, bool fresh);
  ~DbSink();
  /// Ingests what is new (at most every 200 ms; while the store fails, at its next retry). Never
  /// throws and never waits more than about kBusyMs for a lock.
  void poll();
  /// Ingests every complete line left, retrying a failing store for up to `patience`; gives a
  /// claimed run that never started back (Store::release_claim). A run that started but whose
  /// end is not in the store (its run_end could not be written: a full disk, an unwritable
  /// events file) gets it directly: status failed, reason `failure` (the engine's error; "" when
  /// training returned without one). Never throws. Returns whether the store holds every complete
  /// line of the events file.
  bool finish(const std::string& failure = "", std::chrono::milliseconds patience = std::chrono::seconds(60));

 private:
  bool ingest(bool all);  // true when the batch(es) committed
  void end_without_run_end(const std::string& failure);
  void report(const store::IngestStats& s);
  std::string db_path_, events_path_, run_id_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::Ingester> ingester_;
  bool claimed_ = false;  // this sink created the run's row (claim_run gave created)
  std::chrono::steady_clock::time_point last_{};
  // A failing store: since when, when to try next, the current backoff, the last error.
  bool failing_ = false;
  std::chrono::steady_clock::time_point failing_since_{}, next_try_{};
  std::chrono::milliseconds backoff_{250};
  std::string last_error_;
  size_t skipped_ = 0;   // malformed lines skipped while this sink ingested
  size_t messages_ = 0;  // ingest messages printed (the first few)
};

}  // namespace td::cli
