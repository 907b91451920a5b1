// Tunnel (tunnel.h): a direct-tcpip channel on a jump Session pumped to a local socketpair.
#include "remote/tunnel.h"

#include <libssh2.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/common/error.h"

namespace td::remote {

namespace {

constexpr size_t kBuf = 64 * 1024;

std::string last_error(LIBSSH2_SESSION* s) {
  char* msg = nullptr;
  int len = 0;
  int code = libssh2_session_last_error(s, &msg, &len, 0);
  std::string m = msg && len > 0 ? std::string(msg, static_cast<size_t>(len)) : "";
  return m.empty() ? "error " + std::to_string(code) : m;
}

}  // namespace

std::unique_ptr<Tunnel> Tunnel::open(std::unique_ptr<Session> jump, const std::string& host, int port,
                                     int timeout_ms, int* inner_fd) {
  if (!jump) throw Error("connect_via: no jump session (internal)");
  if (!jump->authenticated())
    throw Error(jump->where() + ": the jump host must be authenticated before a connection goes through it");
  std::unique_ptr<Tunnel> t(new Tunnel);
  t->jump_where_ = jump->where();
  LIBSSH2_SESSION* s = jump->raw();
  const std::string target = host + ":" + std::to_string(port);
  libssh2_session_set_blocking(s, 1);
  libssh2_session_set_timeout(s, timeout_ms);
  // The originator address is informational for the jump's sshd (it logs it).
  t->channel_ = libssh2_channel_direct_tcpip_ex(s, host.c_str(), port, "127.0.0.1", 0);
  libssh2_session_set_timeout(s, jump->options().timeout_ms);
  if (!t->channel_) {
    const bool timed_out = libssh2_session_last_errno(s) == LIBSSH2_ERROR_TIMEOUT;
    throw Error(jump->where() + ": the jump host cannot open a connection to " + target + ": " + last_error(s) +
                (timed_out ? " (timed out after " + std::to_string(timeout_ms) + " ms)" : "") +
                ". Check that the jump host can reach " + target +
                " (name, port, firewall) and that its sshd allows TCP forwarding (AllowTcpForwarding yes)");
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    libssh2_channel_free(t->channel_);
    throw Error(std::string("cannot make a socket pair for the jump host tunnel: ") + std::strerror(errno));
  }
  t->stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (t->stop_fd_ < 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    libssh2_channel_free(t->channel_);
    throw Error(std::string("cannot make an eventfd for the jump host tunnel: ") + std::strerror(errno));
  }
  t->fd_ = sv[1];
  *inner_fd = sv[0];
  t->jump_ = std::move(jump);
  t->thread_ = std::thread([p = t.get()] { p->pump(); });
  return t;
}

Tunnel::~Tunnel() {
  stop_ = true;
  if (stop_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  // The pump is gone: this thread may use the jump session again.
  if (channel_ && jump_) {
    LIBSSH2_SESSION* s = jump_->raw();
    libssh2_session_set_blocking(s, 1);
    libssh2_session_set_timeout(s, 500);  // a dead jump connection must not hold up the caller
    if (reason().empty()) libssh2_channel_close(channel_);
    libssh2_channel_free(channel_);
  }
  if (fd_ >= 0) ::close(fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
  jump_.reset();  // disconnects the jump host (and, in a chain, its own tunnel)
}

std::string Tunnel::reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}

void Tunnel::set_reason(const std::string& r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reason_.empty()) reason_ = r;
}

// Copies bytes both ways until the inner session closes its end, the channel or the jump
// connection fails, or the destructor asks it to stop. Non-blocking on both sides; one poll()
// waits for whichever side can move next (at most 1 s, so a stop is never missed).
void Tunnel::pump() {
  LIBSSH2_SESSION* s = jump_->raw();
  libssh2_session_set_blocking(s, 0);
  const int jfd = jump_->socket_fd();
  std::string down(kBuf, '\0'), up(kBuf, '\0');  // channel -> local, local -> channel
  size_t down_len = 0, down_off = 0, up_len = 0, up_off = 0;
  bool chan_eof = false, local_eof = false, shut_local_write = false;
  auto broken = [&](const std::string& why) {
    set_reason(why);
    ::shutdown(fd_, SHUT_RDWR);  // the inner session sees EOF now, not after its timeout
  };
  while (!stop_.load()) {
    bool progress = false;
    // Channel -> buffer.
    if (down_off == down_len && !chan_eof) {
      down_off = down_len = 0;
      ssize_t n = libssh2_channel_read(channel_, down.data(), down.size());
      if (n > 0) {
        down_len = static_cast<size_t>(n);
        progress = true;
      } else if (n == 0) {
        if (libssh2_channel_eof(channel_)) chan_eof = true;
      } else if (n != LIBSSH2_ERROR_EAGAIN) {
        broken("the connection to the jump host " + jump_where_ + " failed: " + last_error(s));
        break;
      }
    }
    // Buffer -> inner session.
    if (down_off < down_len) {
      ssize_t w = ::send(fd_, down.data() + down_off, down_len - down_off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        down_off += static_cast<size_t>(w);
        progress = true;
      } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        break;  // the inner session closed its socket
      }
    }
    if (chan_eof && down_off == down_len && !shut_local_write) {
      ::shutdown(fd_, SHUT_WR);  // the node closed the connection: the inner session reads EOF
      shut_local_write = true;
    }
    // Inner session -> buffer.
    if (up_off == up_len && !local_eof) {
      up_off = up_len = 0;
      ssize_t n = ::recv(fd_, up.data(), up.size(), MSG_DONTWAIT);
      if (n > 0) {
        up_len = static_cast<size_t>(n);
        progress = true;
      } else if (n == 0) {
        local_eof = true;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        local_eof = true;
      }
    }
    // Buffer -> channel.
    if (up_off < up_len) {
      ssize_t w = libssh2_channel_write(channel_, up.data() + up_off, up_len - up_off);
      if (w > 0) {
        up_off += static_cast<size_t>(w);
        progress = true;
      } else if (w != LIBSSH2_ERROR_EAGAIN && w < 0) {
        broken("the connection to the jump host " + jump_where_ + " failed: " + last_error(s));
        break;
      }
    }
    if (local_eof && up_off == up_len) {
      libssh2_channel_send_eof(channel_);  // best effort; the destructor closes the channel
      break;                               // the inner session is gone
    }
    if (progress) continue;
    pollfd p[3] = {{jfd, 0, 0}, {fd_, 0, 0}, {stop_fd_, POLLIN, 0}};
    const int dir = libssh2_session_block_directions(s);
    // Reading the jump socket is needed for channel data (room in `down`) and for the window
    // adjustments a pending write waits for.
    // Only when the next round calls libssh2 (else a readable socket would spin the loop).
    const bool calls_libssh2 = (!chan_eof && down_off == down_len) || up_off < up_len;
    if (calls_libssh2) p[0].events |= POLLIN;
    if (calls_libssh2 && (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)) p[0].events |= POLLOUT;
    if (up_off == up_len && !local_eof) p[1].events |= POLLIN;
    if (down_off < down_len) p[1].events |= POLLOUT;
    if (::poll(p, 3, 1000) < 0 && errno != EINTR) {
      broken(std::string("poll failed in the jump host tunnel: ") + std::strerror(errno));
      break;
    }
    if ((p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) && !(p[0].revents & POLLIN)) {
      broken("the connection to the jump host " + jump_where_ + " was closed");
      break;
    }
  }
  libssh2_session_set_blocking(s, 1);
}

}  // namespace td::remote
