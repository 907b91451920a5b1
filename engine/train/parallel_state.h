// The training state's layout over the ranks, in one place: which rank holds which weights,
// gradients and AdamW moments under data parallelism (all-reduce, ZeRO-1, ZeRO-2/3:
// engine/train/zero.h) and tensor parallelism (engine/train/tp_run.h), what a step does with
// them after backward (gradient reduction, global norm and clipping, the AdamW update), and the
// moves between that layout and one consolidated checkpoint (rank 0's, in the unsplit model's
// layout: docs/formats.md), for a checkpoint, a resume and --init-from.
// docs/distributed.md "What a step does" says what each rank holds in each layout.
//
// Threading: one ParallelState per rank process, used from the training thread only. The
// methods marked collective must be called by every rank of the run, in the same order.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/config.h"
#include "engine/dist/communicator.h"
#include "engine/dist/groups.h"
#include "engine/export/export.h"
#include "engine/model/gpt.h"
#include "engine/ops/backend.h"
#include "engine/optim/adamw.h"
#include "engine/train/zero.h"

namespace td {

/// Sum over the ranks of `comm` of one double per rank, exact and in rank order on every rank:
/// the doubles travel bit for bit through an all-gather (two floats each), then are added in
/// rank order. Host memory (with NCCL the communicator stages it through the GPU). Collective.
double all_sum_double(dist::Communicator& comm, double x);

class ParallelState {
 public:
  /// model: this rank's model (under tensor parallelism its TP shard), its buffers on `be`.
  /// world: the run's communicator; groups: its TP and DP groups when tc.tensor_parallel > 1
  /// (dist::make_parallel_groups), unused otherwise. ZeRO (tc.zero) shards over the DP ranks
  /// (the world, or the replicas of this rank's TP shard); with one replica it shards nothing.
  /// Allocates this rank's AdamW moments (backend memory: N floats each, or its ZeRO share) and,
  /// for ZeRO-2/3, the Zero2/Zero3 buffers (which free the model's full-size gradients, ZeRO-3
  /// later its parameters: distribute()). mc, tc, world and groups must outlive this object.
  ParallelState(GPT& model, Backend& be, dist::Communicator& world, dist::ParallelGroups& groups, const ModelConfig& mc,
                const TrainConfig& tc);
  ~ParallelState();
  ParallelState(const ParallelState&) = delete;
  ParallelState& operator=(const ParallelState&) = delete;

  bool zero3() const { return zero3_; }
  /// ", ZeRO-1" / ", ZeRO-2" / ", ZeRO-3" or "" (for the run line).
  const char* zero_label() const;
  /// Every collective's traffic of this rank so far: the world's and its TP/DP groups'.
  dist::CommStats comm_stats() const;

  // -- Start of a run ------------------------------------------------------------------------
  /// Rank 0 (not collective): reads a checkpoint's weights and AdamW moments for this layout:
  /// straight into the model and AdamW when nothing is sharded, else into rank 0's full-size
  /// staging (an AdamW of N floats a moment), which distribute() hands out; under tensor
  /// parallelism it opens the files (CheckpointTensorReader) and distribute() reads them tensor
  /// by tensor. Throws td::Error as load_checkpoint (a missing tensor, another shape, a damaged
  /// file).
  void load_checkpoint_rank0(const std::string& dir);
  /// Rank 0 (not collective): the --init-from source's weights into the model (under tensor
  /// parallelism into rank 0's staging, 4 bytes a parameter, handed out by distribute()).
  /// Throws as init_source_params.
  void init_from_rank0(const InitSource& src);
  /// Collective: after rank 0 has initialised, loaded or been given its state, every rank starts
  /// from the same values bit for bit: weights broadcast (tensor parallelism: each rank's shard
  /// sliced from rank 0's full state, or from the same seeded initialisation when fresh), a
  /// resume's moments broadcast and each rank keeping its ZeRO shard. Then ZeRO-3 keeps only its
  /// parameter slices. Frees rank 0's staging. resumed: the run continues a checkpoint;
  /// init_from: --init-from was given (to every rank alike).
  void distribute(bool resumed, bool init_from);

