#include "engine/ops/reference/optimizer.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace td::cpu {

template <class R>
void adamw(R* params, const R* grads, R* m, R* v, size_t n, R lr,
           R beta1, R beta2, R eps, R weight_decay, int t) {
  const R bc1 = R(1.0) - std::pow(beta1, (R)t);
  const R bc2 = R(1.0) - std::pow(beta2, (R)t);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) {
    R g = grads[i];
    R mi = beta1 * m[i] + (R(1.0) - beta1) * g;
    R vi = beta2 * v[i] + (R(1.0) - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    R mhat = mi / bc1, vhat = vi / bc2;
    params[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + weight_decay * params[i]);
  }
}

template <class R>
double grad_norm_squared(const R* g, size_t n) {
  double total = 0.0;
  // Fixed-size chunks summed in order: the result does not depend on the thread count.
  const size_t chunk = 1 << 16;
  const size_t nchunks = (n + chunk - 1) / chunk;
  std::vector<double> partial(nchunks, 0.0);
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < nchunks; k++) {
    double s = 0.0;
    size_t end = std::min(n, (k + 1) * chunk);
    for (size_t i = k * chunk; i < end; i++) s += (double)g[i] * g[i];
    partial[k] = s;
  }
  for (double s : partial) total += s;
  return total;
}

template <class R>
void scale(R* x, R s, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) x[i] *= s;
}

#define TD_INSTANTIATE(R) \
  template void adamw<R>(R*, const R*, R*, R*, size_t, R, R, R, R, R, int); \
  template double grad_norm_squared<R>(const R*, size_t); \
  template void scale<R>(R*, R, size_t);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
