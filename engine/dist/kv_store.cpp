#include "engine/dist/kv_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"

namespace td::dist {

namespace {

enum Op : uint8_t { SET = 1, GET = 2, CHECK = 3, HELLO = 4, PING = 5, HEALTH = 6, BYE = 7 };
using clk = std::chrono::steady_clock;

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; i++) s.push_back((char)((v >> (8 * i)) & 0xFF));
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)(uint8_t)p[i] << (8 * i);
  return v;
}

// Writes all of s (MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE). False on failure.
bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += (size_t)n;
  }
  return true;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur)) out.push_back(cur);
  return out;
}

std::string join_lines(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); i++) s += (i ? "\n" : "") + v[i];
  return s;
}

}  // namespace

// ---------------------------------------------------------------- server

struct KvServer::State {
  struct Conn {
    int fd;
    std::string in;
    int rank = -1;
    bool bye = false;
  };
  struct Rank {
    std::string host;
    bool arrived = false, closed = false;
    clk::time_point last{};
  };
  std::map<std::string, std::string> kv;
  std::vector<Conn> conns;
  std::vector<Rank> ranks;
};

KvServer::KvServer(const std::string& addr, int port, int world_size) : st_(std::make_unique<State>()) {
  st_->ranks.resize((size_t)world_size);
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) fail_errno("cannot create the rendezvous socket", addr);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  if (!addr.empty() && addr != "0.0.0.0") {
    // Rank 0 listens on every interface: the master address others use may be any of its names.
  }
  if (::bind(listen_fd_, (sockaddr*)&sa, sizeof sa) != 0 || ::listen(listen_fd_, 256) != 0) {
    std::string why = std::strerror(errno);
    ::close(listen_fd_);
    fail("rank 0 cannot serve the rendezvous store on port " + std::to_string(port) + ": " + why +
         "; choose another TRAINDECK_MASTER_PORT (or let `traindeck-engine launch` pick a free one)");
  }
  socklen_t len = sizeof sa;
  getsockname(listen_fd_, (sockaddr*)&sa, &len);
  port_ = ntohs(sa.sin_port);
  if (pipe2(wake_, O_CLOEXEC) != 0) fail_errno("cannot create a pipe for", "the rendezvous store");
  thread_ = std::thread([this] { serve(); });
}

KvServer::~KvServer() {
  char c = 'x';
  ssize_t ignored = ::write(wake_[1], &c, 1);
  (void)ignored;
  if (thread_.joinable()) thread_.join();
  for (auto& c2 : st_->conns) ::close(c2.fd);
  ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void KvServer::serve() {
  State& s = *st_;
  for (;;) {
    std::vector<pollfd> fds;
    fds.push_back({wake_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& c : s.conns) fds.push_back({c.fd, POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), 1000);
    if (n < 0 && errno != EINTR) return;
    if (fds[0].revents) return;
    if (fds[1].revents & POLLIN) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        s.conns.push_back({fd, {}, -1, false});
      }
    }
    std::vector<int> dead;
    for (size_t i = 0; i < s.conns.size(); i++) {
      if (!fds[i + 2].revents) continue;
      auto& c = s.conns[i];
      char buf[65536];
      ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
      if (r <= 0) {
        dead.push_back((int)i);
        continue;
      }
      c.in.append(buf, (size_t)r);
      // Serve every complete request in the buffer.
      for (;;) {
        if (c.in.size() < 9) break;
        uint32_t klen = get_u32(c.in.data() + 5);
        if (c.in.size() < 9 + (size_t)klen + 4) break;
        uint32_t vlen = get_u32(c.in.data() + 9 + klen);
        size_t total = 13 + (size_t)klen + vlen;
        if (c.in.size() < total) break;
        const uint8_t op = (uint8_t)c.in[0];
        const int rank = (int)get_u32(c.in.data() + 1);
        std::string key = c.in.substr(9, klen), value = c.in.substr(13 + klen, vlen);
        c.in.erase(0, total);
        if (rank >= 0 && rank < (int)s.ranks.size() && (c.rank == rank || op == HELLO)) s.ranks[(size_t)rank].last = clk::now();
        uint8_t status = 0;
        std::string out;
        switch (op) {
          case SET: s.kv[key] = value; break;
          case GET: {
            auto it = s.kv.find(key);
            if (it == s.kv.end()) status = 1;
            else out = it->second;
            break;
          }
          case CHECK: {
            std::vector<std::string> miss;
            for (const auto& k : split_lines(key))
              if (!s.kv.count(k)) miss.push_back(k);
            status = miss.empty() ? 0 : 1;
            out = join_lines(miss);
            break;
          }
          case HELLO:
            if (rank >= 0 && rank < (int)s.ranks.size()) {
              c.rank = rank;
              auto& rk = s.ranks[(size_t)rank];
              rk.host = value;
              rk.arrived = true;
              rk.closed = false;
            } else {
              status = 1;
            }
            break;
          case PING: break;
          case HEALTH: {
            nlohmann::json j = nlohmann::json::array();
            auto now = clk::now();
            for (size_t k = 0; k < s.ranks.size(); k++) {
              const auto& rk = s.ranks[k];
              j.push_back({{"rank", k}, {"host", rk.host}, {"arrived", rk.arrived}, {"closed", rk.closed},
                           {"silent_s", rk.arrived ? std::chrono::duration<double>(now - rk.last).count() : 0.0}});
            }
            out = j.dump();
            break;
          }
          case BYE: c.bye = true; break;
          default: status = 1; break;
        }
        std::string resp(1, (char)status);
        put_u32(resp, (uint32_t)out.size());
        resp += out;
        if (!write_all(c.fd, resp)) {
          dead.push_back((int)i);
          break;
        }
      }
    }
    for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
      auto& c = s.conns[(size_t)*it];
      if (c.rank >= 0 && !c.bye) s.ranks[(size_t)c.rank].closed = true;
      ::close(c.fd);
      s.conns.erase(s.conns.begin() + *it);
    }
  }
}

