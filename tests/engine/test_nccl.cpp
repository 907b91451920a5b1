// The NCCL communicator (cuda/nccl_communicator.cu through engine/dist/nccl_communicator.h) on
// real GPUs: every collective's result on device buffers against values computed by hand, the
// host-memory (staged) path, the traffic counters, and (with two GPUs or more) the watchdog that
// ends a collective a rank never joins.
//
// The world is this process: one thread and one GPU per rank, min(GPUs, 4) ranks (a world of one
// on a one-GPU machine: the results then equal the inputs, which still runs NCCL's in-place
// forms, the staging, the event timing and the rendezvous), rank 0 serving the rendezvous store
// on a free local port. Counts are chosen so that both shard layouts run: a multiple of the world
// size (ncclReduceScatter / ncclAllGather) and one that is not (grouped ncclReduce / ncclBroadcast).
// Then Communicator::split (ncclCommSplit) and make_parallel_groups in a world of their own.
//
// A plain executable (no Qt), for GPU machines (bench/gpu.sh):
//   test_nccl [--json PATH] [--require-cuda]
// Without a usable GPU (td::cuda_available) it prints "SKIP: <why>" and exits 0, or 1 with
// --require-cuda. Otherwise exit 0 when every check passed, else 1. NCCL_SOCKET_IFNAME defaults
// to "lo" (every rank is in this process); a value already set is kept.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/dist/communicator.h"
#include "engine/dist/groups.h"
#include "engine/dist/nccl_communicator.h"
#include "engine/ops/backend.h"

using namespace td;

namespace {

struct Check {
  int rank;
  std::string name;
  bool ok;
  std::string detail;
};

std::mutex g_mu;
std::vector<Check> g_checks;

void record(int rank, const std::string& name, bool ok, const std::string& detail = "") {
  std::lock_guard<std::mutex> lk(g_mu);
  g_checks.push_back({rank, name, ok, detail});
  std::printf("%-4s rank %d  %-40s %s\n", ok ? "ok" : "FAIL", rank, name.c_str(), detail.c_str());
  std::fflush(stdout);
}

// A TCP port free on 127.0.0.1 now (the kernel's choice for port 0).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = 0;
  socklen_t len = sizeof sa;
  if (fd < 0 || ::bind(fd, (sockaddr*)&sa, sizeof sa) != 0 || ::getsockname(fd, (sockaddr*)&sa, &len) != 0) {
    if (fd >= 0) ::close(fd);
    return 29500 + (int)(::getpid() % 1000);
  }
  const int port = ntohs(sa.sin_port);
  ::close(fd);
  return port;
}

// How many GPUs this process may use (at most `cap`), by asking for cuda:0, cuda:1, ...
int gpu_count(int cap) {
  int n = 0;
  for (; n < cap; n++) {
    try {
      make_backend("cuda:" + std::to_string(n));
    } catch (const std::exception&) {
      break;
    }
  }
  return n;
}

dist::DistEnv env_of(int rank, int world, int port) {
  dist::DistEnv e;
  e.rank = rank;
  e.world_size = world;
  e.local_rank = rank;
  e.local_world_size = world;
  e.master_addr = "127.0.0.1";
  e.master_port = port;
  return e;
}

// Device buffer of n floats on `be`, filled from host values.
struct DeviceFloats {
  Backend& be;
  size_t n;
  float* p;
  DeviceFloats(Backend& b, const std::vector<float>& host) : be(b), n(host.size()), p(static_cast<float*>(b.alloc(host.size() * 4))) {
    be.upload(p, host.data(), n * 4);
  }
  ~DeviceFloats() { be.free(p); }
  std::vector<float> read() {
    std::vector<float> h(n);
    be.download(h.data(), p, n * 4);  // waits for the stream, hence for the collective
    return h;
  }
};

// Largest |got - want| / max(1, |want|) over [lo, hi); the first bad index in *where.
double max_error(const std::vector<float>& got, const std::function<double(size_t)>& want, size_t lo, size_t hi, size_t* where) {
  double worst = 0;
  for (size_t i = lo; i < hi; i++) {
    const double w = want(i);
    const double e = std::fabs((double)got[i] - w) / std::max(1.0, std::fabs(w));
    if (!(e <= worst)) {  // NaN counts as worst
      worst = std::isnan(e) ? INFINITY : e;
      *where = i;
    }
  }
  return worst;
}

