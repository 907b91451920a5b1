#include "remote/cluster.h"

#include <cstdlib>
#include <set>
#include <system_error>

#include "engine/common/error.h"

namespace td::remote {

namespace {

using nlohmann::json;

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

AuthMethod parse_auth(const std::string& s, const std::string& where) {
  if (s == "agent") return AuthMethod::Agent;
  if (s == "key") return AuthMethod::KeyFile;
  if (s == "password") return AuthMethod::Password;
  throw Error(where + ".auth: '" + s + "' is not an authentication method (agent, key or password)");
}

template <class T>
T get(const json& j, const char* key, const std::string& where, T fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw Error(where + "." + key + ": wrong type (" + std::string(it->type_name()) + ")");
  }
}

// One ProxyJump hop "[user@]host[:port]" (an alias may stand for host) through the config.
ResolvedNode::Hop resolve_hop(const std::string& text, const std::filesystem::path& cfg, const LocalEnv& env) {
  std::string rest = trim(text), user;
  if (rest.empty()) throw Error("jump host: an empty hop in the jump list");
  if (const auto at = rest.rfind('@'); at != std::string::npos) {
    user = rest.substr(0, at);
    rest = rest.substr(at + 1);
  }
  int port = 0;
  if (const auto colon = rest.rfind(':'); colon != std::string::npos && rest.find(']') == std::string::npos) {
    const std::string p = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    try {
      size_t used = 0;
      port = std::stoi(p, &used);
      if (used != p.size() || port < 1 || port > 65535) throw std::out_of_range("port");
    } catch (const std::exception&) {
      throw Error("jump host '" + text + "': '" + p + "' is not a port (1..65535)");
    }
  } else if (!rest.empty() && rest.front() == '[') {  // [v6]:port
    const auto close = rest.find(']');
    std::string after = rest.substr(close + 1);
    if (!after.empty() && after.front() == ':') port = std::stoi(after.substr(1));
    rest = rest.substr(1, close - 1);
  }
  if (rest.empty()) throw Error("jump host '" + text + "': no host name");
  const HostSpec h = resolve_host(rest, cfg, env);
  ResolvedNode::Hop hop;
  hop.connect = connect_options(h);
  if (!user.empty()) hop.connect.user = user;
  if (port) hop.connect.port = port;
  hop.identity_files = h.identity_files;
  hop.timeout_ms = 1000 * h.connect_timeout_s;
  return hop;
}

std::vector<std::string> split_hops(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const auto comma = s.find(',', start);
    const std::string part = trim(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// "~" and "~/..." of a LOCAL path (a key file) with $HOME, as OpenSSH's ssh -i does.
std::string expand_home(const std::string& p) {
  if (p.empty() || p[0] != '~' || (p.size() > 1 && p[1] != '/')) return p;
  const char* home = std::getenv("HOME");
  if (!home || !*home) return p;
  return std::string(home) + p.substr(1);
}

bool file_exists(const std::string& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

}  // namespace

const char* auth_method_name(AuthMethod m) {
  switch (m) {
    case AuthMethod::Agent: return "agent";
    case AuthMethod::KeyFile: return "key";
    case AuthMethod::Password: return "password";
  }
  return "agent";
}

json to_json(const NodeSpec& n) {
  json j = {{"name", n.name}, {"host", n.host}, {"auth", auth_method_name(n.auth)},
            {"gpus", n.gpus}, {"work_dir", n.work_dir}};
  if (n.port) j["port"] = n.port;
  if (!n.user.empty()) j["user"] = n.user;
  if (!n.key_file.empty()) j["key_file"] = n.key_file;
  if (!n.jump.empty()) j["jump"] = n.jump;
  if (n.connect_timeout_s) j["connect_timeout_s"] = n.connect_timeout_s;
  if (!n.address.empty()) j["address"] = n.address;
  if (!n.ifname.empty()) j["ifname"] = n.ifname;
  if (n.container.enabled() || !n.container.mounts.empty()) j["container"] = to_json(n.container);
  return j;
}

json to_json(const ClusterSpec& c) {
  json nodes = json::array();
  for (const NodeSpec& n : c.nodes) nodes.push_back(to_json(n));
  json j = {{"name", c.name}, {"nodes", nodes}};
  if (c.is_slurm()) {
    j["kind"] = "slurm";
    j["slurm"] = to_json(c.slurm);
  }
  return j;
}

NodeSpec node_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected an object, got " + std::string(j.type_name()));
  NodeSpec n;
  n.name = get<std::string>(j, "name", where, "");
  n.host = trim(get<std::string>(j, "host", where, ""));
  if (n.host.empty()) throw Error(where + ".host: empty; enter the node's host name, address or ~/.ssh/config alias");
  n.port = get<int>(j, "port", where, 0);
  if (n.port < 0 || n.port > 65535)
    throw Error(where + ".port: " + std::to_string(n.port) + " is not a port (1..65535)");
  n.user = get<std::string>(j, "user", where, "");
  n.auth = parse_auth(get<std::string>(j, "auth", where, "agent"), where);
  n.key_file = get<std::string>(j, "key_file", where, "");
  n.gpus = get<int>(j, "gpus", where, 0);
  if (n.gpus < 0) throw Error(where + ".gpus: " + std::to_string(n.gpus) + " is negative; use 0 for CPU only");
  n.work_dir = get<std::string>(j, "work_dir", where, "traindeck");
  if (n.work_dir.empty()) n.work_dir = "traindeck";
  n.jump = trim(get<std::string>(j, "jump", where, ""));
  n.connect_timeout_s = get<int>(j, "connect_timeout_s", where, 0);
  if (n.connect_timeout_s < 0 || n.connect_timeout_s > 3600)
    throw Error(where + ".connect_timeout_s: " + std::to_string(n.connect_timeout_s) +
                " is not a number of seconds 1..3600 (0 or absent: ConnectTimeout from ~/.ssh/config, else 15)");
  n.address = trim(get<std::string>(j, "address", where, ""));
  n.ifname = trim(get<std::string>(j, "ifname", where, ""));
  if (const auto it = j.find("container"); it != j.end() && !it->is_null())
    n.container = container_from_json(*it, where + ".container");
  return n;
}

ClusterSpec cluster_from_json(const json& j) {
  if (!j.is_object()) throw Error("cluster: expected an object, got " + std::string(j.type_name()));
  ClusterSpec c;
  c.name = trim(get<std::string>(j, "name", "cluster", ""));
  if (c.name.empty()) throw Error("cluster.name: empty; give the cluster a name");
  const auto it = j.find("nodes");
  if (it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw Error("cluster.nodes: expected a list of nodes");
    for (size_t i = 0; i < it->size(); ++i)
      c.nodes.push_back(node_from_json((*it)[i], "nodes[" + std::to_string(i) + "]"));
  }
  c.kind = trim(get<std::string>(j, "kind", "cluster", "ssh"));
  if (c.kind != "ssh" && c.kind != "slurm")
    throw Error("cluster.kind: '" + c.kind + "' is not a cluster kind (ssh or slurm)");
  if (c.is_slurm()) {
    const auto s = j.find("slurm");
    c.slurm = slurm_from_json(s == j.end() || s->is_null() ? json::object() : *s, "cluster.slurm");
  }
  return c;
}

std::vector<std::string> validate(const ClusterSpec& c) {
  std::vector<std::string> problems;
  if (trim(c.name).empty()) problems.push_back("the cluster has no name");
  if (c.kind != "ssh" && c.kind != "slurm") problems.push_back("the cluster kind '" + c.kind + "' is not ssh or slurm");
  if (c.is_slurm()) {
    if (c.nodes.size() != 1)
      problems.push_back("a Slurm cluster has exactly one SSH node, its login node (it has " +
                         std::to_string(c.nodes.size()) + ")");
    for (const std::string& p : validate(c.slurm)) problems.push_back("Slurm: " + p);
  }
  std::set<std::string> names;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const NodeSpec& n = c.nodes[i];
    const std::string who = "node " + std::to_string(i + 1);
    if (trim(n.host).empty()) problems.push_back(who + ": the host is empty");
    if (n.port < 0 || n.port > 65535) problems.push_back(who + ": port " + std::to_string(n.port) + " is not 1..65535");
    if (n.gpus < 0) problems.push_back(who + ": GPUs must be 0 (CPU) or more");
    if (!trim(n.host).empty() && !names.insert(n.display_name()).second)
      problems.push_back(who + ": another node is already called '" + n.display_name() + "'");
    if (n.address.find_first_of(" \t\r\n/") != std::string::npos)
      problems.push_back(who + ": the address '" + n.address + "' is not a host name or IP address");
    if (n.ifname.size() > 15 || n.ifname.find_first_of(" \t\r\n/:") != std::string::npos)
      problems.push_back(who + ": '" + n.ifname + "' is not a network interface name (e.g. eth0, ib0)");
    if (trim(n.work_dir).empty()) problems.push_back(who + ": the work directory is empty");
    else if (n.work_dir[0] == '~')
      problems.push_back(who + ": the work directory '" + n.work_dir +
                         "' starts with ~, which is not expanded on the node (SFTP and the quoted commands take it "
                         "literally): write it relative to the remote home ('" +
                         (n.work_dir.size() > 2 && n.work_dir[1] == '/' ? n.work_dir.substr(2) : std::string("traindeck")) +
                         "') or as an absolute path");
    for (std::string& p : validate(n.container, who)) problems.push_back(std::move(p));
  }
  return problems;
}

ResolvedNode resolve_node(const NodeSpec& n, const std::filesystem::path& cfg, const LocalEnv& env) {
  const HostSpec h = resolve_host(trim(n.host), cfg, env);
  ResolvedNode r;
  r.target = connect_options(h);
  if (n.port) r.target.port = n.port;
  if (!n.user.empty()) r.target.user = n.user;
  r.timeout_ms = 1000 * (n.connect_timeout_s ? n.connect_timeout_s : h.connect_timeout_s);
  if (r.timeout_ms) r.target.timeout_ms = r.timeout_ms;
  r.identity_files = h.identity_files;
  const std::vector<std::string> hops = n.jump.empty() ? h.proxy_jump : split_hops(n.jump);
  for (const std::string& hop : hops) {
    if (hop == "none") continue;  // OpenSSH: ProxyJump none disables jumping
    r.jumps.push_back(resolve_hop(hop, cfg, env));
  }
  return r;
}

Auth node_auth(const NodeSpec& n, const ResolvedNode& r, const NodeSecrets& secrets) {
  switch (n.auth) {
    case AuthMethod::Agent: return Auth::agent();
    case AuthMethod::Password: return Auth::pass(secrets.password);
    case AuthMethod::KeyFile: {
      std::string key = expand_home(n.key_file);
      if (key.empty())
        for (const std::string& f : r.identity_files)
          if (file_exists(f)) { key = f; break; }
      if (key.empty())
        throw Error(r.target.user + "@" + r.target.host + ": key authentication needs a private key file; "
                    "choose one in the node's settings or add IdentityFile to ~/.ssh/config");
      return Auth::key(key, secrets.passphrase);
    }
  }
  return Auth::agent();
}

namespace {

// Host key policy of open_node(): Match proceeds, Unknown asks, Mismatch was refused by connect.
void check_host_key(Session& s, const OpenOptions& opts) {
  const HostKeyInfo& hk = s.host_key();
  if (hk.status == HostKeyStatus::Match) return;
  if (hk.status == HostKeyStatus::Unknown) {
    if (opts.accept_unknown_host && opts.accept_unknown_host(hk, s.where())) {
      s.accept_host_key();
      return;
    }
    throw Error(s.where() + ": the host key (" + hk.key_type + " " + hk.fingerprint +
                ") was not accepted; connect again and accept it once you have compared it with the node's "
                "`ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub`");
  }
  throw Error(s.where() + ": the host key CHANGED (now " + hk.key_type + " " + hk.fingerprint +
              "); refusing to connect. Someone may be intercepting the connection. Remove the old entry with "
              "`ssh-keygen -R '" + hk.host_token + "'` only once you know why it changed");
}

// A jump hop logs in with its IdentityFile keys that exist (no passphrase), in order (none
// configured: OpenSSH's defaults ~/.ssh/id_ed25519, id_ecdsa, id_rsa), then with ssh-agent;
// the error lists what each attempt said.
void authenticate_hop(Session& s, const std::vector<std::string>& identity_files) {
  std::vector<std::string> keys = identity_files;
  if (keys.empty())
    if (const char* home = std::getenv("HOME"))
      for (const char* k : {"id_ed25519", "id_ecdsa", "id_rsa"}) keys.push_back(std::string(home) + "/.ssh/" + k);
  std::string tried;
  for (const std::string& f : keys) {
    std::error_code ec;
    if (!std::filesystem::exists(f, ec)) continue;
    try {
      s.authenticate(Auth::key(f));
      return;
    } catch (const Error& e) {
      tried += std::string("\n  key ") + f + ": " + e.what();
    }
  }
  try {
    s.authenticate(Auth::agent());
  } catch (const Error& e) {
    throw Error(s.where() + ": cannot log in to the jump host (its IdentityFile keys without passphrase, "
                "then ssh-agent):" + tried + "\n  ssh-agent: " + e.what());
  }
}

}  // namespace

Session open_node(const ResolvedNode& r, const Auth& auth, const OpenOptions& opts) {
  Session s = connect_node(r, opts);
  s.authenticate(auth);
  return s;
}

Session connect_node(const ResolvedNode& r, const OpenOptions& opts) {
  auto with_opts = [&](ConnectOptions c, int own_timeout_ms) {
    c.timeout_ms = own_timeout_ms > 0 ? own_timeout_ms : opts.timeout_ms;
    if (!opts.known_hosts.empty()) c.known_hosts = opts.known_hosts;
    return c;
  };
  // Each hop through the previous one (Session::connect_via); the target through the last.
  std::unique_ptr<Session> via;
  for (const ResolvedNode::Hop& hop : r.jumps) {
    const ConnectOptions c = with_opts(hop.connect, hop.timeout_ms);
    Session s = via ? Session::connect_via(std::move(via), c) : Session::connect(c);
    check_host_key(s, opts);
    authenticate_hop(s, hop.identity_files);
    via = std::make_unique<Session>(std::move(s));
  }
  const ConnectOptions c = with_opts(r.target, r.timeout_ms);
  Session s = via ? Session::connect_via(std::move(via), c) : Session::connect(c);
  check_host_key(s, opts);
  return s;
}

}  // namespace td::remote
