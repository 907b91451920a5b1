// Communicator::split and make_parallel_groups (engine/dist/groups.h) with real Gloo ranks on
// loopback: 4 processes forked from this one, each a rank with its own GlooCommunicator (rank 0
// serving the rendezvous store on a free port), as `traindeck-engine launch` starts them.
//
// Checked against values written out by hand (rank r contributes r + 1): tp = 2 gives TP groups
// {0,1}, {2,3} (sums 3 and 7) and DP groups {0,2}, {1,3} (sums 4 and 6); all_reduce (sum, avg),
// reduce_scatter and all_gather over an uneven count, and broadcast inside each group, with the
// world's all_reduce (sum 10) in between; each group's stats count its own collectives only,
// with the group's size in the ring formulas; hosts() in group order (each rank gets a host name
// of its own in a UTS namespace where the system allows it, else that check skips); tp = 4
// and tp = 1 (a group of one is a LocalCommunicator); the errors for tp = 3, tp = 0 and a TP group
// across hosts; and a rank that exits early: its group partners' collectives throw a
// CollectiveError naming it (world rank 3) instead of hanging, while the other TP group still
// works; and one that freezes (SIGSTOP): they fail at the 3 s timeout saying it is not responding.
// And a checkpoint's gather (engine/train/tp_run.h TpTensorGather): each TP group's pieces of a
// known full state (tp_slice of it) assembled on the group's rank 0 one tensor at a time equal
// that state's tensors bit for bit, for GPT-2 (tied, untied) and GQA Llama at tp = 2 and 4, the
// vocabulary split unevenly; the other ranks get nullptr. And the resume's way back
// (tp_scatter_tensors): every rank's layout equals tp_slice of the state world rank 0 hands out.
//
// A plain executable (no Qt): exit 0 when every check of every rank passed, else 1. Each rank
// prints "ok"/"FAIL" lines; a rank still running 60 s after its scenario began is killed and
// counted as a failure (a hang).
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/dist/communicator.h"
#include "engine/dist/groups.h"
#include "engine/dist/launch.h"
#include "engine/model/shape.h"
#include "engine/model/tensor_parallel.h"
#include "engine/ops/cpu_ops.h"
#include "engine/train/tp_run.h"

using namespace td;
using namespace td::dist;

