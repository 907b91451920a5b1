#include "engine/dist/nccl_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "engine/common/error.h"
#include "engine/dist/kv_store.h"
#include "engine/ops/backend.h"

namespace td::dist {
namespace {

constexpr const char* kIdKey = "nccl/unique_id";

// Wraps the module's communicator: owns the rendezvous store, knows the hosts, and turns a
// failure into a message naming the rank at fault (as the Gloo communicator does).
class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(Backend& backend, const DistEnv& env, const CommOptions& opt)
      : root_(this), prefix_("nccl"), rank_(env.rank), world_(env.world_size), timeout_s_(opt.timeout_s) {
    for (int r = 0; r < world_; r++) members_.push_back(r);
    const auto timeout = std::chrono::milliseconds((long long)(opt.timeout_s * 1000));
    Rendezvous rv = rendezvous(env, timeout);
    server_ = std::move(rv.server);
    store_ = std::move(rv.store);
    hosts_ = std::move(rv.hosts);
    // NCCL's unique id: made by rank 0, read by the others from the store. A first byte of 1
    // marks the id, 0 rank 0's error (so that the others fail at once with its reason).
    // NCCL's sockets: the interface named for the ranks' traffic, unless NCCL_SOCKET_IFNAME is
    // set already (NCCL reads it when it first starts, below).
    const std::string ifname = !opt.gloo_ifname.empty() ? opt.gloo_ifname : env.gloo_ifname;
    if (!ifname.empty() && !std::getenv("NCCL_SOCKET_IFNAME")) ::setenv("NCCL_SOCKET_IFNAME", ifname.c_str(), 0);
    std::vector<unsigned char> id;
    if (rank_ == 0) {
      std::string error;
      try {
        id = nccl_unique_id();
      } catch (const std::exception& e) {
        error = e.what();
      }
      const std::string payload = error.empty() ? std::string(id.begin(), id.end()) : error;
      std::vector<char> value(1 + payload.size());
      value[0] = error.empty() ? 1 : 0;
      std::memcpy(value.data() + 1, payload.data(), payload.size());
      store_->set(kIdKey, value);
      if (!error.empty()) {
        // Keep the store up until the others have read the reason (at most 10 s).
        std::vector<std::string> read;
        for (int r = 1; r < world_; r++) read.push_back("nccl/read/" + std::to_string(r));
        const auto until = std::chrono::steady_clock::now() + std::min<std::chrono::milliseconds>(timeout, std::chrono::seconds(10));
        while (std::chrono::steady_clock::now() < until && !store_->missing(read).empty())
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        fail(error);
      }
    } else {
      std::vector<char> value;
      try {
        value = store_->get(kIdKey);
      } catch (const std::exception& e) {
        failed_ = true;
        fail_with_culprit("NCCL rendezvous: rank 0 did not publish the NCCL id", e.what());
      }
      store_->set("nccl/read/" + std::to_string(rank_), std::vector<char>(1, 1));
      if (value.empty() || value[0] != 1)
        fail("rank 0 could not start NCCL: " + (value.size() > 1 ? std::string(value.begin() + 1, value.end()) : std::string("no reason given")));
      id.assign(value.begin() + 1, value.end());
    }
    try {
      inner_ = make_nccl_device_communicator(backend, rank_, world_, id, opt.timeout_s);
    } catch (const std::exception& e) {
      failed_ = true;
      fail_with_culprit("NCCL could not connect the " + std::to_string(world_) + " ranks", e.what());
    }
  }

  // A group split from parent's world: `members` its ranks' world ranks in its rank order, this
  // rank `rank` of them, `inner` the module's communicator made by ncclCommSplit.
  NcclCommunicator(NcclCommunicator& parent, std::string prefix, std::vector<int> members, int rank, std::unique_ptr<Communicator> inner)
      : root_(parent.root_), prefix_(std::move(prefix)), members_(std::move(members)), rank_(rank), world_((int)members_.size()),
        timeout_s_(parent.timeout_s_), inner_(std::move(inner)) {
    for (int m : members_) hosts_.push_back(root_->hosts_[(size_t)m]);
  }

