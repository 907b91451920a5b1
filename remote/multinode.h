// Multi-node runs: one engine process per rank on several SSH nodes (one per GPU, one per CPU
// node), started detached through the remote library like torchrun's multi-node mode, and
// stopped together. Plain C++ on Sessions, no Qt.
//
// Ranks are numbered node by node in cluster order: the first node holds ranks 0..g0-1 (rank 0
// serves the rendezvous store and alone writes events.jsonl and checkpoints), the second the
// next ones, and so on. Each rank gets (docs/distributed.md):
//   TRAINDECK_RANK, TRAINDECK_WORLD_SIZE, TRAINDECK_LOCAL_RANK (its GPU), TRAINDECK_LOCAL_WORLD_SIZE,
//   TRAINDECK_MASTER_ADDR = master_address() of the first node, TRAINDECK_MASTER_PORT = a port
//   free on the first node (pick_free_port), TRAINDECK_GLOO_IFNAME and NCCL_SOCKET_IFNAME = the
//   node's interface toward the master address (NodeSpec::ifname, else route_interface()).
// Every node gets the same run id and run folder name (<work_dir>/runs/<run id>, its own copy of
// bundle, dataset and config through deploy()); rank 0 logs to <run>/engine.log, rank r > 0 to
// <run>/engine.rank<r>.log on its node.
//
// Threading rule: these functions block on the network (call them on a worker thread); the
// NodeConnector is called on the calling thread; `cancel` flags may be set from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "remote/cluster.h"
#include "remote/deploy.h"
#include "remote/session.h"

namespace td::remote {

/// Ranks a node runs: one per GPU (NodeSpec::gpus), one on a CPU node (gpus 0).
int node_rank_count(const NodeSpec& n);
/// Sum of node_rank_count() over the nodes.
int cluster_world_size(const ClusterSpec& c);
/// True when a run on `c` has more than one rank (several nodes, or one node with several GPUs):
/// the multi-node path of this header. A single-rank cluster uses deploy() + launch_detached().
bool is_multi_rank(const ClusterSpec& c);
/// "cuda" when every node has GPUs, "cpu" when none has. Errors: td::Error for a mix (the ranks
/// of one run use one backend: NCCL between GPUs, Gloo between CPUs).
std::string cluster_device(const ClusterSpec& c);

/// The rendezvous address (TRAINDECK_MASTER_ADDR) when `n` is the first node: NodeSpec::address
/// when set (the address the other nodes reach it at), else `r.target.host`, the host SSH
/// connects to after ~/.ssh/config (HostName), which for a node behind jump hosts is the name
/// as the last jump host resolves it, i.e. inside the cluster's network. A loopback address
/// works only when every "node" is this same machine (tests).
std::string master_address(const NodeSpec& n, const ResolvedNode& r);

/// A TCP port free now on the node: random in [20000, 65000) outside the kernel's ephemeral
/// range (/proc/sys/net/ipv4/ip_local_port_range, so that no outgoing connection takes it
/// meanwhile) and not bound by any socket in /proc/net/tcp or /proc/net/tcp6 (any state) of the
/// node's network namespace. One remote command. Errors: td::Error when /proc/net/tcp cannot be read.
int pick_free_port(Session& s);

/// The network interface of the node that reaches `addr` (a host name is resolved on the node
/// with getent): the interface holding it when it is one of the node's own addresses, else the
/// one `ip route get` names. "" when unknown (no iproute2 there, no route) or the loopback (the
/// engine's default applies then). One remote command; never throws for a missing tool.
std::string route_interface(Session& s, const std::string& addr);

/// One rank process of a multi-node run.
struct RankProcess {
  int rank = 0;        ///< global rank
  int local_rank = 0;  ///< rank on its node (its GPU index on a GPU node)
  int64_t pid = 0;     ///< the engine's pid on the node (0 before launch)
};

/// One node of a multi-node run.
struct NodeRanks {
  NodeSpec node;           ///< as at launch (no secrets)
  std::string run_dir;     ///< <work_dir>/runs/<run id> on the node
  std::string engine;      ///< the bundle's launcher on the node
  std::string config_path; ///< <run_dir>/config.json
  std::string ifname;      ///< interface for collectives ("" = the engine's default)
  std::vector<RankProcess> ranks;
};

/// Where every rank of a multi-node run lives: what stop, reattach and resume need.
/// Stored as JSON (to_json) in the store's remote_runs.layout.
struct ClusterRun {
  std::string run_id;
  std::string device;       ///< "cpu" | "cuda"
  std::string master_addr;  ///< TRAINDECK_MASTER_ADDR
  int master_port = 0;      ///< TRAINDECK_MASTER_PORT
  int world_size = 0;
  std::vector<NodeRanks> nodes;  ///< nodes[0] holds rank 0 (events.jsonl, checkpoints)