namespace {

// The checks of one rank (one process).
struct Rank {
  std::string scenario;
  int rank = 0;
  int failures = 0;
  void check(bool ok, const std::string& name, const std::string& detail = "") {
    if (!ok) failures++;
    std::printf("%-4s %-10s rank %d  %-44s %s\n", ok ? "ok" : "FAIL", scenario.c_str(), rank, name.c_str(), detail.c_str());
    std::fflush(stdout);
  }
  void skip(const std::string& name, const std::string& why) {
    std::printf("SKIP %-10s rank %d  %-44s %s\n", scenario.c_str(), rank, name.c_str(), why.c_str());
    std::fflush(stdout);
  }
};

std::string floats(const float* p, size_t n) {
  std::string s;
  char buf[32];
  for (size_t i = 0; i < n; i++) {
    std::snprintf(buf, sizeof buf, i ? " %.1f" : "%.1f", (double)p[i]);
    s += buf;
  }
  return s;
}

bool near(float a, float b) { return std::fabs(a - b) <= 1e-5f * std::max(1.0f, std::fabs(b)); }

// Gives this process the host name `name` (a UTS namespace of its own); false when not allowed.
bool set_host(const std::string& name) {
  if (unshare(CLONE_NEWUTS) != 0 && unshare(CLONE_NEWUSER | CLONE_NEWUTS) != 0) return false;
  return sethostname(name.c_str(), name.size()) == 0;
}

// Whether set_host works here (tried in a child, so that this process keeps its name).
bool can_set_host() {
  const pid_t p = fork();
  if (p == 0) _exit(set_host("td-probe") ? 0 : 1);
  int st = 0;
  waitpid(p, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

struct Scenario {
  std::string name;
  int world = 4;
  double timeout_s = 20;
  std::vector<std::string> hosts;  // a host name per rank ("" = keep the machine's)
  std::function<void(Rank&, Communicator&, int done_fd, int wait_fd)> body;
  int frozen = -1;  // a rank that stops itself (SIGSTOP): killed once the others have exited
};

// Rank 0 (the store) waits, at most 40 s, for `n` ranks to write a byte to done_fd.
void wait_for_ranks(int wait_fd, int n) {
  int got = 0;
  pollfd p{wait_fd, POLLIN, 0};
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  char c;
  while (got < n && std::chrono::steady_clock::now() < until && poll(&p, 1, 200) >= 0)
    if ((p.revents & POLLIN) && read(wait_fd, &c, 1) == 1) got++;
}

void signal_done(Rank& me, int done_fd) {
  const char c = 1;
  if (write(done_fd, &c, 1) != 1) me.check(false, "signal done");
}

// Forks the scenario's ranks; returns the number of ranks that failed (or hung).
int run(const Scenario& sc) {
  const int port = pick_free_port();
  int pipe_fd[2];
  if (pipe(pipe_fd) != 0) return sc.world;  // ranks may signal "done" to rank 0 through it
  std::vector<pid_t> pids;
  for (int r = 0; r < sc.world; r++) {
    const pid_t p = fork();
    if (p == 0) {
      Rank me{sc.name, r};
      if (!sc.hosts.empty() && !sc.hosts[(size_t)r].empty() && !set_host(sc.hosts[(size_t)r])) {
        me.check(false, "set host name", "unshare/sethostname failed");
        _exit(1);
      }
      try {
        DistEnv env;
        env.rank = env.local_rank = r;
        env.world_size = env.local_world_size = sc.world;
        env.master_addr = "127.0.0.1";
        env.master_port = port;
        CommOptions opt;
        opt.timeout_s = sc.timeout_s;
        auto world = make_communicator(env, opt);
        me.check(world->backend() == "gloo" && world->rank() == r && world->world_size() == sc.world, "world communicator",
                 world->backend() + " rank " + std::to_string(world->rank()) + " of " + std::to_string(world->world_size()));
        sc.body(me, *world, pipe_fd[1], pipe_fd[0]);
      } catch (const std::exception& e) {
        me.check(false, "no exception", e.what());
      }
      std::fflush(stdout);
      _exit(me.failures ? 1 : 0);
    }
    pids.push_back(p);
  }
  ::close(pipe_fd[0]);
  ::close(pipe_fd[1]);
  int bad = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int live = sc.world; live > 0;) {
    int st = 0;
    const pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      live--;
      const bool frozen_killed = sc.frozen >= 0 && p == pids[(size_t)sc.frozen] && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
      if (!frozen_killed && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) bad++;
      for (auto& q : pids)
        if (q == p) q = -1;
      if (sc.frozen >= 0 && live == 1 && pids[(size_t)sc.frozen] > 0) kill(pids[(size_t)sc.frozen], SIGKILL);
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t r = 0; r < pids.size(); r++)
        if (pids[r] > 0) {
          std::printf("FAIL %-10s rank %zu  still running after 60 s: killed (a hang)\n", sc.name.c_str(), r);
          kill(pids[r], SIGKILL);
        }
      while (waitpid(-1, &st, 0) > 0) {
        live--;
        bad++;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return bad;
}

// The groups of W = 4, tp = 2, written out: TP group of each rank, DP group of each rank.
const std::vector<std::vector<int>> kTp2 = {{0, 1}, {0, 1}, {2, 3}, {2, 3}};
const std::vector<std::vector<int>> kDp2 = {{0, 2}, {1, 3}, {0, 2}, {1, 3}};

// Every collective inside group `g` (members: world ranks in group order) of this rank,
// against values computed from the members alone; rank r contributes r + 1.
void exercise(Rank& me, Communicator& g, const std::vector<int>& members, const std::string& what, Communicator& world) {
  const int n = (int)members.size();
  int self = -1;
  for (int i = 0; i < n; i++)
    if (members[(size_t)i] == me.rank) self = i;
  me.check(g.world_size() == n && g.rank() == self, what + ": size and rank",
           std::to_string(g.rank()) + " of " + std::to_string(g.world_size()) + " (want " + std::to_string(self) + " of " + std::to_string(n) + ")");
  float sum_c = 0;  // sum over members of (m + 1)
  for (int m : members) sum_c += (float)(m + 1);
  constexpr size_t kCount = 5;  // uneven over 2 ranks: shards [0, 2) and [2, 5)
  // all_reduce sum: element i = (r + 1) + 100 i on each rank -> sum_c + 100 i n.
  float a[kCount];
  for (size_t i = 0; i < kCount; i++) a[i] = (float)(me.rank + 1) + 100.0f * (float)i;
  g.all_reduce(a, kCount, ReduceOp::sum);
  bool ok = true;
  for (size_t i = 0; i < kCount; i++) ok = ok && near(a[i], sum_c + 100.0f * (float)i * (float)n);
  me.check(ok, what + ": all_reduce sum", floats(a, kCount) + " (want " + std::to_string((int)sum_c) + " + " + std::to_string(100 * n) + " i)");
  // The world in between: sum of r + 1 over 4 ranks = 10.
  float w = (float)(me.rank + 1);
  world.all_reduce(&w, 1, ReduceOp::sum);
  me.check(near(w, 10.0f), what + ": world all_reduce in between", std::to_string(w));
  // all_reduce avg: mean of (r + 1) = sum_c / n.
  for (size_t i = 0; i < kCount; i++) a[i] = (float)(me.rank + 1);
  g.all_reduce(a, kCount, ReduceOp::avg);
  ok = true;
  for (size_t i = 0; i < kCount; i++) ok = ok && near(a[i], sum_c / (float)n);
  me.check(ok, what + ": all_reduce avg", floats(a, kCount) + " (want " + std::to_string(sum_c / (float)n) + ")");
  // reduce_scatter sum: my shard of shard_range(5, self, n) holds sum_c * (i + 1).
  for (size_t i = 0; i < kCount; i++) a[i] = (float)(me.rank + 1) * (float)(i + 1);
  g.reduce_scatter(a, kCount, ReduceOp::sum);
  auto [lo, hi] = shard_range(kCount, self, n);
  ok = hi > lo || n > (int)kCount;
  for (size_t i = lo; i < hi; i++) ok = ok && near(a[i], sum_c * (float)(i + 1));
  me.check(ok, what + ": reduce_scatter shard [" + std::to_string(lo) + "," + std::to_string(hi) + ")",
           floats(a + lo, hi - lo) + " (want " + std::to_string((int)sum_c) + " (i+1))");
  // all_gather: member j's shard holds 1000 (world rank of j + 1) + i; the rest is garbage.
  for (size_t i = 0; i < kCount; i++) a[i] = -7;
  for (size_t i = lo; i < hi; i++) a[i] = 1000.0f * (float)(me.rank + 1) + (float)i;
  g.all_gather(a, kCount);
  ok = true;
  for (int j = 0; j < n; j++) {
    auto [jl, jh] = shard_range(kCount, j, n);
    for (size_t i = jl; i < jh; i++) ok = ok && near(a[i], 1000.0f * (float)(members[(size_t)j] + 1) + (float)i);
  }
  me.check(ok, what + ": all_gather", floats(a, kCount));
  // broadcast from the group's last rank: its world rank.
  int32_t b = me.rank;
  g.broadcast(&b, sizeof b, n - 1);
  me.check(b == members[(size_t)(n - 1)], what + ": broadcast from group rank " + std::to_string(n - 1),
           std::to_string(b) + " (want world rank " + std::to_string(members[(size_t)(n - 1)]) + ")");
  // Stats: this group's five collectives only. S = 20 bytes: all_reduce 2 (n-1)/n S each, twice;
  // reduce_scatter and all_gather (n-1)/n S; broadcast of 4 bytes: the root sends (n-1) 4.
  const CommStats& st = g.stats();
  const double S = kCount * sizeof(float), f = (double)(n - 1) / n;
  const uint64_t want_ar = (uint64_t)(2 * 2 * f * S), want_rs = (uint64_t)(f * S);
  const uint64_t want_sent = want_ar + 2 * want_rs + (self == n - 1 ? (uint64_t)(n - 1) * 4 : 0);
  const uint64_t want_recv = want_ar + 2 * want_rs + (self == n - 1 ? 0 : 4);
  me.check(st.calls == 5 && st.of(CollectiveKind::all_reduce).calls == 2 && st.of(CollectiveKind::reduce_scatter).calls == 1 &&
               st.of(CollectiveKind::all_gather).calls == 1,
           what + ": stats calls", std::to_string(st.calls) + " calls (want 5: 2 all_reduce, 1 reduce_scatter, 1 all_gather, 1 broadcast)");
  me.check(st.of(CollectiveKind::all_reduce).bytes_sent == want_ar && st.of(CollectiveKind::reduce_scatter).bytes_sent == want_rs &&
               st.of(CollectiveKind::all_gather).bytes_sent == want_rs && st.bytes_sent == want_sent && st.bytes_received == want_recv,
           what + ": stats bytes (group size " + std::to_string(n) + ")",
           "sent " + std::to_string(st.bytes_sent) + " received " + std::to_string(st.bytes_received) + " all_reduce " +
               std::to_string(st.of(CollectiveKind::all_reduce).bytes_sent) + " (want " + std::to_string(want_sent) + ", " +
               std::to_string(want_recv) + ", " + std::to_string(want_ar) + ")");
}

void check_hosts(Rank& me, Communicator& g, const std::vector<int>& members, const std::vector<std::string>& world_hosts,
                 const std::string& what) {
  std::vector<std::string> want;
  for (int m : members) want.push_back(world_hosts[(size_t)m]);
  std::string got;
  for (const auto& h : g.hosts()) got += (got.empty() ? "" : " ") + h;
  me.check(g.hosts() == want, what + ": hosts in group order", got);
}

void expect_error(Rank& me, const std::function<void()>& f, const std::vector<std::string>& words, const std::string& name) {
  try {
    f();
    me.check(false, name, "no error");
  } catch (const std::exception& e) {
    bool ok = true;
    for (const auto& w : words) ok = ok && std::string(e.what()).find(w) != std::string::npos;
    me.check(ok, name, e.what());
  }
}

// A one-float all_reduce on `c` must throw a CollectiveError naming world rank `lost` (on host
// `host` unless "") with `how` ("ended", "is not responding") in its message.
void expect_lost(Rank& me, Communicator& c, int lost, const std::string& host, const std::string& how, const std::string& name) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    float x = 1;
    c.all_reduce(&x, 1, ReduceOp::sum);
    me.check(false, name, "no error");
  } catch (const CollectiveError& e) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bool named = false;
    for (const auto& l : e.lost()) named = named || (l.rank == lost && (host.empty() || l.host == host));
    const std::string msg = e.what();
    me.check(named && msg.find("rank " + std::to_string(lost) + " (host ") != std::string::npos && msg.find(how) != std::string::npos, name,
             "after " + std::to_string(s).substr(0, 4) + " s: " + msg);
  } catch (const std::exception& e) {
    me.check(false, name + " (a CollectiveError)", e.what());
  }
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const bool hosts_ok = can_set_host();
  if (!hosts_ok) std::printf("SKIP host-name checks: this process may not make a UTS namespace (unshare); the ranks share one host name\n");
  // Four hosts, two ranks each in rank order (a TP group of 2 on one node); and one rank per host.
  const std::vector<std::string> paired = hosts_ok ? std::vector<std::string>{"node-a", "node-a", "node-b", "node-b"} : std::vector<std::string>{};
  std::vector<Scenario> scenarios;

