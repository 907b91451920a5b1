// A cluster as the person designs it: "this machine" (no nodes) or a list of SSH nodes, and the
// one way to open an authenticated Session to a node of it. Plain C++, no Qt.
//
// A NodeSpec never holds a secret: passwords and key passphrases travel separately in
// NodeSecrets (asked for, or read from the system keyring by the GUI) and are never written to
// the store, to JSON or to logs.
//
// JSON form (stored in the store's `clusters` table, docs/remote.md):
//   {"name": "lab", "nodes": [{"name": "gpu1", "host": "gpu1.lab", "port": 22, "user": "ana",
//     "auth": "agent"|"key"|"password", "key_file": "~/.ssh/id_ed25519", "gpus": 8,
//     "work_dir": "traindeck", "jump": "bastion.lab", "address": "10.0.0.11", "ifname": "ib0",
//     "container": {"runtime": "podman", "image": "localhost/traindeck-engine:0.1.0"}}]}
// Empty/zero fields mean "from ~/.ssh/config, else OpenSSH's default" (port 22, the local user,
// the config's IdentityFile, the config's ProxyJump).
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "remote/container.h"
#include "remote/session.h"
#include "remote/slurm.h"
#include "remote/ssh_config.h"

namespace td::remote {

/// How a node authenticates (the secret itself is in NodeSecrets).
enum class AuthMethod { Agent, KeyFile, Password };

/// "agent" | "key" | "password".
const char* auth_method_name(AuthMethod m);

/// One SSH node of a cluster. No secrets.
struct NodeSpec {
  std::string name;       ///< display name; empty: the host
  std::string host;       ///< ~/.ssh/config alias, host name or address (required)
  int port = 0;           ///< 0: the config's Port, else 22
  std::string user;       ///< empty: the config's User, else the local user
  AuthMethod auth = AuthMethod::Agent;
  std::string key_file;   ///< KeyFile: private key on this machine ("~/" = $HOME); empty: the config's first IdentityFile
  int gpus = 0;           ///< GPUs to use on the node; 0: train on its CPU
  std::string work_dir = "traindeck";  ///< on the node; relative paths are under the remote home ("~" is refused by validate())
  std::string jump;       ///< "[user@]host[:port]" or an alias (comma-separated hops); empty: the config's ProxyJump
  /// Seconds to wait for the TCP connection and the node's SSH greeting, and the least time
  /// each later step may take (Session scales it up on a slow link, ConnectOptions::timeout_ms);
  /// 0: the config's ConnectTimeout, else the app's default (15 s). For a far link (a distant
  /// region, a VPN with round trips of seconds) raise it. JSON "connect_timeout_s", 1..3600.
  int connect_timeout_s = 0;
  /// Multi-node runs (remote/multinode.h): the address the OTHER nodes reach this node at (its
  /// cluster-internal address or name), used as the rendezvous address when it is the first
  /// node; empty: the host SSH connects to after ~/.ssh/config (through its jump hosts: as the
  /// last jump host reaches it).
  std::string address;
  /// Multi-node runs: the network interface its ranks use for collectives (TRAINDECK_GLOO_IFNAME
  /// and NCCL_SOCKET_IFNAME, e.g. "ib0"); empty: the interface `ip route get <rendezvous address>`
  /// names on the node.
  std::string ifname;
  /// Run the engine inside this OCI image instead of the bare bundle (remote/container.h);
  /// empty image (the default, and JSON without "container"): the bundle.
  ContainerSpec container;

