// ZeRO-2: gradients and optimizer state partitioned over the data-parallel ranks (Rajbhandari,
// Rasley, Ruwase, He 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
// arXiv:1910.02054, section 5.2, P_os+g), bucket by bucket as DeepSpeed's stage 2 and PyTorch
// FSDP's SHARD_GRAD_OP do. docs/distributed.md "What a step does" says what each rank holds.
//
// The model's gradient layout is cut into buckets (gpt_grad_buckets: the embeddings, each block,
// the final LayerNorm and head). Rank r owns elements shard_range(len_b, r, n) of each bucket b,
// so its share is the concatenation of one slice per bucket (at most sum_b ceil(len_b / n)
// floats, about N / n). During backward the model writes each bucket into a bucket-sized buffer
// (GradSink); when the bucket is complete it is reduce-scattered (sum) at once and the rank keeps
// its slice in a persistent accumulator of its share. With gradient accumulation, the next
// micro-batch's buffer starts from the rank's accumulated slice (the other ranks' slices are
// zero), so the reduce-scatter adds the accumulated value once: no separate add kernel. After
// the last micro-batch the accumulator holds this rank's slices of the global batch's gradient;
// clipping uses the global norm (sum of the slices' squared norms, summed in double in rank
// order); AdamW updates each slice (moments of the share only); then each bucket's parameters
// are all-gathered.
//
// Collectives per step: one reduce-scatter of each bucket per micro-batch and one all-gather of
// each bucket; every rank calls them in the same order with the same sizes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "engine/config.h"
#include "engine/dist/communicator.h"
#include "engine/model/gpt.h"
#include "engine/model/shape.h"
#include "engine/optim/adamw.h"

namespace td {

/// dst (n floats) = src (n floats), both backend memory, through the host (the Backend interface
/// has no device-to-device copy; checkpoints, resumes and ZeRO's bucket slices). On the CPU
/// backend both are host memory: one upload (a memcpy), no temporary (a slice-sized
/// allocation, page faults and a free at every bucket: 8-10 % of a ZeRO-3 step at 6 M
/// parameters on 2 ranks).
void copy_backend(Backend& be, float* dst, const float* src, size_t n);

/// The parameter table restricted to elements [lo, hi) of the layout, offsets relative to lo:
/// the tensors of a ZeRO shard or slice, for an AdamW over it only (weight decay stays per
/// tensor).
std::vector<ParamTensor> slice_tensors(const std::vector<ParamTensor>& all, size_t lo, size_t hi);

/// Elements this rank holds of ZeRO-2's gradient share for buckets `buckets` (gpt_grad_buckets)
/// over `world` ranks: sum over buckets of shard_range's length. world = 1: every element.
/// (Inline, as the next two: the planner's library uses them without the training code.)
inline size_t zero2_share(const std::vector<std::pair<size_t, size_t>>& buckets, int rank, int world) {
  size_t n = 0;
  for (const auto& [lo, hi] : buckets) {
    const auto [a, b] = dist::shard_range(hi - lo, rank, world);
    n += b - a;
  }
  return n;
}

/// The largest rank's zero2_share of buckets `buckets` over `world` ranks (the AdamW moments of
/// a rank are 2 x this).
inline size_t zero2_max_share(const std::vector<std::pair<size_t, size_t>>& buckets, int world) {
  size_t share = 0;
  for (int r = 0; r < std::max(1, world); r++) share = std::max(share, zero2_share(buckets, r, std::max(1, world)));
  return share;
}
/// The same for a model shape (either family: model_grad_buckets).
inline size_t zero2_max_share(const ModelConfig& m, int world) { return zero2_max_share(model_grad_buckets(m), world); }

/// Floats of gradient memory a ZeRO-2 rank allocates (the largest rank's) for buckets
/// `buckets` (GPT::grad_buckets: model_grad_buckets, or a tensor-parallel rank's
/// tp_grad_buckets): the accumulator (max over ranks of zero2_share) plus the buckets' buffers
/// open at once during backward: bucket 0 (embeddings), the last bucket (ln_f, lm_head) and one
/// block.
inline size_t zero2_grad_floats(const std::vector<std::pair<size_t, size_t>>& buckets, int world) {
  const size_t block = buckets.size() > 2 ? buckets[1].second - buckets[1].first : 0;
  return zero2_max_share(buckets, world) + (buckets.front().second - buckets.front().first) +
         (buckets.back().second - buckets.back().first) + block;
}
/// The same for a model shape (model_grad_buckets).
inline size_t zero2_grad_floats(const ModelConfig& m, int world) { return zero2_grad_floats(model_grad_buckets(m), world); }

class Zero2 : public GradSink {
 public:
  /// Sets itself as the model's GradSink and frees the model's full-size gradient buffer.
  /// Allocates (backend memory) the accumulator, the bucket buffers and one AdamW per bucket
  /// slice. comm: the data-parallel ranks (the run's communicator, or under tensor parallelism
  /// the DP group of this rank's shard; world >= 1). The buckets are the model's own
  /// (GPT::grad_buckets: a tensor-parallel rank's local layout).
  Zero2(GPT& model, dist::Communicator& comm, const TrainConfig& tc);
  ~Zero2() override;
  Zero2(const Zero2&) = delete;
  Zero2& operator=(const Zero2&) = delete;

