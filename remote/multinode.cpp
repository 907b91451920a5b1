// Multi-node runs (multinode.h): rank layout, rendezvous address and port, launch, signals.
#include "remote/multinode.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/run_id.h"
#include "remote/container.h"
#include "remote/proc_check.h"

namespace td::remote {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

void check_cancel(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw td::Error("deploy cancelled");
}

// $1 the ephemeral range file's content (or the default), "--", then both TCP tables.
const char* kPortScript =
    "cat /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo '32768 60999'\n"
    "echo --\n"
    "cat /proc/net/tcp || exit 3\n"
    "cat /proc/net/tcp6 2>/dev/null\n"
    "exit 0\n";

// $1 an address or host name. Prints the interface that holds it or routes to it (or nothing).
const char* kRouteScript =
    "a=$1\n"
    "command -v ip >/dev/null 2>&1 || exit 0\n"
    "ipa=\n"
    "if command -v getent >/dev/null 2>&1; then set -- $(getent ahostsv4 \"$a\" 2>/dev/null); ipa=$1; fi\n"
    "[ -n \"$ipa\" ] || ipa=$a\n"
    "dev=$(ip -o addr show 2>/dev/null | while read -r idx d fam addr rest; do\n"
    "  if [ \"${addr%/*}\" = \"$ipa\" ]; then echo \"$d\"; break; fi; done)\n"
    "[ -n \"$dev\" ] || dev=$(ip -o route get \"$ipa\" 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p' | head -n 1)\n"
    "printf '%s\\n' \"$dev\"\n";

// $1 run folder, $2 number of "rank:local" words, $3 world size, $4 ranks on this node, $5
// master address, $6 master port, $7 interface (or ""), $8 run id, then the words, then the
// engine's argv. Prints pid=<pid> per started rank in the words' order; half a second later
// dead=<rank> for each that ended with a failure (a tiny run may already have completed: exit
// status 0), with its exit status and the end of its log on stderr. Exit 4 when
// a log cannot be opened (nothing of that rank starts).
const std::string kLaunchScript = std::string(detail::kAliveFunction) +
    "dir=$1; k=$2; id=$8\n"
    "export TRAINDECK_WORLD_SIZE=\"$3\" TRAINDECK_LOCAL_WORLD_SIZE=\"$4\" TRAINDECK_MASTER_ADDR=\"$5\" "
    "TRAINDECK_MASTER_PORT=\"$6\"\n"
    "if [ -n \"$7\" ]; then export TRAINDECK_GLOO_IFNAME=\"$7\" NCCL_SOCKET_IFNAME=\"$7\"; fi\n"
    "shift 8\n"
    "ranks=\n"
    "while [ \"$k\" -gt 0 ]; do ranks=\"$ranks $1\"; shift; k=$((k - 1)); done\n"
    "logof() { if [ \"$1\" = 0 ]; then echo \"$dir/engine.log\"; else echo \"$dir/engine.rank$1.log\"; fi; }\n"
    "started=\n"
    "for rl in $ranks; do\n"
    "  r=${rl%:*}; l=${rl#*:}; log=$(logof \"$r\")\n"
    "  if ! : >>\"$log\"; then echo \"cannot write $log\" >&2; exit 4; fi\n"
    "  TRAINDECK_RANK=$r TRAINDECK_LOCAL_RANK=$l setsid \"$@\" </dev/null >/dev/null 2>>\"$log\" &\n"
    "  echo \"pid=$!\"; started=\"$started $r:$!\"\n"
    "done\n"
    "sleep 0.5 2>/dev/null || sleep 1\n"
    "for rp in $started; do\n"
    "  td_alive \"${rp#*:}\" \"$id\" && continue\n"
    "  wait \"${rp#*:}\"; st=$?\n"
    "  [ \"$st\" = 0 ] && continue\n"
    "  echo \"dead=${rp%:*}\"; echo \"rank ${rp%:*} (exit status $st):\" >&2; tail -n 5 \"$(logof \"${rp%:*}\")\" >&2\n"
    "done\n"
    "exit 0\n";

// $1 signal ("" = only check), $2 run id, then pids. Prints the pids that are the run's engine.
const std::string kSignalScript = std::string(detail::kAliveFunction) +
                                  "sig=$1; id=$2; shift 2\n"
                                  "for p in \"$@\"; do\n"
                                  "  if td_alive \"$p\" \"$id\"; then\n"
                                  "    [ -n \"$sig\" ] && kill -s \"$sig\" \"$p\" 2>/dev/null\n"
                                  "    echo \"$p\"\n"
                                  "  fi\n"
                                  "done\n"
                                  "exit 0\n";

// The ranks of `n` whose pid the node lists as alive (after sending `signal` to them).
std::vector<int> signal_node(Session& s, const NodeRanks& n, const std::string& run_id, const std::string& signal) {
  std::vector<std::string> argv{"sh", "-c", kSignalScript, "sh", signal, run_id};
  for (const RankProcess& r : n.ranks)
    if (r.pid > 0) argv.push_back(std::to_string(r.pid));
  if (argv.size() == 6) return {};
  ExecResult res = s.exec(argv);
  if (res.exit_status != 0)
    throw td::Error(s.where() + ": checking the ranks failed (exit " + std::to_string(res.exit_status) + "): " +
                    trim(res.err));
  // SIGKILL ends the runtime's client only: its container runs on under conmon / the daemon.
  if (signal == "KILL" && n.node.container.enabled()) {
    std::vector<std::string> names;
    for (const RankProcess& r : n.ranks) names.push_back(container_name(run_id, r.rank));
    remove_containers(s, n.node.container, names);
  }
  std::set<int64_t> alive;
  std::istringstream in(res.out);
  for (int64_t p; in >> p;) alive.insert(p);
  std::vector<int> ranks;
  for (const RankProcess& r : n.ranks)
    if (alive.count(r.pid)) ranks.push_back(r.rank);
  return ranks;
}

// One Session per node, opened on first use and dropped after a failure.
class NodeSessions {
 public:
  NodeSessions(const ClusterRun& run, const NodeConnector& connect) : run_(run), connect_(connect) {}

