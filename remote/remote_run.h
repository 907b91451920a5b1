// Following an engine run on a node (plain C++, no Qt; a GUI worker thread drives it):
// mirrors <run dir>/events.jsonl on the node into a local file byte for byte and hands the mirror
// to td::store::RunTail, the one component that ingests every followed run (so byte offsets and
// resumption are the local ones),
// reconnects with bounded backoff after a dropped connection, notices a dead engine and stops one.
//
// Exactly once: bytes are appended to the mirror only after a fetch command completed, and a
// fetch always starts at the mirror's size; the Ingester resumes at its recorded offset.
// Threading rule: a RemoteFollower (and the Session it owns) is used by one thread at a time;
// FollowOptions::cancel may be set from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "remote/container.h"
#include "remote/session.h"
#include "store/ingest.h"
#include "store/run_tail.h"
#include "store/store.h"

namespace td::remote {

struct FollowOptions {
  int max_reconnect_attempts = 8;  ///< consecutive failed reconnects before poll() throws
  int backoff_initial_ms = 200;    ///< first wait before a reconnect; doubled each failure
  int backoff_max_ms = 5000;       ///< longest wait between reconnects
  uint64_t max_fetch_bytes = 8u << 20;  ///< bytes fetched per command (a poll loops until caught up)
  int log_tail_lines = 20;         ///< lines of engine.log put into a failed run's end_reason
  const std::atomic<bool>* cancel = nullptr;  ///< stops a backoff wait (poll() then throws)
  /// Whether poll() checks the engine process (pid on the node) and ends a run whose process is
  /// gone without run_end. false: only mirror and ingest (a scheduler's job says whether the
  /// run lives, e.g. Slurm's: the engine runs on compute nodes, not on the node followed).
  bool check_process = true;
  /// The node's container (remote/container.h) when the engine runs in one: stop()'s SIGKILL
  /// then also removes container td-<run id>-r0 (the killed runtime client leaves it running).
  ContainerSpec container;
};

/// What one poll() saw.
struct FollowState {
  bool finished = false;       ///< the run has an end in the store (run_end, or marked failed here)
  std::string status;          ///< the store's status: running | completed | stopped | failed | unknown
  std::string end_reason;      ///< the store's end_reason once finished
  uint64_t mirror_bytes = 0;   ///< size of the local mirror after this poll
  uint64_t fetched_bytes = 0;  ///< bytes appended to the mirror by this poll
  bool marked_failed = false;  ///< this poll found the process gone without run_end and marked it failed
  td::store::IngestStats ingest;  ///< what the ingest did in this poll
};

class RemoteFollower {
 public:
  /// Opens a new authenticated Session to the node (called at the first poll and after every
  /// dropped connection). Throws td::Error when the node cannot be reached.
  using Connect = std::function<Session()>;

  /// Follows run `run_id` (engine pid `pid` on the node) whose run folder on the node is
  /// `remote_run_dir`, mirroring its events.jsonl into `local_mirror` (created; appended when it
  /// exists, so a reattach continues where it stopped). The caller records the launch first
  /// (Store::note_launch with events_path = local_mirror and the node's host name).
  /// `store` must outlive the follower. Nothing happens until the first poll().
  RemoteFollower(Connect connect, td::store::Store& store, std::string remote_run_dir, std::string run_id,
                 int64_t pid, std::string local_mirror, std::string experiment = td::store::kDefaultExperiment,
                 FollowOptions opts = {});
  ~RemoteFollower();
  RemoteFollower(const RemoteFollower&) = delete;
  RemoteFollower& operator=(const RemoteFollower&) = delete;

  /// One round: fetch what the node wrote beyond the mirror's size, ingest it, and when the run
  /// has no end yet check the engine process; when it is gone, fetch and ingest once more, and if
  /// there is still no run_end mark the run failed with the last lines of <run dir>/engine.log.
  /// A dropped connection is reconnected (backoff 200 ms doubling to 5 s, bounded attempts) and
  /// the round redone. Errors: td::Error when reconnecting keeps failing, on cancel, on a store
  /// error, when the local mirror cannot be written, or when the node's events.jsonl is shorter
  /// than the mirror (the run folder there was replaced). Blocks for the network round trips (call it on a worker thread, e.g. every 0.5 s).
  FollowState poll();

  /// The run's source is gone by the caller's knowledge (e.g. its scheduler job ended): fetches
  /// and ingests the rest, then ends the run with `status` and `reason` unless its run_end is
  /// among what was ingested (RunTail::finish). Errors: as poll().
  FollowState finish(const std::string& status, const std::string& reason);

  /// True when the engine process runs on the node (kill -0 and its /proc cmdline holds the run id).
  bool remote_alive();

  /// Stops the engine: SIGTERM (the engine finishes its step, checkpoints, writes run_end
  /// "stopped"; a container runtime's client forwards it to the engine), then SIGKILL (and the
  /// removal of FollowOptions::container's container) when it still runs after `kill_timeout_ms`. Returns true when the
  /// process ended within the timeout after SIGTERM, false when SIGKILL was needed or it was not
  /// running. Poll afterwards to ingest the run_end.
  bool stop(int kill_timeout_ms = 30000);

  /// Reconnects done so far (after dropped connections).
  int reconnects() const { return reconnects_; }
  /// The current session, or nullptr before the first poll / after a drop (tests shut its socket).
  Session* session() { return session_.get(); }
  const std::string& mirror_path() const { return mirror_; }

 private:
  template <class F>
  auto with_session(F&& f) -> decltype(f(std::declval<Session&>()));
  uint64_t fetch();
  bool alive(Session& s);
  std::string log_tail(Session& s);
  void fill(FollowState& st);  // status, end and mirror size from the store and the mirror

  Connect connect_;
  td::store::Store& store_;
  std::string remote_dir_, run_id_, mirror_;
  int64_t pid_;
  FollowOptions opts_;
  std::unique_ptr<Session> session_;
  td::store::RunTail tail_;
  int reconnects_ = 0;
  bool connected_once_ = false;
};

}  // namespace td::remote
