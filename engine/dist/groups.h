// Megatron-LM's process groups for tensor parallelism (Shoeybi et al. 2019, "Megatron-LM:
// Training Multi-Billion Parameter Language Models Using Model Parallelism", arXiv:1909.08053,
// section 3): a world of W ranks = (W / tp) data-parallel replicas x tp tensor-parallel shards.
// A layer's activations are all-reduced within its tensor-parallel (TP) group every layer
// (forward and backward); gradients are reduced within the data-parallel (DP) group once a step.
#pragma once

#include <memory>

#include "engine/dist/communicator.h"

namespace td::dist {

/// The tensor-parallel and data-parallel groups of a world of W ranks with tensor-parallel
/// degree tp (Megatron-LM's layout): TP group g = ranks [g tp, (g+1) tp) (consecutive ranks,
/// so that a launcher numbering ranks node by node keeps a TP group on one node); DP group d =
/// ranks {d, d + tp, d + 2 tp, ...}. tp_rank = rank % tp, dp_rank = rank / tp.
/// Example, W = 4, tp = 2: TP groups {0, 1}, {2, 3}; DP groups {0, 2}, {1, 3}.
/// The communicators are split from the world (Communicator::split), which must outlive them.
struct ParallelGroups {
  std::unique_ptr<Communicator> tp, dp;
  int tp_rank = 0, tp_size = 1, dp_rank = 0, dp_size = 1;
};

/// Collective over `world`. Throws td::Error (naming train.tensor_parallel and what to set) when
/// tp < 1 or W % tp != 0, or when a TP group's ranks are on different hosts (world.hosts()): its
/// activations' all-reduces would cross the network every layer; say to start a multiple of tp
/// ranks per node. tp == 1: tp is a group of one, dp the whole world (a split with all ranks).
/// Every rank checks the same hosts table, so all throw together (before any split).
ParallelGroups make_parallel_groups(Communicator& world, int tp);

}  // namespace td::dist