  // signal_node() on every node; unreachable nodes go into report.errors.
  RankSignalReport signal_all(const std::string& signal) {
    RankSignalReport rep;
    for (size_t i = 0; i < run_.nodes.size(); ++i) {
      const NodeRanks& n = run_.nodes[i];
      try {
        if (!sessions_[i]) sessions_[i] = std::make_unique<Session>(connect_(n.node));
        for (int r : signal_node(*sessions_[i], n, run_.run_id, signal)) rep.alive.push_back(r);
      } catch (const std::exception& e) {
        sessions_[i].reset();
        rep.errors.push_back(n.node.display_name() + ": " + e.what());
      }
    }
    std::sort(rep.alive.begin(), rep.alive.end());
    return rep;
  }

 private:
  const ClusterRun& run_;
  const NodeConnector& connect_;
  std::map<size_t, std::unique_ptr<Session>> sessions_;
};

}  // namespace

int node_rank_count(const NodeSpec& n) { return n.gpus > 0 ? n.gpus : 1; }

int cluster_world_size(const ClusterSpec& c) {
  int w = 0;
  for (const NodeSpec& n : c.nodes) w += node_rank_count(n);
  return w;
}

bool is_multi_rank(const ClusterSpec& c) { return cluster_world_size(c) > 1; }

std::string cluster_device(const ClusterSpec& c) {
  size_t gpu_nodes = 0;
  for (const NodeSpec& n : c.nodes)
    if (n.gpus > 0) ++gpu_nodes;
  if (gpu_nodes == 0) return "cpu";
  if (gpu_nodes == c.nodes.size()) return "cuda";
  std::string cpu;
  for (const NodeSpec& n : c.nodes)
    if (n.gpus == 0) cpu += (cpu.empty() ? "" : ", ") + n.display_name();
  throw td::Error("cluster " + c.name + " mixes GPU nodes and CPU nodes (" + cpu +
                  "): the ranks of one run use one backend; give every node its GPUs, or set every node to 0 "
                  "GPUs to train on their CPUs");
}

std::string master_address(const NodeSpec& n, const ResolvedNode& r) {
  return n.address.empty() ? r.target.host : n.address;
}

