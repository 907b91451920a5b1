#include "gui/runs/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "engine/common/error.h"
#include "engine/common/fileio.h"

namespace td::gui {
namespace {

// Everything the child does between fork and exec must be async-signal-safe: argv and the
// file descriptors are prepared before fork. A log file is a run file: never opened through a
// link, created 0600 (td::open_private_file, which throws td::Error naming the file).
int open_append(const std::string& path) {
  if (path.empty()) return ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  return open_private_file(path, O_WRONLY | O_CREAT | O_APPEND, "the log file");
}

void write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

pid_t launch_detached(const LaunchSpec& spec) {
  int in = -1, out = -1, err = -1;
  auto close_fds = [&] {
    for (int fd : {in, out, err})
      if (fd >= 0) ::close(fd);
  };
  try {
    in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0) fail_errno("cannot open", "/dev/null");
    out = open_append(spec.stdout_path);
    err = open_append(spec.stderr_path);
  } catch (const Error& e) {
    close_fds();
    const std::string what = e.what();
    throw Error(what.rfind("cannot open", 0) == 0 ? what + "; check that its folder is writable" : what);
  }
  std::vector<std::string> argv_s{spec.program};
  argv_s.insert(argv_s.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The grandchild reports either its pid (then exec closes the pipe) or pid + errno of a
  // failed exec/chdir.
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    close_fds();
    throw Error(std::string("pipe failed: ") + std::strerror(errno));
  }
  const pid_t child = ::fork();
  if (child < 0) {
    const int e = errno;
    close_fds();
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    throw Error(std::string("fork failed: ") + std::strerror(e));
  }
  if (child == 0) {
    ::close(pipefd[0]);
    ::setsid();
    const pid_t grandchild = ::fork();
    if (grandchild != 0) ::_exit(grandchild < 0 ? 1 : 0);
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD}) ::sigaction(s, &sa, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int self = static_cast<int>(::getpid());
    write_all(pipefd[1], &self, sizeof self);  // first the pid, then an errno only on failure
    int error = 0;
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    // Nothing else of ours reaches the engine (the GUI's SQLite files, sockets, a test runner's
    // pipes): every descriptor above 2 is closed, except the report pipe, which exec closes.
    if (pipefd[1] > 3) ::close_range(3, static_cast<unsigned>(pipefd[1]) - 1, 0);
    ::close_range(static_cast<unsigned>(pipefd[1]) + 1, ~0U, 0);
    if (!spec.working_dir.empty() && ::chdir(spec.working_dir.c_str()) != 0) {
      error = errno;
    } else {
      ::execv(argv[0], argv.data());
      error = errno;
    }
    write_all(pipefd[1], &error, sizeof error);
    ::_exit(127);
  }
  ::close(pipefd[1]);
  close_fds();
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  int report[2] = {0, 0};
  size_t got = 0;
  while (got < sizeof report) {
    ssize_t r = ::read(pipefd[0], reinterpret_cast<char*>(report) + got, sizeof report - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(pipefd[0]);
  // report[0]: the grandchild's pid; report[1], present only when exec (or chdir) failed: errno.
  if (got == sizeof report)
    throw Error("cannot start '" + spec.program + "': " + std::strerror(report[1]) +
                "; check that the engine is built (traindeck-engine) or set TRAINDECK_ENGINE to its path");
  if (got < sizeof(int) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("fork of '" + spec.program + "' failed");
  return static_cast<pid_t>(report[0]);
}

bool request_stop(pid_t pid) { return pid > 0 && ::kill(pid, SIGTERM) == 0; }

bool kill_process(pid_t pid) { return pid > 0 && ::kill(pid, SIGKILL) == 0; }

}  // namespace td::gui
