#include "engine/dist/communicator.h"

#include "engine/common/error.h"
#include "engine/dist/gloo_communicator.h"
#include "engine/dist/nccl_communicator.h"
#include "engine/ops/ops.h"

namespace td::dist {

std::string Communicator::broadcast_string(const std::string& s, int root) {
  uint64_t len = s.size();
  broadcast(&len, sizeof len, root);
  std::string out = rank() == root ? s : std::string(len, '\0');
  if (len) broadcast(out.data(), len, root);
  return out;
}

LocalCommunicator::LocalCommunicator() { hosts_ = {local_host_name()}; }

LocalCommunicator::LocalCommunicator(std::string host) { hosts_ = {std::move(host)}; }

std::unique_ptr<Communicator> LocalCommunicator::split(int color, int) {
  check_split_color(color);
  return std::make_unique<LocalCommunicator>(hosts_[0]);
}

void check_split_color(int color) {
  if (color < 0)
    fail("Communicator::split: color " + std::to_string(color) + " is negative; every rank must pass a color >= 0 (ranks with "
         "the same color form one group)");
}

std::unique_ptr<Communicator> make_communicator(const DistEnv& env, const CommOptions& opt, Backend* backend) {
  if (!env.distributed()) return std::make_unique<LocalCommunicator>();
  // GPU ranks: NCCL on the backend's stream (the gradients and parameters live on the GPU).
  if (backend && backend->name().rfind("cuda", 0) == 0) return make_nccl_communicator(*backend, env, opt);
  return make_gloo_communicator(env, opt);
}

}  // namespace td::dist