  /// The name shown in lists: name, else host.
  std::string display_name() const { return name.empty() ? host : name; }
};

/// A cluster: no nodes means "this machine". Kind "slurm": nodes[0] is the login node (sbatch,
/// squeue, SFTP to the shared work directory) and `slurm` the scheduler settings (remote/slurm.h).
/// JSON adds "kind": "slurm" and "slurm": {...}; JSON without "kind" is an SSH cluster.
struct ClusterSpec {
  std::string name;
  std::vector<NodeSpec> nodes;
  std::string kind = "ssh";  ///< "ssh" (the nodes themselves) | "slurm"
  SlurmSpec slurm;           ///< kind "slurm" only
  bool local() const { return nodes.empty(); }
  bool is_slurm() const { return kind == "slurm"; }
};

/// Secrets for one node, held in memory only as long as the caller keeps them.
struct NodeSecrets {
  std::string passphrase;  ///< AuthMethod::KeyFile: the key's passphrase (empty: none)
  std::string password;    ///< AuthMethod::Password
};

nlohmann::json to_json(const NodeSpec& n);
nlohmann::json to_json(const ClusterSpec& c);
/// Errors: td::Error naming the field ("nodes[1].port: 70000 is not a port (1..65535)") for a
/// wrong type or value, an unknown auth method, an empty host or a missing name.
NodeSpec node_from_json(const nlohmann::json& j, const std::string& where = "node");
ClusterSpec cluster_from_json(const nlohmann::json& j);

/// Problems a person has to fix before the cluster can be saved, one line each ("node 2: the
/// host is empty"); empty when the cluster is usable. Checks: name set, hosts set, ports in
/// 1..65535, gpus >= 0, unique node names, key file set or found in the config for KeyFile,
/// the container setting (remote/container.h validate()); kind "slurm": exactly one node (the
/// login node) and the Slurm settings (remote/slurm.h validate(), each line "Slurm: ...").
std::vector<std::string> validate(const ClusterSpec& c);

/// Where and how to connect to a node after ~/.ssh/config: the target and its jump hops in order
/// (first hop first; each hop reached through the previous one).
struct ResolvedNode {
  ConnectOptions target;
  /// The node's own connect timeout in ms (NodeSpec::connect_timeout_s, else the config's
  /// ConnectTimeout); 0: none set, the caller's default applies (OpenOptions::timeout_ms).
  int timeout_ms = 0;
  std::vector<std::string> identity_files;  ///< for AuthMethod::KeyFile when NodeSpec::key_file is empty
  struct Hop {
    ConnectOptions connect;
    std::vector<std::string> identity_files;  ///< the hop's IdentityFile values (key auth), else the agent
    int timeout_ms = 0;                       ///< the hop's ConnectTimeout in ms; 0: the caller's default
  };
  std::vector<Hop> jumps;
};

/// Resolves `n` through the ssh_config at `ssh_config` (missing file: defaults): explicit
/// NodeSpec fields win over the config. Jump hops are resolved through the same config.
/// Errors: td::Error for a malformed jump ("user@host:port") or a bad config Port.
ResolvedNode resolve_node(const NodeSpec& n, const std::filesystem::path& ssh_config = default_ssh_config_path(),
                          const LocalEnv& env = {});

/// The Auth for a node: its method with its key file (NodeSpec::key_file, else the first
/// resolved IdentityFile that exists) and secrets. Errors: td::Error when KeyFile has no key file.
Auth node_auth(const NodeSpec& n, const ResolvedNode& r, const NodeSecrets& secrets);

/// Options of open_node().
struct OpenOptions {
  /// Asked for every host (target or hop) whose key is not in known_hosts; `where` is
  /// "user@host:port". Return true to accept (the key is then appended to known_hosts) or false
  /// to refuse (open_node throws). Called on open_node's thread. Unset: unknown hosts are refused.
  std::function<bool(const HostKeyInfo& key, const std::string& where)> accept_unknown_host;
  /// Per connect/handshake/auth step and libssh2 call, for a node or hop that sets none
  /// (ResolvedNode::timeout_ms); the Session scales it up on a slow link.
  int timeout_ms = 15000;
  std::string known_hosts;      ///< empty: $HOME/.ssh/known_hosts
};

/// Connects to the node (through its jump hops), checks every host key (a changed key is always
/// refused, an unknown one goes through accept_unknown_host) and authenticates.
/// Errors: td::Error from the failing step, naming the host and what to do.
Session open_node(const ResolvedNode& r, const Auth& auth, const OpenOptions& opts = {});

/// open_node() without the target's authentication: the hops are connected and logged in, every
/// host key (target too) is checked, and the target's Session waits for authenticate() (so a
/// caller can retry it with another secret on the same connection). Errors: as open_node().
Session connect_node(const ResolvedNode& r, const OpenOptions& opts = {});

}  // namespace td::remote