int pick_free_port(Session& s) {
  ExecResult r = s.exec({"sh", "-c", kPortScript});
  if (r.exit_status != 0)
    throw td::Error(s.where() + ": cannot read /proc/net/tcp to find a free port for the rendezvous (exit " +
                    std::to_string(r.exit_status) + "): " + trim(r.err));
  std::istringstream in(r.out);
  int lo = 32768, hi = 60999;
  {
    std::string line;
    std::getline(in, line);
    std::istringstream range(line);
    if (!(range >> lo >> hi) || lo > hi) lo = 32768, hi = 60999;
  }
  std::set<int> used;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string sl, local;
    if (!(f >> sl >> local) || sl == "sl" || sl == "--") continue;
    const size_t colon = local.rfind(':');
    if (colon == std::string::npos) continue;
    try {
      used.insert(std::stoi(local.substr(colon + 1), nullptr, 16));
    } catch (const std::exception&) {
    }
  }
  std::vector<int> free;
  for (int p = 20000; p < 65000; ++p)
    if ((p < lo || p > hi) && !used.count(p)) free.push_back(p);
  if (free.empty())
    throw td::Error(s.where() + ": no free TCP port in 20000..64999 outside the ephemeral range " +
                    std::to_string(lo) + "-" + std::to_string(hi) + " for the rendezvous; free one");
  std::random_device rd;
  return free[std::uniform_int_distribution<size_t>(0, free.size() - 1)(rd)];
}

std::string route_interface(Session& s, const std::string& addr) {
  ExecResult r = s.exec({"sh", "-c", kRouteScript, "sh", addr});
  std::string dev = trim(r.out);
  if (r.exit_status != 0 || dev == "lo" || dev.find_first_of(" \t\n/") != std::string::npos) return {};
  return dev;
}

json to_json(const ClusterRun& r) {
  json nodes = json::array();
  for (const NodeRanks& n : r.nodes) {
    json ranks = json::array();
    for (const RankProcess& p : n.ranks) ranks.push_back({{"rank", p.rank}, {"local_rank", p.local_rank}, {"pid", p.pid}});
    nodes.push_back({{"node", to_json(n.node)}, {"run_dir", n.run_dir}, {"engine", n.engine},
                     {"config_path", n.config_path}, {"ifname", n.ifname}, {"ranks", ranks}});
  }
  return {{"run_id", r.run_id}, {"device", r.device}, {"master_addr", r.master_addr},
          {"master_port", r.master_port}, {"world_size", r.world_size}, {"nodes", nodes}};
}

ClusterRun cluster_run_from_json(const json& j) {
  auto need = [](const json& o, const char* key, const std::string& where) -> const json& {
    if (!o.is_object() || !o.contains(key)) throw td::Error("run layout: " + where + "." + key + " is missing");
    return o.at(key);
  };
  try {
    ClusterRun r;
    r.run_id = need(j, "run_id", "layout").get<std::string>();
    if (!td::valid_run_id(r.run_id)) throw td::Error("run layout: run_id '" + r.run_id + "' is not a run id (" + td::kRunIdRule + ")");
    r.device = j.value("device", std::string("cpu"));
    r.master_addr = j.value("master_addr", std::string());
    r.master_port = j.value("master_port", 0);
    r.world_size = need(j, "world_size", "layout").get<int>();
    const json& nodes = need(j, "nodes", "layout");
    if (!nodes.is_array() || nodes.empty()) throw td::Error("run layout: nodes is not a non-empty list");
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string where = "nodes[" + std::to_string(i) + "]";
      const json& n = nodes[i];
      NodeRanks nr;
      nr.node = node_from_json(need(n, "node", where), where + ".node");
      nr.run_dir = need(n, "run_dir", where).get<std::string>();
      nr.engine = n.value("engine", std::string());
      nr.config_path = n.value("config_path", std::string());
      nr.ifname = n.value("ifname", std::string());
      for (const json& p : need(n, "ranks", where))
        nr.ranks.push_back({p.at("rank").get<int>(), p.value("local_rank", 0), p.value("pid", int64_t(0))});
      if (nr.ranks.empty()) throw td::Error("run layout: " + where + " has no ranks");
      r.nodes.push_back(std::move(nr));
    }
    if (r.nodes.front().ranks.front().rank != 0) throw td::Error("run layout: the first node does not hold rank 0");
    return r;
  } catch (const json::exception& e) {
    throw td::Error(std::string("run layout: ") + e.what());
  }
}

