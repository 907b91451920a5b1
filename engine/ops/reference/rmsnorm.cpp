#include "engine/ops/reference/rmsnorm.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace td::cpu {

template <class R>
void rmsnorm_forward(R* out, R* rstd, const R* inp, const R* weight, int N, int C, R eps) {
  // inp (N,C), weight (C), out (N,C), rstd (N): out = inp * rstd * weight,
  // rstd = 1 / sqrt(mean_c inp^2 + eps) (LlamaRMSNorm: no mean subtracted, no bias).
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* x = inp + (size_t)i * C;
    R ms = R(0.0);
    for (int c = 0; c < C; c++) ms += x[c] * x[c];
    ms /= C;
    const R s = R(1.0) / std::sqrt(ms + eps);
    R* o = out + (size_t)i * C;
    for (int c = 0; c < C; c++) o[c] = x[c] * s * weight[c];
    rstd[i] = s;
  }
}

template <class R>
void rmsnorm_backward(R* dinp, R* dweight, const R* dout, const R* inp, const R* weight, const R* rstd, int N,
                      int C) {
  // With norm = x * rstd and dnorm = dout * weight (d rstd / dx_j = -rstd^3 x_j / C):
  // dinp = rstd * (dnorm - norm * mean_c(dnorm * norm)); dweight = sum over rows of norm * dout.
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* x = inp + (size_t)i * C;
    const R* dy = dout + (size_t)i * C;
    R* dx = dinp + (size_t)i * C;
    const R s = rstd[i];
    R dnorm_norm_mean = R(0.0);
    for (int c = 0; c < C; c++) dnorm_norm_mean += weight[c] * dy[c] * x[c] * s;
    dnorm_norm_mean /= C;
    for (int c = 0; c < C; c++) dx[c] += s * (weight[c] * dy[c] - x[c] * s * dnorm_norm_mean);
  }
  // dweight: column sums over rows in fixed chunks of 64 rows, then the chunks in order (the
  // result does not depend on the thread count), as layernorm_backward.
  const int chunk = 64, nchunks = (N + chunk - 1) / chunk;
  std::vector<R> part((size_t)nchunks * C, R(0));
#pragma omp parallel for schedule(static)
  for (int k = 0; k < nchunks; k++) {
    R* pw = part.data() + (size_t)k * C;
    for (int i = k * chunk; i < std::min(N, (k + 1) * chunk); i++) {
      const R* x = inp + (size_t)i * C;
      const R* dy = dout + (size_t)i * C;
      const R s = rstd[i];
      for (int c = 0; c < C; c++) pw[c] += x[c] * s * dy[c];
    }
  }
  for (int k = 0; k < nchunks; k++)
    for (int c = 0; c < C; c++) dweight[c] += part[(size_t)k * C + c];
}

#define TD_INSTANTIATE(R)                                                                              \
  template void rmsnorm_forward<R>(R*, R*, const R*, const R*, int, int, R); \
  template void rmsnorm_backward<R>(R*, R*, const R*, const R*, const R*, const R*, int, int);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
