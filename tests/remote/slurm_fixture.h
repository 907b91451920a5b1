// A real Slurm cluster for the remote/ tests, started and stopped by the test (plain C++, no
// Qt; needs root, Debian's slurm-wlm and munge, iproute2 and util-linux):
//
//   munged            its own key and socket under dir (--force: it runs as root)
//   slurmctld         on this machine, at the bridge address 10.79.N.1 (SlurmctldHost must be
//                     this machine's host name, or slurmctld refuses to start)
//   slurmd × nodes    each in a network namespace of its own (address 10.79.N.(i+2) on a veth
//                     into the bridge) and a UTS namespace whose host name is the node's name,
//                     started with `nsenter --net=` (`ip netns exec` remounts /sys: slurmd then
//                     finds no cgroup hierarchy and fails)
//
// Everything lives under one temporary folder (slurm.conf, state, spool, logs, the munge socket)
// and the names carry the test's pid (cluster tds<pid>, nodes tds<pid>n<i>, namespaces and the
// bridge tds<pid>...), so parallel test processes never collide; start() first removes what a
// crashed earlier test process left behind (namespaces, bridge, daemons whose command line names
// its folder, the folder). Client commands need SLURM_CONF=<conf> (env()).
// stop() (also the destructor) kills every daemon (by its PidFile, then everything left in the
// namespaces), deletes the namespaces, the bridge and the folder.
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

class SlurmCluster {
 public:
  std::string skip_reason;             ///< why start() failed: what was missing and what to do
  std::filesystem::path dir;           ///< the cluster's folder (slurm.conf, logs, state)
  std::string conf;                    ///< slurm.conf (SLURM_CONF for client commands)
  std::string cluster_name, partition = "td";
  std::string ctl_addr;                ///< slurmctld's address (the bridge's)
  std::vector<std::string> node_names;  ///< NodeName = the node's host name
  std::vector<std::string> node_addrs;  ///< NodeAddr
  std::vector<std::string> netns;       ///< each node's network namespace

  SlurmCluster() = default;
  SlurmCluster(const SlurmCluster&) = delete;
  ~SlurmCluster() { stop(); }

  /// "SLURM_CONF=<conf>": the environment every client command (sbatch, squeue, ...) needs.
  std::string env() const { return "SLURM_CONF=" + conf; }

