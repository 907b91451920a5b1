#include "engine/dist/communicator.h"

#include <cstring>

#include "engine/common/error.h"
#include "engine/dist/gloo_communicator.h"

namespace td::dist {

std::pair<size_t, size_t> shard_range(size_t count, int rank, int world) {
  auto at = [&](int r) { return (size_t)((unsigned __int128)count * (unsigned)r / (unsigned)world); };
  return {at(rank), at(rank + 1)};
}

void Communicator::account(const char* kind, size_t bytes, double seconds, int root) {
  const double n = world_size();
  const double S = (double)bytes;
  double moved = 0, bus = 0;  // bytes each way, and busbw * t (nccl-tests PERFORMANCE.md)
  double sent = -1, received = -1;
  if (!std::strcmp(kind, "all_reduce")) {
    moved = 2 * (n - 1) / n * S;
    bus = S * 2 * (n - 1) / n;
  } else if (!std::strcmp(kind, "reduce_scatter") || !std::strcmp(kind, "all_gather")) {
    moved = (n - 1) / n * S;
    bus = S * (n - 1) / n;
  } else if (!std::strcmp(kind, "broadcast")) {
    // Gloo's one-to-all broadcast: the root sends S to each other rank (nccl-tests: busbw = algbw).
    sent = rank() == root ? (n - 1) * S : 0;
    received = rank() == root ? 0 : S;
    bus = S;
  }
  stats_.calls++;
  stats_.bytes_sent += (uint64_t)(sent >= 0 ? sent : moved);
  stats_.bytes_received += (uint64_t)(received >= 0 ? received : moved);
  stats_.seconds += seconds;
  stats_.bus_bytes += bus;
}

std::string Communicator::broadcast_string(const std::string& s, int root) {
  uint64_t len = s.size();
  broadcast(&len, sizeof len, root);
  std::string out = rank() == root ? s : std::string(len, '\0');
  if (len) broadcast(out.data(), len, root);
  return out;
}

LocalCommunicator::LocalCommunicator() { hosts_ = {local_host_name()}; }

std::unique_ptr<Communicator> make_communicator(const DistEnv& env, const CommOptions& opt) {
  if (!env.distributed()) return std::make_unique<LocalCommunicator>();
  return make_gloo_communicator(env, opt);
}

}  // namespace td::dist