  // -- A step, after every micro-batch's backward ------------------------------------------
  /// Before the first micro-batch of a step (ZeRO-2/3's accumulators start from zero).
  void begin_step() {
    if (z2_) z2_->begin_step();
  }
  /// Collective: sums the gradients over the DP ranks (all-reduce, or ZeRO's reduce-scatter),
  /// returns the global L2 norm of the whole model's gradient (replicated TP tensors counted
  /// once; summed in double in rank order) and, when it is finite and above tc.grad_clip > 0,
  /// scales every gradient by grad_clip / (norm + 1e-6) (PyTorch's clip_grad_norm_).
  double reduce_and_clip();
  /// Collective under ZeRO (the parameters all-gathered after the update): AdamW at learning
  /// rate lr, 1-based update count t, on what this rank holds.
  void optimizer_step(double lr, int t);

  // -- A checkpoint ------------------------------------------------------------------------
  /// Collective: the sharded state gathered to full size where the writer reads it (ZeRO's
  /// moments into a full-size AdamW on rank 0, ZeRO-3's weights into the model's full-size
  /// buffer; under tensor parallelism each rank of world rank 0's TP group gathers its own
  /// layout's state, its shard's size); the other ranks take part through their bucket or
  /// shard-sized buffers (ZeRO-1: one N-float backend buffer). Then rank 0 calls
  /// write_checkpoint() and every other rank follow_checkpoint_write().
  void gather_checkpoint();
  /// Rank 0, after gather_checkpoint(): save_checkpoint of the state under root (the same files
  /// and checks in every layout), streamed tensor by tensor (under tensor parallelism each full
  /// tensor gathered from the TP group as it is written: TpTensorGather), then frees what was
  /// gathered. Throws td::Error on I/O failure (save_checkpoint) and dist::CollectiveError.
  CheckpointInfo write_checkpoint(const std::string& root, const TrainerState& st);
  /// Every rank but 0, after gather_checkpoint(): under tensor parallelism the ranks of rank 0's
  /// TP group send their pieces of each tensor as rank 0 writes it (collective with
  /// write_checkpoint, in for_each_state_read's order); then frees what was gathered.
  void follow_checkpoint_write();

 private:
  std::unique_ptr<AdamW> full_adam();
  // A sharded optimizer state's moment m (which = 0) or v (1) in full (N floats of this rank's
  // layout, backend memory) from the DP ranks' shards (collective over the DP ranks; ZeRO-2/3:
  // full == null takes part without a full-size buffer), and back: this rank's shard of a full
  // moment (not collective).
  void gather_moment(int which, float* full);
  void load_moment(int which, const float* full);
  // Tensor parallelism: a TpTensorGather over the TP group reading this rank's weights and
  // moments, handed to `consume` as a StateReader (rank 0 writes, the others follow).
  void stream_tp_checkpoint(const std::function<void(const StateReader&)>& consume);
  // After a checkpoint: ZeRO-3's gathered weights and the gathered moments freed.
  void release_checkpoint();
  class BackendBuffer;  // n floats of backend memory, freed with it

  GPT& model_;
  Backend& be_;
  dist::Communicator& world_;
  dist::ParallelGroups& groups_;
  const ModelConfig& mc_;
  const TrainConfig& tc_;
  const int tp_;
  dist::Communicator& dpc_;  // the DP ranks: the world, or under tensor parallelism this shard's replicas
  const int dp_, tp_rank_;
  const bool rank0_, zero1_, zero3_, zero2_, sharded_;
  const size_t n_;                       // this rank's parameters (its TP shard's)
  const size_t shard_lo_, shard_hi_;     // ZeRO-1: this rank's elements; else [0, N) or ZeRO-2's [0, 0)
  AdamW adam_;                           // this rank's moments (empty under ZeRO-2/3)
  std::unique_ptr<Zero2> z2_;            // ZeRO-2/3
  Zero3* z3_ = nullptr;                  // z2_ when ZeRO-3
  // The gradient elements this rank counts in the global norm (tensor parallelism: replicated
  // tensors on TP rank 0 only); empty: all of them.
  std::vector<std::pair<size_t, size_t>> counted_;
  // Rank 0's consolidated state between a checkpoint file and the ranks (resume, checkpoint):
  // a full-size AdamW when sharded.
  std::unique_ptr<AdamW> full_adam_;
  std::vector<float> init_params_;  // rank 0, tensor-parallel --init-from: the source's weights (host, full layout)
  std::unique_ptr<CheckpointTensorReader> ckpt_;  // rank 0, tensor-parallel resume: read in distribute()
  // Tensor parallelism with ZeRO, world rank 0's TP group during a checkpoint: this rank's
  // layout's gathered m and v (backend memory, N floats each).
  std::unique_ptr<BackendBuffer> tp_m_, tp_v_;
};

}  // namespace td
