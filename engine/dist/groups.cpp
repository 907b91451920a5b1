#include "engine/dist/groups.h"

#include <string>

#include "engine/common/error.h"

namespace td::dist {

ParallelGroups make_parallel_groups(Communicator& world, int tp) {
  const int W = world.world_size(), rank = world.rank();
  if (tp < 1)
    fail("train.tensor_parallel = " + std::to_string(tp) + " must be at least 1 (1: no tensor parallelism; the world of " +
         std::to_string(W) + " ranks is then all data-parallel)");
  if (W % tp != 0)
    fail("train.tensor_parallel = " + std::to_string(tp) + " does not divide the world size " + std::to_string(W) +
         ": set it to a divisor of " + std::to_string(W) + " or start a multiple of " + std::to_string(tp) + " ranks");
  // Every rank sees the same hosts table, so every rank fails here alike, before any collective.
  const auto& hosts = world.hosts();
  for (int g = 0; g < W / tp; g++)
    for (int r = g * tp + 1; r < (g + 1) * tp; r++)
      if ((size_t)r < hosts.size() && hosts[(size_t)r] != hosts[(size_t)(g * tp)])
        fail("train.tensor_parallel = " + std::to_string(tp) + ": tensor-parallel group " + std::to_string(g) + " (ranks " +
             std::to_string(g * tp) + ".." + std::to_string((g + 1) * tp - 1) + ") spans hosts " + hosts[(size_t)(g * tp)] + " (rank " +
             std::to_string(g * tp) + ") and " + hosts[(size_t)r] + " (rank " + std::to_string(r) +
             "); its activations' all-reduces would cross the network every layer. Start a multiple of " + std::to_string(tp) +
             " ranks per node (ranks numbered node by node), or lower train.tensor_parallel to the GPUs of one node");
  ParallelGroups g;
  g.tp_size = tp;
  g.dp_size = W / tp;
  g.tp_rank = rank % tp;
  g.dp_rank = rank / tp;
  // TP group: color = dp_rank (ranks [dp_rank tp, (dp_rank+1) tp)), ordered by tp_rank;
  // DP group: color = tp_rank (ranks tp_rank, tp_rank + tp, ...), ordered by dp_rank.
  g.tp = world.split(g.dp_rank, g.tp_rank);
  g.dp = world.split(g.tp_rank, g.dp_rank);
  return g;
}

}  // namespace td::dist