void expect_values(int rank, const std::string& name, const std::vector<float>& got, const std::function<double(size_t)>& want, size_t lo,
                   size_t hi, double tol) {
  size_t at = lo;
  const double err = max_error(got, want, lo, hi, &at);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%zu elements, max rel. error %.2g%s", hi - lo, err,
                err <= tol ? "" : (" at " + std::to_string(at) + ": got " + std::to_string(got[at]) + ", want " + std::to_string(want(at))).c_str());
  record(rank, name, err <= tol, buf);
}

// The collectives of one rank of an n-rank world on GPU `rank`.
void rank_checks(int rank, int n, int port, double* busbw_out) {
  try {
    auto be = make_backend("cuda:" + std::to_string(rank));
    auto comm = dist::make_nccl_communicator(*be, env_of(rank, n, port), {30.0, ""});
    record(rank, "communicator", comm->backend() == "nccl" && comm->world_size() == n && comm->rank() == rank && (int)comm->hosts().size() == n,
           "backend " + comm->backend() + ", " + be->device_info().name);
    const double tri = n * (n + 1) / 2.0;  // sum over ranks of (r + 1)

    for (size_t count : {(size_t)n * 1024, (size_t)n * 1000 + 3}) {
      const std::string tag = " (" + std::to_string(count) + (count % (size_t)n ? ", uneven shards)" : ", even shards)");
      // all_reduce sum: rank r holds (r + 1) (i + 1); the sum is (i + 1) n (n + 1) / 2.
      std::vector<float> x(count);
      for (size_t i = 0; i < count; i++) x[i] = (float)((rank + 1) * (double)(i % 4096 + 1));
      {
        DeviceFloats d(*be, x);
        comm->all_reduce(d.p, count, dist::ReduceOp::sum);
        expect_values(rank, "all_reduce sum" + tag, d.read(), [&](size_t i) { return (double)(i % 4096 + 1) * tri; }, 0, count, 0);
      }
      {
        DeviceFloats d(*be, x);  // avg: (i + 1) (n + 1) / 2; ncclAvg may scale each term by 1/n first
        comm->all_reduce(d.p, count, dist::ReduceOp::avg);
        expect_values(rank, "all_reduce avg" + tag, d.read(), [&](size_t i) { return (double)(i % 4096 + 1) * tri / n; }, 0, count, 1e-5);
      }
      {
        DeviceFloats d(*be, x);  // reduce_scatter: this rank's shard holds the sum
        comm->reduce_scatter(d.p, count, dist::ReduceOp::sum);
        auto [lo, hi] = dist::shard_range(count, rank, n);
        expect_values(rank, "reduce_scatter sum" + tag, d.read(), [&](size_t i) { return (double)(i % 4096 + 1) * tri; }, lo, hi, 0);
      }
      {
        // all_gather: each rank writes 1000 (owner + 1) + (i mod 1000) in its shard, -1 elsewhere.
        std::vector<float> g(count, -1.0f);
        auto owner = [&](size_t i) {
          int r = 0;
          while (dist::shard_range(count, r, n).second <= i) r++;
          return r;
        };
        auto [lo, hi] = dist::shard_range(count, rank, n);
        for (size_t i = lo; i < hi; i++) g[i] = (float)(1000 * (rank + 1) + (int)(i % 1000));
        DeviceFloats d(*be, g);
        comm->all_gather(d.p, count);
        expect_values(rank, "all_gather" + tag, d.read(), [&](size_t i) { return 1000.0 * (owner(i) + 1) + (double)(i % 1000); }, 0, count, 0);
      }
    }

    {  // broadcast of bytes from the last rank: a byte pattern only the root holds
      const int root = n - 1;
      const size_t bytes = 3 * 4096 + 5;
      std::vector<float> words((bytes + 3) / 4, 0.0f);
      std::vector<unsigned char> pattern(bytes);
      for (size_t i = 0; i < bytes; i++) pattern[i] = (unsigned char)((i * 7 + 3) & 255);
      if (rank == root) std::memcpy(words.data(), pattern.data(), bytes);
      DeviceFloats d(*be, words);
      comm->broadcast(d.p, bytes, root);
      std::vector<float> got = d.read();
      const bool ok = std::memcmp(got.data(), pattern.data(), bytes) == 0;
      record(rank, "broadcast (bytes, root " + std::to_string(root) + ")", ok, std::to_string(bytes) + " bytes");
    }

    {  // host memory: staged through the GPU, result in place when the call returns
      std::vector<float> h = {1.0f * (rank + 1), 2.0f * (rank + 1), 3.0f * (rank + 1)};
      comm->all_reduce(h.data(), h.size(), dist::ReduceOp::sum);
      expect_values(rank, "all_reduce sum (host memory)", h, [&](size_t i) { return (double)(i + 1) * tri; }, 0, h.size(), 0);
      const std::string s = comm->broadcast_string(rank == 0 ? std::string("from rank 0: ") + std::string(300, 'x') : std::string(), 0);
      record(rank, "broadcast_string (host memory)", s == std::string("from rank 0: ") + std::string(300, 'x'), std::to_string(s.size()) + " bytes");
    }

    comm->barrier();
    be->synchronize();
    {
      // Counters: 8 collectives on device buffers + 2 x broadcast (broadcast_string: length and
      // bytes) + 1 host all_reduce + 1 broadcast = 12 (the barrier is not counted).
      const dist::CommStats& st = comm->stats();
      const size_t c1 = (size_t)n * 1024, c2 = (size_t)n * 1000 + 3;
      const double S1 = 4.0 * c1, S2 = 4.0 * c2;
      // Bytes sent by the ring formulas (communicator.h), all_reduce x2, reduce_scatter, all_gather
      // per count; the broadcasts add (n - 2)/(n - 1) S on non-roots, S on the root.
      double want = 0;
      for (double S : {S1, S2}) want += 2 * (2.0 * (n - 1) / n * S) + 2 * ((n - 1.0) / n * S);
      want += 2.0 * (n - 1) / n * 12;  // the host all_reduce of 3 floats
      char buf[200];
      std::snprintf(buf, sizeof buf, "calls %llu (want 12), sent %llu, received %llu, %.3f ms on the GPU", (unsigned long long)st.calls,
                    (unsigned long long)st.bytes_sent, (unsigned long long)st.bytes_received, st.seconds * 1e3);
      const bool ok = st.calls == 12 && st.seconds >= 0 && (n > 1 || (st.bytes_sent == 0 && st.bytes_received == 0)) &&
                      (double)st.bytes_received + 16 >= want;  // each call's count is truncated to whole bytes
      record(rank, "stats", ok, buf);
    }

    if (n > 1) {  // bandwidth of a 256 MiB all_reduce (figures for the report, no threshold)
      const size_t count = size_t(64) << 20;
      float* big = static_cast<float*>(be->alloc(count * 4));
      comm->all_reduce(big, count, dist::ReduceOp::sum);  // warm-up
      be->synchronize();
      comm->reset_stats();
      for (int it = 0; it < 5; it++) comm->all_reduce(big, count, dist::ReduceOp::sum);
      be->synchronize();
      const dist::CommStats& st = comm->stats();
      const double busbw = st.seconds > 0 ? st.bus_bytes / st.seconds : 0;
      if (rank == 0 && busbw_out) *busbw_out = busbw;
      char buf[120];
      std::snprintf(buf, sizeof buf, "5 x 256 MiB: %.1f ms each, busbw %.1f GB/s", st.seconds / 5 * 1e3, busbw * 1e-9);
      record(rank, "all_reduce bandwidth", st.calls == 5 && busbw > 0, buf);
      be->free(big);
    }
  } catch (const std::exception& e) {
    record(rank, "exception", false, e.what());
  }
}

