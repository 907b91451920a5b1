// The trainer's side of tensor parallelism (issue 18; Megatron-LM, Shoeybi et al. 2019,
// arXiv:1909.08053): the model's TensorParallel over a TP group communicator, and the host
// copies between the full layout (checkpoints) and the ranks' shards
// (engine/model/tensor_parallel.h). All collective: every rank of the communicator named calls
// each function in the same order. Buffers are fp32.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "engine/config.h"
#include "engine/dist/communicator.h"
#include "engine/model/gpt.h"

namespace td {

/// TensorParallel over a dist::Communicator (a TP group from dist::make_parallel_groups):
/// all_reduce_sum is its all-reduce (sum), all_gather its all-gather of size() n floats (each
/// rank's chunk shard_range(size() n, r, size()) = [r n, (r + 1) n)). Not owned.
class GroupTensorParallel final : public TensorParallel {
 public:
  explicit GroupTensorParallel(dist::Communicator& group) : g_(group) {}
  int rank() const override { return g_.rank(); }
  int size() const override { return g_.world_size(); }
  void all_reduce_sum(float* x, size_t n) override { g_.all_reduce(x, n, dist::ReduceOp::sum); }
  void all_gather(float* x, size_t n) override { g_.all_gather(x, (size_t)g_.world_size() * n); }

 private:
  dist::Communicator& g_;
};

/// Where each TP rank's piece of each full tensor lies (tp_param_tensors, tp_for_each_run), for
/// moving one full tensor at a time between the full layout and the ranks' layouts.
class TpPieces {
 public:
  TpPieces(const ModelConfig& m, int tp);
  std::vector<ParamTensor> full;                // model_param_tensors(m)
  std::vector<std::vector<ParamTensor>> local;  // per TP rank: tp_param_tensors (the same names, local shapes)
  std::vector<bool> replicated;                 // per tensor: every rank holds all of it (tp_splits: dim -1)
  size_t widest_full = 0, widest_piece = 0;     // the largest full tensor's and local piece's elements
  /// fn(offset in the full tensor, offset in TP rank q's piece, count) for each contiguous run
  /// of rank q's piece of tensor i.
  template <class F> void for_each_run(int q, size_t i, F&& fn) const {
    for (size_t k = first_run_[(size_t)q][i]; k < first_run_[(size_t)q][i + 1]; k++) {
      const auto& [fo, lo, c] = runs_[(size_t)q][k];
      fn(fo - full[i].offset, lo - local[(size_t)q][i].offset, c);
    }
  }

 private:
  // Per TP rank: its runs (full offset, local offset, count) in tensor order, and per tensor the
  // index of its first run (n_tensors + 1 entries).
  std::vector<std::vector<std::array<size_t, 3>>> runs_;
  std::vector<std::vector<size_t>> first_run_;
};

/// Rank 0 of `world` gives the full state one tensor at a time (source(i, out): tensor i of
/// model_param_tensors(m) into out, host memory of its numel floats; called on rank 0 only, in
/// tensor order) and every rank writes its TP rank's (tp_rank of tp) piece into `local` (backend
/// memory, that rank's layout). Each piece is broadcast over `world` from rank 0 through one
/// piece-sized backend buffer (a replicated tensor once), so no rank holds more than one full
/// tensor. Collective over world. For a resume's weights and AdamW moments (straight from the
/// checkpoint's files: CheckpointTensorReader) and --init-from's weights.
void tp_scatter_tensors(dist::Communicator& world, Backend& be, const ModelConfig& m, int tp_rank, int tp,
                        const std::function<void(size_t, float*)>& source, float* local);

/// The TP group's shards gathered to TP rank 0 one full tensor at a time, for a checkpoint
/// written tensor by tensor (save_checkpoint with a StateReader): TP rank 0 holds one tensor of
/// the full layout at a time, never the whole model. Buffers: on TP rank 0 host memory for the
/// largest full tensor and the largest local piece; on every rank one backend buffer of the
/// largest local piece. Collective over `group`.
class TpTensorGather {
 public:
  TpTensorGather(dist::Communicator& group, Backend& be, const ModelConfig& m);
  ~TpTensorGather();
  TpTensorGather(const TpTensorGather&) = delete;
  TpTensorGather& operator=(const TpTensorGather&) = delete;
  /// Tensor i of model_param_tensors(m), assembled from every TP rank's piece of it in `local`
  /// (backend memory, that rank's layout: tp_param_tensors): on TP rank 0 host memory holding
  /// the tensor's numel floats, valid until the next call; nullptr on the other ranks. Every
  /// rank of the group calls it with the same i, in the same order. A replicated tensor is TP
  /// rank 0's own copy (no traffic); TP rank q's piece is broadcast from q (its local tensor,
  /// contiguous in its layout) and placed by rank 0 (TpPieces' runs).
  const float* tensor(size_t i, const float* local);

 private:
  dist::Communicator& group_;
  Backend& be_;
  int tp_, rank_;
  TpPieces pieces_;
  std::vector<float> out_, chunk_;  // host (TP rank 0): the full tensor; a rank's piece
  float* buf_ = nullptr;            // backend: a rank's piece in flight
};

/// The element ranges [first, second) of this rank's layout whose gradients count toward the
/// global norm: its own pieces, and the replicated tensors on TP rank 0 only (every rank's copy
/// is the same, engine/model/tensor_parallel.h tp_replicated_ranges), so that a sum over the TP
/// group counts each element of the full model once. In layout order, disjoint. tp = 1: the
/// whole layout.
std::vector<std::pair<size_t, size_t>> tp_counted_ranges(const ModelConfig& m, int tp_rank, int tp);

/// Squared L2 norm (double) of the elements of g that lie in `counted` (tp_counted_ranges; empty
/// = all), where g (backend memory) holds elements [lo, hi) of the layout. For a ZeRO shard of
/// a tensor-parallel rank's gradient.
double counted_norm_squared(Backend& be, const float* g, size_t lo, size_t hi, const std::vector<std::pair<size_t, size_t>>& counted);

/// This rank's share of the squared global gradient norm over the TP group: counted_norm_squared
/// of its whole layout (grads: backend memory) over tp_counted_ranges.
double tp_norm_squared(Backend& be, const ModelConfig& m, int tp_rank, int tp, const float* grads);

}  // namespace td
