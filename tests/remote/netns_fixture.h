// Two more "nodes" for the remote/ tests, each a Linux network namespace running its own real
// sshd (plain C++, no Qt; needs root and iproute2's `ip`):
//
//   host  10.77.N.1 --veth-- 10.77.N.2  node2 (netns tdn<pid>b)  10.78.N.1 --veth-- 10.78.N.2  node3 (netns tdn<pid>c)
//
// Each namespace also has its own UTS namespace whose host name is the namespace's name (when
// util-linux's `unshare` is there; else hostname2/hostname3 stay empty and both share this
// machine's name), so processes started over SSH on node2 and node3 report different hosts.
//
// node2 is reachable from the host; node3 only from node2 (no route from the host to
// 10.78.N.0/24, node3 has no default route and node2 does not forward), so the host reaches it
// only with node2 as jump host. Both sshds listen on port 22 of their address and use the host
// key and authorized_keys of an SshdFixture (same users, same keys). N is a /24 not in use on
// the host (chosen under a lock file), names carry the test's pid: parallel test processes do
// not collide. stop() (also the destructor) kills every process in the namespaces, deletes them
// and the host's veth; start() first removes what a crashed earlier test process left behind.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sshd_fixture.h"

namespace td::remote::testing {

class NetnsNodes {
 public:
  std::string skip_reason;  ///< why start() failed: what was missing and what to do
  int net = 0;              ///< N of 10.77.N.0/24 and 10.78.N.0/24
  std::string ns2, ns3;     ///< namespace names
  std::string host_addr, node2_addr, node2_inner_addr, node3_addr;
  std::string node2_ifname, node3_ifname;  ///< node2's interface toward node3 (10.78.N.1) and node3's (10.78.N.2)
  std::string hostname2, hostname3;        ///< the nodes' own host names; "" when they share this machine's

  NetnsNodes() = default;
  NetnsNodes(const NetnsNodes&) = delete;
  ~NetnsNodes() { stop(); }