  /// Starts munged, slurmctld and `nodes` slurmds and waits (up to 2 min) until sinfo shows
  /// every node idle. Returns false with skip_reason set when it cannot.
  bool start(int nodes = 2) {
    if (geteuid() != 0) {
      skip_reason = "a test Slurm cluster needs root (network namespaces, munged, slurmd): run the tests as root";
      return false;
    }
    for (const char* exe : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch", "/usr/bin/srun"})
      if (access(exe, X_OK) != 0) {
        skip_reason = std::string(exe) + " is missing: install slurm-wlm (./traindeck.sh test installs it)";
        return false;
      }
    if (access("/usr/sbin/munged", X_OK) != 0 || access("/usr/bin/munge", X_OK) != 0) {
      skip_reason = "munged is missing: install munge (./traindeck.sh test installs it)";
      return false;
    }
    std::string out;
    for (const char* tool : {"ip", "nsenter", "unshare"})
      if (run_cmd({"sh", "-c", std::string("command -v ") + tool}, &out) != 0) {
        skip_reason = std::string("`") + tool + "` is missing: install iproute2 and util-linux";
        return false;
      }
    sweep_stale();
    char tmpl[] = "/tmp/td-slurm-XXXXXX";
    if (!mkdtemp(tmpl)) {
      skip_reason = "cannot make a temporary folder";
      return false;
    }
    dir = tmpl;
    chmod(dir.c_str(), 0755);
    std::ofstream(dir / "owner") << getpid() << "\n";  // for sweep_stale() of a later test process
    const std::string tag = "tds" + std::to_string(getpid());
    cluster_name = tag;
    bridge_ = tag + "br";
    // A free 10.79.N.0/24, chosen under the lock the netns fixture uses.
    {
      int lock = ::open("/tmp/td-netns.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (lock >= 0) flock(lock, LOCK_EX);
      std::string addrs, routes;
      run_cmd({"ip", "-o", "-4", "addr"}, &addrs);
      run_cmd({"ip", "-4", "route"}, &routes);
      int net = 0;
      for (int i = 0; i < 250 && !net; ++i) {
        const int n = 1 + (getpid() + i) % 250;
        if ((addrs + routes).find("10.79." + std::to_string(n) + ".") == std::string::npos) net = n;
      }
      const bool ok = net && ip({"link", "add", bridge_, "type", "bridge"}) &&
                      ip({"addr", "add", "10.79." + std::to_string(net) + ".1/24", "dev", bridge_}) &&
                      ip({"link", "set", bridge_, "up"});
      if (lock >= 0) ::close(lock);
      if (!ok) {
        if (!net) skip_reason = "no free 10.79.N.0/24 on this machine";
        return false;
      }
      net_ = net;
    }
    const std::string pre = "10.79." + std::to_string(net_) + ".";
    ctl_addr = pre + "1";
    for (int i = 0; i < nodes; ++i) {
      const std::string ns = tag + "-" + std::to_string(i + 1), host = tag + "v" + std::to_string(i + 1),
                        peer = tag + "p" + std::to_string(i + 1), addr = pre + std::to_string(i + 2);
      if (!ip({"netns", "add", ns})) return false;
      netns.push_back(ns);
      if (!ip({"link", "add", host, "type", "veth", "peer", "name", peer}) ||
          !ip({"link", "set", host, "master", bridge_}) || !ip({"link", "set", host, "up"}) ||
          !ip({"link", "set", peer, "netns", ns}) || !ip({"-n", ns, "addr", "add", addr + "/24", "dev", peer}) ||
          !ip({"-n", ns, "link", "set", peer, "up"}) || !ip({"-n", ns, "link", "set", "lo", "up"}))
        return false;
      node_names.push_back(tag + "n" + std::to_string(i + 1));
      node_addrs.push_back(addr);
    }
    if (!start_munge() || !write_conf()) return false;
    if (daemon({"/usr/sbin/slurmctld", "-f", conf, "-i"}, (dir / "slurmctld.start.log").string(), &out) != 0) {
      skip_reason = "slurmctld did not start: " + out + read_text(dir / "slurmctld.log");
      return false;
    }
    for (int i = 0; i < nodes; ++i)
      if (!start_slurmd(i)) return false;
    if (!wait_idle(nodes)) {
      skip_reason = "the slurmd nodes did not come up idle within 2 min:\n" + sinfo() + "\nslurmctld.log:\n" +
                    read_text(dir / "slurmctld.log");
      return false;
    }
    return true;
  }

  /// Starts (again) node i's slurmd in its namespaces. Returns false with skip_reason set.
  bool start_slurmd(int i) {
    std::string out;
    const int rc = daemon({"nsenter", "--net=/run/netns/" + netns[i], "unshare", "--uts", "sh", "-c",
                           "printf '%s' \"$1\" > /proc/sys/kernel/hostname && shift && exec \"$@\"", "sh",
                           node_names[i], "/usr/sbin/slurmd", "-f", conf, "-N", node_names[i]},
                          (dir / ("slurmd-" + node_names[i] + ".start.log")).string(), &out);
    if (rc != 0) {
      skip_reason = "slurmd " + node_names[i] + " did not start: " + out +
                    read_text(dir / ("slurmd-" + node_names[i] + ".log"));
      return false;
    }
    return true;
  }

  /// A node dies: SIGKILL to everything in its network namespace (slurmd, slurmstepd, the job's
  /// processes there). Returns how many processes were killed.
  int kill_node(int i) {
    std::string pids;
    run_cmd({"ip", "netns", "pids", netns[i]}, &pids);
    std::istringstream in(pids);
    int n = 0;
    for (long pid; in >> pid;)
      if (::kill(pid_t(pid), SIGKILL) == 0) ++n;
    return n;
  }

  /// Waits up to `ms` until sinfo shows `count` nodes idle.
  bool wait_idle(int count, int ms = 120000) {
    for (int waited = 0; waited < ms; waited += 500) {
      std::string out;
      run_cmd({"sinfo", "-h", "-N", "-o", "%N %T"}, &out, {}, {env()});
      int idle = 0;
      std::istringstream in(out);
      for (std::string name, state; in >> name >> state;)
        if (state == "idle") ++idle;
      if (idle >= count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return false;
  }

  /// `sinfo`'s table, for messages.
  std::string sinfo() const {
    std::string out;
    run_cmd({"sinfo"}, &out, {}, {env()});
    return out;
  }

  /// Runs a Slurm client command with SLURM_CONF set; output into *out.
  int client(const std::vector<std::string>& argv, std::string* out = nullptr) const {
    return run_cmd(argv, out, {}, {env()});
  }

  void stop() {
    if (!dir.empty()) {
      std::string out;
      run_cmd({"scancel", "--full", "--signal=KILL", "--partition=" + partition}, &out, {}, {env()});
      kill_pidfile(dir / "slurmctld.pid");
      for (const std::string& n : node_names) kill_pidfile(dir / ("slurmd-" + n + ".pid"));
    }
    for (size_t i = 0; i < netns.size(); ++i) {
      kill_node(static_cast<int>(i));
      run_cmd({"ip", "netns", "del", netns[i]});
    }
    netns.clear();
    if (!bridge_.empty()) run_cmd({"ip", "link", "del", bridge_});
    bridge_.clear();
    if (!dir.empty()) {
      kill_pidfile(dir / "munged.pid");
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      dir.clear();
    }
    node_names.clear();
    node_addrs.clear();
  }

 private:
  int net_ = 0;
  std::string bridge_;

  // Runs a daemon's start command with stdin /dev/null, stdout and stderr into `log` and every
  // other descriptor closed (a daemon that inherited a pipe of ours would keep it open for its
  // whole life, and a reader of that pipe would wait for it). Returns the start command's exit
  // code (the daemon forks and its starter exits); *out = the log.
  int daemon(const std::vector<std::string>& argv, const std::string& log, std::string* out) {
    std::vector<std::string> envs = {env()};
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      const int null = ::open("/dev/null", O_RDONLY);
      if (fd < 0 || null < 0) _exit(126);
      dup2(null, 0);
      dup2(fd, 1);
      dup2(fd, 2);
      for (int i = 3; i < 4096; ++i) ::close(i);
      for (std::string& e : envs) putenv(e.data());
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    *out = read_text(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  bool ip(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"ip"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out;
    if (run_cmd(argv, &out) == 0) return true;
    skip_reason = "`ip` failed (" + out + "): network namespaces cannot be made here (a container without "
                  "CAP_NET_ADMIN/CAP_SYS_ADMIN?)";
    return false;
  }

  // SIGTERM to the pid in `file`, then SIGKILL if it is still there 5 s later.
  static void kill_pidfile(const std::filesystem::path& file) {
    const long pid = std::atol(read_text(file).c_str());
    if (pid <= 1) return;
    if (::kill(pid_t(pid), SIGTERM) != 0) return;
    for (int i = 0; i < 50 && ::kill(pid_t(pid), 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(pid_t(pid), SIGKILL);
  }

  bool start_munge() {
    std::string out;
    const std::string key = (dir / "munge.key").string();
    {
      std::ifstream rnd("/dev/urandom", std::ios::binary);
      std::string bytes(1024, '\0');
      rnd.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      std::ofstream(key, std::ios::binary) << bytes;
    }
    chmod(key.c_str(), 0400);
    const std::string sock = (dir / "munge.sock").string();
    if (daemon({"/usr/sbin/munged", "--force", "--key-file=" + key, "--socket=" + sock,
                "--pid-file=" + (dir / "munged.pid").string(), "--log-file=" + (dir / "munged.log").string(),
                "--seed-file=" + (dir / "munged.seed").string()},
               (dir / "munged.start.log").string(), &out) != 0) {
      skip_reason = "munged did not start: " + out + read_text(dir / "munged.log");
      return false;
    }
    if (run_cmd({"sh", "-c", "munge -S \"$1\" -n | unmunge -S \"$1\"", "sh", sock}, &out) != 0 ||
        out.find("Success") == std::string::npos) {
      skip_reason = "munge does not work with its own key: " + out;
      return false;
    }
    return true;
  }

  bool write_conf() {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const std::string d = dir.string();
    conf = d + "/slurm.conf";
    std::ofstream c(conf);
    c << "ClusterName=" << cluster_name << "\n"
      << "SlurmctldHost=" << host << "(" << ctl_addr << ")\n"
      << "SlurmctldPort=" << free_port() << "\nSlurmdPort=" << free_port() << "\n"
      << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << d << "/munge.sock\n"
      << "SlurmUser=root\nSlurmdUser=root\n"
      << "StateSaveLocation=" << d << "/state\nSlurmdSpoolDir=" << d << "/spool-%n\n"
      << "SlurmctldPidFile=" << d << "/slurmctld.pid\nSlurmdPidFile=" << d << "/slurmd-%n.pid\n"
      << "SlurmctldLogFile=" << d << "/slurmctld.log\nSlurmdLogFile=" << d << "/slurmd-%n.log\n"
      << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
      << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
      << "ReturnToService=2\nMpiDefault=none\nJobAcctGatherType=jobacct_gather/none\n"
      << "AccountingStorageType=accounting_storage/none\n"
      // Short timers: a dead node is DOWN (its job NODE_FAIL) ~20 s after it stopped answering;
      // a job's processes get KillWait s between SIGTERM and SIGKILL at the end.
      << "SlurmdTimeout=10\nSlurmctldTimeout=10\nMessageTimeout=5\nKillWait=10\nInactiveLimit=0\n"
      << "MinJobAge=600\nSchedulerType=sched/backfill\nSchedulerParameters=sched_interval=5,bf_interval=5\n";
    for (size_t i = 0; i < node_names.size(); ++i)
      c << "NodeName=" << node_names[i] << " NodeAddr=" << node_addrs[i] << " CPUs=2 State=UNKNOWN\n";
    c << "PartitionName=" << partition << " Nodes=";
    for (size_t i = 0; i < node_names.size(); ++i) c << (i ? "," : "") << node_names[i];
    c << " Default=YES MaxTime=INFINITE State=UP\n";
    c.close();
    std::filesystem::create_directories(dir / "state");
    if (!c) {
      skip_reason = "cannot write " + conf;
      return false;
    }
    return true;
  }

  // Namespaces "tds<pid>-<i>" and bridges "tds<pid>br" of test processes that no longer run.
  static void sweep_stale() {
    std::string list;
    run_cmd({"ip", "-o", "link", "show", "type", "bridge"}, &list);
    std::string ns;
    run_cmd({"ip", "netns", "list"}, &ns);
    auto dead = [](const std::string& digits) {
      return !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos &&
             ::kill(pid_t(std::atol(digits.c_str())), 0) != 0 && errno == ESRCH;
    };
    std::istringstream nin(ns);
    for (std::string line; std::getline(nin, line);) {
      const std::string name = line.substr(0, line.find(' '));
      const auto dash = name.find('-');
      if (name.rfind("tds", 0) != 0 || dash == std::string::npos || !dead(name.substr(3, dash - 3))) continue;
      std::string pids;
      run_cmd({"ip", "netns", "pids", name}, &pids);
      std::istringstream pin(pids);
      for (long pid; pin >> pid;) ::kill(pid_t(pid), SIGKILL);
      run_cmd({"ip", "netns", "del", name});
    }
    // Daemons and folders of such tests: /tmp/td-slurm-*/ whose owner file names a dead test
    // process; a pid from a PidFile is killed only while its command line names that folder.
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/tmp", ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("td-slurm-", 0) != 0 || !e.is_directory(ec)) continue;
      std::string owner = read_text(e.path() / "owner");
      while (!owner.empty() && owner.back() == '\n') owner.pop_back();
      if (!dead(owner)) continue;
      for (const auto& f : std::filesystem::directory_iterator(e.path(), ec)) {
        const std::string fn = f.path().filename().string();
        if (fn.size() < 5 || fn.compare(fn.size() - 4, 4, ".pid") != 0) continue;
        const long pid = std::atol(read_text(f.path()).c_str());
        if (pid > 1 && read_text("/proc/" + std::to_string(pid) + "/cmdline").find(e.path().string()) != std::string::npos)
          ::kill(pid_t(pid), SIGKILL);
      }
      std::filesystem::remove_all(e.path(), ec);
    }
    std::istringstream bin(list);
    for (std::string line; std::getline(bin, line);) {
      // "12: tds123br: <...>"
      const auto a = line.find(": tds"), b = line.find("br:");
      if (a == std::string::npos || b == std::string::npos || b < a + 5) continue;
      if (dead(line.substr(a + 5, b - a - 5))) run_cmd({"ip", "link", "del", line.substr(a + 2, b + 2 - a - 2)});
    }
  }
};

}  // namespace td::remote::testing
