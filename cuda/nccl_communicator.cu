// The NCCL communicator: td::dist::Communicator (engine/dist/communicator.h) between GPU ranks,
// one GPU per rank, inside libtraindeck-cuda.so. Exported to the engine as two C functions at
// the bottom of this file (engine/ops/backend.h declares them).
//
// NCCL itself is loaded with dlopen ("libnccl.so.2", or $TRAINDECK_NCCL_LIBRARY) the first time
// a run asks for it, not linked: the module then loads, and trains on one GPU, on machines where
// NCCL is not installed. Built without nccl.h (TD_HAVE_NCCL unset), both functions answer
// "this build has no NCCL".
//
// Streams: every collective is enqueued on the CUDA backend's own compute stream. It therefore
// starts after the backward kernels queued before it and ends before the AdamW kernel queued
// after it, with no event or extra synchronisation (the same stream orders them). Device
// buffers are used in place; host buffers (the trainer's small exchanges: losses, flags,
// per-rank figures) are copied to a device staging buffer, reduced there and copied back, and
// that call returns only when the result is in host memory.
//
// Time: two CUDA events around each collective on the stream give its time on the GPU (for
// CommStats); they are read once the GPU has passed them (settle_stats), never waited for.
//
// Failure: the communicator is non-blocking (ncclConfig_t::blocking = 0), so no NCCL call blocks
// the host. A watchdog thread polls every 100 ms: when NCCL reports an asynchronous error (a
// peer's connection broke), or when the oldest collective has been running on the GPU for longer
// than the timeout (train.dist_timeout_s; a peer died or froze and the NCCL kernel waits for
// it for ever), it calls ncclCommAbort, which ends the waiting kernels so that the stream, and a
// host waiting for it, move on. The next call on the communicator throws td::Error with the
// reason; the engine adds which rank is at fault (engine/dist/nccl_communicator.cpp).
#include "cuda/nccl_communicator.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "cuda/common.cuh"
#include "engine/common/error.h"
#include "engine/dist/communicator.h"
#include "engine/ops/backend.h"

#if TD_HAVE_NCCL
#include <nccl.h>

namespace td::cuda {
namespace {

using clk = std::chrono::steady_clock;

// The oldest NCCL with everything used here (non-blocking communicators and ncclCommFinalize
// came in 2.14, ncclGetLastError in 2.13; 2.18 fixed non-blocking init and abort).
constexpr int kMinNcclVersion = 21800;

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

std::string bytes_text(size_t b) {
  char buf[32];
  if (b >= (size_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", (double)b / double(1 << 20));
  else std::snprintf(buf, sizeof buf, "%zu bytes", b);
  return buf;
}

// The NCCL entry points, resolved from the library once per process.
struct NcclApi {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclCommFinalize) CommFinalize = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetLastError) GetLastError = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
  decltype(&::ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&::ncclAllGather) AllGather = nullptr;
  decltype(&::ncclBroadcast) Broadcast = nullptr;
  decltype(&::ncclReduce) Reduce = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
  decltype(&::ncclCommSplit) CommSplit = nullptr;
  decltype(&::ncclCommCount) CommCount = nullptr;
  decltype(&::ncclCommUserRank) CommUserRank = nullptr;
  int version = 0;    // NCCL_VERSION_CODE of the library loaded
  std::string error;  // why it is not usable ("" = usable)
};

const NcclApi& nccl_api() {
  static NcclApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("TRAINDECK_NCCL_LIBRARY");
    const std::string lib = env && *env ? env : "libnccl.so.2";
    const std::string install =
        "install NCCL 2.18 or newer (Debian/Ubuntu: libnccl2; pip: nvidia-nccl-cu13) or put libnccl.so.2 on "
        "LD_LIBRARY_PATH (TRAINDECK_NCCL_LIBRARY may name the file); or train on one GPU";
    void* h = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      api.error = "several GPU ranks need NCCL, and " + lib + " cannot be loaded (" + (e ? e : "?") + "); " + install;
      return;
    }
    std::string missing;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
      if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    sym(api.GetVersion, "ncclGetVersion");
    sym(api.GetUniqueId, "ncclGetUniqueId");
    sym(api.CommInitRankConfig, "ncclCommInitRankConfig");
    sym(api.CommGetAsyncError, "ncclCommGetAsyncError");
    sym(api.CommFinalize, "ncclCommFinalize");
    sym(api.CommDestroy, "ncclCommDestroy");
    sym(api.CommAbort, "ncclCommAbort");
    sym(api.GetErrorString, "ncclGetErrorString");
    sym(api.GetLastError, "ncclGetLastError");
    sym(api.AllReduce, "ncclAllReduce");
    sym(api.ReduceScatter, "ncclReduceScatter");
    sym(api.AllGather, "ncclAllGather");
    sym(api.Broadcast, "ncclBroadcast");
    sym(api.Reduce, "ncclReduce");
    sym(api.GroupStart, "ncclGroupStart");
    sym(api.GroupEnd, "ncclGroupEnd");
    sym(api.CommSplit, "ncclCommSplit");
    sym(api.CommCount, "ncclCommCount");
    sym(api.CommUserRank, "ncclCommUserRank");
    if (!missing.empty()) {
      api.error = lib + " lacks " + missing + " (an NCCL older than 2.18?); " + install;
      return;
    }
    if (api.GetVersion(&api.version) != ncclSuccess || api.version < kMinNcclVersion) {
      const int v = api.version;
      api.error = "the NCCL loaded (" + lib + ", version " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
                  std::to_string(v % 100) + ") is too old: TrainDeck needs 2.18 or newer; " + install;
    }
  });
  return api;
}

