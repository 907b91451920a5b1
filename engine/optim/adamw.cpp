#include "engine/optim/adamw.h"

#include <algorithm>
#include <cmath>

namespace td {

double lr_at(int step, double lr, double min_lr, int warmup, int steps) {
  if (step < warmup) return lr * (step + 1) / warmup;
  if (steps <= warmup + 1) return lr;
  double r = (double)(step - warmup) / (double)(steps - 1 - warmup);
  r = std::clamp(r, 0.0, 1.0);
  return min_lr + 0.5 * (1.0 + std::cos(M_PI * r)) * (lr - min_lr);
}

double clip_grad_norm(Backend& be, float* grads, size_t n, double max_norm) {
  double norm = std::sqrt(be.grad_norm_squared(grads, n));
  if (std::isfinite(norm) && max_norm > 0 && norm > max_norm)
    be.scale(grads, (float)(max_norm / (norm + 1e-6)), n);
  return norm;
}

std::vector<ParamTensor> adamw_runs(const std::vector<ParamTensor>& tensors) {
  std::vector<ParamTensor> runs;
  for (const ParamTensor& t : tensors) {
    if (!runs.empty() && runs.back().decay == t.decay && runs.back().offset + runs.back().numel == t.offset) {
      runs.back().numel += t.numel;
      runs.back().shape = {(int64_t)runs.back().numel};
      continue;
    }
    runs.push_back(t);
    runs.back().shape = {(int64_t)t.numel};
  }
  return runs;
}

AdamW::AdamW(Backend& be, std::vector<ParamTensor> tensors, size_t n, double beta1, double beta2,
             double eps, double weight_decay)
    : be_(be), runs_(adamw_runs(tensors)), n_(n), beta1_(beta1), beta2_(beta2), eps_(eps), wd_(weight_decay) {
  m_ = static_cast<float*>(be_.alloc(n * sizeof(float)));
  v_ = static_cast<float*>(be_.alloc(n * sizeof(float)));
  spans_.reserve(runs_.size());
  for (const ParamTensor& r : runs_) spans_.push_back(AdamWSpan{r.offset, r.numel, r.decay});
  be_.zero(m_, n * sizeof(float));
  be_.zero(v_, n * sizeof(float));
}

AdamW::~AdamW() {
  be_.free(m_);
  be_.free(v_);
}

void AdamW::step(float* params, const float* grads, double lr, int t) {
  be_.adamw(params, grads, m_, v_, spans_.data(), spans_.size(), (float)lr, (float)beta1_, (float)beta2_,
            (float)eps_, (float)wd_, t);
}

}  // namespace td
