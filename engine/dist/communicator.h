// Collectives between the ranks of a run: the interface the trainer uses, whatever library
// moves the bytes (Gloo over TCP between CPU ranks here; NCCL between GPUs belongs to cuda/ and
// implements the same interface, its unique id exchanged through the same rendezvous store).
//
// Every rank calls the same collectives in the same order with the same sizes (the usual MPI
// rule). Buffers are host memory for the Gloo backend, device memory for a GPU backend.
// A collective that does not complete within the communicator's timeout (train.dist_timeout_s),
// or whose peer went away, throws td::Error naming the rank and host at fault when the
// rendezvous store can tell (see kv_store.h diagnose()). After such an error the communicator is
// unusable: the process should end.
//
// Traffic counters: bytes sent and received are the payload bytes the algorithm moves for this
// rank (ring all-reduce: 2(n-1)/n S each way; ring reduce-scatter and all-gather: (n-1)/n S),
// counted from the algorithm, not measured at the socket. Bus bandwidth follows nccl-tests
// (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md): algbw = S / t and
// busbw = algbw * 2(n-1)/n for all-reduce, algbw * (n-1)/n for reduce-scatter and all-gather,
// where S is the size of the whole buffer in bytes and t the collective's wall time on this rank.
//
// Threading: one thread calls a communicator at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/dist/env.h"

namespace td::dist {

enum class ReduceOp { sum, avg };

/// Cumulative traffic of a communicator since its creation (or the last reset_stats()).
struct CommStats {
  uint64_t calls = 0;
  uint64_t bytes_sent = 0;      // payload bytes sent by this rank
  uint64_t bytes_received = 0;  // payload bytes received by this rank
  double seconds = 0;           // wall time inside collectives
  double bus_bytes = 0;         // sum over collectives of busbw * t (nccl-tests): busbw = bus_bytes / seconds
};

/// Elements [first, second) of a buffer of `count` elements that rank `rank` of `world` owns in
/// reduce_scatter / all_gather: first = floor(count * rank / world). Chunks differ by at most 1.
std::pair<size_t, size_t> shard_range(size_t count, int rank, int world);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// "gloo", "local" (world size 1), later "nccl".
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

  /// Host name of each rank, exchanged at the rendezvous (world_size() entries).
  const std::vector<std::string>& hosts() const { return hosts_; }
  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

  /// A string broadcast from root (any length); every rank returns root's value.
  std::string broadcast_string(const std::string& s, int root);

 protected:
  /// Counts one collective of `kind` ("all_reduce", "reduce_scatter", "all_gather", "broadcast")
  /// over a buffer of `bytes` that took `seconds` on this rank (formulas above); root: broadcast's.
  void account(const char* kind, size_t bytes, double seconds, int root = -1);
  std::vector<std::string> hosts_;
  CommStats stats_;
};

/// A world of one: every collective is a no-op (avg of one rank is the value itself).
class LocalCommunicator : public Communicator {
 public:
  LocalCommunicator();
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string backend() const override { return "local"; }
  void all_reduce(float*, size_t, ReduceOp) override {}
  void reduce_scatter(float*, size_t, ReduceOp) override {}
  void all_gather(float*, size_t) override {}
  void broadcast(void*, size_t, int) override {}
  void barrier() override {}
};

struct CommOptions {
  double timeout_s = 60;      // rendezvous and every collective (train.dist_timeout_s)
  std::string gloo_ifname;    // network interface for Gloo; "" = env.gloo_ifname, then the default
};

/// The communicator of this process: LocalCommunicator when env.world_size == 1, else a Gloo
/// communicator after the rendezvous (rank 0 serves the store at env.master_port). Throws
/// td::Error when the rendezvous fails, naming the ranks that never arrived.
std::unique_ptr<Communicator> make_communicator(const DistEnv& env, const CommOptions& opt);

}  // namespace td::dist
