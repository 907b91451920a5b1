// Session::exec*: one channel per command, read in non-blocking mode with poll() so that a
// whole-command timeout and a cancel flag are honoured while stdout and stderr are drained
// together (reading one stream blocking while the other fills its window would stall).
#include <libssh2.h>
#include <poll.h>

#include <algorithm>
#include <chrono>

#include "engine/common/error.h"
#include "remote/quote.h"
#include "remote/session.h"

namespace td::remote {

namespace {

using Clock = std::chrono::steady_clock;

struct Channel {
  LIBSSH2_CHANNEL* c = nullptr;
  ~Channel() {
    if (c) libssh2_channel_free(c);
  }
};

}  // namespace

static ExecResult run_channel(Session& session, const std::string& command,
                              const std::function<void(Stream, std::string_view)>* sink,
                              const ExecOptions& opts) {
  LIBSSH2_SESSION* s = session.raw();
  if (!session.authenticated()) throw Error(session.where() + ": exec before authentication (internal)");
  const auto start = Clock::now();
  // The whole command: on a slow link at least kRoundTripsPerCall greeting times (open, exec,
  // output and close each cost a round trip); on another the caller's limit is exact.
  const long long whole_ms =
      opts.timeout_ms > 0 && session.slow_link()
          ? std::max<long long>(opts.timeout_ms, 1LL * kRoundTripsPerCall * session.greeting_ms())
          : opts.timeout_ms;
  ExecResult res;
  Channel ch;
  ch.c = libssh2_channel_open_session(s);
  if (!ch.c) session.fail("cannot open a channel to run a command");
  if (libssh2_channel_exec(ch.c, command.c_str()) != 0)
    session.fail("cannot start the command `" + command.substr(0, 200) + "`");
  if (!opts.stdin_data.empty()) {
    size_t off = 0;
    while (off < opts.stdin_data.size()) {
      ssize_t w = libssh2_channel_write(ch.c, opts.stdin_data.data() + off, opts.stdin_data.size() - off);
      if (w < 0) session.fail("cannot write the command's input");
      off += static_cast<size_t>(w);
    }
  }
  libssh2_channel_send_eof(ch.c);

  auto keep = [&](Stream st, const char* p, size_t n) {
    if (sink) {
      (*sink)(st, std::string_view(p, n));
      return;
    }
    std::string& dst = st == Stream::Out ? res.out : res.err;
    size_t room = opts.max_output > dst.size() ? opts.max_output - dst.size() : 0;
    if (n > room) res.truncated = true;
    dst.append(p, std::min(n, room));
  };

  libssh2_session_set_blocking(s, 0);
  struct Restore {
    LIBSSH2_SESSION* s;
    ~Restore() { libssh2_session_set_blocking(s, 1); }
  } restore{s};
  char buf[32768];
  bool timed_out = false;
  for (;;) {
    bool progressed = false;
    for (Stream st : {Stream::Out, Stream::Err}) {
      for (;;) {
        ssize_t n = libssh2_channel_read_ex(ch.c, st == Stream::Out ? 0 : SSH_EXTENDED_DATA_STDERR,
                                            buf, sizeof buf);
        if (n == LIBSSH2_ERROR_EAGAIN || n == 0) break;
        if (n < 0) {
          libssh2_session_set_blocking(s, 1);
          session.fail("lost the connection while reading the output of `" + command.substr(0, 200) + "`");
        }
        keep(st, buf, static_cast<size_t>(n));
        progressed = true;
      }
    }
    if (libssh2_channel_eof(ch.c)) break;
    if (progressed) continue;
    if (opts.cancel && opts.cancel->load()) {
      res.cancelled = true;
      break;
    }
    int wait_ms = 100;
    if (whole_ms > 0) {
      auto left = whole_ms -
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min<long long>(wait_ms, left));
    }
    pollfd p{session.socket_fd(), 0, 0};
    int dir = libssh2_session_block_directions(s);
    if (dir & LIBSSH2_SESSION_BLOCK_INBOUND) p.events |= POLLIN;
    if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND) p.events |= POLLOUT;
    if (!p.events) p.events = POLLIN;
    ::poll(&p, 1, wait_ms);
  }
  libssh2_session_set_blocking(s, 1);
  if (timed_out || res.cancelled) {
    // Ask the server to close the channel and wait only briefly: sshd sends its close only
    // once the command exits, which a hung or long command does not. An unconfirmed channel
    // stays with the session (a few KB) until the session ends.
    libssh2_session_set_timeout(s, 200);
    libssh2_channel_close(ch.c);
    libssh2_channel_free(ch.c);  // on a timeout the channel is freed with the session
    ch.c = nullptr;
    libssh2_session_set_timeout(s, session.options().timeout_ms);
    if (timed_out)
      throw Error(session.where() + ": the command `" + command.substr(0, 200) + "` did not finish within " +
                  std::to_string(whole_ms) + " ms (it may still run on the node" +
                  (session.slow_link() ? "; the link is slow: the node's SSH greeting took " +
                                             std::to_string(session.greeting_ms()) + " ms"
                                       : std::string()) + ")");
    return res;
  }
  libssh2_channel_close(ch.c);
  libssh2_channel_wait_closed(ch.c);
  res.exit_status = libssh2_channel_get_exit_status(ch.c);
  char* sig = nullptr;
  size_t sig_len = 0;
  libssh2_channel_get_exit_signal(ch.c, &sig, &sig_len, nullptr, nullptr, nullptr, nullptr);
  if (sig) {
    res.exit_signal.assign(sig, sig_len);
    res.exit_status = -1;
    libssh2_free(s, sig);
  }
  return res;
}


ExecResult Session::exec(const std::vector<std::string>& argv, const ExecOptions& opts) {
  return run_channel(*this, command_line(argv), nullptr, opts);
}

ExecResult Session::exec_command(const std::string& command, const ExecOptions& opts) {
  return run_channel(*this, command, nullptr, opts);
}

ExecResult Session::exec_stream(const std::string& command,
                                const std::function<void(Stream, std::string_view)>& on_chunk,
                                const ExecOptions& opts) {
  return run_channel(*this, command, &on_chunk, opts);
}

}  // namespace td::remote
