#include "engine/metrics/prometheus.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>

#include "engine/common/error.h"

namespace td {

namespace {

std::string metric_name(const std::string& name) {
  std::string out = "traindeck_";
  for (char c : name) out += ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
  return out;
}

std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The numbers among an event's top-level fields (bools and strings are not figures).
void numbers_of(const nlohmann::json& j, std::map<std::string, double>& out) {
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it->is_number()) out[it.key()] = it->get<double>();
}

}  // namespace

std::string prometheus_text(const std::vector<PromSample>& samples) {
  std::vector<std::string> order;
  std::map<std::string, std::string> body;
  for (const PromSample& s : samples) {
    const std::string name = metric_name(s.name);
    if (!body.count(name)) order.push_back(name);
    std::string& b = body[name];
    b += name;
    if (!s.labels.empty()) {
      b += '{';
      for (size_t i = 0; i < s.labels.size(); ++i)
        b += (i ? "," : "") + s.labels[i].first + "=\"" + label_value(s.labels[i].second) + '"';
      b += '}';
    }
    b += ' ' + number(s.value) + '\n';
  }
  std::string out;
  for (const std::string& name : order) out += "# TYPE " + name + " gauge\n" + body[name];
  return out;
}

MetricsServer::MetricsServer(const std::string& address, int port, std::vector<std::pair<std::string, std::string>> labels)
    : address_(address), labels_(std::move(labels)) {
  TD_CHECK(port >= 0 && port <= 65535, "--metrics-port " + std::to_string(port) + " is not a port (0-65535; 0 picks a free one)");
  auto refuse = [&](const std::string& why) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw Error("cannot serve Prometheus metrics on " + address + ":" + std::to_string(port) + ": " + why +
                "; choose another --metrics-port (0 picks a free one) or --metrics-address");
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    refuse("the address is not this machine's");
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> ai(found, ::freeaddrinfo);
  listen_fd_ = ::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) refuse(std::strerror(errno));
  // SO_REUSEADDR only (not SO_REUSEPORT, with which a second run on the same port would bind
  // too and scrapes would reach either run).
  int yes = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  if (::bind(listen_fd_, ai->ai_addr, ai->ai_addrlen) != 0) refuse(errno == EADDRINUSE ? "the port is in use" : std::strerror(errno));
  if (::listen(listen_fd_, 64) != 0) refuse(std::strerror(errno));
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) refuse(std::strerror(errno));
  thread_ = std::thread([this] { serve(); });
}

MetricsServer::~MetricsServer() {
  const char bye = 1;
  if (wake_[1] >= 0) (void)::write(wake_[1], &bye, 1);
  if (thread_.joinable()) thread_.join();
  for (int fd : {listen_fd_, wake_[0], wake_[1]})
    if (fd >= 0) ::close(fd);
}

namespace {

// One client connection: what it sent so far, then the answer being written.
struct Conn {
  int fd = -1;
  std::chrono::steady_clock::time_point deadline;
  std::string in, out;
  size_t sent = 0;
};

// The answer to a request head ("GET /metrics HTTP/1.1\r\n..."): 200 with the text for GET or
// HEAD of /metrics (a query string is ignored), 404 for another path, 405 for another method.
std::string answer(const std::string& head, const std::function<std::string()>& text) {
  const size_t sp1 = head.find(' '), sp2 = sp1 == std::string::npos ? sp1 : head.find_first_of(" \r\n", sp1 + 1);
  const std::string method = head.substr(0, sp1);
  std::string path = sp2 == std::string::npos ? std::string() : head.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  std::string status = "200 OK", body, type = "text/plain; version=0.0.4; charset=utf-8";
  if (method != "GET" && method != "HEAD") status = "405 Method Not Allowed", body = "GET /metrics\n", type = "text/plain";
  else if (path != "/metrics") status = "404 Not Found", body = "the metrics are at /metrics\n", type = "text/plain";
  else body = text();
  std::string out = "HTTP/1.1 " + status + "\r\nContent-Type: " + type + "\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\n\r\n";
  if (method != "HEAD") out += body;
  return out;
}

}  // namespace

