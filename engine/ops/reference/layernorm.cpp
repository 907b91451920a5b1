#include "engine/ops/reference/layernorm.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace td::cpu {

namespace {
constexpr double kLayerNormEps = 1e-5;
}  // namespace

template <class R>
void layernorm_forward(R* out, R* mean, R* rstd, const R* inp,
                       const R* weight, const R* bias, int N, int C) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* x = inp + (size_t)i * C;
    R m = R(0.0);
    for (int c = 0; c < C; c++) m += x[c];
    m /= C;
    R var = R(0.0);  // biased variance, as PyTorch's layer_norm
    for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
    var /= C;
    R s = R(1.0) / std::sqrt(var + R(kLayerNormEps));
    R* o = out + (size_t)i * C;
    for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

template <class R>
void layernorm_backward(R* dinp, R* dweight, R* dbias, const R* dout,
                        const R* inp, const R* weight, const R* mean,
                        const R* rstd, int N, int C) {
  // dinp = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = dout * weight.
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* x = inp + (size_t)i * C;
    const R* dy = dout + (size_t)i * C;
    R* dx = dinp + (size_t)i * C;
    R m = mean[i], s = rstd[i];
    R dnorm_mean = R(0.0), dnorm_norm_mean = R(0.0);
    for (int c = 0; c < C; c++) {
      R norm = (x[c] - m) * s;
      R dnorm = weight[c] * dy[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int c = 0; c < C; c++) {
      R norm = (x[c] - m) * s;
      R dnorm = weight[c] * dy[c];
      dx[c] += s * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
    }
  }
  // dweight, dbias: column sums over rows. Rows are summed in fixed chunks of 64 (contiguous
  // reads), then the chunks in order: the result does not depend on the thread count.
  const int chunk = 64, nchunks = (N + chunk - 1) / chunk;
  std::vector<R> part((size_t)nchunks * 2 * C, R(0));
#pragma omp parallel for schedule(static)
  for (int k = 0; k < nchunks; k++) {
    R* pw = part.data() + (size_t)k * 2 * C;
    R* pb = pw + C;
    for (int i = k * chunk; i < std::min(N, (k + 1) * chunk); i++) {
      const R* x = inp + (size_t)i * C;
      const R* dy = dout + (size_t)i * C;
      const R m = mean[i], s = rstd[i];
      for (int c = 0; c < C; c++) {
        pw[c] += (x[c] - m) * s * dy[c];
        pb[c] += dy[c];
      }
    }
  }
  for (int k = 0; k < nchunks; k++)
    for (int c = 0; c < C; c++) {
      dweight[c] += part[(size_t)k * 2 * C + c];
      dbias[c] += part[(size_t)k * 2 * C + C + c];
    }
}

#define TD_INSTANTIATE(R) \
  template void layernorm_forward<R>(R*, R*, R*, const R*, const R*, const R*, int, int); \
  template void layernorm_backward<R>(R*, R*, R*, const R*, const R*, const R*, const R*, const R*, int, int);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
