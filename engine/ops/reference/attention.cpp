#include "engine/ops/reference/attention.h"

#include <algorithm>
#include <cmath>

#include "engine/ops/reference/blas.h"

namespace td::cpu {

// Attention runs one (batch, head) pair per OpenMP iteration: its GEMMs are small (T x T x hs),
// and the OpenMP build of OpenBLAS runs a GEMM called inside a parallel region on the calling
// thread, so the pairs proceed in parallel with no synchronisation inside a GEMM.
template <class R>
void attention_forward(R* out, R* att, const R* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH, C3 = 3 * C;
  const R scale = R(1.0) / std::sqrt((R)hs);
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; bh++) {
    const int b = bh / NH, h = bh % NH;
    const R* q = qkv + (size_t)b * T * C3 + h * hs;  // (T,hs), row stride 3C; k = q + C, v = q + 2C
    R* a = att + (size_t)bh * T * T;
    // scores (T,T) = scale * q @ k^T (only t2 <= t is used).
    gemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, C3, q + C, C3, R(0.0), a, T);
    // Causal softmax of every row; entries above the diagonal become 0.
    for (int t = 0; t < T; t++) {
      R* row = a + (size_t)t * T;
      R mx = row[0];
      for (int j = 1; j <= t; j++) mx = std::max(mx, row[j]);
      R sum = R(0.0);
      for (int j = 0; j <= t; j++) {
        row[j] = std::exp(row[j] - mx);
        sum += row[j];
      }
      const R inv = R(1.0) / sum;
      for (int j = 0; j <= t; j++) row[j] *= inv;
      for (int j = t + 1; j < T; j++) row[j] = R(0.0);
    }
    // out[b, :, h*hs:(h+1)*hs] (T,hs) = att (T,T) @ v (T,hs).
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, R(1.0), a, T, q + 2 * C, C3, R(0.0),
         out + (size_t)b * T * C + h * hs, C);
  }
}

template <class R>
void attention_backward(R* dqkv, R* datt, const R* dout, const R* qkv, const R* att, int B, int T,
                        int C, int NH) {
  const int hs = C / NH, C3 = 3 * C;
  const R scale = R(1.0) / std::sqrt((R)hs);
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; bh++) {
    const int b = bh / NH, h = bh % NH;
    const R* q = qkv + (size_t)b * T * C3 + h * hs;
    const R* a = att + (size_t)bh * T * T;
    const R* dy = dout + (size_t)b * T * C + h * hs;
    R* dq = dqkv + (size_t)b * T * C3 + h * hs;  // dk = dq + C, dv = dq + 2C
    R* d = datt + (size_t)bh * T * T;
    // datt (T,T) = dy (T,hs) @ v^T; dv (T,hs) += att^T @ dy.
    gemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, R(1.0), dy, C, q + 2 * C, C3, R(0.0), d, T);
    gemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, R(1.0), a, T, dy, C, R(1.0), dq + 2 * C, C3);
    // Softmax backward in place: dpre[t,j] = att[t,j] * (datt[t,j] - sum_k att[t,k] datt[t,k]).
    for (int t = 0; t < T; t++) {
      const R* ar = a + (size_t)t * T;
      R* dr = d + (size_t)t * T;
      R dot = R(0.0);
      for (int j = 0; j <= t; j++) dot += ar[j] * dr[j];
      for (int j = 0; j <= t; j++) dr[j] = ar[j] * (dr[j] - dot);
      for (int j = t + 1; j < T; j++) dr[j] = R(0.0);
    }
    // dq (T,hs) += scale * dpre @ k; dk (T,hs) += scale * dpre^T @ q.
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, d, T, q + C, C3, R(1.0), dq, C3);
    gemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, d, T, q, C3, R(1.0), dq + C, C3);
  }
}

#define TD_INSTANTIATE(R) \
  template void attention_forward<R>(R*, R*, const R*, int, int, int, int); \
  template void attention_backward<R>(R*, R*, const R*, const R*, const R*, int, int, int, int);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