  /// Creates both namespaces and starts their sshds with `keys`' host key and authorized_keys.
  /// Returns false with skip_reason set when it cannot (not root, no `ip`, namespaces refused).
  bool start(const SshdFixture& keys) {
    if (geteuid() != 0) {
      skip_reason = "network namespaces need root (ip netns add): run the tests as root to cover the second "
                    "and third node";
      return false;
    }
    std::string out;
    if (run_cmd({"ip", "-V"}, &out) != 0) {
      skip_reason = "`ip` is missing: install iproute2 for the network-namespace nodes";
      return false;
    }
    sweep_stale();
    // `ip netns add` bind-mounts /run/netns onto itself the first time; stop() undoes that when
    // it was not there before and no namespace is left, so no mount outlives the test (a
    // chroot holding one cannot be removed).
    netns_mounted_before_ = run_netns_mounted();
    const std::string tag = "tdn" + std::to_string(getpid());
    ns2 = tag + "b";
    ns3 = tag + "c";
    veth_host_ = tag + "h";
    if (!ip({"netns", "add", ns2}, "ip netns add")) return false;
    if (!ip({"netns", "add", ns3}, "ip netns add")) return false;
    // Choose N and give the host its address under a lock, so that two test processes never
    // pick the same subnet.
    {
      int lock = ::open("/tmp/td-netns.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (lock >= 0) flock(lock, LOCK_EX);
      run_cmd({"ip", "-o", "-4", "addr"}, &out);
      std::string routes;
      run_cmd({"ip", "-4", "route"}, &routes);
      net = 0;
      for (int i = 0; i < 250 && !net; ++i) {
        const int n = 1 + (getpid() + i) % 250;
        const std::string p1 = "10.77." + std::to_string(n) + ".", p2 = "10.78." + std::to_string(n) + ".";
        if ((out + routes).find(p1) == std::string::npos && (out + routes).find(p2) == std::string::npos) net = n;
      }
      const std::string pre = "10.77." + std::to_string(net) + ".";
      host_addr = pre + "1";
      node2_addr = pre + "2";
      node2_inner_addr = "10.78." + std::to_string(net) + ".1";
      node3_addr = "10.78." + std::to_string(net) + ".2";
      const bool ok = net != 0 &&
          ip({"link", "add", veth_host_, "type", "veth", "peer", "name", tag + "b0"}, "ip link add (veth)") &&
          ip({"addr", "add", host_addr + "/24", "dev", veth_host_}, "ip addr add") &&
          ip({"link", "set", veth_host_, "up"}, "ip link set up");
      if (lock >= 0) ::close(lock);
      if (!ok) {
        if (!net) skip_reason = "no free 10.77.N.0/24 on this machine";
        return false;
      }
    }
    const std::string n = std::to_string(net);
    if (!ip({"link", "set", tag + "b0", "netns", ns2}, "ip link set netns") ||
        !ip({"-n", ns2, "addr", "add", node2_addr + "/24", "dev", tag + "b0"}, "ip addr add (node2)") ||
        !ip({"-n", ns2, "link", "set", tag + "b0", "up"}, "ip link set up (node2)") ||
        !ip({"-n", ns2, "link", "set", "lo", "up"}, "ip link set lo up (node2)") ||
        !ip({"link", "add", tag + "x", "type", "veth", "peer", "name", tag + "y"}, "ip link add (veth 2-3)") ||
        !ip({"link", "set", tag + "x", "netns", ns2}, "ip link set netns (node2)") ||
        !ip({"link", "set", tag + "y", "netns", ns3}, "ip link set netns (node3)") ||
        !ip({"-n", ns2, "addr", "add", node2_inner_addr + "/24", "dev", tag + "x"}, "ip addr add (node2 inner)") ||
        !ip({"-n", ns2, "link", "set", tag + "x", "up"}, "ip link set up (node2 inner)") ||
        !ip({"-n", ns3, "addr", "add", node3_addr + "/24", "dev", tag + "y"}, "ip addr add (node3)") ||
        !ip({"-n", ns3, "link", "set", tag + "y", "up"}, "ip link set up (node3)") ||
        !ip({"-n", ns3, "link", "set", "lo", "up"}, "ip link set lo up (node3)"))
      return false;
    node2_ifname = tag + "x";
    node3_ifname = tag + "y";
    if (access("/usr/bin/unshare", X_OK) == 0) {
      hostname2 = ns2;
      hostname3 = ns3;
    }
    return start_sshd(keys, ns2, node2_addr, hostname2, &pid2_) && start_sshd(keys, ns3, node3_addr, hostname3, &pid3_);
  }

  /// Kills the sshds and everything else running in the namespaces, deletes them and the veths.
  void stop() {
    for (pid_t* p : {&pid2_, &pid3_})
      if (*p > 0) {
        kill(*p, SIGTERM);
        waitpid(*p, nullptr, 0);
        *p = -1;
      }
    for (const std::string& ns : {ns2, ns3})
      if (!ns.empty()) remove_netns(ns);
    if (!veth_host_.empty()) run_cmd({"ip", "link", "del", veth_host_});
    std::error_code ec;
    if (!ns2.empty() && !netns_mounted_before_ && run_netns_mounted() &&
        std::filesystem::is_empty("/run/netns", ec) && !ec)
      run_cmd({"umount", "/run/netns"});
    ns2.clear();
    ns3.clear();
    veth_host_.clear();
  }

 private:
  bool netns_mounted_before_ = true;

  // Whether /run/netns is a mount point (field 5 of /proc/self/mountinfo, relative to our root).
  static bool run_netns_mounted() {
    std::istringstream in(read_text("/proc/self/mountinfo"));
    for (std::string line; std::getline(in, line);) {
      std::istringstream f(line);
      std::string id, parent, dev, root, point;
      if (f >> id >> parent >> dev >> root >> point && point == "/run/netns") return true;
    }
    return false;
  }

  bool ip(const std::vector<std::string>& args, const std::string& what) {
    std::vector<std::string> argv{"ip"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out;
    if (run_cmd(argv, &out) == 0) return true;
    skip_reason = what + " failed (" + out + "): network namespaces cannot be made here (a container without "
                  "CAP_NET_ADMIN/CAP_SYS_ADMIN?)";
    return false;
  }

  static void remove_netns(const std::string& ns) {
    std::string pids;
    run_cmd({"ip", "netns", "pids", ns}, &pids);
    std::istringstream in(pids);
    for (long pid; in >> pid;) kill(pid_t(pid), SIGKILL);
    run_cmd({"ip", "netns", "del", ns});
  }

  // Namespaces "tdn<pid>b/c" of test processes that no longer run.
  static void sweep_stale() {
    std::string list;
    run_cmd({"ip", "netns", "list"}, &list);
    std::istringstream in(list);
    for (std::string line; std::getline(in, line);) {
      const std::string name = line.substr(0, line.find(' '));
      if (name.size() < 5 || name.rfind("tdn", 0) != 0) continue;
      const std::string digits = name.substr(3, name.size() - 4);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
      if (kill(pid_t(std::atol(digits.c_str())), 0) == 0 || errno != ESRCH) continue;
      remove_netns(name);
      run_cmd({"ip", "link", "del", "tdn" + digits + "h"});
    }
  }

  // `hostname` non-empty: sshd runs in a UTS namespace of its own with that host name.
  bool start_sshd(const SshdFixture& keys, const std::string& ns, const std::string& addr, const std::string& hostname,
                  pid_t* pid) {
    const char* sftp = access("/usr/lib/openssh/sftp-server", X_OK) == 0 ? "/usr/lib/openssh/sftp-server"
                                                                          : "internal-sftp";
    const std::string conf = (keys.dir / ("sshd_config." + ns)).string();
    const std::string pidfile = (keys.dir / ("sshd.pid." + ns)).string();
    const std::string log = (keys.dir / ("sshd." + ns + ".log")).string();
    std::ofstream cfg(conf);
    cfg << "Port 22\nListenAddress " << addr << "\nHostKey " << keys.host_key << "\nPidFile " << pidfile
        << "\nAuthorizedKeysFile " << (keys.dir / "authorized_keys").string()
        << "\nStrictModes no\nPubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        << "UsePAM no\nPermitRootLogin yes\nAllowTcpForwarding yes\nMaxStartups 50\nMaxSessions 50\n"
        << "LogLevel ERROR\nSetEnv " << kSessionEnv << "\nSubsystem sftp " << sftp << "\n";
    cfg.close();
    *pid = fork();
    if (*pid == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      // `ip netns exec` enters the namespace and execs sshd in this same process (through
      // unshare and sh, which exec too, when the node gets a host name of its own).
      if (!hostname.empty())
        execlp("ip", "ip", "netns", "exec", ns.c_str(), "/usr/bin/unshare", "--uts", "sh", "-c",
               "printf '%s' \"$1\" > /proc/sys/kernel/hostname && shift && exec \"$@\"", "sh", hostname.c_str(),
               "/usr/sbin/sshd", "-D", "-e", "-f", conf.c_str(), nullptr);
      else
        execlp("ip", "ip", "netns", "exec", ns.c_str(), "/usr/sbin/sshd", "-D", "-e", "-f", conf.c_str(), nullptr);
      _exit(127);
    }
    // sshd writes its PidFile once it listens.
    for (int i = 0; i < 200; ++i) {
      if (waitpid(*pid, nullptr, WNOHANG) == *pid) {
        *pid = -1;
        skip_reason = "sshd in netns " + ns + " did not start: " + read_text(log);
        return false;
      }
      if (std::filesystem::exists(pidfile)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    skip_reason = "sshd in netns " + ns + " did not write its PidFile: " + read_text(log);
    return false;
  }

  std::string veth_host_;
  pid_t pid2_ = -1, pid3_ = -1;
};

}  // namespace td::remote::testing
