// A real OpenSSH sshd for the remote/ tests and bench/upload (plain C++, no Qt).
//
// start() makes a temporary folder with a generated ed25519 host key, a generated ed25519 user
// key (plus one with a passphrase) in authorized_keys, an empty known_hosts and an sshd_config,
// and runs `/usr/sbin/sshd -D -e -f <dir>/sshd_config.<port>` on 127.0.0.1 on a free high port. Key
// auth logs in as the user running the test. When running as root it also creates a throwaway
// user with a random password (useradd + chpasswd) for password auth, removed by stop().
// start() returns false with skip_reason set when that cannot be done (no sshd, ...).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/common/error.h"

namespace td::remote::testing {

/// Runs argv (PATH lookup) with `input` on stdin; stdout+stderr into *out. Returns the exit code
/// (-1 when it could not run). extra_env: "NAME=value" entries added to the environment.
inline int run_cmd(const std::vector<std::string>& argv, std::string* out = nullptr,
                   const std::string& input = {}, const std::vector<std::string>& extra_env = {}) {
  int in_pipe[2], out_pipe[2];
  if (pipe(in_pipe) || pipe(out_pipe)) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(out_pipe[1], 2);
    close(in_pipe[1]);
    close(out_pipe[0]);
    for (const std::string& e : extra_env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (!input.empty()) (void)!write(in_pipe[1], input.data(), input.size());
  close(in_pipe[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(out_pipe[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(out_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Pids of live (not zombie) processes on this machine whose command line holds the word `id`,
/// shells left out (the sh that starts or checks an engine carries the run id too). Network
/// namespaces share this machine's pid space, so this sees the engines of namespaced nodes.
inline std::vector<long> processes_with_arg(const std::string& id) {
  std::vector<long> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_text("/proc/" + name + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z') continue;
    const std::string cmd = read_text("/proc/" + name + "/cmdline");
    const std::string arg0 = cmd.substr(0, cmd.find('\0'));
    const std::string base = arg0.substr(arg0.rfind('/') == std::string::npos ? 0 : arg0.rfind('/') + 1);
    if (base == "sh" || base == "dash" || base == "bash") continue;
    for (size_t at = 0; at < cmd.size();) {
      const size_t end = cmd.find('\0', at);
      if (cmd.substr(at, end - at) == id) {
        pids.push_back(std::stol(name));
        break;
      }
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  closedir(d);
  return pids;
}

/// The td::Error message `f` throws, or "(no error)" when it returns.
inline std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const td::Error& e) {
    return e.what();
  }
  return "(no error)";
}

inline std::string random_token(size_t n) {
  static const char* chars = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
  std::random_device rd;
  std::string s;
  for (size_t i = 0; i < n; ++i) s += chars[rd() % 56];
  return s;
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it).
inline int free_port() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

// The environment every test sshd gives its sessions (one SetEnv line: sshd takes only the
// first). Debian's bash sources ~/.bashrc for a command run by sshd when SHLVL was unset
// (SSH_SOURCE_BASHRC, shell_level < 2); the test machine's own ~/.bashrc (pyenv init: 0.8 s a
// command here, a 60 s stall on a stale shim lock) then timed every remote test by that machine.
// A node's own shell start-up is the node's, not what these tests measure.
inline constexpr const char* kSessionEnv = "SHLVL=1";

class SshdFixture {
 public:
  std::filesystem::path dir;    ///< temporary folder with everything below
  int port = 0;
  std::string host_key;         ///< private host key; host_key + ".pub" is the public one
  std::string user;             ///< the user running the test (key auth)
  std::string user_key;         ///< ed25519 user key without passphrase (authorized)
  std::string user_key_pass;    ///< ed25519 user key with `passphrase` (authorized)
  std::string passphrase;
  std::string pw_user;          ///< throwaway user for password auth; empty when not root
  std::string pw_user_problem;  ///< why there is no throwaway user although running as root
  std::string password;
  std::string known_hosts;      ///< an empty known_hosts file path for the test
  std::string skip_reason;

  SshdFixture() = default;
  SshdFixture(const SshdFixture&) = delete;
  ~SshdFixture() { stop(); }

  bool start(bool with_password_user = true) {
    if (access("/usr/sbin/sshd", X_OK) != 0) {
      skip_reason = "/usr/sbin/sshd is missing: install openssh-server (./traindeck.sh test installs it)";
      return false;
    }
    char tmpl[] = "/tmp/td-sshd-XXXXXX";
    if (!mkdtemp(tmpl)) {
      skip_reason = "cannot make a temporary folder";
      return false;
    }
    dir = tmpl;
    chmod(dir.c_str(), 0755);  // the password user's sshd child reads authorized_keys from here
    const passwd* pw = getpwuid(getuid());
    user = pw ? pw->pw_name : "root";
    host_key = (dir / "host_ed25519").string();
    user_key = (dir / "id_ed25519").string();
    user_key_pass = (dir / "id_ed25519_pass").string();
    passphrase = "pass phrase " + random_token(8);
    std::string out;
    if (run_cmd({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "td-test-host", "-f", host_key}, &out) ||
        run_cmd({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "td-test-user", "-f", user_key}, &out) ||
        run_cmd({"ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "td-test-pass", "-f", user_key_pass}, &out)) {
      skip_reason = "ssh-keygen failed (install openssh-client): " + out;
      return false;
    }
    std::ofstream(dir / "authorized_keys") << read_text(user_key + ".pub") << read_text(user_key_pass + ".pub");
    known_hosts = (dir / "known_hosts").string();
    std::ofstream(known_hosts).flush();
    if (geteuid() == 0) {
      std::filesystem::create_directories("/run/sshd");  // privilege separation needs it
      if (with_password_user) {
        pw_user = "tdssh" + std::to_string(getpid());
        password = random_token(20);
        run_cmd({"userdel", "-f", pw_user});
        if (run_cmd({"useradd", "-M", "-d", (dir / "home").string(), "-s", "/bin/sh", pw_user}, &out) ||
            run_cmd({"chpasswd"}, &out, pw_user + ":" + password + "\n")) {
          run_cmd({"userdel", "-f", pw_user});
          pw_user.clear();
          password.clear();
        } else {
          std::filesystem::create_directories(dir / "home");
          run_cmd({"chown", pw_user, (dir / "home").string()});
          // The user must be able to run a shell: not so where "/" is not searchable by other
          // users (a root made with mktemp -d, mode 0700). Then password tests are skipped.
          if (run_cmd({"runuser", "-u", pw_user, "--", "/bin/sh", "-c", "exit 0"}, &out)) {
            pw_user_problem = "the throwaway user cannot run /bin/sh here (" + out +
                              "): the root directory is probably not searchable by other users";
            run_cmd({"userdel", "-f", pw_user});
            pw_user.clear();
            password.clear();
          }
        }
      }
    }
    return launch();
  }

  /// (Re)starts sshd on a new port with the given host key (default: host_key); `auth_config`
  /// replaces the password/keyboard-interactive/PAM lines (for the keyboard-interactive test);
  /// `session_env` ("NAME=value ...") is added to every session's environment (see kSessionEnv).
  bool launch(const std::string& key = {},
              const std::string& auth_config = "PasswordAuthentication yes\nKbdInteractiveAuthentication no\nUsePAM no\n",
              const std::string& session_env = {}) {
    stop_sshd();
    port = free_port();
    const char* sftp = access("/usr/lib/openssh/sftp-server", X_OK) == 0 ? "/usr/lib/openssh/sftp-server"
                                                                          : "internal-sftp";
    const std::string conf = (dir / ("sshd_config." + std::to_string(port))).string();
    std::ofstream cfg(conf);
    cfg << "Port " << port << "\nListenAddress 127.0.0.1\n"
        << "HostKey " << (key.empty() ? host_key : key) << "\n"
        << "PidFile " << (dir / ("sshd.pid." + std::to_string(port))).string() << "\n"
        << "AuthorizedKeysFile " << (dir / "authorized_keys").string() << "\n"
        << "StrictModes no\nPubkeyAuthentication yes\n" << auth_config << "PermitRootLogin yes\n"
        << "MaxStartups 50\nMaxSessions 50\nLogLevel ERROR\n"
        << "SetEnv " << kSessionEnv << (session_env.empty() ? "" : " " + session_env) << "\n"
        << "Subsystem sftp " << sftp << "\n";
    cfg.close();
    const std::string log = (dir / "sshd.log").string();
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-e", "-f", conf.c_str(), nullptr);
      _exit(127);
    }
    // Wait until it accepts connections (or died).
    for (int i = 0; i < 100; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        skip_reason = "sshd did not start: " + read_text(log);
        return false;
      }
      int s = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      close(s);
      if (ok) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    skip_reason = "sshd did not listen on port " + std::to_string(port) + ": " + read_text(log);
    return false;
  }

  /// "SHA256:..." of the host key as ssh-keygen -lf prints it.
  std::string keygen_fingerprint(const std::string& pub) const {
    std::string out;
    run_cmd({"ssh-keygen", "-lf", pub}, &out);
    std::istringstream in(out);
    std::string bits, fp;
    in >> bits >> fp;
    return fp;
  }

  /// Starts `ssh-agent -D -a <dir>/agent.sock` and adds user_key. Returns the socket path,
  /// empty when the agent cannot run.
  std::string start_agent() {
    const std::string sock = (dir / "agent.sock").string();
    agent_pid_ = fork();
    if (agent_pid_ == 0) {
      int fd = open("/dev/null", O_WRONLY);
      dup2(fd, 1);
      dup2(fd, 2);
      execlp("ssh-agent", "ssh-agent", "-D", "-a", sock.c_str(), nullptr);
      _exit(127);
    }
    for (int i = 0; i < 100 && !std::filesystem::exists(sock); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::string out;
    if (!std::filesystem::exists(sock) ||
        run_cmd({"ssh-add", user_key}, &out, {}, {"SSH_AUTH_SOCK=" + sock}) != 0)
      return {};
    return sock;
  }

  std::string log() const { return read_text(dir / "sshd.log"); }

  /// SIGKILLs the sshd processes serving this server's connections (children of its listener),
  /// as a dropped network link would end them; the listener keeps accepting. Returns how many.
  int kill_connections() const {
    const long listener = std::atol(read_text(dir / ("sshd.pid." + std::to_string(port))).c_str());
    int killed = 0;
    if (listener <= 0) return 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const std::string stat = read_text(e.path() / "stat");
      const size_t close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream in(stat.substr(close + 2));
      char state;
      long ppid = 0;
      in >> state >> ppid;
      if (ppid == listener && ::kill(pid_t(std::atol(name.c_str())), SIGKILL) == 0) ++killed;
    }
    return killed;
  }

  void stop() {
    stop_sshd();
    if (agent_pid_ > 0) {
      kill(agent_pid_, SIGTERM);
      waitpid(agent_pid_, nullptr, 0);
      agent_pid_ = -1;
    }
    if (!pw_user.empty()) {
      run_cmd({"userdel", "-f", pw_user});
      pw_user.clear();
    }
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      dir.clear();
    }
  }

 private:
  void stop_sshd() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  pid_t pid_ = -1;
  pid_t agent_pid_ = -1;
};

}  // namespace td::remote::testing
