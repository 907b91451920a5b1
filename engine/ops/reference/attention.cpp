#include "engine/ops/reference/attention.h"

#include <algorithm>
#include <cmath>

#include "engine/ops/cpu_math.h"
#include "engine/ops/reference/blas.h"

namespace td::cpu {

// Attention runs one (batch, head) pair per OpenMP iteration: its GEMMs are small (T x T x hs),
// and the OpenMP build of OpenBLAS runs a GEMM called inside a parallel region on the calling
// thread, so the pairs proceed in parallel with no synchronisation inside a GEMM.
// qkv rows are W = C + 2 NKV hs wide: q (NH heads) | k (NKV heads) | v (NKV heads); q head h
// reads k/v head h / G, G = NH / NKV (with NKV = NH: W = 3C, k = q + C, v = q + 2C).
namespace {

// row[0, n) = softmax(row[0, n)), row[n, T) = 0: one causal row of scores.
template <class R>
void softmax_row(R* row, int n, int T) {
  R mx = row[0];
  for (int j = 1; j < n; j++) mx = std::max(mx, row[j]);
  R sum = R(0.0);
  for (int j = 0; j < n; j++) {
    row[j] = std::exp(row[j] - mx);
    sum += row[j];
  }
  const R inv = R(1.0) / sum;
  for (int j = 0; j < n; j++) row[j] *= inv;
  for (int j = n; j < T; j++) row[j] = R(0.0);
}
// fp32: vectorised, exp from cpu_math.h (the arguments are <= 0; relative error < 2e-7; glibc's
// expf is a scalar call). Built for AVX-512 / AVX2 / baseline.
TD_SIMD_CLONES void softmax_row_f32(float* row, int n, int T) {
  float mx = row[0];
  for (int j = 1; j < n; j++) mx = std::max(mx, row[j]);
  float sum = 0.0f;
  for (int j = 0; j < n; j++) {
    row[j] = exp_neg_f32(row[j] - mx);
    sum += row[j];
  }
  const float inv = 1.0f / sum;
  for (int j = 0; j < n; j++) row[j] *= inv;
  for (int j = n; j < T; j++) row[j] = 0.0f;
}
template <>
void softmax_row<float>(float* row, int n, int T) {
  softmax_row_f32(row, n, T);
}

}  // namespace

template <class R>
void attention_forward(R* out, R* att, const R* qkv, int B, int T, int C, int NH, int NKV) {
  const int hs = C / NH, G = NH / NKV, CKV = NKV * hs, W = C + 2 * CKV;
  const R scale = R(1.0) / std::sqrt((R)hs);
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; bh++) {
    const int b = bh / NH, h = bh % NH;
    const R* q = qkv + (size_t)b * T * W + h * hs;             // (T,hs), row stride W
    const R* k = qkv + (size_t)b * T * W + C + (h / G) * hs;  // (T,hs); v = k + CKV
    R* a = att + (size_t)bh * T * T;
    // scores (T,T) = scale * q @ k^T (only t2 <= t is used).
    gemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, W, k, W, R(0.0), a, T);
    // Causal softmax of every row; entries above the diagonal become 0.
    for (int t = 0; t < T; t++) softmax_row(a + (size_t)t * T, t + 1, T);
    // out[b, :, h*hs:(h+1)*hs] (T,hs) = att (T,T) @ v (T,hs).
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, R(1.0), a, T, k + CKV, W, R(0.0),
         out + (size_t)b * T * C + h * hs, C);
  }
}

// One (batch, k/v head) per OpenMP iteration: the G query heads that share a k/v head add their
// dk and dv in a fixed order (g = 0, 1, ...), so no two threads write the same dk/dv and the
// result does not depend on the thread count.
template <class R>
void attention_backward(R* dqkv, R* datt, const R* dout, const R* qkv, const R* att, int B, int T,
                        int C, int NH, int NKV) {
  const int hs = C / NH, G = NH / NKV, CKV = NKV * hs, W = C + 2 * CKV;
  const R scale = R(1.0) / std::sqrt((R)hs);
#pragma omp parallel for schedule(static)
  for (int bk = 0; bk < B * NKV; bk++) {
    const int b = bk / NKV, kh = bk % NKV;
    const R* k = qkv + (size_t)b * T * W + C + kh * hs;  // v = k + CKV
    R* dk = dqkv + (size_t)b * T * W + C + kh * hs;      // dv = dk + CKV
    for (int g = 0; g < G; g++) {
      const int h = kh * G + g, bh = b * NH + h;
      const R* q = qkv + (size_t)b * T * W + h * hs;
      const R* a = att + (size_t)bh * T * T;
      const R* dy = dout + (size_t)b * T * C + h * hs;
      R* dq = dqkv + (size_t)b * T * W + h * hs;
      R* d = datt + (size_t)bh * T * T;
      // datt (T,T) = dy (T,hs) @ v^T; dv (T,hs) += att^T @ dy.
      gemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, R(1.0), dy, C, k + CKV, W, R(0.0), d, T);
      gemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, R(1.0), a, T, dy, C, R(1.0), dk + CKV, W);
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
      gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, d, T, k, W, R(1.0), dq, W);
      gemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, d, T, q, W, R(1.0), dk, W);
    }
  }
}

#define TD_INSTANTIATE(R) \
  template void attention_forward<R>(R*, R*, const R*, int, int, int, int, int); \
  template void attention_backward<R>(R*, R*, const R*, const R*, const R*, int, int, int, int, int);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
