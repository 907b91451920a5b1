#include "engine/dist/gloo_communicator.h"

#include <netdb.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "engine/common/error.h"
#include "engine/dist/kv_store.h"

namespace td::dist {
namespace {

using clk = std::chrono::steady_clock;

bool is_loopback(const std::string& a) { return a == "localhost" || a.rfind("127.", 0) == 0 || a == "::1"; }

// Whether `host` resolves here (Debian's Gloo crashes in CreateDevice when it does not: seen
// with a Slurm node whose name only slurmctld knows).
bool resolves(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (res) freeaddrinfo(res);
  return rc == 0;
}

// The world communicator (made by make_gloo_communicator) and the groups split from it are one
// class: a group shares its world's rendezvous store (for split keys and for naming a lost
// rank), its TCP device and its failure flag (`root_`), and has a Gloo context of its own.
class GlooCommunicator : public Communicator {
 public:
  // The world: rendezvous, then Gloo's full mesh through the store (keys "gloo/...").
  GlooCommunicator(const DistEnv& env, const CommOptions& opt)
      : root_(this), prefix_("gloo"), rank_(env.rank), world_(env.world_size),
        timeout_(std::chrono::milliseconds((long long)(opt.timeout_s * 1000))) {
    Rendezvous rv = rendezvous(env, timeout_);
    server_ = std::move(rv.server);
    store_ = std::move(rv.store);
    hosts_ = std::move(rv.hosts);
    for (int r = 0; r < world_; r++) members_.push_back(r);
    const std::string host = hosts_[(size_t)rank_];
    gloo::transport::tcp::attr attr;
    std::string ifname = !opt.gloo_ifname.empty() ? opt.gloo_ifname : env.gloo_ifname;
    if (!ifname.empty()) attr.iface = ifname;
    else attr.hostname = is_loopback(env.master_addr) ? "127.0.0.1" : host;
    if (ifname.empty() && !resolves(attr.hostname))
      fail("rank " + std::to_string(rank_) + ": this host's name '" + attr.hostname +
           "' does not resolve to an address, so Gloo cannot tell the other ranks where to connect; set "
           "TRAINDECK_GLOO_IFNAME (or train.dist_ifname) to the interface the ranks reach each other on, or "
           "make the name resolve (/etc/hosts, DNS)");
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(rank_, world_);
      ctx->setTimeout(timeout_);
      gloo::rendezvous::PrefixStore prefixed(prefix_, *store_);
      ctx->connectFullMesh(prefixed, device_);
      ctx_ = ctx;
    } catch (const std::exception& e) {
      fail("Gloo could not connect the ranks" + std::string(ifname.empty() ? "" : " over interface '" + ifname + "'") + ": " + e.what() +
           "; set TRAINDECK_GLOO_IFNAME (or train.dist_ifname) to an interface every rank can reach");
    }
  }

  // A group of parent's world: `members` its ranks' world ranks in its rank order, this rank
  // `rank` of them, `ctx` its connected context, `prefix` its store prefix.
  GlooCommunicator(GlooCommunicator& parent, std::string prefix, std::vector<int> members, int rank, std::shared_ptr<gloo::Context> ctx)
      : root_(parent.root_), prefix_(std::move(prefix)), members_(std::move(members)), rank_(rank), world_((int)members_.size()),
        timeout_(parent.timeout_), device_(parent.device_), ctx_(std::move(ctx)) {
    for (int m : members_) hosts_.push_back(root_->hosts_[(size_t)m]);
  }

  ~GlooCommunicator() override {
    if (root_ != this) return;  // a group: its context closes; the store is the world's
    if (!failed_) {
      // Leave together: rank 0's store must outlive the others' last requests.
      try {
        barrier();
      } catch (const std::exception&) {
      }
      store_->bye();
    }
  }

