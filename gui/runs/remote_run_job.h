// The body of one remote run's RemoteTask: deploy and launch (a new run or a --resume), then
// follow it with td::remote::RemoteFollower until it ends, is detached, or following fails.
// A multi-rank run (RemoteRunSpec::nodes) deploys to and starts ranks on every node
// (remote/multinode.h), follows rank 0 on the first node the same way, signals every rank on
// a stop, and kills ranks left behind once the run ended.
// RemoteRunController (remote_run_controller.h) starts these; this header is its internals.
//
// Threading rule: run_remote_job() runs on the task's thread with a td::store::Store connection
// of its own; it reports through `report`, which the caller makes post to the GUI thread.
// RemoteRunControl's flags are set from the GUI thread.
#pragma once

#include <QString>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gui/runs/remote_task.h"
#include "gui/runs/run_target.h"
#include "remote/cluster.h"
#include "remote/session.h"

namespace td::gui {

/// Opens an authenticated Session to a node; called on the job's thread; throws td::Error.
using RemoteConnector = std::function<td::remote::Session(const td::remote::NodeSpec&)>;

/// What a job does and where.
struct RemoteRunSpec {
  enum class Mode { Start, Resume, Attach };
  Mode mode = Mode::Start;
  QString run_id;
  QString experiment;
  QString cluster;
  td::remote::NodeSpec node;  ///< the node (a multi-rank run: its first node, which holds rank 0)
  /// A multi-rank run (remote/multinode.h: several nodes, or one node with several GPUs): every
  /// node in rank order, nodes[0] == node. Empty: one engine process on `node`.
  std::vector<td::remote::NodeSpec> nodes;
  /// Attach of a multi-rank run: its stored layout (remote/multinode.h ClusterRun JSON), whose
  /// ranks are signalled by a stop and cleaned up at the end. Set by the job after a launch.
  std::string layout_json;
  QString store_path;
  QString local_dir;     ///< <runs root>/<run_id>: config.json (local data.path), events.jsonl and engine.log mirrors
  QString engine;        ///< Start/Resume: the local traindeck-engine binary (bundled once per build)
  QString bundle_cache;  ///< Start/Resume: folder of cached bundles
  std::string config_json;     ///< Start: the run config (data.path local); Resume reads <local_dir>/config.json
  std::string remote_run_dir;  ///< Attach: the run folder on the node
  int64_t pid = 0;             ///< Attach: the engine's pid on the node
  int poll_ms = 500;           ///< follow poll interval
  int log_every = 4;           ///< fetch the node's engine.log every this many polls
};

/// Flags the GUI thread sets while the job runs.
struct RemoteRunControl {
  std::atomic<bool> stop{false};            ///< stop the run: SIGTERM, then SIGKILL after kill_timeout_ms
  std::atomic<int> kill_timeout_ms{30000};
  std::atomic<bool> cancel_deploy{false};   ///< abandon the deploy (before launch only)
};

/// One report of a job, delivered on the GUI thread.
struct RemoteRunEvent {
  enum class Kind {
    Progress,     ///< a = bytes done, b = bytes total, text = phase
    Launched,     ///< the engine runs on the node and the store has the run: a = pid, text = its run folder there
    Ingested,     ///< rows ingested: a = the run's last step in the store
    Log,          ///< text = new bytes of the node's engine.log
    State,        ///< text = connection state in words ("connected", "reconnecting (attempt 2): ..."), connection and a = the attempt
    RanksLost,    ///< a multi-rank run's ranks whose processes are gone while rank 0 goes on: ranks ("rank 1 on node-b")
    Ended,        ///< the run has its end in the store: text = status
    StartFailed,  ///< deploy or launch failed, nothing launched: text = message, cancelled
    Failed,       ///< following failed for good (mirror replaced, store error): text = message
  };
  Kind kind = Kind::State;
  qint64 a = 0, b = 0;
  QString text;
  bool cancelled = false;
  RunTargetState::Connection connection = RunTargetState::Connection::None;  ///< State: the connection
  QStringList ranks{};                                                        ///< RanksLost
};

/// Whether `spec` is a multi-rank run (RemoteRunSpec::nodes set).
inline bool is_multi_rank(const RemoteRunSpec& spec) { return !spec.nodes.empty(); }

/// Runs the job (see the header comment). Returns when the run ended, start or following failed,
/// or shared.cancelled() (detach: the run keeps going on the node, nothing more is reported).
void run_remote_job(const RemoteRunSpec& spec, const RemoteConnector& connect, RemoteRunControl& control,
                    RemoteTask::Shared& shared, const std::function<void(RemoteRunEvent)>& report);

}  // namespace td::gui