  /// Before the first micro-batch of a step: the accumulator starts again from zero.
  void begin_step();
  float* open(int bucket) override;
  void close(int bucket) override;

  /// Squared L2 norm of this rank's accumulated slices (double); the global norm is the square
  /// root of the sum over ranks. counted (tp_counted_ranges, engine/train/tp_run.h; empty = all):
  /// under tensor parallelism, only the elements of the model's layout in those ranges count.
  double local_norm_squared(const std::vector<std::pair<size_t, size_t>>& counted = {});
  /// Scales the accumulated gradient by s (clipping: s = max_norm / (norm + 1e-6)).
  void scale(float s);
  /// AdamW on this rank's slices (lr, 1-based update count t), then every bucket's parameters
  /// all-gathered: every rank ends with the same parameters. (Zero3: no all-gather.)
  virtual void step(double lr, int t);

  /// Collective: the full-size moment m (which = 0) or v (1) gathered into `full` (backend
  /// memory, num_params floats), for a checkpoint; a rank passing full == null takes part
  /// through its bucket buffers only (between steps).
  void gather_moment(int which, float* full);
  /// This rank's slices of the full-size moment m (0) or v (1) in `full` (backend memory), for a
  /// resume. Not collective.
  void load_moment(int which, const float* full);

  size_t share() const { return share_; }

 protected:
  // The bucket-sized buffer bucket b uses among {first, last, block}.
  float* pick(int b, float* first, float* last, float* block) const {
    return b == 0 ? first : (size_t)b + 1 == buckets_.size() ? last : block;
  }
  GPT& model_;
  dist::Communicator& comm_;
  Backend& be_;
  std::vector<std::pair<size_t, size_t>> buckets_;
  std::vector<std::pair<size_t, size_t>> own_;  // per bucket: this rank's slice, relative to the bucket
  std::vector<size_t> acc_off_;                 // per bucket: where its slice starts in acc_
  std::vector<int> opened_;                     // per bucket: micro-batches opened this step
  std::vector<std::unique_ptr<AdamW>> adam_;    // per bucket slice
  size_t share_ = 0;
  float* acc_ = nullptr;                        // share_ floats
  float* first_ = nullptr;                      // bucket 0's buffer
  float* last_ = nullptr;                       // the last bucket's buffer
  float* block_ = nullptr;                      // one block's buffer (blocks are open one at a time)
  int block_open_ = -1;
};

/// Floats of parameter memory a ZeRO-3 rank holds (the largest rank's): its shard (max over
/// ranks of zero2_share) plus the gathered buckets in flight, bucket 0 (embeddings, lent for the
/// whole forward when tied), the last bucket and one block: the same count as
/// zero2_grad_floats.
inline size_t zero3_param_floats(const ModelConfig& m, int world) { return zero2_grad_floats(m, world); }
inline size_t zero3_param_floats(const std::vector<std::pair<size_t, size_t>>& buckets, int world) { return zero2_grad_floats(buckets, world); }

// ZeRO-3: parameters partitioned too (Rajbhandari et al. 2020 section 5.3, P_os+g+p; PyTorch
// FSDP's FULL_SHARD): rank r keeps elements shard_range(len_b, r, n) of every bucket's
// parameters (the same slices as its gradient and moments), and the model's full-size parameter
// buffer is freed (GPT::release_params). Forward and backward read each bucket through the
// ParamSource interface (engine/model/gpt.h): need(b) ring all-gathers the bucket from the
// ranks' slices into a bucket-sized buffer (bucket 0's, the last bucket's, or the one block
// buffer reused block after block), done(b) frees it for the next block. So each micro batch
// all-gathers every bucket twice (forward, backward) and reduce-scatters its gradients as
// ZeRO-2 does: (n-1)/n a (2 P + G) bytes per step and rank (engine/plan/cluster.h). AdamW
// updates the slices in place; no all-gather follows the step (the next forward gathers).
class Zero3 : public Zero2, public ParamSource {
 public:
  /// As Zero2, and sets itself as the model's ParamSource; allocates the shard (zero2_share
  /// floats) and the three gathered-bucket buffers. The model keeps its full parameters until
  /// shard_params().
  Zero3(GPT& model, dist::Communicator& comm, const TrainConfig& tc);
  ~Zero3() override;

  /// Keeps this rank's slices of the model's (full, identical on every rank) parameters, then
  /// frees the model's full-size parameter buffer. Once, after the parameters are final
  /// (initialised or resumed and broadcast). Not collective.
  void shard_params();
  /// Collective: every bucket all-gathered into `full` (backend memory, num_params floats; a
  /// checkpoint's weights on rank 0), or, with full == null, through the bucket buffers only
  /// (the other ranks' part of the same collectives).
  void gather_params(float* full);

  const float* need(int bucket) override;
  void done(int bucket) override;
  void step(double lr, int t) override;

 private:
  float* pshard_ = nullptr;  // share_ floats: this rank's slice of each bucket, at acc_off_
  float* pfirst_ = nullptr;  // bucket 0 gathered
  float* plast_ = nullptr;   // the last bucket gathered
  float* pblock_ = nullptr;  // one block gathered (blocks are lent one at a time)
  int pblock_lent_ = -1;
  bool sharded_ = false;
};

}  // namespace td