  // The ranks exchange (color, key) through the store (split_plan; no collective of this
  // communicator, so its stats do not change), then each group connects a Gloo context of its own
  // over the store under "<prefix>/split<n>/<color>", on this process's TCP device.
  std::unique_ptr<Communicator> split(int color, int key) override {
    check_split_color(color);
    if (root_->failed_) fail("split: the communicator failed earlier; the run must end");
    const auto t0 = clk::now();
    const std::string base = prefix_ + "/split" + std::to_string(splits_++);
    SplitPlan plan;
    try {
      plan = split_plan(*root_->store_, base, rank_, members_, color, key, timeout_);
    } catch (const std::exception& e) {
      lose("split", t0, e.what());
    }
    std::vector<int> members;
    for (int m : plan.members) members.push_back(members_[(size_t)m]);
    if (members.size() == 1) return std::make_unique<LocalCommunicator>(root_->hosts_[(size_t)members[0]]);
    std::shared_ptr<gloo::Context> ctx;
    try {
      auto c = std::make_shared<gloo::rendezvous::Context>(plan.index, (int)members.size());
      c->setTimeout(timeout_);
      gloo::rendezvous::PrefixStore prefixed(base + "/" + std::to_string(color), *root_->store_);
      c->connectFullMesh(prefixed, device_);
      ctx = c;
    } catch (const std::exception& e) {
      lose("split", t0, e.what());
    }
    return std::make_unique<GlooCommunicator>(*this, base + "/" + std::to_string(color), std::move(members), plan.index, std::move(ctx));
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string backend() const override { return "gloo"; }

  void all_reduce(float* data, size_t count, ReduceOp op) override {
    run("all_reduce", count * sizeof(float), [&] {
      gloo::AllreduceOptions o(ctx_);
      o.setOutput(data, count);
      o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      o.setTag(next_tag());
      o.setTimeout(timeout_);
      gloo::allreduce(o);
      if (op == ReduceOp::avg) {
        const float s = 1.0f / (float)world_;
        for (size_t i = 0; i < count; i++) data[i] *= s;
      }
    });
  }

  // Ring reduce-scatter: at step s (0 .. n-2) rank r sends chunk (r-s-1) mod n to r+1 and adds
  // chunk (r-s-2) mod n received from r-1; after n-1 steps chunk r holds the sum of all ranks.
  void reduce_scatter(float* data, size_t count, ReduceOp op) override {
    run("reduce_scatter", count * sizeof(float), [&] {
      const int n = world_, r = rank_;
      size_t max_chunk = 0;
      for (int c = 0; c < n; c++) {
        auto [lo, hi] = shard_range(count, c, n);
        max_chunk = std::max(max_chunk, hi - lo);
      }
      scratch_.resize(std::max<size_t>(max_chunk, 1));
      auto send_buf = ctx_->createUnboundBuffer(data, count * sizeof(float));
      auto recv_buf = ctx_->createUnboundBuffer(scratch_.data(), scratch_.size() * sizeof(float));
      const uint64_t slot = (uint64_t)ctx_->nextSlot();
      const int right = (r + 1) % n, left = (r + n - 1) % n;
      for (int s = 0; s < n - 1; s++) {
        auto [slo, shi] = shard_range(count, ((r - s - 1) % n + n) % n, n);
        auto [rlo, rhi] = shard_range(count, ((r - s - 2) % n + n) % n, n);
        if (shi > slo) send_buf->send(right, slot, slo * sizeof(float), (shi - slo) * sizeof(float));
        if (rhi > rlo) recv_buf->recv(left, slot, 0, (rhi - rlo) * sizeof(float));
        if (rhi > rlo) {
          wait_recv(*recv_buf);
          float* dst = data + rlo;
          for (size_t i = 0; i < rhi - rlo; i++) dst[i] += scratch_[i];
        }
        if (shi > slo) wait_send(*send_buf);
      }
      if (op == ReduceOp::avg) {
        auto [lo, hi] = shard_range(count, r, n);
        const float sc = 1.0f / (float)n;
        for (size_t i = lo; i < hi; i++) data[i] *= sc;
      }
    });
  }

  // Ring all-gather: at step s rank r sends chunk (r-s) mod n to r+1 and receives chunk
  // (r-s-1) mod n from r-1 in place.
  void all_gather(float* data, size_t count) override {
    run("all_gather", count * sizeof(float), [&] {
      const int n = world_, r = rank_;
      auto send_buf = ctx_->createUnboundBuffer(data, count * sizeof(float));
      auto recv_buf = ctx_->createUnboundBuffer(data, count * sizeof(float));
      const uint64_t slot = (uint64_t)ctx_->nextSlot();
      const int right = (r + 1) % n, left = (r + n - 1) % n;
      for (int s = 0; s < n - 1; s++) {
        auto [slo, shi] = shard_range(count, ((r - s) % n + n) % n, n);
        auto [rlo, rhi] = shard_range(count, ((r - s - 1) % n + n) % n, n);
        if (shi > slo) send_buf->send(right, slot, slo * sizeof(float), (shi - slo) * sizeof(float));
        if (rhi > rlo) recv_buf->recv(left, slot, rlo * sizeof(float), (rhi - rlo) * sizeof(float));
        if (rhi > rlo) wait_recv(*recv_buf);
        if (shi > slo) wait_send(*send_buf);
      }
    });
  }

  void broadcast(void* data, size_t bytes, int root) override {
    run("broadcast", bytes, [&] {
      gloo::BroadcastOptions o(ctx_);
      o.setOutput(static_cast<uint8_t*>(data), bytes);
      o.setRoot(root);
      o.setTag(next_tag());
      o.setTimeout(timeout_);
      gloo::broadcast(o);
    }, root);
  }

  void barrier() override {
    run("barrier", 0, [&] {
      gloo::BarrierOptions o(ctx_);
      o.setTag(next_tag());
      o.setTimeout(timeout_);
      gloo::barrier(o);
    });
  }

 private:
  uint32_t next_tag() { return tag_++; }
  void wait_recv(gloo::transport::UnboundBuffer& b) {
    if (!b.waitRecv(nullptr, timeout_)) throw gloo::IoException("receive aborted");
  }
  void wait_send(gloo::transport::UnboundBuffer& b) {
    if (!b.waitSend(nullptr, timeout_)) throw gloo::IoException("send aborted");
  }

  // Runs one collective, times and counts it; a Gloo failure becomes a CollectiveError naming
  // the rank at fault (from the store's liveness table) when it can be told.
  template <class F>
  void run(const char* kind, size_t bytes, F&& f, int root = -1) {
    if (root_->failed_) fail(std::string(kind) + ": the communicator failed earlier; the run must end");
    auto t0 = clk::now();
    try {
      f();
    } catch (const std::exception& e) {
      lose(kind, t0, e.what());
    }
    if (std::strcmp(kind, "barrier") != 0) account(kind, bytes, std::chrono::duration<double>(clk::now() - t0).count(), root);
  }

  // Marks the whole tree failed and throws the CollectiveError for `kind` begun at t0: the ranks
  // at fault by world rank and host (a group's own members first: when one of them is lost, the
  // others are not named), else why no rank can be blamed.
  [[noreturn]] void lose(const std::string& kind, clk::time_point t0, std::string what) {
    root_->failed_ = true;
    const double waited = std::chrono::duration<double>(clk::now() - t0).count();
    const int me = members_[(size_t)rank_];
    std::vector<LostRank> lost =
        diagnose_members(root_->store_.get(), root_->hosts_, me, root_ != this ? members_ : std::vector<int>{});
    const std::string who = describe(lost);
    if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    std::string where = "rank " + std::to_string(me);
    if (root_ != this) {
      where += " (rank " + std::to_string(rank_) + " of the group of world ranks ";
      for (size_t i = 0; i < members_.size(); i++) where += (i ? ", " : "") + std::to_string(members_[i]);
      where += ")";
    }
    const std::string w = std::to_string(waited);
    throw CollectiveError(kind + " on " + where + " failed after " + w.substr(0, w.find('.') + 2) + " s: " +
                              (who.empty() ? "no rank looks dead or frozen (a rank may be slower than train.dist_timeout_s = " +
                                                 std::to_string((int)(timeout_.count() / 1000)) + " s; raise it)"
                                           : who) +
                              " [gloo: " + what + "]",
                          std::move(lost));
  }

  GlooCommunicator* root_;  // the world this communicator belongs to (itself for the world)
  std::string prefix_;      // its keys in the store: "gloo" (world), "gloo/split0/1", ...
  std::vector<int> members_;  // world rank of each of its ranks
  int rank_, world_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<KvServer> server_;  // the world's, on rank 0
  std::unique_ptr<KvClient> store_;   // the world's
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> ctx_;
  std::vector<float> scratch_;
  uint32_t tag_ = 1;
  int splits_ = 0;       // split() calls so far (names each one's keys)
  bool failed_ = false;  // the world's is the tree's
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const DistEnv& env, const CommOptions& opt) {
  return std::make_unique<GlooCommunicator>(env, opt);
}

}  // namespace td::dist