  // tp = 2: the layout, every collective per group, the world in between, stats, hosts; the
  // errors of tp = 3 and tp = 0 first (nothing collective has happened yet: tp = 2 still works).
  scenarios.push_back({"tp2", 4, 20, paired, [&](Rank& me, Communicator& world, int, int) {
    expect_error(me, [&] { make_parallel_groups(world, 3); }, {"train.tensor_parallel = 3", "does not divide the world size 4"}, "tp=3 error");
    expect_error(me, [&] { make_parallel_groups(world, 0); }, {"train.tensor_parallel = 0", "at least 1"}, "tp=0 error");
    ParallelGroups g = make_parallel_groups(world, 2);
    me.check(g.tp_size == 2 && g.dp_size == 2 && g.tp_rank == me.rank % 2 && g.dp_rank == me.rank / 2, "tp_rank, dp_rank",
             std::to_string(g.tp_rank) + ", " + std::to_string(g.dp_rank));
    me.check(g.tp->backend() == "gloo" && g.dp->backend() == "gloo", "groups are Gloo communicators");
    exercise(me, *g.tp, kTp2[(size_t)me.rank], "TP", world);
    exercise(me, *g.dp, kDp2[(size_t)me.rank], "DP", world);
    if (hosts_ok) {
      check_hosts(me, *g.tp, kTp2[(size_t)me.rank], world.hosts(), "TP");
      check_hosts(me, *g.dp, kDp2[(size_t)me.rank], world.hosts(), "DP");
      me.check(world.hosts()[(size_t)me.rank] == paired[(size_t)me.rank], "world host name", world.hosts()[(size_t)me.rank]);
    } else {
      me.skip("hosts", "no UTS namespace");
    }
    // The world counted its own two in-between all_reduces of 4 bytes (2 (4-1)/4 4 = 6 bytes
    // each) and none of the splits' or groups' traffic.
    const CommStats& ws = world.stats();
    me.check(ws.calls == 2 && ws.bytes_sent == 12 && ws.of(CollectiveKind::all_reduce).calls == 2, "world stats: its own only",
             std::to_string(ws.calls) + " calls, " + std::to_string(ws.bytes_sent) + " bytes sent (want 2, 12)");
    // A split of a group (the TP group by its rank: two groups of one) and key order reversed.
    auto alone = g.tp->split(g.tp->rank(), 0);
    me.check(alone->backend() == "local" && alone->world_size() == 1 && alone->hosts().size() == 1 &&
                 alone->hosts()[0] == world.hosts()[(size_t)me.rank],
             "group of one: local, own host", alone->backend() + " " + alone->hosts()[0]);
    auto rev = world.split(0, -me.rank);  // key -r: rank order reversed
    me.check(rev->world_size() == 4 && rev->rank() == 3 - me.rank, "split by key -rank reverses the order", std::to_string(rev->rank()));
    int32_t b = me.rank;
    rev->broadcast(&b, sizeof b, 0);  // rank 0 of rev is world rank 3
    me.check(b == 3, "reversed group's rank 0 is world rank 3", std::to_string(b));
    expect_error(me, [&] { world.split(-1, 0); }, {"color -1"}, "negative color error");
  }});

