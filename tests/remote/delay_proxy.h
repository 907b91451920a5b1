// A TCP proxy on 127.0.0.1 that delays every byte by a fixed time in each direction: a far link
// (a distant region, a VPN) on loopback, for tests and bench/upload. This kernel has no netem, so
// the delay is made in user space: each chunk read from one side is held until its arrival time
// plus `one_way_ms`, then written to the other side, in order. The round trip through the proxy
// is 2 × one_way_ms (plus loopback); bandwidth is not limited (the proxy reads eagerly, so what
// is in flight is bounded by the two ends' own flow control: SSH's channel window, TCP's).
//
//   DelayProxy p;
//   if (!p.start(sshd.port, 500)) skip(p.error);   // a 1 s round trip to the sshd
//   connect to 127.0.0.1:p.port
//
// One thread accepts; each connection gets one thread that moves both directions with poll().
// stop() (also the destructor) closes every connection. Plain C++ (no Qt), header-only like
// sshd_fixture.h.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace td::remote::testing {

class DelayProxy {
 public:
  int port = 0;       ///< where to connect (127.0.0.1), after start()
  std::string error;  ///< why start() failed

  DelayProxy() = default;
  DelayProxy(const DelayProxy&) = delete;
  ~DelayProxy() { stop(); }

  /// Listens on a free port of 127.0.0.1 and forwards each connection to 127.0.0.1:target_port
  /// with `one_way_ms` added in each direction. False with `error` set when it cannot listen.
  bool start(int target_port, int one_way_ms) {
    target_port_ = target_port;
    delay_ = std::chrono::milliseconds(one_way_ms);
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (listen_fd_ < 0 || stop_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_fd_, 16) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      error = std::string("delay proxy: cannot listen on 127.0.0.1: ") + std::strerror(errno);
      return false;
    }
    port = ntohs(a.sin_port);
    accept_ = std::thread([this] { accept_loop(); });
    return true;
  }

  /// Closes the listening socket and every connection; joins the threads.
  void stop() {
    if (stop_fd_ >= 0) {
      const uint64_t one = 1;
      [[maybe_unused]] ssize_t w = ::write(stop_fd_, &one, sizeof one);
    }
    if (accept_.joinable()) accept_.join();
    std::vector<std::thread> conns;
    {
      std::lock_guard<std::mutex> lock(mu_);
      conns.swap(conns_);
    }
    for (auto& t : conns) t.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
    listen_fd_ = stop_fd_ = -1;
  }

  /// Connections accepted so far.
  int connections() const { return accepted_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Chunk {
    Clock::time_point due;
    std::string bytes;
    size_t off = 0;
  };
  // One direction: bytes read from `from`, held, written to `to` when due.
  struct Way {
    int from, to;
    std::deque<Chunk> q;
    bool eof = false, shut = false;
  };

  void accept_loop() {
    for (;;) {
      pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
      if (p[1].revents) return;
      if (!(p[0].revents & POLLIN)) continue;
      const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (c < 0) continue;
      const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<uint16_t>(target_port_));
      if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(c);
        if (s >= 0) ::close(s);
        continue;
      }
      const int one = 1;
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::fcntl(s, F_SETFL, ::fcntl(s, F_GETFL) | O_NONBLOCK);
      ++accepted_;
      std::lock_guard<std::mutex> lock(mu_);
      conns_.emplace_back([this, c, s] { relay(c, s); });
    }
  }

  void relay(int c, int s) {
    Way up{c, s, {}}, down{s, c, {}};
    std::vector<char> buf(256 << 10);
    auto done = [](const Way& w) { return w.eof && w.q.empty(); };
    while (!(done(up) && done(down))) {
      const auto now = Clock::now();
      int timeout = 1000;
      for (Way* w : {&up, &down}) {
        if (w->eof && w->q.empty() && !w->shut) {
          ::shutdown(w->to, SHUT_WR);
          w->shut = true;
        }
        if (!w->q.empty() && w->q.front().due > now) {
          const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(w->q.front().due - now).count() + 1;
          timeout = std::min<int>(timeout, static_cast<int>(ms));
        }
      }
      pollfd p[3] = {{c, 0, 0}, {s, 0, 0}, {stop_fd_, POLLIN, 0}};
      auto want = [&](Way& w, pollfd& from, pollfd& to) {
        if (!w.eof) from.events |= POLLIN;
        if (!w.q.empty() && w.q.front().due <= now) to.events |= POLLOUT;
      };
      want(up, p[0], p[1]);
      want(down, p[1], p[0]);
      if (::poll(p, 3, timeout) < 0 && errno != EINTR) break;
      if (p[2].revents) break;
      bool broken = false;
      for (Way* w : {&up, &down}) {
        pollfd& from = w == &up ? p[0] : p[1];
        if (!w->eof && (from.revents & (POLLIN | POLLHUP | POLLERR))) {
          const ssize_t n = ::recv(w->from, buf.data(), buf.size(), MSG_DONTWAIT);
          if (n > 0) w->q.push_back({Clock::now() + delay_, std::string(buf.data(), static_cast<size_t>(n))});
          else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) w->eof = true;
        }
        const auto t = Clock::now();
        while (!w->q.empty() && w->q.front().due <= t) {
          Chunk& ch = w->q.front();
          const ssize_t n = ::send(w->to, ch.bytes.data() + ch.off, ch.bytes.size() - ch.off, MSG_DONTWAIT | MSG_NOSIGNAL);
          if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) broken = true;
            break;
          }
          ch.off += static_cast<size_t>(n);
          if (ch.off < ch.bytes.size()) break;
          w->q.pop_front();
        }
      }
      if (broken) break;
    }
    ::close(c);
    ::close(s);
  }

  int target_port_ = 0;
  std::chrono::milliseconds delay_{0};
  int listen_fd_ = -1, stop_fd_ = -1;
  std::thread accept_;
  std::mutex mu_;
  std::vector<std::thread> conns_;
  std::atomic<int> accepted_{0};
};

}  // namespace td::remote::testing
