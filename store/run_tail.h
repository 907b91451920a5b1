// RunTail: the one component that brings a followed run's events into the store, whatever a run
// target did to have its events file here — the engine's own file (a run on this machine) or a
// byte-for-byte mirror a target keeps of a file elsewhere (SSH node, Slurm's shared filesystem).
// It ingests by byte offset, exactly once (td::store::Ingester), and ends a run whose source is
// gone without a run_end event. Who decides that the source is gone (a pid, a node's process, a
// scheduler's job) is the target's business; this class only records the consequence.
//
// Used by the GUI's RunFollower (local files, on its thread) and td::remote::RemoteFollower
// (mirrors, on a target's worker thread). Plain C++, no Qt.
// Threading rule: one thread at a time, like the Store it uses.
#pragma once

#include <optional>
#include <string>

#include "store/ingest.h"
#include "store/store.h"

namespace td::store {

class RunTail {
 public:
  /// Follows run `run_id` whose events file here is `events_path` (absolute; it may not exist
  /// yet). The file feeds that run only: lines naming another run are skipped and counted
  /// (IngestStats::foreign), never written. Runs first seen go to `experiment`. `store` must outlive the RunTail. Touches neither
  /// the file nor the store until the first call.
  RunTail(Store& store, std::string run_id, std::string events_path, std::string experiment = kDefaultExperiment);

  /// Ingests what was appended since the last call: everything when `budget_s` <= 0, else
  /// batches until `budget_s` seconds are spent (a long backfill then yields; stats.at_eof says
  /// whether it is caught up). Errors: td::Error from Ingester::poll (file replaced or
  /// truncated, store error), the batch rolled back.
  IngestStats ingest(double budget_s = 0);

  /// The run as the store has it; nullopt before its first event or launch record arrived.
  std::optional<RunInfo> run();
  /// Whether the store has the run's end (its run_end was ingested, or it was marked ended).
  bool ended();

  /// What finish() did.
  struct End {
    std::string status;          ///< the store's final status: completed | stopped | failed | ...
    std::string end_reason;      ///< the store's end_reason
    bool marked = false;         ///< this call wrote the end (the events had none)
    IngestStats ingest;          ///< the last ingest it did
  };
  /// The source is gone (the engine's process ended, the job ended): ingests the rest of the
  /// file, then, when the store still has no end for the run, ends it with `status` ("failed",
  /// or "stopped" after a stop the user asked for) and `reason` at `t` (Unix seconds; 0: now).
  /// A run the store does not know at all (no event ingested, no launch recorded) is left
  /// alone: the result's status is "unknown".
  /// Errors: as ingest(), or td::Error from the store.
  End finish(const std::string& status, const std::string& reason, double t = 0);

  const std::string& run_id() const { return run_id_; }
  const std::string& events_path() const { return ingester_.events_path(); }
  /// The byte offset ingested so far (the store's record).
  int64_t offset() { return ingester_.offset(); }

 private:
  // Throws td::Error when an ingest left a transaction or statement open (Store::release_open_state
  // closed it): a bug that would keep this connection's writes uncommitted or its reads stale.
  void check_released();
  Store& store_;
  std::string run_id_;
  Ingester ingester_;
};

}  // namespace td::store