void launch_node_ranks(Session& s, NodeRanks& node, const ClusterRun& run, bool resume) {
  std::vector<std::string> argv{"sh", "-c", kLaunchScript, "sh", node.run_dir, std::to_string(node.ranks.size()),
                                std::to_string(run.world_size), std::to_string(node.ranks.size()), run.master_addr,
                                std::to_string(run.master_port), node.ifname, run.run_id};
  for (const RankProcess& r : node.ranks) argv.push_back(std::to_string(r.rank) + ":" + std::to_string(r.local_rank));
  const bool container = node.node.container.enabled();
  const ContainerPaths paths = container ? container_paths(s, node.node.work_dir) : ContainerPaths{};
  auto path = [&](const std::string& p) { return container ? paths.absolute(p) : p; };
  std::vector<std::string> engine_args{"train", "--config", path(node.config_path), "--out", path(node.run_dir),
                                       "--run-id", run.run_id, "--no-events-stdout"};
  if (resume) engine_args.push_back("--resume");
  if (container) {
    // Each rank in its own container named after its rank (TRAINDECK_RANK of the launch script).
    const std::vector<std::string> cmd = container_command(node.node.container, paths, run.run_id,
                                                           run.device == "cuda", rank_env_names(), engine_args);
    argv.insert(argv.end(), cmd.begin(), cmd.end());
  } else {
    argv.push_back(node.engine);
    argv.insert(argv.end(), engine_args.begin(), engine_args.end());
  }
  ExecResult r = s.exec(argv);
  std::istringstream in(r.out);
  std::vector<int64_t> pids;
  std::vector<std::string> dead;
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.rfind("pid=", 0) == 0 && line.size() > 4 && line.find_first_not_of("0123456789", 4) == std::string::npos)
      pids.push_back(std::stoll(line.substr(4)));
    else if (line.rfind("dead=", 0) == 0)
      dead.push_back(line.substr(5));
  }
  for (size_t i = 0; i < node.ranks.size() && i < pids.size(); ++i) node.ranks[i].pid = pids[i];
  if (r.exit_status != 0 || pids.size() != node.ranks.size())
    throw td::Error(s.where() + ": starting " + std::to_string(node.ranks.size()) + " rank(s) of run " + run.run_id +
                    " failed (exit " + std::to_string(r.exit_status) + ", " + std::to_string(pids.size()) +
                    " started): " + trim(r.err));
  if (!dead.empty()) {
    std::string list;
    for (const std::string& d : dead) list += (list.empty() ? "" : ", ") + d;
    throw td::Error(s.where() + ": rank(s) " + list + " of run " + run.run_id + " ended right after starting; " +
                    "the end of their logs in " + node.run_dir + ":\n" + trim(r.err));
  }
}