// "ncclRemoteError (remote process exited or there was a network error): <NCCL's last error>"
std::string describe(const NcclApi& api, ncclResult_t r, ncclComm_t comm) {
  std::string s = std::string(api.GetErrorString(r));
  const char* last = api.GetLastError(comm);
  if (last && *last) s += ": " + std::string(last);
  switch (r) {
    case ncclRemoteError:
    case ncclSystemError:
      s += " (a peer rank ended, or the network between the ranks failed)";
      break;
    case ncclUnhandledCudaError:
      s += " (a CUDA call inside NCCL failed: see nvidia-smi and dmesg for Xid errors)";
      break;
    case ncclInvalidUsage:
      s += " (two ranks on one GPU? with several ranks per node use train.device = \"cuda\": rank r takes cuda:LOCAL_RANK)";
      break;
    default:
      break;
  }
  return s;
}

bool is_device_memory(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // older drivers say "invalid value" for plain host memory
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

class NcclDeviceCommunicator final : public dist::Communicator {
 public:
  // Joins the NCCL world `id` as `rank` of `world` on GPU `ordinal`, collectives on `stream`.
  // Throws td::Error when NCCL fails or the ranks are not all connected within timeout_s.
  NcclDeviceCommunicator(const NcclApi& api, cudaStream_t stream, int ordinal, int rank, int world, const ncclUniqueId& id,
                         double timeout_s)
      : api_(api), stream_(stream), ordinal_(ordinal), rank_(rank), world_(world),
        timeout_(std::chrono::milliseconds((long long)(timeout_s * 1000))), timeout_s_(timeout_s) {
    bind();
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // no NCCL call blocks the host: the timeout below and the watchdog stay in charge
    config.commName = "traindeck";
    ncclComm_t comm = nullptr;
    ncclResult_t r = api_.CommInitRankConfig(&comm, world_, id, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      const std::string why = describe(api_, r, comm);
      if (comm) api_.CommAbort(comm);
      fail("NCCL could not create its communicator on rank " + std::to_string(rank_) + " (cuda:" + std::to_string(ordinal_) + "): " + why);
    }
    comm_ = comm;
    wait_ready("connecting the " + std::to_string(world_) + " ranks (ncclCommInitRankConfig)");
    watchdog_ = std::thread([this] { watch(); });
  }

  // A group made by ncclCommSplit: `comm` (ready) is rank `rank` of `world`, on the parent's GPU
  // and stream.
  NcclDeviceCommunicator(const NcclApi& api, cudaStream_t stream, int ordinal, int rank, int world, ncclComm_t comm, double timeout_s)
      : api_(api), stream_(stream), ordinal_(ordinal), rank_(rank), world_(world),
        timeout_(std::chrono::milliseconds((long long)(timeout_s * 1000))), timeout_s_(timeout_s) {
    comm_ = comm;
    watchdog_ = std::thread([this] { watch(); });
  }

  ~NcclDeviceCommunicator() override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    if (cudaSetDevice(ordinal_) != cudaSuccess) (void)cudaGetLastError();
    if (comm_) {
      // Orderly end: flush, then free. Finalize waits for the other ranks' ends; a peer that is
      // gone would keep it in progress for ever, hence the deadline and the abort.
      bool clean = !failed_;
      if (clean) {
        const ncclResult_t f = api_.CommFinalize(comm_);
        clean = f == ncclSuccess || f == ncclInProgress;
      }
      const auto deadline = clk::now() + timeout_;
      ncclResult_t st = ncclInProgress;
      while (clean) {
        if (api_.CommGetAsyncError(comm_, &st) != ncclSuccess || (st != ncclInProgress && st != ncclSuccess)) clean = false;
        else if (st == ncclSuccess) break;
        else if (clk::now() > deadline) clean = false;
        else std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (clean) api_.CommDestroy(comm_);
      else api_.CommAbort(comm_);
      comm_ = nullptr;
    }
    if (stream_) (void)cudaStreamSynchronize(stream_);  // nothing may still use the buffers below
    for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
    if (stage_) (void)cudaFree(stage_);
    (void)cudaGetLastError();
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string backend() const override { return "nccl"; }

  void all_reduce(float* data, size_t count, dist::ReduceOp op) override {
    run("all_reduce", data, count * sizeof(float), -1, [&](void* buf, ncclComm_t c) {
      return api_.AllReduce(buf, buf, count, ncclFloat32, red(op), c, stream_);
    });
  }

  // Equal shards (count a multiple of the world size): ncclReduceScatter in place (rank r's
  // shard is already where NCCL's in-place form writes it, buf + r * count / n). Unequal shards
  // (shard_range differs by one element): one ncclReduce per shard to its owner, fused in a
  // group, as PyTorch does for uneven reduce-scatter; no padded copy of the buffer is needed.
  void reduce_scatter(float* data, size_t count, dist::ReduceOp op) override {
    run("reduce_scatter", data, count * sizeof(float), -1, [&](void* buf, ncclComm_t c) {
      float* f = static_cast<float*>(buf);
      if (count % (size_t)world_ == 0) {
        const size_t chunk = count / (size_t)world_;
        return api_.ReduceScatter(f, f + chunk * (size_t)rank_, chunk, ncclFloat32, red(op), c, stream_);
      }
      return group([&](ncclResult_t& first) {
        for (int r = 0; r < world_; r++) {
          auto [lo, hi] = dist::shard_range(count, r, world_);
          if (hi > lo) keep_first(first, api_.Reduce(f + lo, f + lo, hi - lo, ncclFloat32, red(op), r, c, stream_));
        }
      });
    });
  }

  // Equal shards: ncclAllGather in place; unequal: one ncclBroadcast per shard from its owner,
  // fused in a group.
  void all_gather(float* data, size_t count) override {
    run("all_gather", data, count * sizeof(float), -1, [&](void* buf, ncclComm_t c) {
      float* f = static_cast<float*>(buf);
      if (count % (size_t)world_ == 0) {
        const size_t chunk = count / (size_t)world_;
        return api_.AllGather(f + chunk * (size_t)rank_, f, chunk, ncclFloat32, c, stream_);
      }
      return group([&](ncclResult_t& first) {
        for (int r = 0; r < world_; r++) {
          auto [lo, hi] = dist::shard_range(count, r, world_);
          if (hi > lo) keep_first(first, api_.Broadcast(f + lo, f + lo, hi - lo, ncclFloat32, r, c, stream_));
        }
      });
    });
  }

  void broadcast(void* data, size_t bytes, int root) override {
    run("broadcast_ring", data, bytes, root, [&](void* buf, ncclComm_t c) {
      return api_.Broadcast(buf, buf, bytes, ncclUint8, root, c, stream_);
    });
  }

  // ncclCommSplit (collective over this communicator; non-blocking like every call here: the
  // new communicator is polled until ready, within the timeout). color < 0 (the engine passes
  // -1 for a rank alone in its group): NCCL_SPLIT_NOCOLOR, this rank joins no group and gets
  // null. The group inherits this one's configuration (non-blocking) and uses the same stream.
  // Throws td::Error (this communicator is then unusable) when NCCL fails or times out.
  std::unique_ptr<dist::Communicator> split(int color, int key) override {
    if (failed_) fail("split: " + (abort_reason().empty() ? std::string("the NCCL communicator failed earlier") : abort_reason()) +
                      "; the run must end");
    bind();
    ncclComm_t child = nullptr;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!comm_) fail("split: " + abort_reason_);
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      config.commName = "traindeck-group";
      const ncclResult_t r = api_.CommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, &config);
      if (r != ncclSuccess && r != ncclInProgress) {
        const std::string why = "ncclCommSplit on rank " + std::to_string(rank_) + ": " + describe(api_, r, comm_);
        if (child) api_.CommAbort(child);
        abort_locked(why);
        fail(why);
      }
    }
    // Non-blocking: the split runs as an asynchronous job of the parent, which writes `child`
    // (on this stack frame) when it completes; so wait for the parent first (an abort of the
    // parent on a timeout joins that job, so `child` is not written after this frame is gone),
    // then until the child is ready.
    try {
      wait_ready("ncclCommSplit");
    } catch (...) {
      if (child) api_.CommAbort(child);
      throw;
    }
    if (!child) return nullptr;
    const auto deadline = clk::now() + timeout_;
    for (;;) {
      ncclResult_t st = ncclInProgress;
      const ncclResult_t r = api_.CommGetAsyncError(child, &st);
      if (r != ncclSuccess) st = r;
      if (st == ncclSuccess) break;
      if (st != ncclInProgress || clk::now() > deadline) {
        const std::string why = st != ncclInProgress ? "ncclCommSplit on rank " + std::to_string(rank_) + ": " + describe(api_, st, child)
                                                     : "ncclCommSplit did not finish within train.dist_timeout_s = " + seconds_text(timeout_s_) +
                                                           " s (a rank did not take part in the split)";
        api_.CommAbort(child);
        std::lock_guard<std::mutex> lk(mu_);
        abort_locked(why);
        fail(why);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    int n = 0, r = 0;
    if (api_.CommCount(child, &n) != ncclSuccess || api_.CommUserRank(child, &r) != ncclSuccess) {
      api_.CommAbort(child);
      fail("ncclCommSplit on rank " + std::to_string(rank_) + ": the new communicator does not tell its size and rank");
    }
    return std::unique_ptr<dist::Communicator>(new NcclDeviceCommunicator(api_, stream_, ordinal_, r, n, child, timeout_s_));
  }

  // NCCL has no barrier: a one-float all-reduce through host memory, which returns only once
  // the GPU has completed it, i.e. once every rank has entered it.
  void barrier() override {
    float x = 0;
    run("barrier", &x, sizeof x, -1, [&](void* buf, ncclComm_t c) {
      return api_.AllReduce(buf, buf, 1, ncclFloat32, ncclSum, c, stream_);
    });
  }

 protected:
  // Counts the collectives the GPU has completed, oldest first (main thread only).
  void settle_stats() override {
    if (cudaSetDevice(ordinal_) != cudaSuccess) return;
    std::lock_guard<std::mutex> lk(mu_);
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      const cudaError_t q = cudaEventQuery(p.end);
      if (q != cudaSuccess) {
        // Not yet run (cudaErrorNotReady is no error, but the runtime records it for this
        // thread: clear it, as PyTorch does, so that the next kernel launch check is not fooled).
        (void)cudaGetLastError();
        break;
      }
      float ms = 0;
      if (cudaEventElapsedTime(&ms, p.start, p.end) != cudaSuccess) {
        (void)cudaGetLastError();
        ms = 0;
      }
      if (p.counted) account(p.kind, p.bytes, ms * 1e-3, p.root);
      free_events_.push_back(p.start);
      free_events_.push_back(p.end);
      pending_.pop_front();
    }
  }

 private:
  static ncclRedOp_t red(dist::ReduceOp op) { return op == dist::ReduceOp::avg ? ncclAvg : ncclSum; }
  static void keep_first(ncclResult_t& first, ncclResult_t r) {
    if (first == ncclSuccess && r != ncclSuccess && r != ncclInProgress) first = r;
  }
  // ncclGroupStart; body(first) issues the calls; ncclGroupEnd even after a failed call (NCCL
  // requires the group to be closed). Returns the first failure, else ncclGroupEnd's result.
  template <class Body>
  ncclResult_t group(Body&& body) {
    ncclResult_t r = api_.GroupStart();
    if (r != ncclSuccess) return r;
    ncclResult_t first = ncclSuccess;
    body(first);
    const ncclResult_t e = api_.GroupEnd();
    return first != ncclSuccess ? first : e;
  }

  void bind() const { check(cudaSetDevice(ordinal_), "cudaSetDevice (NCCL communicator)"); }

  // One collective on data (bytes long): device memory in place, host memory staged. enqueue(buf,
  // comm) issues the NCCL call(s) on the stream. Throws td::Error (the communicator is then
  // unusable) on any failure, or when the watchdog aborted NCCL.
  template <class F>
  void run(const char* kind, void* data, size_t bytes, int root, F&& enqueue) {
    if (failed_) fail(std::string(kind) + ": " + (abort_reason().empty() ? "the NCCL communicator failed earlier" : abort_reason()) +
                      "; the run must end");
    try {
      bind();
      settle_stats();
      const bool host = !is_device_memory(data);
      void* buf = data;
      if (host) {
        buf = stage(bytes);
        check(cudaMemcpyAsync(buf, data, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (NCCL staging in)");
      }
      Pending p{take_event(), take_event(), kind, bytes, root, std::string(kind) != "barrier"};
      check(cudaEventRecord(p.start, stream_), "cudaEventRecord (NCCL start)");
      ncclResult_t r;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (!comm_) fail(std::string(kind) + ": " + abort_reason_);
        r = enqueue(buf, comm_);
        if (r != ncclSuccess && r != ncclInProgress) fail(std::string(kind) + " on rank " + std::to_string(rank_) + ": " + describe(api_, r, comm_));
      }
      // Non-blocking: NCCL may still be connecting (the first collective sets up its channels);
      // nothing else may be queued on the stream until it is done.
      if (r == ncclInProgress) wait_ready(kind);
      check(cudaEventRecord(p.end, stream_), "cudaEventRecord (NCCL end)");
      {
        std::lock_guard<std::mutex> lk(mu_);
        pending_.push_back(p);
      }
      if (host) {
        check(cudaMemcpyAsync(data, buf, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync (NCCL staging out)");
        // Waits for the collective (a hung one: until the watchdog aborts it).
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (NCCL)");
        {
          std::lock_guard<std::mutex> lk(mu_);
          if (!comm_) fail(std::string(kind) + ": " + abort_reason_);
        }
        if (stage_bytes_ > kKeepStageBytes) release_stage();
      }
    } catch (...) {
      failed_ = true;
      throw;
    }
  }

  // Polls the communicator until its state leaves ncclInProgress; aborts it and throws after the
  // timeout. `what` names the step for the message.
  void wait_ready(const std::string& what) {
    const auto deadline = clk::now() + timeout_;
    for (;;) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (!comm_) fail(what + ": " + abort_reason_);
        ncclResult_t st = ncclInProgress;
        const ncclResult_t r = api_.CommGetAsyncError(comm_, &st);
        if (r != ncclSuccess) st = r;
        if (st == ncclSuccess) return;
        if (st != ncclInProgress) {
          const std::string why = what + " on rank " + std::to_string(rank_) + ": " + describe(api_, st, comm_);
          abort_locked(why);
          fail(why);
        }
        if (clk::now() > deadline) {
          const std::string why = what + ": NCCL did not finish within train.dist_timeout_s = " + seconds_text(timeout_s_) +
                                  " s (a rank did not join, or the network between the ranks is blocked)";
          abort_locked(why);
          fail(why);
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // The watchdog thread (see the file comment).
  void watch() {
    if (cudaSetDevice(ordinal_) != cudaSuccess) (void)cudaGetLastError();
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_ && comm_) {
      cv_.wait_for(lk, std::chrono::milliseconds(100));
      if (stop_ || !comm_) break;
      ncclResult_t st = ncclSuccess;
      const ncclResult_t r = api_.CommGetAsyncError(comm_, &st);
      if (r != ncclSuccess) st = r;
      if (st != ncclSuccess && st != ncclInProgress) {
        abort_locked("NCCL reported an error on rank " + std::to_string(rank_) + ": " + describe(api_, st, comm_));
        break;
      }
      const auto now = clk::now();
      for (Pending& p : pending_) {  // the oldest collective the GPU has not finished
        if (cudaEventQuery(p.end) == cudaSuccess) continue;
        (void)cudaGetLastError();
        if (!p.reached) {
          if (cudaEventQuery(p.start) == cudaSuccess) {
            p.reached = true;
            p.reached_at = now;
          } else {
            (void)cudaGetLastError();
          }
        } else if (now - p.reached_at > timeout_) {
          abort_locked(std::string(p.kind == std::string("broadcast_ring") ? "broadcast" : p.kind) + " of " + bytes_text(p.bytes) +
                       " did not complete within train.dist_timeout_s = " + seconds_text(timeout_s_) +
                       " s on the GPU (NCCL waited for a rank that stopped taking part; the communicator was aborted)");
        }
        break;
      }
    }
  }

  // Aborts the communicator with mu_ held; comm_ is null afterwards (NCCL freed it).
  void abort_locked(const std::string& reason) {
    if (!comm_) return;
    abort_reason_ = reason;
    // ncclCommAbort itself has hung in some NCCL versions (NVIDIA/nccl issue 829). A rank that
    // hangs holds its GPU for ever: after a grace period the process ends with the reason.
    auto returned = std::make_shared<std::atomic<bool>>(false);
    const double grace = timeout_s_ + 30;
    std::thread([returned, reason, grace] {
      const auto until = clk::now() + std::chrono::milliseconds((long long)(grace * 1000));
      while (clk::now() < until) {
        if (returned->load()) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      if (returned->load()) return;
      std::fprintf(stderr, "traindeck: %s; ncclCommAbort did not return within %.0f s: ending the process\n", reason.c_str(), grace);
      std::fflush(stderr);
      std::_Exit(1);
    }).detach();
    api_.CommAbort(comm_);
    returned->store(true);
    comm_ = nullptr;
    failed_ = true;
  }

  std::string abort_reason() {
    std::lock_guard<std::mutex> lk(mu_);
    return abort_reason_;
  }

  cudaEvent_t take_event() {
    std::lock_guard<std::mutex> lk(mu_);
    if (!free_events_.empty()) {
      cudaEvent_t e = free_events_.back();
      free_events_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDefault), "cudaEventCreate (NCCL timing)");
    events_.push_back(e);
    return e;
  }

  // The staging buffer for host data, grown to the largest request; one above kKeepStageBytes
  // is freed after its call (the trainer's host exchanges are a few KiB).
  static constexpr size_t kKeepStageBytes = size_t(8) << 20;
  void* stage(size_t bytes) {
    if (bytes <= stage_bytes_) return stage_;
    release_stage();
    const size_t n = bytes < 4096 ? 4096 : bytes;
    const cudaError_t e = cudaMalloc(&stage_, n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      stage_ = nullptr;
      fail("out of GPU memory for NCCL's staging of " + bytes_text(bytes) + " of host data on cuda:" + std::to_string(ordinal_) + " (" +
           cudaGetErrorString(e) + "); lower train.micro_batch or the model size");
    }
    stage_bytes_ = n;
    return stage_;
  }
  void release_stage() {
    if (stage_) check(cudaFree(stage_), "cudaFree (NCCL staging)");
    stage_ = nullptr;
    stage_bytes_ = 0;
  }

  struct Pending {
    cudaEvent_t start, end;
    const char* kind;
    size_t bytes;
    int root;
    bool counted;
    bool reached = false;      // the GPU has reached the collective (start event passed)
    clk::time_point reached_at{};
  };

  const NcclApi& api_;
  const cudaStream_t stream_;
  const int ordinal_, rank_, world_;
  const std::chrono::milliseconds timeout_;
  const double timeout_s_;
  std::mutex mu_;  // guards comm_, abort_reason_, pending_, the event pool; held around NCCL calls
  std::condition_variable cv_;
  ncclComm_t comm_ = nullptr;  // null once aborted
  std::string abort_reason_;
  std::deque<Pending> pending_;  // enqueued collectives not yet counted, oldest first
  std::vector<cudaEvent_t> events_, free_events_;
  void* stage_ = nullptr;
  size_t stage_bytes_ = 0;
  std::atomic<bool> failed_{false};
  bool stop_ = false;
  std::thread watchdog_;
};

}  // namespace
}  // namespace td::cuda
#endif  // TD_HAVE_NCCL

namespace {

void set_error(char* err, unsigned long err_len, const std::string& msg) {
  if (err && err_len > 0) std::snprintf(err, err_len, "%s", msg.c_str());
}

bool abi_ok(int abi, char* err, unsigned long err_len) {
  if (abi == td::kBackendAbiVersion) return true;
  set_error(err, err_len,
            "libtraindeck-cuda.so is from another TrainDeck build (backend ABI " + std::to_string(td::kBackendAbiVersion) +
                ", the engine's is " + std::to_string(abi) + "); install the module built with this engine, or set TRAINDECK_CUDA_MODULE to it");
  return false;
}

#if !TD_HAVE_NCCL
const char* kNoNccl =
    "this build has no NCCL: libtraindeck-cuda.so was built where nccl.h was not found, so several GPU ranks cannot "
    "train together; install NCCL's development files (nccl.h: libnccl-dev, or NCCL in the CUDA toolkit) and rebuild "
    "TrainDeck, or train on one GPU, or with train.device = \"cpu\" on several ranks";
#endif

}  // namespace

/// Writes a new NCCL unique id (id_len must be 128, NCCL_UNIQUE_ID_BYTES) for rank 0 to share.
/// Returns 0, or -1 with the reason in err. Never throws.
extern "C" __attribute__((visibility("default"))) int traindeck_nccl_unique_id(int abi, unsigned char* id, unsigned long id_len, char* err,
                                                                                unsigned long err_len) {
  if (!abi_ok(abi, err, err_len)) return -1;
#if TD_HAVE_NCCL
  const auto& api = td::cuda::nccl_api();
  if (!api.error.empty()) {
    set_error(err, err_len, api.error);
    return -1;
  }
  if (!id || id_len != sizeof(ncclUniqueId)) {
    set_error(err, err_len, "traindeck_nccl_unique_id: the id buffer must be " + std::to_string(sizeof(ncclUniqueId)) + " bytes");
    return -1;
  }
  ncclUniqueId u;
  const ncclResult_t r = api.GetUniqueId(&u);
  if (r != ncclSuccess) {
    set_error(err, err_len, "NCCL could not create its unique id on rank 0 (ncclGetUniqueId): " + td::cuda::describe(api, r, nullptr) +
                                "; NCCL_SOCKET_IFNAME may name the network interface it should use");
    return -1;
  }
  std::memcpy(id, &u, sizeof u);
  return 0;
#else
  (void)id;
  (void)id_len;
  set_error(err, err_len, kNoNccl);
  return -1;
#endif
}

/// A new NCCL communicator for `backend` (a CUDA backend of this module: its GPU and stream),
/// rank `rank` of `world_size`, joining the world of the 128-byte unique id made by rank 0.
/// Returns null with the reason in err when NCCL is missing, the backend is not a CUDA one, or
/// the ranks are not connected within timeout_s. Never throws.
extern "C" __attribute__((visibility("default"))) td::dist::Communicator* traindeck_create_nccl_communicator(
    int abi, td::Backend* backend, int rank, int world_size, const unsigned char* id, unsigned long id_len, double timeout_s, char* err,
    unsigned long err_len) {
  if (!abi_ok(abi, err, err_len)) return nullptr;
#if TD_HAVE_NCCL
  const auto& api = td::cuda::nccl_api();
  if (!api.error.empty()) {
    set_error(err, err_len, api.error);
    return nullptr;
  }
  cudaStream_t stream = nullptr;
  int ordinal = 0;
  if (!backend || !td::cuda::backend_stream(backend, &stream, &ordinal)) {
    set_error(err, err_len, "the NCCL communicator needs a CUDA backend made by this module (got " +
                                (backend ? backend->name() : std::string("none")) + ")");
    return nullptr;
  }
  if (!id || id_len != sizeof(ncclUniqueId) || world_size < 1 || rank < 0 || rank >= world_size || !(timeout_s > 0)) {
    set_error(err, err_len, "traindeck_create_nccl_communicator: bad arguments (rank " + std::to_string(rank) + " of " +
                                std::to_string(world_size) + ", id of " + std::to_string(id_len) + " bytes)");
    return nullptr;
  }
  ncclUniqueId u;
  std::memcpy(&u, id, sizeof u);
  try {
    return new td::cuda::NcclDeviceCommunicator(api, stream, ordinal, rank, world_size, u, timeout_s);
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
  } catch (...) {
    set_error(err, err_len, "the NCCL communicator could not start (unknown error)");
  }
  return nullptr;
#else
  (void)backend;
  (void)rank;
  (void)world_size;
  (void)id;
  (void)id_len;
  (void)timeout_s;
  set_error(err, err_len, kNoNccl);
  return nullptr;
#endif
}
