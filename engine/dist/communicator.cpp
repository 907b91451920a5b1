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

std::unique_ptr<Communicator> make_communicator(const DistEnv& env, const CommOptions& opt, Backend* backend) {
  if (!env.distributed()) return std::make_unique<LocalCommunicator>();
  // GPU ranks: NCCL on the backend's stream (the gradients and parameters live on the GPU).
  if (backend && backend->name().rfind("cuda", 0) == 0) return make_nccl_communicator(*backend, env, opt);
  return make_gloo_communicator(env, opt);
}

}  // namespace td::dist