  // tp = 4: one TP group of all four (sum 10), DP groups of one (local, no-op, own host).
  scenarios.push_back({"tp4", 4, 20, {}, [&](Rank& me, Communicator& world, int, int) {
    ParallelGroups g = make_parallel_groups(world, 4);
    me.check(g.tp_size == 4 && g.dp_size == 1 && g.tp_rank == me.rank && g.dp_rank == 0, "tp_rank, dp_rank");
    float x = (float)(me.rank + 1);
    g.tp->all_reduce(&x, 1, ReduceOp::sum);
    me.check(near(x, 10), "TP all_reduce sum over 4", std::to_string(x));
    float y = (float)(me.rank + 1);
    g.dp->all_reduce(&y, 1, ReduceOp::sum);
    me.check(g.dp->world_size() == 1 && g.dp->backend() == "local" && near(y, (float)(me.rank + 1)) &&
                 g.dp->hosts() == std::vector<std::string>{world.hosts()[(size_t)me.rank]},
             "DP group of one: local, value kept, own host", std::to_string(y));
  }});

  // tp = 1: TP groups of one, DP the whole world.
  scenarios.push_back({"tp1", 4, 20, {}, [&](Rank& me, Communicator& world, int, int) {
    ParallelGroups g = make_parallel_groups(world, 1);
    me.check(g.tp_size == 1 && g.dp_size == 4 && g.tp_rank == 0 && g.dp_rank == me.rank, "tp_rank, dp_rank");
    me.check(g.tp->world_size() == 1 && g.tp->backend() == "local", "TP group of one");
    float x = (float)(me.rank + 1);
    g.dp->all_reduce(&x, 1, ReduceOp::avg);
    me.check(g.dp->world_size() == 4 && g.dp->rank() == me.rank && near(x, 2.5f), "DP = world: all_reduce avg 2.5", std::to_string(x));
    me.check(g.dp->hosts() == world.hosts(), "DP hosts = world hosts");
  }});