// Communicator::split on NCCL (ncclCommSplit): groups by parity of the rank ({0, 2}, {1, 3} at
// n = 4; groups of one, LocalCommunicators, at n <= 2: there the world-of-one path runs
// ncclCommSplit with NCCL_SPLIT_NOCOLOR), every collective on device buffers against the sums
// over the members written out; the group's own stats; a group of all ranks in reversed order;
// make_parallel_groups(world, 2) at even n.
void split_checks(int rank, int n, int port) {
  try {
    auto be = make_backend("cuda:" + std::to_string(rank));
    auto comm = dist::make_nccl_communicator(*be, env_of(rank, n, port), {30.0, ""});
    std::vector<int> members;  // same parity as this rank, in rank order
    for (int r = rank % 2; r < n; r += 2) members.push_back(r);
    const int m = (int)members.size(), self = rank / 2;
    double sum_c = 0;
    for (int r : members) sum_c += r + 1;
    auto g = comm->split(rank % 2, rank);
    record(rank, "split by parity: size, rank, backend",
           g->world_size() == m && g->rank() == self && g->backend() == (m > 1 ? "nccl" : "local") && (int)g->hosts().size() == m,
           g->backend() + " rank " + std::to_string(g->rank()) + " of " + std::to_string(g->world_size()) + " (want " + std::to_string(self) +
               " of " + std::to_string(m) + ")");
    const size_t count = 1000 + 3;  // uneven shards over 2 ranks
    std::vector<float> x(count);
    for (size_t i = 0; i < count; i++) x[i] = (float)((rank + 1) * (double)(i + 1));
    {
      DeviceFloats d(*be, x);
      g->all_reduce(d.p, count, dist::ReduceOp::sum);
      expect_values(rank, "group all_reduce sum", d.read(), [&](size_t i) { return (double)(i + 1) * sum_c; }, 0, count, 0);
    }
    {
      DeviceFloats d(*be, x);
      g->reduce_scatter(d.p, count, dist::ReduceOp::avg);
      auto [lo, hi] = dist::shard_range(count, self, m);
      expect_values(rank, "group reduce_scatter avg", d.read(), [&](size_t i) { return (double)(i + 1) * sum_c / m; }, lo, hi, 1e-5);
    }
    {
      std::vector<float> v(count, -1.0f);
      auto [lo, hi] = dist::shard_range(count, self, m);
      for (size_t i = lo; i < hi; i++) v[i] = (float)(1000 * (rank + 1) + (int)i);
      DeviceFloats d(*be, v);
      g->all_gather(d.p, count);
      auto owner = [&](size_t i) {
        int j = 0;
        while (dist::shard_range(count, j, m).second <= i) j++;
        return members[(size_t)j];
      };
      expect_values(rank, "group all_gather", d.read(), [&](size_t i) { return 1000.0 * (owner(i) + 1) + (double)i; }, 0, count, 0);
    }
    be->synchronize();
    {
      const dist::CommStats& gs = g->stats();
      const dist::CommStats& ws = comm->stats();
      const uint64_t want = m > 1 ? 3 : 0;  // a LocalCommunicator counts nothing
      record(rank, "group stats: its own 3 calls, none on the world", gs.calls == want && ws.calls == 0,
             std::to_string(gs.calls) + " group calls, " + std::to_string(ws.calls) + " world calls");
    }
    auto rev = comm->split(0, -rank);  // all ranks, reversed
    int32_t b = rank;
    rev->broadcast(&b, sizeof b, 0);  // host memory; rank 0 of rev is world rank n - 1
    record(rank, "reversed group: rank 0 is world rank n-1", rev->world_size() == n && rev->rank() == n - 1 - rank && b == n - 1,
           "rank " + std::to_string(rev->rank()) + ", broadcast got " + std::to_string(b));
    if (n % 2 == 0) {
      dist::ParallelGroups pg = dist::make_parallel_groups(*comm, 2);
      float t = (float)(rank + 1);
      pg.tp->all_reduce(&t, 1, dist::ReduceOp::sum);  // TP group {2k, 2k+1}: 4k + 3
      record(rank, "make_parallel_groups(2): TP sum", t == (float)(4 * (rank / 2) + 3), std::to_string(t));
    }
    be->synchronize();
  } catch (const std::exception& e) {
    record(rank, "split exception", false, e.what());
  }
}

