// bench_allreduce: Gloo all-reduce between 2 local ranks through the engine's Communicator beside
// a bare Gloo loop in the same run, then a 2-rank training run's scaling efficiency against 1 rank
// with the same per-rank batch (README.md beside this file explains every figure).
//
//   bench_allreduce [--engine PATH] [--sizes 1,4,16,64,256] [--steps 60] [--no-train] [--no-gloo]
//
// Part 1. The program starts itself twice (ranks 0 and 1, TRAINDECK_* environment as
// `traindeck-engine launch` sets it). Each rank builds the engine's GlooCommunicator (rendezvous
// through the engine's KvServer) and, next to it, a bare Gloo context: tcp device bound to
// 127.0.0.1 (the address the engine picks for loopback ranks), gloo::rendezvous::FileStore, full
// mesh. Per size (MiB = 2^20 bytes of float32) both run the same buffer, interleaved call by call
// (the order alternates): a barrier of the same library, then one timed sum all-reduce with
// Gloo's ring algorithm: Communicator::all_reduce for the engine, gloo::allreduce with
// AllreduceOptions for bare. Time per call = mean over the ranks (nccl-tests' default `-a 1`),
// then the median over the calls. algbw = S / t, busbw = algbw * 2(n-1)/n (nccl-tests,
// doc/PERFORMANCE.md), GB/s = 1e9 bytes/s.
//
// Part 2. `traindeck-engine train` with one rank, then `traindeck-engine launch --nproc 2 --
// train` with the same config (so the same per-rank micro batch: the global batch doubles), one
// thread per rank; tokens/s from the step events (median over steps after the first few),
// efficiency = tokens/s(2 ranks) / (2 * tokens/s(1 rank)), and each rank's comm_ms and busbw_gb_s
// from the step events' `ranks` (docs/events.md).
//
// Exit status 0 when every run completed and the all-reduce results were right; timings never
// fail it.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <nlohmann/json.hpp>

#include "engine/dist/communicator.h"
#include "engine/dist/env.h"
#include "engine/dist/gloo_communicator.h"
#include "engine/dist/launch.h"

extern char** environ;

namespace fs = std::filesystem;
using json = nlohmann::json;
using clk = std::chrono::steady_clock;

namespace {

constexpr int kWorld = 2;
constexpr double kMiB = 1048576.0;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Timed calls per size: enough for a stable median, the whole part 1 well under a minute.
int iterations_for(double bytes) {
  if (bytes <= 1.5 * kMiB) return 80;
  if (bytes <= 6 * kMiB) return 60;
  if (bytes <= 24 * kMiB) return 30;
  if (bytes <= 96 * kMiB) return 15;
  return 7;
}

std::string self_exe() { return fs::read_symlink("/proc/self/exe").string(); }

// Starts argv[0] with `env_set` added to (or replacing in) this environment, `env_unset` removed,
// stdout and stderr to the given files. Returns the pid; exits the program when it cannot start.
pid_t spawn(const std::vector<std::string>& args, const std::map<std::string, std::string>& env_set,
            const std::vector<std::string>& env_unset, const std::string& out_path, const std::string& err_path) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    if (env_set.count(key) || std::find(env_unset.begin(), env_unset.end(), key) != env_unset.end()) continue;
    env.push_back(kv);
  }
  for (const auto& [k, v] : env_set) env.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    std::fprintf(stderr, "bench_allreduce: cannot start %s: %s\n", args[0].c_str(), std::strerror(rc));
    std::exit(2);
  }
  return pid;
}

