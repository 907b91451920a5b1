// The distributed environment of one engine process, read like torchrun's:
//   TRAINDECK_RANK          this process's rank in [0, world_size)
//   TRAINDECK_WORLD_SIZE    number of ranks (absent: 1, a single-process run)
//   TRAINDECK_LOCAL_RANK    rank on this node (default: TRAINDECK_RANK)
//   TRAINDECK_LOCAL_WORLD_SIZE  ranks on this node (default: world size); splits the CPU threads
//   TRAINDECK_MASTER_ADDR   host of rank 0, where the rendezvous store listens (default 127.0.0.1)
//   TRAINDECK_MASTER_PORT   its TCP port (required when world size > 1)
//   TRAINDECK_GLOO_IFNAME   network interface Gloo binds to (e.g. "eth0"; default: see docs/distributed.md)
#pragma once

#include <string>

namespace td::dist {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string gloo_ifname;
  bool distributed() const { return world_size > 1; }
};

/// Reads the variables above. Throws td::Error naming the variable when one is malformed or out
/// of range (e.g. "TRAINDECK_RANK=4 is not below TRAINDECK_WORLD_SIZE=4").
DistEnv read_dist_env();

/// CPU threads for one rank when train.threads is 0: the usable cores (sched_getaffinity)
/// divided by the ranks on this node, at least 1.
int default_threads(const DistEnv& env);

/// This machine's host name (gethostname), "localhost" when it has none.
std::string local_host_name();

}  // namespace td::dist