ClusterRun launch_cluster_run(const ClusterSpec& c, const NodeConnector& connect, const std::filesystem::path& bundle_dir,
                              const std::filesystem::path& dataset_dir, const std::string& config_json,
                              const std::string& run_id, const ClusterLaunchOptions& opts) {
  if (c.nodes.empty()) throw td::Error("cluster " + c.name + " has no nodes: add SSH nodes, or train on this machine");
  if (const auto problems = validate(c); !problems.empty())
    throw td::Error("cluster " + c.name + " cannot be used: " + problems.front());
  using Step = ClusterLaunchOptions::Step;
  auto phase = [&](Step step, size_t node) {
    if (opts.phase) opts.phase(step, node);
  };
  ClusterRun run;
  run.run_id = run_id;
  run.device = cluster_device(c);
  run.world_size = cluster_world_size(c);
  json cfg;
  try {
    cfg = json::parse(config_json);
  } catch (const std::exception& e) {
    throw td::Error(std::string("the run config is not JSON: ") + e.what());
  }
  cfg["train"]["device"] = run.device;
  const std::string cfg_text = cfg.dump(2) + "\n";
  int next = 0;
  for (const NodeSpec& n : c.nodes) {
    NodeRanks nr;
    nr.node = n;
    for (int l = 0; l < node_rank_count(n); ++l) nr.ranks.push_back({next++, l, 0});
    run.nodes.push_back(std::move(nr));
  }

  // Deploy, node after node (see the header: shared file systems).
  std::vector<std::unique_ptr<Session>> sessions(c.nodes.size());
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    NodeRanks& nr = run.nodes[i];
    check_cancel(opts.cancel);
    phase(Step::Connecting, i);
    sessions[i] = std::make_unique<Session>(connect(nr.node));
    check_cancel(opts.cancel);
    phase(Step::Deploying, i);
    DeployProgress progress;
    if (opts.progress) progress = [&opts, i](uint64_t done, uint64_t total) { opts.progress(i, done, total); };
    DeployOptions deploy_opts = opts.deploy;
    deploy_opts.container = nr.node.container;  // the node's own: bare or its image
    const DeployResult d = deploy(*sessions[i], bundle_dir, dataset_dir, cfg_text, nr.node.work_dir, run_id, progress,
                                  opts.cancel, deploy_opts);
    nr.run_dir = d.run_dir;
    nr.engine = d.engine;
    nr.config_path = d.config_path;
  }

  run.master_addr = master_address(c.nodes[0], resolve_node(c.nodes[0], opts.ssh_config));
  run.master_port = opts.master_port > 0 ? opts.master_port : pick_free_port(*sessions[0]);
  for (size_t i = 0; i < c.nodes.size(); ++i)
    run.nodes[i].ifname = c.nodes[i].ifname.empty() ? route_interface(*sessions[i], run.master_addr) : c.nodes[i].ifname;
  check_cancel(opts.cancel);

  // Launch: the first node (rank 0, the rendezvous store) first.
  for (size_t i = 0; i < run.nodes.size(); ++i) {
    NodeRanks& nr = run.nodes[i];
    phase(Step::Starting, i);
    try {
      launch_node_ranks(*sessions[i], nr, run, opts.resume);
    } catch (const std::exception& e) {
      // Kill what runs already (this node's started ranks too, when the session still works).
      std::string left;
      for (size_t j = 0; j <= i; ++j) {
        try {
          signal_node(*sessions[j], run.nodes[j], run.run_id, "KILL");
        } catch (const std::exception& k) {
          left += "; could not kill the ranks on " + run.nodes[j].node.display_name() + ": " + k.what();
        }
      }
      throw td::Error("starting the ranks on " + nr.node.display_name() + " failed, the ranks already started were "
                      "killed: " + e.what() + left);
    }
  }
  return run;
}

RankSignalReport signal_cluster_run(const ClusterRun& run, const NodeConnector& connect, const std::string& signal) {
  NodeSessions s(run, connect);
  return s.signal_all(signal);
}

bool stop_cluster_run(const ClusterRun& run, const NodeConnector& connect, int kill_timeout_ms) {
  NodeSessions s(run, connect);
  RankSignalReport rep = s.signal_all("TERM");
  if (rep.alive.empty() && rep.errors.empty()) return true;
  const auto deadline = Clock::now() + std::chrono::milliseconds(kill_timeout_ms);
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    rep = s.signal_all("");
    if (rep.alive.empty() && rep.errors.empty()) return true;
  }
  s.signal_all("KILL");
  return false;
}

std::vector<int> end_leftover_ranks(const ClusterRun& run, const NodeConnector& connect, int wait_ms) {
  NodeSessions s(run, connect);
  const auto deadline = Clock::now() + std::chrono::milliseconds(wait_ms);
  while (true) {
    RankSignalReport rep = s.signal_all("");
    // Done only when every node answered: a node that could not be reached this time may
    // still hold a rank (under load an SSH connect fails now and then); it is asked again.
    if (rep.alive.empty() && rep.errors.empty()) return {};
    if (Clock::now() >= deadline) return s.signal_all("KILL").alive;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
}

}  // namespace td::remote
