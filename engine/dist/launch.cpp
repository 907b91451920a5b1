#include "engine/dist/launch.h"

#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "engine/common/error.h"

namespace td::dist {
namespace {

std::atomic<int> g_forward{0};  // the last signal to forward (0: none pending)
extern "C" void on_launch_signal(int sig) { g_forward.store(sig); }

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)) > 0 ? (int)sysconf(_SC_NPROCESSORS_ONLN) : 1;
}

}  // namespace

int pick_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("cannot create a socket to find a free port: " + std::string(std::strerror(errno)));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  sa.sin_port = 0;
  socklen_t len = sizeof sa;
  if (::bind(fd, (sockaddr*)&sa, sizeof sa) != 0 || getsockname(fd, (sockaddr*)&sa, &len) != 0) {
    ::close(fd);
    fail("cannot find a free TCP port: " + std::string(std::strerror(errno)) + "; pass --master-port");
  }
  ::close(fd);
  return ntohs(sa.sin_port);
}

int run_launch(const LaunchOptions& opt) {
  if (opt.nproc < 1) fail("--nproc must be at least 1");
  if (opt.command.empty()) fail("launch needs the command of each rank after `--`, e.g. launch --nproc 2 -- train --config run.json");
  const int port = opt.master_port > 0 ? opt.master_port : pick_free_port();
  const int threads = std::max(1, usable_cores() / opt.nproc);
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) fail("cannot find this program's path (/proc/self/exe)");
  self[n] = 0;

  struct sigaction sa = {};
  sa.sa_handler = on_launch_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaction(sig, &sa, nullptr);

  const pid_t parent = getpid();
  std::vector<pid_t> pids((size_t)opt.nproc, -1);
  for (int r = 0; r < opt.nproc; r++) {
    pid_t pid = fork();
    if (pid < 0) fail("cannot start rank " + std::to_string(r) + ": " + std::strerror(errno));
    if (pid == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);  // the launcher is already gone
      struct sigaction dfl = {};
      dfl.sa_handler = SIG_DFL;
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaction(sig, &dfl, nullptr);
      setenv("TRAINDECK_RANK", std::to_string(r).c_str(), 1);
      setenv("TRAINDECK_LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("TRAINDECK_WORLD_SIZE", std::to_string(opt.nproc).c_str(), 1);
      setenv("TRAINDECK_LOCAL_WORLD_SIZE", std::to_string(opt.nproc).c_str(), 1);
      setenv("TRAINDECK_MASTER_ADDR", opt.master_addr.c_str(), 1);
      setenv("TRAINDECK_MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 0);
      std::vector<char*> argv;
      argv.push_back(self);
      for (const auto& a : opt.command) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(self, argv.data());
      std::fprintf(stderr, "launch: cannot start rank %d (%s): %s\n", r, self, std::strerror(errno));
      _exit(127);
    }
    pids[(size_t)r] = pid;
    if (!opt.quiet) std::fprintf(stderr, "launch: rank %d pid %d (port %d, %d threads)\n", r, (int)pid, port, threads);
  }

  using clk = std::chrono::steady_clock;
  int status_out = 0, live = opt.nproc;
  bool failed = false;
  clk::time_point failed_at{};
  while (live > 0) {
    if (int sig = g_forward.exchange(0)) {
      for (pid_t p : pids)
        if (p > 0) kill(p, sig);
      if (!opt.quiet) std::fprintf(stderr, "launch: forwarded signal %d to the ranks\n", sig);
    }
    int st = 0;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      int r = -1;
      for (int i = 0; i < opt.nproc; i++)
        if (pids[(size_t)i] == p) r = i;
      if (r < 0) continue;
      pids[(size_t)r] = -1;
      live--;
      int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
      if (code != 0 && !failed) {
        failed = true;
        failed_at = clk::now();
        status_out = code;
        if (!opt.quiet)
          std::fprintf(stderr, "launch: rank %d (pid %d) %s %d; the other ranks stop when they notice\n", r, (int)p,
                       WIFSIGNALED(st) ? "was killed by signal" : "exited with status", WIFSIGNALED(st) ? WTERMSIG(st) : code);
        for (pid_t q : pids)
          if (q > 0) kill(q, SIGCONT);  // a stopped rank must run to notice the failure
      }
      continue;
    }
    if (failed && std::chrono::duration<double>(clk::now() - failed_at).count() > opt.grace_s) {
      for (int i = 0; i < opt.nproc; i++)
        if (pids[(size_t)i] > 0) {
          if (!opt.quiet) std::fprintf(stderr, "launch: rank %d still runs %.0f s after the failure: killing it\n", i, opt.grace_s);
          kill(pids[(size_t)i], SIGKILL);
        }
      failed_at = clk::now() + std::chrono::hours(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status_out;
}

}  // namespace td::dist
