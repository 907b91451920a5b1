#include "engine/ops/reference/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>

namespace td::cpu {
namespace {

// log sum_j exp(z[j]) of one row of V, max-subtracted, the sum in double.
template <class R>
R log_sum_exp(const R* z, int V) {
  R mx = -INFINITY;
  for (int j = 0; j < V; j++) mx = std::max(mx, z[j]);
  double sum = 0.0;
  for (int j = 0; j < V; j++) sum += std::exp((double)(z[j] - mx));
  return (R)std::log(sum) + mx;
}

}  // namespace

template <class R>
void softmax_cross_entropy(R* losses, R* dlogits, const R* logits,
                           const int32_t* targets, int N, int V, R grad_scale) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* z = logits + (size_t)i * V;
    const R logsum = log_sum_exp(z, V);
    int y = targets[i];
    losses[i] = logsum - z[y];
    if (dlogits) {
      R* dz = dlogits + (size_t)i * V;  // may alias z: each element is read before written
      for (int j = 0; j < V; j++) {
        R p = std::exp(z[j] - logsum);
        dz[j] = (p - (j == y ? R(1.0) : R(0.0))) * grad_scale;
      }
    }
  }
}

template <class R>
void cross_entropy_shard_stats(R* lse, R* target_logit, const R* logits, const int32_t* targets, int N, int V, int v0) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* z = logits + (size_t)i * V;
    lse[i] = log_sum_exp(z, V);
    const int y = targets[i] - v0;
    target_logit[i] = y >= 0 && y < V ? z[y] : R(0);
  }
}

template <class R>
void cross_entropy_shard_backward(R* dlogits, const R* logits, const R* lse, const int32_t* targets, int N, int V, int v0,
                                  R grad_scale) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* z = logits + (size_t)i * V;
    R* dz = dlogits + (size_t)i * V;  // may alias z: each element is read before written
    const int y = targets[i] - v0;
    for (int j = 0; j < V; j++) dz[j] = (std::exp(z[j] - lse[i]) - (j == y ? R(1.0) : R(0.0))) * grad_scale;
  }
}

#define TD_INSTANTIATE(R) \
  template void softmax_cross_entropy<R>(R*, R*, const R*, const int32_t*, int, int, R); \
  template void cross_entropy_shard_stats<R>(R*, R*, const R*, const int32_t*, int, int, int); \
  template void cross_entropy_shard_backward<R>(R*, const R*, const R*, const int32_t*, int, int, int, R);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