void MetricsServer::serve() {
  using clock = std::chrono::steady_clock;
  const auto deadline = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(kRequestDeadlineS));
  std::deque<Conn> conns;  // oldest first
  auto close_conn = [](Conn& c) {
    ::close(c.fd);
    c.fd = -1;
  };
  for (;;) {
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    int timeout_ms = -1;
    const auto now = clock::now();
    for (const Conn& c : conns) {
      fds.push_back({c.fd, short(c.out.empty() ? POLLIN : POLLOUT), 0});
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now).count() + 1;
      timeout_ms = timeout_ms < 0 ? int(std::max<int64_t>(left, 0)) : std::min(timeout_ms, int(std::max<int64_t>(left, 0)));
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents) break;  // the destructor
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = conns[i];
      const short ev = fds[i + 2].revents;
      if (ev & (POLLERR | POLLHUP | POLLNVAL) && !(ev & POLLIN)) {
        close_conn(c);
        continue;
      }
      if (c.out.empty() && (ev & POLLIN)) {
        char buf[2048];
        const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
        if (n <= 0) {
          if (n == 0 || (errno != EAGAIN && errno != EINTR)) close_conn(c);
          continue;
        }
        c.in.append(buf, size_t(n));
        size_t end = c.in.find("\r\n\r\n");
        if (end == std::string::npos) end = c.in.find("\n\n");
        if (end != std::string::npos) c.out = answer(c.in, [this] { return text(); });
        else if (c.in.size() > kMaxRequestBytes) c.out = "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
      }
      if (!c.out.empty()) {
        const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0) c.sent += size_t(n);
        if ((n < 0 && errno != EAGAIN && errno != EINTR) || c.sent == c.out.size()) close_conn(c);
      }
    }
    // The deadline of a whole request (and its answer): however slowly a client sends, it ends.
    const auto t = clock::now();
    for (Conn& c : conns)
      if (c.fd >= 0 && t >= c.deadline) close_conn(c);
    std::erase_if(conns, [](const Conn& c) { return c.fd < 0; });
    if (fds[1].revents & POLLIN) {
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN: all taken (or a transient error: poll again)
        if (conns.size() >= kMaxConnections) {  // the oldest makes room: a new scrape gets through
          close_conn(conns.front());
          conns.pop_front();
        }
        conns.push_back(Conn{fd, t + deadline, {}, {}, 0});
      }
    }
  }
  for (Conn& c : conns)
    if (c.fd >= 0) ::close(c.fd);
}

std::string MetricsServer::url() const { return "http://" + address_ + ":" + std::to_string(port_) + "/metrics"; }

void MetricsServer::observe(const std::string& type, const nlohmann::json& fields) {
  if (type != "step" && type != "eval") return;
  std::lock_guard<std::mutex> lock(mu_);
  numbers_of(fields, global_);
  if (type == "step" && fields.contains("ranks") && fields["ranks"].is_array()) {
    for (const auto& r : fields["ranks"]) {
      if (!r.is_object() || !r.contains("rank") || !r["rank"].is_number_integer()) continue;
      auto& [host, figures] = ranks_[r["rank"].get<int>()];
      if (r.contains("host") && r["host"].is_string()) host = r["host"].get<std::string>();
      numbers_of(r, figures);
      figures.erase("rank");
    }
  }
}

std::string MetricsServer::text() const {
  std::vector<PromSample> s;
  auto with = [this](std::vector<std::pair<std::string, std::string>> extra, const std::string& host) {
    std::vector<std::pair<std::string, std::string>> l;
    for (const auto& kv : labels_)
      if (kv.first != "host" || host.empty()) l.push_back(kv);
    for (auto& kv : extra) l.push_back(std::move(kv));
    if (!host.empty()) l.emplace_back("host", host);
    return l;
  };
  std::lock_guard<std::mutex> lock(mu_);
  s.push_back({"up", with({{"rank", "0"}}, ""), 1.0});
  for (const auto& [name, v] : global_) s.push_back({name, with({{"rank", "0"}}, ""), v});
  for (const auto& [rank, hf] : ranks_)
    for (const auto& [name, v] : hf.second) s.push_back({"rank_" + name, with({{"rank", std::to_string(rank)}}, hf.first), v});
  return prometheus_text(s);
}

}  // namespace td
