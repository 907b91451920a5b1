// Optimizer pieces: learning-rate schedule, global-norm gradient clipping, AdamW.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/ops/ops.h"

namespace td {

/// Linear warmup then cosine decay to min_lr (nanoGPT's get_lr; Loshchilov & Hutter 2017, SGDR).
/// step is 0-based (the step about to be taken). For step < warmup: lr * (step + 1) / warmup.
/// Then lr(s) = min_lr + 0.5 (1 + cos(pi * r)) (lr - min_lr), r = (s - warmup) / (steps - warmup),
/// clamped to [0, 1], so the last step uses min_lr when warmup < steps.
double lr_at(int step, double lr, double min_lr, int warmup, int steps);

/// Global L2 norm of the gradient buffer (n floats), computed in double.
/// If max_norm > 0 and the norm exceeds it, grads are scaled by max_norm / norm
/// (torch.nn.utils.clip_grad_norm_). Returns the norm BEFORE clipping (NaN/inf are returned as is
/// and nothing is scaled).
double clip_grad_norm(Backend& be, float* grads, size_t n, double max_norm);

/// tensors merged into runs: consecutive entries whose elements are contiguous (offset + numel
/// = the next offset) and whose decay is the same become one entry (name of the first, numel
/// summed, shape {numel}). Order kept.
std::vector<ParamTensor> adamw_runs(const std::vector<ParamTensor>& tensors);

/// AdamW with decoupled weight decay applied per tensor (ParamTensor::decay), moments m, v in
/// backend memory (same layout as the parameters). Matches torch.optim.AdamW. step() makes ONE
/// backend adamw call over all runs of adjacent tensors that share a decay setting (adamw_runs,
/// passed as AdamWSpan): the update is element-wise, so the result is the same bits as one call
/// per tensor; the CUDA backend updates up to kAdamWSpansPerLaunch spans per kernel launch.
class AdamW {
 public:
  AdamW(Backend& be, std::vector<ParamTensor> tensors, size_t n, double beta1, double beta2,
        double eps, double weight_decay);
  ~AdamW();
  AdamW(const AdamW&) = delete;
  AdamW& operator=(const AdamW&) = delete;
  /// One update with learning rate lr; t is the 1-based count of updates (bias correction).
  void step(float* params, const float* grads, double lr, int t);
  /// The (offset, numel, decay) runs step() passes to the backend, in buffer order.
  const std::vector<ParamTensor>& runs() const { return runs_; }
  /// The same runs as the spans of the single Backend::adamw call.
  const std::vector<AdamWSpan>& spans() const { return spans_; }
  float* m() { return m_; }
  float* v() { return v_; }
  size_t size() const { return n_; }

 private:
  Backend& be_;
  std::vector<ParamTensor> runs_;
  std::vector<AdamWSpan> spans_;
  size_t n_;
  double beta1_, beta2_, eps_, wd_;
  float* m_;
  float* v_;
};

}  // namespace td