// Rank n-1 never joins an all_reduce: the others' must end with a td::Error naming the timeout
// (the watchdog aborts NCCL after train.dist_timeout_s = 3 s), not hang.
void watchdog_check(int rank, int n, int port) {
  try {
    auto be = make_backend("cuda:" + std::to_string(rank));
    auto comm = dist::make_nccl_communicator(*be, env_of(rank, n, port), {3.0, ""});
    static std::mutex mu;
    static int done = 0;
    if (rank == n - 1) {
      // Wait until the others have failed (at most 30 s), then leave; the destructor's barrier
      // meets nobody and is itself aborted by this rank's watchdog.
      for (int i = 0; i < 300; i++) {
        {
          std::lock_guard<std::mutex> lk(mu);
          if (done == n - 1) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      return;
    }
    DeviceFloats d(*be, std::vector<float>(1024, 1.0f));
    const auto t0 = std::chrono::steady_clock::now();
    std::string error;
    try {
      comm->all_reduce(d.p, 1024, dist::ReduceOp::sum);  // enqueued; the GPU then waits for rank n-1
      float flag = 0;
      comm->all_reduce(&flag, 1, dist::ReduceOp::sum);  // host memory: waits, until the abort
    } catch (const std::exception& e) {
      error = e.what();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
      std::lock_guard<std::mutex> lk(mu);
      done++;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, " (after %.1f s)", s);
    record(rank, "watchdog ends a collective a rank never joins",
           !error.empty() && error.find("did not complete within") != std::string::npos && s < 25, error.substr(0, 300) + buf);
  } catch (const std::exception& e) {
    record(rank, "watchdog exception", false, e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  bool require_cuda = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--require-cuda") {
      require_cuda = true;
    } else {
      std::fprintf(stderr, "usage: %s [--json PATH] [--require-cuda]\n", argv[0]);
      return 2;
    }
  }
  nlohmann::json j = {{"test", "test_nccl"}};
  std::string why;
  int rc = 0;
  if (!cuda_available(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    j["status"] = "skipped";
    j["why"] = why;
    rc = require_cuda ? 1 : 0;
  } else {
    const int n = gpu_count(4);
    j["world_size"] = n;
    // Every rank is a thread of this process: NCCL's bootstrap sockets need only the loopback
    // interface, and on a machine whose only other interfaces are down or firewalled (a lent GPU
    // box, a container) NCCL's own choice can fail to connect. A user's NCCL_SOCKET_IFNAME wins.
    ::setenv("NCCL_SOCKET_IFNAME", "lo", 0);
    std::printf("# NCCL_SOCKET_IFNAME=%s%s\n", std::getenv("NCCL_SOCKET_IFNAME"),
                std::string(std::getenv("NCCL_SOCKET_IFNAME")) == "lo" ? "" : " (set by the user)");
    j["nccl_socket_ifname"] = std::getenv("NCCL_SOCKET_IFNAME");
    std::printf("# NCCL world of %d rank(s), one thread and one GPU each\n", n);
    double busbw = 0;
    {
      const int port = n > 1 ? free_port() : 0;  // a world of one: rank 0 binds any free port
      std::vector<std::thread> ranks;
      for (int r = 0; r < n; r++) ranks.emplace_back(rank_checks, r, n, port, &busbw);
      for (auto& t : ranks) t.join();
    }
    {
      const int port = n > 1 ? free_port() : 0;
      std::vector<std::thread> ranks;
      for (int r = 0; r < n; r++) ranks.emplace_back(split_checks, r, n, port);
      for (auto& t : ranks) t.join();
    }
    if (n > 1) {
      const int port = free_port();
      std::vector<std::thread> ranks;
      for (int r = 0; r < n; r++) ranks.emplace_back(watchdog_check, r, n, port);
      for (auto& t : ranks) t.join();
      j["allreduce_256MiB_busbw_gb_s"] = busbw * 1e-9;
    }
    const auto failed = std::count_if(g_checks.begin(), g_checks.end(), [](const Check& c) { return !c.ok; });
    std::printf("%zu checks, %ld failed\n", g_checks.size(), (long)failed);
    j["status"] = failed == 0 && !g_checks.empty() ? "passed" : "failed";
    j["checks"] = nlohmann::json::array();
    for (const Check& c : g_checks) j["checks"].push_back({{"rank", c.rank}, {"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
    rc = j["status"] == "passed" ? 0 : 1;
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << j.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return rc;
}