// ---------------------------------------------------------------- client

KvClient::KvClient(const std::string& addr, int port, int rank, std::chrono::milliseconds timeout)
    : rank_(rank), where_(addr + ":" + std::to_string(port)), timeout_(timeout) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int g = getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (g != 0) fail("cannot resolve the master address '" + addr + "' (TRAINDECK_MASTER_ADDR): " + gai_strerror(g));
  const auto deadline = clk::now() + timeout;
  std::string last_error;
  while (fd_ < 0) {
    for (addrinfo* ai = res; ai && fd_ < 0; ai = ai->ai_next) {
      int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        fd_ = fd;
      } else {
        last_error = std::strerror(errno);
        ::close(fd);
      }
    }
    if (fd_ >= 0) break;
    if (clk::now() > deadline) {
      freeaddrinfo(res);
      fail("rank " + std::to_string(rank) + " cannot reach the rendezvous store of rank 0 at " + where_ + " within " +
           std::to_string(timeout.count() / 1000) + " s (" + last_error +
           "): is rank 0 running, and are TRAINDECK_MASTER_ADDR/PORT right and the port open?");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  freeaddrinfo(res);
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

KvClient::~KvClient() {
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
  if (fd_ >= 0) ::close(fd_);
}

uint8_t KvClient::request(uint8_t op, const std::string& key, const std::string& value, std::string* out,
                          std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) timeout = timeout_;
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) fail("the rendezvous store at " + where_ + " is unreachable (an earlier request failed)");
  std::string req(1, (char)op);
  put_u32(req, (uint32_t)rank_);
  put_u32(req, (uint32_t)key.size());
  req += key;
  put_u32(req, (uint32_t)value.size());
  req += value;
  auto broken = [&](const std::string& why) {
    ::close(fd_);
    fd_ = -1;
    fail("the rendezvous store at " + where_ + " (rank 0) " + why);
  };
  if (!write_all(fd_, req)) broken("closed the connection");
  std::string resp;
  const auto deadline = clk::now() + timeout;
  size_t need = 5;
  while (resp.size() < need) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clk::now()).count();
    if (left <= 0) broken("did not answer within " + std::to_string(timeout.count() / 1000.0).substr(0, 4) + " s");
    pollfd p{fd_, POLLIN, 0};
    int n = ::poll(&p, 1, (int)std::min<long long>(left, 1000));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[65536];
    ssize_t r = ::recv(fd_, buf, std::min(sizeof buf, need - resp.size()), 0);
    if (r <= 0) broken("closed the connection");
    resp.append(buf, (size_t)r);
    if (resp.size() >= 5) need = 5 + get_u32(resp.data() + 1);
  }
  if (out) *out = resp.substr(5);
  return (uint8_t)resp[0];
}

