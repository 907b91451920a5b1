// Internal to remote/: the transport of a Session reached through a jump host (ProxyJump).
//
// A Tunnel opens a direct-tcpip channel on an authenticated jump Session to host:port and gives
// the inner Session one end of a socketpair(AF_UNIX, SOCK_STREAM); a pump thread copies bytes
// between the other end and the channel. From then on the jump Session is used only by that
// thread (libssh2 sessions are not thread safe). When the jump connection fails the pump closes
// its end, so the inner session reads EOF and its libssh2 call fails at once (not after its
// timeout); reason() then says what happened to the jump connection.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "remote/session.h"

struct _LIBSSH2_CHANNEL;

namespace td::remote {

class Tunnel {
 public:
  /// Opens the channel (blocking on `jump`, bounded by timeout_ms) and starts the pump.
  /// `inner_fd` receives the inner session's socket end (the caller owns and closes it).
  /// Errors: td::Error naming the jump host and the target when the jump host refuses or cannot
  /// reach host:port (its sshd may forbid TCP forwarding), or on a timeout.
  static std::unique_ptr<Tunnel> open(std::unique_ptr<Session> jump, const std::string& host, int port,
                                      int timeout_ms, int* inner_fd);
  ~Tunnel();  ///< stops the pump thread, closes the channel, then the jump Session
  Tunnel(const Tunnel&) = delete;
  Tunnel& operator=(const Tunnel&) = delete;

  /// Why the tunnel stopped carrying bytes ("the jump host X closed the connection: ..."), or
  /// empty while it works. Any thread.
  std::string reason() const;
  /// "user@host:port" of the jump session (and of its own jumps, outermost last).
  const std::string& jump_where() const { return jump_where_; }

 private:
  Tunnel() = default;
  void pump();
  void set_reason(const std::string& r);

  std::unique_ptr<Session> jump_;
  _LIBSSH2_CHANNEL* channel_ = nullptr;
  int fd_ = -1;       // the pump's end of the socketpair
  int stop_fd_ = -1;  // eventfd: the destructor wakes the pump
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::string reason_;
  std::string jump_where_;
};

}  // namespace td::remote