  // A TP group across hosts: hosts a, b, a, b with tp = 2 (ranks 0, 1 on different hosts).
  if (hosts_ok)
    scenarios.push_back({"tp-hosts", 4, 20, {"node-a", "node-b", "node-a", "node-b"}, [&](Rank& me, Communicator& world, int, int) {
      expect_error(me, [&] { make_parallel_groups(world, 2); },
                   {"train.tensor_parallel = 2", "spans hosts node-a (rank 0) and node-b (rank 1)", "multiple of 2 ranks per node"},
                   "TP group across hosts error");
      // Nothing collective happened: tp = 1 still forms its groups.
      ParallelGroups g = make_parallel_groups(world, 1);
      float x = 1;
      g.dp->all_reduce(&x, 1, ReduceOp::sum);
      me.check(near(x, 4), "tp=1 after the error", std::to_string(x));
    }});

  // Rank 3 exits once the groups are made. Rank 2 (its TP partner) and rank 1 (its DP partner)
  // must get a CollectiveError naming world rank 3 within the short timeout; TP group {0, 1}
  // still works. Rank 0 (the store) stays until ranks 1 and 2 have checked their errors.
  scenarios.push_back({"early-exit", 4, 5, paired, [&](Rank& me, Communicator& world, int done_fd, int wait_fd) {
    ParallelGroups g = make_parallel_groups(world, 2);
    world.barrier();
    if (me.rank == 3) {
      std::fflush(stdout);
      _exit(0);  // no goodbye: as a crashed process
    }
    auto expect_lost3 = [&](Communicator& c, const std::string& name) { expect_lost(me, c, 3, paired.empty() ? "" : "node-b", "ended", name); };
    if (me.rank == 2) {
      expect_lost3(*g.tp, "TP partner's all_reduce names rank 3");
      expect_error(me, [&] { world.barrier(); }, {"failed earlier"}, "then the world is unusable too");
    }
    if (me.rank == 0 || me.rank == 1) {
      float x = (float)(me.rank + 1);
      g.tp->all_reduce(&x, 1, ReduceOp::sum);
      me.check(near(x, 3), "healthy TP group {0,1} still sums to 3", std::to_string(x));
    }
    if (me.rank == 1) expect_lost3(*g.dp, "DP partner's all_reduce names rank 3");
    if (me.rank == 1 || me.rank == 2) signal_done(me, done_fd);
    if (me.rank == 0) wait_for_ranks(wait_fd, 2);
  }});