void KvClient::set(const std::string& key, const std::vector<char>& data) {
  request(SET, key, std::string(data.begin(), data.end()), nullptr);
}

std::vector<char> KvClient::get(const std::string& key) {
  wait({key}, timeout_);
  std::string v;
  if (request(GET, key, "", &v) != 0) fail("the rendezvous store lost key '" + key + "'");
  return std::vector<char>(v.begin(), v.end());
}

void KvClient::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

std::vector<std::string> KvClient::missing(const std::vector<std::string>& keys) {
  std::string out;
  if (request(CHECK, join_lines(keys), "", &out) == 0) return {};
  return split_lines(out);
}

void KvClient::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto deadline = clk::now() + timeout;
  for (;;) {
    auto miss = missing(keys);
    if (miss.empty()) return;
    if (clk::now() > deadline)
      fail("timed out after " + std::to_string(timeout.count() / 1000.0).substr(0, 4) + " s waiting for keys of the rendezvous store at " +
           where_ + ": " + join_lines(miss));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void KvClient::hello(const std::string& host) {
  if (request(HELLO, "", host, nullptr) != 0) fail("the rendezvous store refused rank " + std::to_string(rank_));
  heartbeat_ = std::thread([this] {
    while (!stop_) {
      for (int i = 0; i < 10 && !stop_; i++) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (stop_) break;
      try {
        request(PING, "", "", nullptr, std::chrono::seconds(5));
      } catch (const std::exception&) {
        return;  // the store is gone: the next collective or store call reports it
      }
    }
  });
}

std::vector<RankHealth> KvClient::health(std::chrono::milliseconds answer_within) {
  std::string out;
  request(HEALTH, "", "", &out, answer_within);
  std::vector<RankHealth> v;
  for (const auto& e : nlohmann::json::parse(out)) {
    RankHealth h;
    h.rank = e["rank"].get<int>();
    h.host = e["host"].get<std::string>();
    h.arrived = e["arrived"].get<bool>();
    h.closed = e["closed"].get<bool>();
    h.silent_s = e["silent_s"].get<double>();
    v.push_back(h);
  }
  return v;
}

void KvClient::bye() {
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
  try {
    request(BYE, "", "", nullptr);
  } catch (const std::exception&) {
  }
}

namespace {
std::vector<LostRank> diagnose_once(KvClient* store, const std::vector<std::string>& hosts, int self_rank) {
  auto host_of = [&](int r) { return r < (int)hosts.size() && !hosts[(size_t)r].empty() ? hosts[(size_t)r] : std::string("?"); };
  std::vector<LostRank> out;
  if (!store) return out;
  std::vector<RankHealth> hs;
  try {
    hs = store->health();
  } catch (const std::exception& e) {
    if (self_rank != 0) out.push_back({0, host_of(0), std::string("is not responding: ") + e.what()});
    return out;
  }
  constexpr double kSilentS = 3.0;  // three missed heartbeats
  for (const auto& h : hs) {
    if (h.rank == self_rank) continue;
    const std::string host = h.host.empty() ? host_of(h.rank) : h.host;
    if (h.closed) out.push_back({h.rank, host, "ended: its connection to the rendezvous store closed"});
    else if (h.arrived && h.silent_s > kSilentS)
      out.push_back({h.rank, host,
                     "is not responding: no heartbeat for " + std::to_string(h.silent_s).substr(0, std::to_string(h.silent_s).find('.') + 2) +
                         " s (frozen, stopped or cut off)"});
  }
  std::sort(out.begin(), out.end(), [](const LostRank& a, const LostRank& b) { return a.rank < b.rank; });
  return out;
}
}  // namespace

Rendezvous rendezvous(const DistEnv& env, std::chrono::milliseconds timeout) {
  Rendezvous rv;
  int port = env.master_port;
  if (env.rank == 0) {
    rv.server = std::make_unique<KvServer>("", env.master_port, env.world_size);
    port = rv.server->port();
  }
  rv.store = std::make_unique<KvClient>(env.master_addr, port, env.rank, timeout);
  const std::string host = local_host_name();
  rv.store->set("host/" + std::to_string(env.rank), std::vector<char>(host.begin(), host.end()));
  rv.store->hello(host);
  std::vector<std::string> keys;
  for (int r = 0; r < env.world_size; r++) keys.push_back("host/" + std::to_string(r));
  const auto deadline = clk::now() + timeout;
  for (;;) {
    auto miss = rv.store->missing(keys);
    if (miss.empty()) break;
    if (clk::now() > deadline) {
      std::string ranks;
      for (const auto& k : miss) ranks += (ranks.empty() ? "" : ", ") + k.substr(5);
      fail("rendezvous at " + rv.store->address() + " timed out after " + std::to_string((int)(timeout.count() / 1000)) + " s: rank" +
           (miss.size() > 1 ? "s " : " ") + ranks + " of " + std::to_string(env.world_size) +
           " never arrived; start every rank with the same TRAINDECK_MASTER_ADDR/PORT and TRAINDECK_WORLD_SIZE, or raise train.dist_timeout_s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int r = 0; r < env.world_size; r++) {
    auto v = rv.store->get("host/" + std::to_string(r));
    rv.hosts.emplace_back(v.begin(), v.end());
  }
  return rv;
}

std::vector<LostRank> diagnose(KvClient* store, const std::vector<std::string>& hosts, int self_rank) {
  // The store may learn of a closed connection a moment after Gloo did, and a frozen rank turns
  // silent only after three missed heartbeats: ask again for a few seconds before giving up.
  const auto deadline = clk::now() + std::chrono::seconds(4);
  for (;;) {
    std::vector<LostRank> who = diagnose_once(store, hosts, self_rank);
    if (!who.empty() || clk::now() > deadline) return who;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::vector<LostRank> diagnose_members(KvClient* store, const std::vector<std::string>& hosts, int self_rank,
                                       const std::vector<int>& members) {
  std::vector<LostRank> lost = diagnose(store, hosts, self_rank);
  if (members.empty()) return lost;
  std::vector<LostRank> ours;
  for (const auto& l : lost)
    if (std::find(members.begin(), members.end(), l.rank) != members.end()) ours.push_back(l);
  return ours.empty() ? lost : ours;
}

SplitPlan split_plan(KvClient& store, const std::string& prefix, int rank, const std::vector<int>& world_ranks, int color, int key,
                     std::chrono::milliseconds timeout) {
  const int size = (int)world_ranks.size();
  auto key_of = [&](int r) { return prefix + "/ck/" + std::to_string(r); };
  int32_t mine[2] = {color, key};
  std::vector<char> v(sizeof mine);
  std::memcpy(v.data(), mine, sizeof mine);
  store.set(key_of(rank), v);
  std::vector<std::string> keys;
  for (int r = 0; r < size; r++) keys.push_back(key_of(r));
  const auto deadline = clk::now() + timeout;
  auto next_health = clk::now() + std::chrono::milliseconds(500);
  for (;;) {
    const auto miss = store.missing(keys);
    if (miss.empty()) break;
    std::string ranks;
    for (const auto& k : miss) {
      const int r = std::stoi(k.substr(k.rfind('/') + 1));
      ranks += (ranks.empty() ? "world rank " : ", ") + std::to_string(world_ranks[(size_t)r]);
    }
    bool ended = false;
    if (clk::now() > next_health) {
      next_health = clk::now() + std::chrono::milliseconds(500);
      for (const auto& h : store.health())
        for (const auto& k : miss)
          if (h.closed && h.rank == world_ranks[(size_t)std::stoi(k.substr(k.rfind('/') + 1))]) ended = true;
    }
    if (ended || clk::now() > deadline)
      fail("split: " + ranks + (ended ? " ended before joining the split" : " did not join the split within " +
                                                                                std::to_string((int)(timeout.count() / 1000)) + " s"));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<std::pair<int, int>> same;  // (key, rank) of the ranks with this color
  for (int r = 0; r < size; r++) {
    int32_t ck[2] = {0, 0};
    const auto got = store.get(key_of(r));
    if (got.size() != sizeof ck) fail("split: the rendezvous store holds a malformed entry " + key_of(r));
    std::memcpy(ck, got.data(), sizeof ck);
    if (ck[0] == color) same.emplace_back(ck[1], r);
  }
  std::sort(same.begin(), same.end());
  SplitPlan plan;
  for (size_t i = 0; i < same.size(); i++) {
    plan.members.push_back(same[i].second);
    if (same[i].second == rank) plan.index = (int)i;
  }
  return plan;
}

std::string describe(const std::vector<LostRank>& lost) {
  std::string out;
  for (const auto& l : lost) out += (out.empty() ? "" : "; ") + l.who() + " " + l.what;
  return out;
}

}  // namespace td::dist
