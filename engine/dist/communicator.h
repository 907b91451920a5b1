// Collectives between the ranks of a run: the interface the trainer uses, whatever library
// moves the bytes: Gloo over TCP between CPU ranks (gloo_communicator.h), NCCL between GPU ranks
// (cuda/nccl_communicator.cu inside the CUDA module, reached through nccl_communicator.h; its
// unique id travels through the same rendezvous store).
//
// Every rank calls the same collectives in the same order with the same sizes (the usual MPI
// rule). Buffers are host memory for the Gloo backend. The NCCL backend takes device memory of
// its GPU (enqueued on the CUDA backend's stream, asynchronous to the host, like a kernel) or
// host memory (staged through a device buffer; the call returns with the result in place).
// A collective that does not complete within the communicator's timeout (train.dist_timeout_s),
// or whose peer went away, throws CollectiveError (a td::Error) naming the rank and host at
// fault when the rendezvous store can tell (see kv_store.h diagnose()). After such an error the communicator is
// unusable: the process should end.
//
// Traffic counters: bytes sent and received are the payload bytes the algorithm moves for this
// rank (ring all-reduce: 2(n-1)/n S each way; ring reduce-scatter and all-gather: (n-1)/n S),
// counted from the algorithm, not measured at the socket (NCCL may pick a tree or NVLink
// SHARP instead of the ring: the counts stay the ring's, as nccl-tests' bus bandwidth does).
// Bus bandwidth follows nccl-tests
// (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md): algbw = S / t and
// busbw = algbw * 2(n-1)/n for all-reduce, algbw * (n-1)/n for reduce-scatter and all-gather,
// algbw for broadcast, where S is the size of the whole buffer in bytes and t the collective's
// time on this rank (wall time for Gloo; for NCCL the time between CUDA events recorded on the
// stream just before and after the collective, i.e. its time on the GPU).
//
// Threading: one thread calls a communicator at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/common/error.h"
#include "engine/dist/env.h"

namespace td {
class Backend;
}

namespace td::dist {

enum class ReduceOp { sum, avg };

/// The collective kinds counted apart in CommStats::by_kind (broadcasts and barriers count only
/// in the totals).
enum class CollectiveKind { all_reduce = 0, reduce_scatter = 1, all_gather = 2 };
inline constexpr int kCollectiveKinds = 3;

/// One kind's share of CommStats: payload bytes this rank sent (the ring formulas above; a
/// ring's sent bytes equal its received bytes) and seconds inside those collectives.
struct KindStats {
  uint64_t calls = 0;
  uint64_t bytes_sent = 0;
  double seconds = 0;
};

/// Cumulative traffic of a communicator since its creation (or the last reset_stats()).
struct CommStats {
  uint64_t calls = 0;
  uint64_t bytes_sent = 0;      // payload bytes sent by this rank
  uint64_t bytes_received = 0;  // payload bytes received by this rank
  double seconds = 0;           // wall time inside collectives
  double bus_bytes = 0;         // sum over collectives of busbw * t (nccl-tests): busbw = bus_bytes / seconds
  KindStats by_kind[kCollectiveKinds];  // indexed by CollectiveKind: all-reduce, reduce-scatter, all-gather
  const KindStats& of(CollectiveKind k) const { return by_kind[(int)k]; }
};

/// A rank that the rendezvous store's liveness table (kv_store.h diagnose()) shows gone or
/// frozen when a collective failed.
struct LostRank {
  int rank = 0;
  std::string host;  ///< its host name from the rendezvous ("?" when unknown)
  /// How it was lost: "ended: its connection to the rendezvous store closed" (the process died),
  /// "is not responding: no heartbeat for 4.1 s (frozen, stopped or cut off)", or for rank 0
  /// "is not responding: <why the store did not answer>".
  std::string what;
  /// "rank 1 (host node-b)".
  std::string who() const { return "rank " + std::to_string(rank) + " (host " + host + ")"; }
};

/// What a failed collective throws (both communicators): the message names the collective, the
/// rank that saw it fail, the time waited and the ranks at fault ("all_reduce on rank 0 failed
/// after 0.1 s: rank 1 (host h) ended: ... [gloo: ...]"); lost() holds those ranks, empty when
/// none looked dead or frozen (a timeout: a rank slower than train.dist_timeout_s, or the network).
class CollectiveError : public Error {
 public:
  CollectiveError(const std::string& msg, std::vector<LostRank> lost) : Error(msg), lost_(std::move(lost)) {}
  const std::vector<LostRank>& lost() const { return lost_; }