  // Rank 3 freezes (SIGSTOP) once the groups are made: its partners' collectives end at the
  // 3 s timeout with a CollectiveError saying rank 3 is not responding (no heartbeat), instead
  // of waiting for ever.
  scenarios.push_back({"frozen", 4, 3, paired, [&](Rank& me, Communicator& world, int done_fd, int wait_fd) {
    ParallelGroups g = make_parallel_groups(world, 2);
    world.barrier();
    if (me.rank == 3) raise(SIGSTOP);  // the parent kills it once the others have exited
    if (me.rank == 2) expect_lost(me, *g.tp, 3, paired.empty() ? "" : "node-b", "is not responding", "TP partner's all_reduce: rank 3 frozen");
    if (me.rank == 1) expect_lost(me, *g.dp, 3, paired.empty() ? "" : "node-b", "is not responding", "DP partner's all_reduce: rank 3 frozen");
    if (me.rank == 1 || me.rank == 2) signal_done(me, done_fd);
    if (me.rank == 0) wait_for_ranks(wait_fd, 2);
  }, 3});

  // A checkpoint's tensor-by-tensor gather over each TP group, for three model shapes.
  for (const int tp : {2, 4}) {
    scenarios.push_back({"tp-gather" + std::to_string(tp), 4, 20, {}, [tp](Rank& me, Communicator& world, int, int) {
      ParallelGroups g = make_parallel_groups(world, tp);
      auto be = make_cpu_backend();
      for (const int kv : {0, -1, 4}) {  // GPT-2 tied, GPT-2 untied, Llama with 4 of 8 heads' keys and values
        ModelConfig m;
        m.vocab_size = 37;  // uneven over 2 and 4 ranks
        m.seq_len = 8, m.n_layer = 2, m.n_head = 8, m.d_model = 16, m.d_ff = 32;
        m.tie_embeddings = kv == 0;
        if (kv > 0) m.family = "llama", m.n_kv_head = kv;
        const std::string what = (kv > 0 ? "llama GQA" : kv == 0 ? "gpt2 tied" : "gpt2 untied") + std::string(", tp ") + std::to_string(tp);
        // The full state: element k is k / 7 - 3 (every value distinct, exact in fp32 here).
        std::vector<float> full(model_num_params(m));
        for (size_t k = 0; k < full.size(); k++) full[k] = (float)k / 7.0f - 3.0f;
        const size_t n_local = tp_num_params(m, g.tp_rank, tp);
        std::vector<float> host(n_local);
        tp_slice(m, g.tp_rank, tp, full.data(), host.data());
        float* local = static_cast<float*>(be->alloc(n_local * sizeof(float)));
        be->upload(local, host.data(), n_local * sizeof(float));
        TpTensorGather gather(*g.tp, *be, m);
        const std::vector<ParamTensor> tensors = model_param_tensors(m);
        size_t equal = 0, wrong_rank = 0;
        for (size_t i = 0; i < tensors.size(); i++) {
          const float* t = gather.tensor(i, local);
          if (g.tp_rank != 0) wrong_rank += t != nullptr;
          else if (t && std::memcmp(t, full.data() + tensors[i].offset, tensors[i].numel * sizeof(float)) == 0) equal++;
        }
        // And back (a resume): world rank 0 hands out the same state one full tensor at a time;
        // every rank's layout equals tp_slice of it.
        std::vector<float> zeros(n_local, 0.0f), back(n_local);
        be->upload(local, zeros.data(), n_local * sizeof(float));
        tp_scatter_tensors(world, *be, m, g.tp_rank, tp, [&](size_t i, float* out) {
          std::memcpy(out, full.data() + tensors[i].offset, tensors[i].numel * sizeof(float));
        }, local);
        be->download(back.data(), local, n_local * sizeof(float));
        me.check(back == host, what + ": scattered piece = tp_slice", std::to_string(n_local) + " floats");
        be->free(local);
        if (g.tp_rank == 0)
          me.check(equal == tensors.size(), what + ": tensors assembled", std::to_string(equal) + " of " + std::to_string(tensors.size()) + " equal");
        else
          me.check(wrong_rank == 0, what + ": nullptr off TP rank 0", std::to_string(wrong_rank));
      }
    }});
  }

  int bad = 0;
  for (const auto& sc : scenarios) {
    const int b = run(sc);
    std::printf("%s %s: %d of %d ranks failed\n", b ? "FAIL" : "ok", sc.name.c_str(), b, sc.world);
    bad += b;
  }
  std::printf("%s\n", bad ? "FAILED" : "PASSED");
  return bad ? 1 : 0;
}