  ~NcclCommunicator() override {
    if (root_ != this) {
      inner_.reset();  // a group: NCCL frees its communicator; the store is the world's
      return;
    }
    if (!failed_ && inner_) {
      // Leave together: rank 0's store must outlive the others' last requests, and NCCL's
      // finalize waits for every rank.
      try {
        inner_->barrier();
      } catch (const std::exception&) {
        failed_ = true;
      }
    }
    inner_.reset();
    if (!failed_) store_->bye();
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string backend() const override { return "nccl"; }

  void all_reduce(float* data, size_t count, ReduceOp op) override {
    run("all_reduce", [&] { inner_->all_reduce(data, count, op); });
  }
  void reduce_scatter(float* data, size_t count, ReduceOp op) override {
    run("reduce_scatter", [&] { inner_->reduce_scatter(data, count, op); });
  }
  void all_gather(float* data, size_t count) override {
    run("all_gather", [&] { inner_->all_gather(data, count); });
  }
  void broadcast(void* data, size_t bytes, int root) override {
    run("broadcast", [&] { inner_->broadcast(data, bytes, root); });
  }
  void barrier() override {
    run("barrier", [&] { inner_->barrier(); });
  }

  // The ranks exchange (color, key) through the store (split_plan, as Gloo's split), so that
  // every rank knows its group's members and hosts; then ncclCommSplit (the module's split,
  // collective over this communicator: a rank alone in its group takes part with
  // NCCL_SPLIT_NOCOLOR and gets a LocalCommunicator).
  std::unique_ptr<Communicator> split(int color, int key) override {
    check_split_color(color);
    if (root_->failed_) fail("split: the NCCL communicator failed earlier; the run must end");
    const std::string base = prefix_ + "/split" + std::to_string(splits_++);
    SplitPlan plan;
    try {
      plan = split_plan(*root_->store_, base, rank_, members_, color, key, std::chrono::milliseconds((long long)(timeout_s_ * 1000)));
    } catch (const std::exception& e) {
      root_->failed_ = true;
      fail_with_culprit("split on rank " + std::to_string(members_[(size_t)rank_]) + " failed", e.what());
    }
    std::vector<int> members;
    for (int m : plan.members) members.push_back(members_[(size_t)m]);
    std::unique_ptr<Communicator> inner;
    try {
      inner = inner_->split(members.size() == 1 ? -1 : color, key);
    } catch (const std::exception& e) {
      root_->failed_ = true;
      fail_with_culprit("split (ncclCommSplit) on rank " + std::to_string(members_[(size_t)rank_]) + " failed", e.what());
    }
    if (members.size() == 1) return std::make_unique<LocalCommunicator>(root_->hosts_[(size_t)members[0]]);
    if (!inner || inner->world_size() != (int)members.size() || inner->rank() != plan.index)
      fail("split: ncclCommSplit made a group of " + std::to_string(inner ? inner->world_size() : 0) + " ranks (this one " +
           std::to_string(inner ? inner->rank() : -1) + "), not the " + std::to_string(members.size()) + " (this one " +
           std::to_string(plan.index) + ") the ranks' colors and keys give");
    return std::make_unique<NcclCommunicator>(*this, base + "/" + std::to_string(color), std::move(members), plan.index, std::move(inner));
  }

 protected:
  // Adds what the module's communicator counted since the last call (so that reset_stats(),
  // which zeroes stats_ only, works as documented).
  void settle_stats() override {
    if (!inner_) return;
    const CommStats& now = inner_->stats();
    stats_.calls += now.calls - seen_.calls;
    stats_.bytes_sent += now.bytes_sent - seen_.bytes_sent;
    stats_.bytes_received += now.bytes_received - seen_.bytes_received;
    stats_.seconds += now.seconds - seen_.seconds;
    stats_.bus_bytes += now.bus_bytes - seen_.bus_bytes;
    for (int k = 0; k < kCollectiveKinds; k++) {
      stats_.by_kind[k].calls += now.by_kind[k].calls - seen_.by_kind[k].calls;
      stats_.by_kind[k].bytes_sent += now.by_kind[k].bytes_sent - seen_.by_kind[k].bytes_sent;
      stats_.by_kind[k].seconds += now.by_kind[k].seconds - seen_.by_kind[k].seconds;
    }
    seen_ = now;
  }

 private:
  template <class F>
  void run(const char* kind, F&& f) {
    if (root_->failed_) fail(std::string(kind) + ": the NCCL communicator failed earlier; the run must end");
    try {
      f();
    } catch (const std::exception& e) {
      root_->failed_ = true;
      std::string where = "rank " + std::to_string(members_[(size_t)rank_]);
      if (root_ != this) {
        where += " (rank " + std::to_string(rank_) + " of the group of world ranks ";
        for (size_t i = 0; i < members_.size(); i++) where += (i ? ", " : "") + std::to_string(members_[i]);
        where += ")";
      }
      fail_with_culprit(std::string(kind) + " on " + where + " failed", e.what());
    }
  }

  // "<what>: <rank at fault> [nccl: <detail>]", as the Gloo communicator words it (a group names
  // its own lost members when one of them is lost, by world rank).
  [[noreturn]] void fail_with_culprit(const std::string& what, const std::string& detail) {
    std::vector<LostRank> lost =
        diagnose_members(root_->store_.get(), root_->hosts_, members_[(size_t)rank_], root_ != this ? members_ : std::vector<int>{});
    const std::string who = describe(lost);
    throw CollectiveError(what + ": " +
         (who.empty() ? "no rank looks dead or frozen (a rank may be slower than train.dist_timeout_s = " + std::to_string((int)timeout_s_) +
                            " s; raise it)"
                      : who) +
         " [nccl: " + detail + "]", std::move(lost));
  }

  NcclCommunicator* root_;     // the world this communicator belongs to (itself for the world)
  std::string prefix_;         // its keys in the store: "nccl" (world), "nccl/split0/1", ...
  std::vector<int> members_;   // world rank of each of its ranks
  int rank_, world_;
  double timeout_s_;
  std::unique_ptr<KvServer> server_;  // the world's, on rank 0; destroyed last
  std::unique_ptr<KvClient> store_;   // the world's
  std::unique_ptr<Communicator> inner_;  // the module's
  CommStats seen_;                       // inner_'s figures at the last settle_stats()
  int splits_ = 0;                       // split() calls so far (names each one's keys)
  bool failed_ = false;                  // the world's is the tree's
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Backend& backend, const DistEnv& env, const CommOptions& opt) {
  if (backend.name().rfind("cuda", 0) != 0)
    fail("the NCCL communicator needs a CUDA backend (train.device = \"cuda\"), not " + backend.name());
  return std::make_unique<NcclCommunicator>(backend, env, opt);
}

}  // namespace td::dist