 private:
  std::vector<LostRank> lost_;
};

/// Elements [first, second) of a buffer of `count` elements that rank `rank` of `world` owns in
/// reduce_scatter / all_gather: first = floor(count * rank / world). Chunks differ by at most 1.
/// (Inline, as account() below: the CUDA module's NCCL communicator uses them without linking
/// the engine.)
inline std::pair<size_t, size_t> shard_range(size_t count, int rank, int world) {
  auto at = [&](int r) { return (size_t)((unsigned __int128)count * (unsigned)r / (unsigned)world); };
  return {at(rank), at(rank + 1)};
}

/// Throws td::Error when `color` is not a valid Communicator::split color (it must be >= 0).
void check_split_color(int color);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// "gloo", "nccl", or "local" (world size 1).
  virtual std::string backend() const = 0;

  /// In place: data (count floats) becomes the element-wise sum (or mean) over ranks.
  virtual void all_reduce(float* data, size_t count, ReduceOp op) = 0;
  /// In place: on return, elements shard_range(count, rank, n) of data hold the sum (or mean)
  /// over ranks of those elements; the rest of data is scratch (undefined).
  virtual void reduce_scatter(float* data, size_t count, ReduceOp op) = 0;
  /// In place: each rank's chunk shard_range(count, r, n) of data is copied to every rank.
  virtual void all_gather(float* data, size_t count) = 0;
  /// bytes of data on rank root are copied to every rank.
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  /// Returns once every rank has entered it.
  virtual void barrier() = 0;

  /// Collective over this communicator (every rank calls it once, in the same order as its
  /// other collectives): the ranks that pass the same `color` form a new communicator, ranked by
  /// `key` (ties: by this communicator's rank) — MPI_Comm_split / ncclCommSplit semantics.
  /// The new communicator's collectives involve its members only; it counts its own traffic
  /// (stats()), its hosts() are its members' hosts in its rank order. This communicator must
  /// outlive it. Throws td::Error when the group cannot be formed (color < 0, or a rank of this
  /// communicator did not take part within the timeout: a CollectiveError naming it).
  /// A group of one is a LocalCommunicator (no-op collectives) with its member's host.
  /// A failed collective in any communicator split from a world makes the whole tree unusable
  /// (the process should end), as after a failure of the world itself.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  /// Host name of each rank, exchanged at the rendezvous (world_size() entries).
  const std::vector<std::string>& hosts() const { return hosts_; }
  /// Cumulative traffic. A GPU communicator counts a collective once the GPU has run it (it is
  /// timed with CUDA events): after the backend's synchronize() every collective is counted.
  const CommStats& stats() {
    settle_stats();
    return stats_;
  }
  void reset_stats() {
    settle_stats();
    stats_ = {};
  }

  /// A string broadcast from root (any length); every rank returns root's value.
  std::string broadcast_string(const std::string& s, int root);

 protected:
  /// Counts one collective of `kind` ("all_reduce", "reduce_scatter", "all_gather", "broadcast"
  /// (one-to-all: the root sends S to each rank), "broadcast_ring" (NCCL's pipelined ring: each
  /// rank but the root receives S, every rank but the ring's last sends S)) over a buffer of
  /// `bytes` that took `seconds` on this rank (formulas above); root: the broadcast's.
  void account(const char* kind, size_t bytes, double seconds, int root = -1);
  /// Brings stats_ up to date (a GPU communicator adds the collectives that completed since).
  virtual void settle_stats() {}
  std::vector<std::string> hosts_;
  CommStats stats_;
};