// Waits for every pid, at most timeout_s in all (then SIGKILLs the rest). Returns the exit
// statuses (128 + S for a signal S, 124 for a timeout); cpu_s (if given) gets each child's user +
// system CPU seconds, its waited-for descendants included (wait4's rusage: launch's ranks count).
std::vector<int> wait_all(const std::vector<pid_t>& pids, double timeout_s, std::vector<double>* cpu_s = nullptr) {
  if (cpu_s) cpu_s->assign(pids.size(), 0);
  std::vector<int> rc(pids.size(), -1);
  const auto deadline = clk::now() + std::chrono::duration<double>(timeout_s);
  size_t left = pids.size();
  while (left > 0) {
    for (size_t i = 0; i < pids.size(); i++) {
      if (rc[i] != -1) continue;
      int st = 0;
      rusage ru{};
      if (wait4(pids[i], &st, WNOHANG, &ru) == pids[i]) {
        rc[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (cpu_s)
          (*cpu_s)[i] = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
        left--;
      }
    }
    if (left > 0 && clk::now() > deadline) {
      for (size_t i = 0; i < pids.size(); i++)
        if (rc[i] == -1) {
          kill(pids[i], SIGKILL);
          waitpid(pids[i], nullptr, 0);
          rc[i] = 124;
        }
      break;
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return rc;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string tail_of(const std::string& path, size_t n = 1500) {
  std::string s = slurp(path);
  return s.size() > n ? "..." + s.substr(s.size() - n) : s;
}

std::vector<double> parse_sizes(const std::string& s) {
  std::vector<double> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end || !(v > 0)) {
      std::fprintf(stderr, "bench_allreduce: --sizes wants MiB values separated by commas, e.g. 1,4,16 (got '%s')\n", s.c_str());
      std::exit(2);
    }
    out.push_back(v);
  }
  return out;
}

// ---- part 1, one rank ---------------------------------------------------------------------------

// One rank of part 1 (started by the parent with TRAINDECK_* set). Writes `dir`/rank<r>.txt:
//   time <bytes> <engine|bare> <iter> <seconds>
//   stats <bytes> <calls> <seconds> <bus_bytes>     (the engine's CommStats over the timed calls)
//   check <bytes> <engine|bare> <ok|wrong>
int worker(const std::string& dir, const std::vector<double>& sizes_mib) {
  const td::dist::DistEnv env = td::dist::read_dist_env();
  td::dist::CommOptions co;
  co.timeout_s = 120;
  auto comm = td::dist::make_gloo_communicator(env, co);
  const int rank = comm->rank(), n = comm->world_size();

  // The bare side: a Gloo context of its own on the same transport and address.
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(dir + "/gloo-store");
  auto bctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
  bctx->setTimeout(std::chrono::seconds(120));
  bctx->connectFullMesh(store, dev);
  uint32_t tag = 1u << 20;  // the engine's context is separate; any tags will do
  auto bare_barrier = [&] {
    gloo::BarrierOptions o(bctx);
    o.setTag(tag++);
    gloo::barrier(o);
  };
  auto bare_all_reduce = [&](float* data, size_t count) {
    gloo::AllreduceOptions o(bctx);
    o.setOutput(data, count);
    o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    o.setTag(tag++);
    o.setTimeout(std::chrono::seconds(120));
    gloo::allreduce(o);
  };

  std::ofstream out(dir + "/rank" + std::to_string(rank) + ".txt");
  for (double mib : sizes_mib) {
    const size_t count = std::max<size_t>(1, (size_t)(mib * kMiB / sizeof(float)));
    const size_t bytes = count * sizeof(float);
    std::vector<float> buf(count);
    // Correctness once per side: rank r holds r + 1 + (i mod 5); the sum over 2 ranks is 3 + 2 (i mod 5).
    auto check = [&](const char* kind, auto&& call) {
      for (size_t i = 0; i < count; i++) buf[i] = (float)(rank + 1 + (int)(i % 5));
      call();
      bool ok = true;
      for (size_t i = 0; i < count && ok; i++) {
        float want = 0;
        for (int r = 0; r < n; r++) want += (float)(r + 1 + (int)(i % 5));
        ok = buf[i] == want;
      }
      out << "check " << bytes << ' ' << kind << ' ' << (ok ? "ok" : "wrong") << '\n';
    };
    auto engine_call = [&] { comm->all_reduce(buf.data(), count, td::dist::ReduceOp::sum); };
    auto bare_call = [&] { bare_all_reduce(buf.data(), count); };
    check("engine", engine_call);
    check("bare", bare_call);
    // Small values: repeated sums double them each call, far from overflow in 100 calls.
    std::fill(buf.begin(), buf.end(), 1e-6f);
    comm->barrier();
    engine_call();  // one more warm-up each
    bare_barrier();
    bare_call();
    comm->reset_stats();
    const int iters = iterations_for((double)bytes);
    for (int it = 0; it < iters; it++) {
      for (int k = 0; k < 2; k++) {
        const bool eng = (k == 0) == (it % 2 == 0);  // alternate which side goes first
        if (eng) comm->barrier(); else bare_barrier();
        const auto t0 = clk::now();
        if (eng) engine_call(); else bare_call();
        const double s = std::chrono::duration<double>(clk::now() - t0).count();
        out << "time " << bytes << ' ' << (eng ? "engine" : "bare") << ' ' << it << ' ' << s << '\n';
      }
    }
    const auto& st = comm->stats();
    out << "stats " << bytes << ' ' << st.calls << ' ' << st.seconds << ' ' << st.bus_bytes << '\n';
    out.flush();
  }
  bare_barrier();
  return 0;
}

// ---- part 1, the parent -------------------------------------------------------------------------

bool part1(const std::string& tmp, const std::vector<double>& sizes_mib) {
  std::printf("== Part 1: all-reduce (sum, float32, Gloo ring), %d ranks on this machine, TCP over 127.0.0.1 ==\n", kWorld);
  std::printf("Gloo's own benchmark (gloo/benchmark) is not in Debian: libgloo-dev and libgloo0 ship the\n"
              "library, headers and docs only, so the reference is a bare gloo::allreduce loop in this run.\n");
  const std::string dir = tmp + "/allreduce";
  fs::create_directories(dir + "/gloo-store");
  std::string sizes;
  for (double s : sizes_mib) {
    if (!sizes.empty()) sizes += ',';
    sizes += std::to_string(s);
  }
  const int port = td::dist::pick_free_port();
  std::vector<pid_t> pids;
  for (int r = 0; r < kWorld; r++) {
    std::map<std::string, std::string> env = {{"TRAINDECK_RANK", std::to_string(r)},
                                              {"TRAINDECK_WORLD_SIZE", std::to_string(kWorld)},
                                              {"TRAINDECK_LOCAL_RANK", std::to_string(r)},
                                              {"TRAINDECK_LOCAL_WORLD_SIZE", std::to_string(kWorld)},
                                              {"TRAINDECK_MASTER_ADDR", "127.0.0.1"},
                                              {"TRAINDECK_MASTER_PORT", std::to_string(port)}};
    pids.push_back(spawn({self_exe(), "--worker", dir, "--sizes", sizes}, env, {"TRAINDECK_GLOO_IFNAME"},
                         dir + "/out" + std::to_string(r), dir + "/err" + std::to_string(r)));
  }
  const auto rc = wait_all(pids, 240);
  for (int r = 0; r < kWorld; r++)
    if (rc[r] != 0) {
      std::printf("rank %d ended with status %d%s:\n%s\n", r, rc[r], rc[r] == 124 ? " (timed out after 240 s)" : "",
                  tail_of(dir + "/err" + std::to_string(r)).c_str());
      return false;
    }

  // (bytes, kind) -> per-iteration seconds summed over ranks; engine counters per rank.
  std::map<std::pair<size_t, std::string>, std::map<int, double>> t;
  std::map<size_t, std::vector<double>> counter_busbw;
  bool all_ok = true;
  for (int r = 0; r < kWorld; r++) {
    std::ifstream f(dir + "/rank" + std::to_string(r) + ".txt");
    std::string what;
    while (f >> what) {
      size_t bytes = 0;
      f >> bytes;
      if (what == "time") {
        std::string kind;
        int it = 0;
        double s = 0;
        f >> kind >> it >> s;
        t[{bytes, kind}][it] += s / kWorld;
      } else if (what == "stats") {
        double calls = 0, secs = 0, bus = 0;
        f >> calls >> secs >> bus;
        counter_busbw[bytes].push_back(secs > 0 ? bus / secs / 1e9 : 0);
      } else if (what == "check") {
        std::string kind, verdict;
        f >> kind >> verdict;
        if (verdict != "ok") {
          std::printf("WRONG RESULT: %s all-reduce of %zu bytes on rank %d\n", kind.c_str(), bytes, r);
          all_ok = false;
        }
      }
    }
  }
  const double bus_factor = 2.0 * (kWorld - 1) / kWorld;
  std::printf("time per call: mean over the ranks, median over N calls; algbw = S/t, busbw = algbw*2(n-1)/n\n"
              "(nccl-tests doc/PERFORMANCE.md; n = %d, so busbw = algbw); GB/s = 1e9 bytes/s.\n", kWorld);
  std::printf("%8s %4s | %10s %8s %8s | %10s %8s %8s | %12s | %14s\n", "size", "N", "engine ms", "algbw", "busbw",
              "bare ms", "algbw", "busbw", "engine/bare", "engine counter");
  std::printf("%8s %4s | %10s %8s %8s | %10s %8s %8s | %12s | %14s\n", "MiB", "", "", "GB/s", "GB/s", "", "GB/s", "GB/s",
              "busbw", "busbw GB/s");
  for (double mib : sizes_mib) {
    const size_t count = std::max<size_t>(1, (size_t)(mib * kMiB / sizeof(float)));
    const size_t bytes = count * sizeof(float);
    auto med = [&](const std::string& kind) {
      std::vector<double> v;
      for (const auto& [it, s] : t[{bytes, kind}]) v.push_back(s);
      return std::make_pair(median(v), v.size());
    };
    const auto [te, ne] = med("engine");
    const auto [tb, nb] = med("bare");
    const double ae = bytes / te / 1e9, ab = bytes / tb / 1e9;
    const double counter = counter_busbw[bytes].empty()
                               ? 0
                               : std::accumulate(counter_busbw[bytes].begin(), counter_busbw[bytes].end(), 0.0) /
                                     counter_busbw[bytes].size();
    std::printf("%8.3g %4zu | %10.3f %8.3f %8.3f | %10.3f %8.3f %8.3f | %11.3fx | %14.3f\n", mib, std::min(ne, nb),
                te * 1e3, ae, ae * bus_factor, tb * 1e3, ab, ab * bus_factor, (ae * bus_factor) / (ab * bus_factor),
                counter);
  }
  std::printf("engine/bare: ratio of bus bandwidths (1.00x = no engine overhead). engine counter: the\n"
              "Communicator's own CommStats over the timed calls (sum(busbw*t)/sum(t), the figure step events report).\n");
  return all_ok;
}

// ---- part 2: training scaling ------------------------------------------------------------------

// Deterministic English-like text (a small LCG over a word list): the corpus content does not
// matter for speed, only that there are enough tokens.
std::string generated_text(int lines) {
  static const char* words[] = {"the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "and", "runs", "far"};
  std::string t;
  uint64_t x = 12345;
  for (int i = 0; i < lines; i++)
    for (int w = 0; w < 8; w++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      t += words[(x >> 33) % 12];
      t += w == 7 ? ".\n" : " ";
    }
  return t;
}

struct RunFigures {
  bool ok = false;
  std::string error;
  int steps = 0;                   // step events used (after the warm-up)
  double tokens_per_s = 0;         // global, median over steps
  double step_ms = 0;              // median
  std::vector<double> rank_tps, rank_comm_ms, rank_busbw, rank_sent;  // per rank, medians
};

RunFigures read_run(const std::string& events, int warm) {
  RunFigures f;
  std::ifstream in(events);
  if (!in) {
    f.error = "no events file " + events;
    return f;
  }
  std::vector<json> steps;
  std::string line, end_status = "(none)";
  while (std::getline(in, line)) {
    auto e = json::parse(line, nullptr, false);
    if (!e.is_object()) continue;
    if (e.value("type", "") == "step") steps.push_back(e);
    if (e.value("type", "") == "run_end") end_status = e.value("status", "?");
  }
  if (end_status != "completed") {
    f.error = "run_end status " + end_status;
    return f;
  }
  if ((int)steps.size() <= warm) {
    f.error = "only " + std::to_string(steps.size()) + " step events";
    return f;
  }
  steps.erase(steps.begin(), steps.begin() + warm);
  std::vector<double> tps, ms;
  std::vector<std::vector<double>> rt, rc, rb, rs;
  for (const auto& e : steps) {
    tps.push_back(e["tokens_per_s"].get<double>());
    ms.push_back(e["step_ms"].get<double>());
    if (!e.contains("ranks")) continue;
    const auto& ranks = e["ranks"];
    rt.resize(ranks.size()), rc.resize(ranks.size()), rb.resize(ranks.size()), rs.resize(ranks.size());
    for (size_t r = 0; r < ranks.size(); r++) {
      rt[r].push_back(ranks[r].value("tokens_per_s", 0.0));
      rc[r].push_back(ranks[r].value("comm_ms", 0.0));
      rb[r].push_back(ranks[r].value("busbw_gb_s", 0.0));
      rs[r].push_back(ranks[r].value("comm_bytes_sent", 0.0));
    }
  }
  f.ok = true;
  f.steps = (int)steps.size();
  f.tokens_per_s = median(tps);
  f.step_ms = median(ms);
  for (size_t r = 0; r < rt.size(); r++) {
    f.rank_tps.push_back(median(rt[r]));
    f.rank_comm_ms.push_back(median(rc[r]));
    f.rank_busbw.push_back(median(rb[r]));
    f.rank_sent.push_back(median(rs[r]));
  }
  return f;
}

bool part2(const std::string& tmp, const std::string& engine, int steps) {
  std::printf("\n== Part 2: data-parallel training, 2 ranks against 1 rank, same per-rank batch ==\n");
  if (access(engine.c_str(), X_OK) != 0) {
    std::printf("no engine at %s: build traindeck-engine or pass --engine PATH\n", engine.c_str());
    return false;
  }
  const std::string dir = tmp + "/train";
  fs::create_directories(dir);
  std::ofstream(dir + "/corpus.txt") << generated_text(12000);
  const std::vector<std::string> no_dist = {"TRAINDECK_RANK", "TRAINDECK_WORLD_SIZE", "TRAINDECK_LOCAL_RANK",
                                            "TRAINDECK_LOCAL_WORLD_SIZE", "TRAINDECK_MASTER_ADDR",
                                            "TRAINDECK_MASTER_PORT", "TRAINDECK_GLOO_IFNAME"};
  double cpu_s = 0;  // of the last run
  auto run = [&](const std::vector<std::string>& args, const std::string& name) {
    std::vector<double> cpu;
    auto rc = wait_all({spawn(args, {{"OMP_NUM_THREADS", "1"}}, no_dist, dir + "/" + name + ".out", dir + "/" + name + ".err")}, 300, &cpu);
    cpu_s = cpu[0];
    if (rc[0] != 0)
      std::printf("%s ended with status %d:\n%s\n", name.c_str(), rc[0], tail_of(dir + "/" + name + ".err").c_str());
    return rc[0] == 0;
  };
  if (!run({engine, "prepare", "--input", dir + "/corpus.txt", "--out", dir + "/ds", "--tokenizer", "byte", "--quiet"}, "prepare"))
    return false;
  const int micro_batch = 8, seq_len = 128;
  json cfg = {{"model", {{"vocab_size", 257}, {"seq_len", seq_len}, {"n_layer", 2}, {"n_head", 4}, {"d_model", 128}}},
              {"train", {{"threads", 1}, {"steps", steps}, {"lr", 1e-3}, {"warmup", 2}, {"min_lr", 1e-4},
                         {"micro_batch", micro_batch}, {"grad_accum", 1}, {"eval_interval", 0}, {"sample_interval", 0},
                         {"checkpoint_interval", 0}}},
              {"data", {{"path", dir + "/ds"}}}};
  std::ofstream(dir + "/cfg.json") << cfg.dump(2);
  const std::vector<std::string> train = {"train", "--config", dir + "/cfg.json", "--no-events-stdout", "--quiet",
                                          "--peak-flops", "1e10"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  std::printf("model: d_model 128, 2 layers, 4 heads, seq_len %d, byte vocab; micro_batch %d per rank, 1 thread\n"
              "per rank, %d steps (the first %d not counted), AdamW, train.zero = 0 (one gradient all-reduce per step)\n",
              seq_len, micro_batch, steps, std::min(5, steps / 3));
  std::vector<std::string> one = {engine};
  one = with(one, train);
  one = with(one, {"--out", dir + "/run1"});
  std::vector<std::string> two = {engine, "launch", "--quiet", "--nproc", "2", "--"};
  two = with(two, train);
  two = with(two, {"--out", dir + "/run2"});
  const auto t0 = clk::now();
  if (!run(one, "train1")) return false;
  const auto t1 = clk::now();
  const double cpu1 = cpu_s;
  if (!run(two, "train2")) return false;
  const auto t2 = clk::now();
  const double cpu2 = cpu_s;
  const int warm = std::min(5, steps / 3);
  const RunFigures a = read_run(dir + "/run1/events.jsonl", warm), b = read_run(dir + "/run2/events.jsonl", warm);
  if (!a.ok || !b.ok) {
    std::printf("cannot read the runs: %s %s\n", a.error.c_str(), b.error.c_str());
    return false;
  }
  // Tokens per CPU second over the whole process (start-up included): a figure that other jobs on
  // a shared machine disturb far less than wall-clock tokens/s.
  const double tok1 = (double)steps * micro_batch * seq_len, tok2 = 2 * tok1;
  std::printf("%-10s %12s %10s %12s %10s %10s %14s\n", "", "tokens/s", "step ms", "tokens/step", "wall s", "CPU s",
              "tokens/CPU s");
  std::printf("%-10s %12.0f %10.1f %12d %10.1f %10.1f %14.0f\n", "1 rank", a.tokens_per_s, a.step_ms, micro_batch * seq_len,
              std::chrono::duration<double>(t1 - t0).count(), cpu1, tok1 / cpu1);
  std::printf("%-10s %12.0f %10.1f %12d %10.1f %10.1f %14.0f\n", "2 ranks", b.tokens_per_s, b.step_ms,
              2 * micro_batch * seq_len, std::chrono::duration<double>(t2 - t1).count(), cpu2, tok2 / cpu2);
  std::printf("scaling efficiency = tokens/s(2 ranks) / (2 x tokens/s(1 rank)) = %.3f\n",
              b.tokens_per_s / (2 * a.tokens_per_s));
  std::printf("CPU efficiency     = tokens per CPU s (2 ranks) / tokens per CPU s (1 rank) = %.3f\n",
              (tok2 / cpu2) / (tok1 / cpu1));
  std::printf("%-8s %12s %10s %12s %14s %12s\n", "rank", "tokens/s", "comm ms", "comm/step", "sent MB/step", "busbw GB/s");
  for (size_t r = 0; r < b.rank_tps.size(); r++)
    std::printf("%-8zu %12.0f %10.2f %11.1f%% %14.3f %12.3f\n", r, b.rank_tps[r], b.rank_comm_ms[r],
                100 * b.rank_comm_ms[r] / b.step_ms, b.rank_sent[r] / 1e6, b.rank_busbw[r]);
  std::printf("(per rank: medians over %d steps of the step events' ranks[]: comm_ms is the wall time in\n"
              "collectives, waiting for the slower rank included; busbw as nccl-tests over the step's collectives)\n",
              b.steps);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string engine = TD_ENGINE_EXE, worker_dir, sizes_arg = "1,4,16,64,256";
  int steps = 60;
  bool train = true, gloo = true;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_allreduce: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--engine") engine = value();
    else if (a == "--sizes") sizes_arg = value();
    else if (a == "--steps") steps = std::atoi(value().c_str());
    else if (a == "--no-train") train = false;
    else if (a == "--no-gloo") gloo = false;
    else if (a == "--worker") worker_dir = value();
    else {
      std::fprintf(stderr,
                   "usage: bench_allreduce [--engine PATH] [--sizes MiB,MiB,...] [--steps N] [--no-train] [--no-gloo]\n"
                   "  --engine  traindeck-engine for part 2 (default %s)\n", TD_ENGINE_EXE);
      return 2;
    }
  }
  const std::vector<double> sizes = parse_sizes(sizes_arg);
  if (!worker_dir.empty()) {
    try {
      return worker(worker_dir, sizes);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_allreduce worker: %s\n", e.what());
      return 1;
    }
  }
  if (steps < 6) {
    std::fprintf(stderr, "bench_allreduce: --steps must be at least 6\n");
    return 2;
  }
  char tmpl[] = "/tmp/td-bench-allreduce-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 2;
  }
  const std::string tmp = tmpl;
  const unsigned cores = std::thread::hardware_concurrency();
  double load[1] = {0};
  getloadavg(load, 1);
  std::printf("bench_allreduce: %u cores on this machine, load average %.2f before the start (other jobs slow\n"
              "both sides alike in part 1, where the calls are interleaved; in part 2 they hit the 2-rank run harder)\n",
              cores, load[0]);
  bool ok = true;
  if (gloo) ok = part1(tmp, sizes) && ok;
  if (train) ok = part2(tmp, engine, steps) && ok;
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return ok ? 0 : 1;
}