  /// The node of rank 0 and its process.
  const NodeRanks& first() const { return nodes.front(); }
  int64_t rank0_pid() const { return nodes.front().ranks.front().pid; }
};

nlohmann::json to_json(const ClusterRun& r);
/// Errors: td::Error naming the field for a malformed layout.
ClusterRun cluster_run_from_json(const nlohmann::json& j);

/// Opens an authenticated Session to a node (td::Error when it cannot).
using NodeConnector = std::function<Session(const NodeSpec&)>;

/// Options of launch_cluster_run().
struct ClusterLaunchOptions {
  bool resume = false;        ///< start every rank with --resume (rank 0 reads its newest checkpoint)
  DeployOptions deploy;       ///< node library search (CUDA) for every node
  std::filesystem::path ssh_config = default_ssh_config_path();  ///< for master_address()
  int master_port = 0;        ///< 0: pick_free_port() on the first node
  /// Called before each step with the step and the node's index in the cluster.
  enum class Step { Connecting, Deploying, Starting };
  std::function<void(Step step, size_t node)> phase;
  /// Bytes done / total of the current node's deploy (remote/deploy.h) and its index.
  std::function<void(size_t node, uint64_t done, uint64_t total)> progress;
  const std::atomic<bool>* cancel = nullptr;  ///< stops a deploy (td::Error "deploy cancelled"); nothing is launched
};

/// Deploys bundle, dataset and config to every node of `c` (one after the other: nodes that
/// share a file system, e.g. an NFS home, then find everything there and send nothing, and two
/// uploads never write the same file at once), picks master address and port and each node's
/// interface, then starts the ranks detached (setsid) node by node, the first node first; one
/// remote command per node. The config's train.device is set to cluster_device(c). Each node
/// deploys and runs as its NodeSpec::container says (opts.deploy.container is not used).
/// When starting the ranks of a node fails, every rank already started is killed (SIGKILL) and
/// the error names the node. Returns the layout (pids filled).
/// Errors: td::Error for an invalid cluster (validate(), a CPU/GPU mix, no nodes), a connection,
/// deploy or launch failure, or a cancel.
ClusterRun launch_cluster_run(const ClusterSpec& c, const NodeConnector& connect,
                              const std::filesystem::path& bundle_dir, const std::filesystem::path& dataset_dir,
                              const std::string& config_json, const std::string& run_id,
                              const ClusterLaunchOptions& opts = {});

/// Starts the ranks of `node` (rank numbers and pids in node.ranks; pids are filled) with the run's
/// environment, detached, in one command. Every value is a positional argument of a fixed sh
/// script. A node with a container (node.node.container) starts each rank in its own container
/// (remote/container.h: container_name(run id, rank), the rank environment passed by name,
/// --network host, GPUs for a "cuda" run; one more command resolves the mounted work directory);
/// the pids are those of the runtime clients. Errors: td::Error when the command fails.
void launch_node_ranks(Session& s, NodeRanks& node, const ClusterRun& run, bool resume);

/// What signal_cluster_run() found.
struct RankSignalReport {
  std::vector<int> alive;           ///< ranks that were still this run's processes (and got the signal)
  std::vector<std::string> errors;  ///< nodes that could not be reached: "gpu2: <why>"
};

/// For every node: one command that checks each of its ranks (pid alive and its command line
/// holds the run id, as RemoteFollower does) and sends `signal` ("TERM", "KILL"; "" only checks)
/// to those alive; "KILL" also removes the ranks' containers on a container node (a killed
/// runtime client leaves its container running). Never throws for an unreachable node: it is
/// listed in errors.
RankSignalReport signal_cluster_run(const ClusterRun& run, const NodeConnector& connect, const std::string& signal);

/// Stops every rank: SIGTERM to all (the engine's collective stop ends them at the same step
/// boundary, rank 0 checkpoints and writes run_end "stopped"; signalling every rank also stops a
/// rank whose peers are gone), then SIGKILL to those still alive after `kill_timeout_ms`. Returns
/// true when every rank ended within the timeout (or none was running).
bool stop_cluster_run(const ClusterRun& run, const NodeConnector& connect, int kill_timeout_ms = 30000);

/// After the run ended (run_end seen, or rank 0 gone): waits up to `wait_ms` for the other ranks
/// to exit on their own, then SIGKILLs those left (a rank blocked on a dead peer). A node that
/// cannot be reached is asked again until the deadline (it may hold a rank). Returns the ranks
/// killed (a node still unreachable at the deadline keeps its rank).
std::vector<int> end_leftover_ranks(const ClusterRun& run, const NodeConnector& connect, int wait_ms = 10000);

}  // namespace td::remote