/// A world of one: every collective is a no-op (avg of one rank is the value itself).
class LocalCommunicator : public Communicator {
 public:
  LocalCommunicator();
  /// A group of one on `host` (what split() returns for a group of one rank).
  explicit LocalCommunicator(std::string host);
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string backend() const override { return "local"; }
  void all_reduce(float*, size_t, ReduceOp) override {}
  void reduce_scatter(float*, size_t, ReduceOp) override {}
  void all_gather(float*, size_t) override {}
  void broadcast(void*, size_t, int) override {}
  void barrier() override {}
  /// A new LocalCommunicator on the same host. Throws td::Error when color < 0.
  std::unique_ptr<Communicator> split(int color, int key) override;
};

inline void Communicator::account(const char* kind, size_t bytes, double seconds, int root) {
  const double n = world_size();
  const double S = (double)bytes;
  const std::string k = kind;
  double moved = 0, bus = 0;  // bytes each way, and busbw * t (nccl-tests PERFORMANCE.md)
  double sent = -1, received = -1;
  if (k == "all_reduce") {
    moved = 2 * (n - 1) / n * S;
    bus = S * 2 * (n - 1) / n;
  } else if (k == "reduce_scatter" || k == "all_gather") {
    moved = (n - 1) / n * S;
    bus = S * (n - 1) / n;
  } else if (k == "broadcast") {
    // Gloo's one-to-all broadcast: the root sends S to each other rank (nccl-tests: busbw = algbw).
    sent = rank() == root ? (n - 1) * S : 0;
    received = rank() == root ? 0 : S;
    bus = S;
  } else if (k == "broadcast_ring") {
    // NCCL's ring: the root sends S; n-2 of the n-1 other ranks forward S (which ones depends on
    // the ring NCCL built), so each non-root rank is counted (n-2)/(n-1) S sent.
    sent = rank() == root ? S : (n > 1 ? (n - 2) / (n - 1) * S : 0);
    received = rank() == root ? 0 : S;
    bus = S;
  }
  if (n <= 1) sent = received = moved = bus = 0;
  stats_.calls++;
  stats_.bytes_sent += (uint64_t)(sent >= 0 ? sent : moved);
  stats_.bytes_received += (uint64_t)(received >= 0 ? received : moved);
  stats_.seconds += seconds;
  stats_.bus_bytes += bus;
  const int ki = k == "all_reduce" ? 0 : k == "reduce_scatter" ? 1 : k == "all_gather" ? 2 : -1;
  if (ki >= 0) {
    stats_.by_kind[ki].calls++;
    stats_.by_kind[ki].bytes_sent += (uint64_t)moved;
    stats_.by_kind[ki].seconds += seconds;
  }
}

struct CommOptions {
  double timeout_s = 60;      // rendezvous and every collective (train.dist_timeout_s)
  std::string gloo_ifname;    // network interface for Gloo; "" = env.gloo_ifname, then the default
};

/// The communicator of this process: LocalCommunicator when env.world_size == 1; else, after
/// the rendezvous (rank 0 serves the store at env.master_port), an NCCL communicator when
/// `backend` is a CUDA backend (its name starts with "cuda"; collectives then run on that
/// backend's stream, which must outlive the communicator), a Gloo one otherwise (CPU ranks,
/// or backend null). Throws td::Error when the rendezvous fails, naming the ranks that never
/// arrived, or when NCCL is missing or cannot connect the ranks.
std::unique_ptr<Communicator> make_communicator(const DistEnv& env, const CommOptions& opt, Backend* backend = nullptr);

}  // namespace td::dist
