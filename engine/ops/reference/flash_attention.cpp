#include "engine/ops/reference/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/ops/reference/blas.h"

namespace td::cpu {

// Layout as in attention.cpp: qkv rows are W = C + 2 NKV hs wide, q (NH heads) | k (NKV heads) |
// v (NKV heads); query head h reads k/v head h / G, G = NH / NKV. One (batch, head) pair per
// OpenMP iteration forward, one (batch, k/v head) backward (the G query heads of a group add
// their dk and dv in a fixed order), so no two threads write the same element.

template <class R>
void flash_attention_forward(R* out, R* lse, const R* qkv, int B, int T, int C, int NH, int NKV) {
  const int hs = C / NH, G = NH / NKV, CKV = NKV * hs, W = C + 2 * CKV, Bt = kFlashTile;
  const R scale = R(1.0) / std::sqrt((R)hs);
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; bh++) {
    const int b = bh / NH, h = bh % NH;
    const R* q = qkv + (size_t)b * T * W + h * hs;             // (T,hs), row stride W
    const R* k = qkv + (size_t)b * T * W + C + (h / G) * hs;  // (T,hs); v = k + CKV
    R* o = out + (size_t)b * T * C + h * hs;                   // (T,hs), row stride C
    std::vector<R> s((size_t)Bt * Bt), acc((size_t)Bt * hs), m(Bt), l(Bt);
    for (int i0 = 0; i0 < T; i0 += Bt) {
      const int br = std::min(Bt, T - i0);
      std::fill(acc.begin(), acc.end(), R(0.0));
      std::fill(m.begin(), m.end(), -std::numeric_limits<R>::infinity());
      std::fill(l.begin(), l.end(), R(0.0));
      for (int j0 = 0; j0 < i0 + br; j0 += Bt) {  // key tiles that reach the diagonal
        const int bc = std::min(Bt, T - j0);
        // s (br,bc) = scale * q_i k_j^T.
        gemm(CblasRowMajor, CblasNoTrans, CblasTrans, br, bc, hs, scale, q + (size_t)i0 * W, W, k + (size_t)j0 * W, W,
             R(0.0), s.data(), Bt);
        for (int r = 0; r < br; r++) {
          R* sr = s.data() + (size_t)r * Bt;
          const int n = std::min(bc, i0 + r - j0 + 1);  // keys j0 .. j0+n-1 are <= the query
          if (n <= 0) {  // the whole tile is above the diagonal for this row
            std::fill(sr, sr + bc, R(0.0));
            continue;
          }
          R mx = m[r];
          for (int j = 0; j < n; j++) mx = std::max(mx, sr[j]);
          // Online softmax: rescale what the earlier tiles summed to the new maximum.
          const R corr = std::exp(m[r] - mx);
          R sum = R(0.0);
          for (int j = 0; j < n; j++) {
            sr[j] = std::exp(sr[j] - mx);
            sum += sr[j];
          }
          std::fill(sr + n, sr + bc, R(0.0));
          l[r] = l[r] * corr + sum;
          m[r] = mx;
          R* ar = acc.data() + (size_t)r * hs;
          for (int d = 0; d < hs; d++) ar[d] *= corr;
        }
        // acc (br,hs) += p (br,bc) @ v_j (bc,hs).
        gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, br, hs, bc, R(1.0), s.data(), Bt, k + CKV + (size_t)j0 * W, W,
             R(1.0), acc.data(), hs);
      }
      for (int r = 0; r < br; r++) {
        const R inv = R(1.0) / l[r];
        for (int d = 0; d < hs; d++) o[(size_t)(i0 + r) * C + d] = acc[(size_t)r * hs + d] * inv;
        lse[(size_t)bh * T + i0 + r] = m[r] + std::log(l[r]);
      }
    }
  }
}

template <class R>
void flash_attention_backward(R* dqkv, const R* dout, const R* qkv, const R* out, const R* lse, int B, int T, int C,
                              int NH, int NKV) {
  const int hs = C / NH, G = NH / NKV, CKV = NKV * hs, W = C + 2 * CKV, Bt = kFlashTile;
  const R scale = R(1.0) / std::sqrt((R)hs);
#pragma omp parallel for schedule(static)
  for (int bk = 0; bk < B * NKV; bk++) {
    const int b = bk / NKV, kh = bk % NKV;
    const R* k = qkv + (size_t)b * T * W + C + kh * hs;  // v = k + CKV
    R* dk = dqkv + (size_t)b * T * W + C + kh * hs;      // dv = dk + CKV
    std::vector<R> p((size_t)Bt * Bt), dp((size_t)Bt * Bt), D(T);
    for (int g = 0; g < G; g++) {
      const int h = kh * G + g, bh = b * NH + h;
      const R* q = qkv + (size_t)b * T * W + h * hs;
      const R* dy = dout + (size_t)b * T * C + h * hs;
      const R* y = out + (size_t)b * T * C + h * hs;
      const R* L = lse + (size_t)bh * T;
      R* dq = dqkv + (size_t)b * T * W + h * hs;
      // D_t = dy_t . y_t = sum_j p_tj dp_tj (FlashAttention-2, eq. in sec. 3.1.2).
      for (int t = 0; t < T; t++) {
        R dot = R(0.0);
        for (int d = 0; d < hs; d++) dot += dy[(size_t)t * C + d] * y[(size_t)t * C + d];
        D[t] = dot;
      }
      for (int j0 = 0; j0 < T; j0 += Bt) {
        const int bc = std::min(Bt, T - j0);
        for (int i0 = j0; i0 < T; i0 += Bt) {  // query tiles at or below the diagonal (Br = Bc)
          const int br = std::min(Bt, T - i0);
          // p (br,bc) = exp(scale q_i k_j^T - lse_i), 0 above the diagonal.
          gemm(CblasRowMajor, CblasNoTrans, CblasTrans, br, bc, hs, scale, q + (size_t)i0 * W, W, k + (size_t)j0 * W,
               W, R(0.0), p.data(), Bt);
          // dp (br,bc) = dy_i v_j^T.
          gemm(CblasRowMajor, CblasNoTrans, CblasTrans, br, bc, hs, R(1.0), dy + (size_t)i0 * C, C,
               k + CKV + (size_t)j0 * W, W, R(0.0), dp.data(), Bt);
          for (int r = 0; r < br; r++) {
            const int n = std::clamp(i0 + r - j0 + 1, 0, bc);
            R* pr = p.data() + (size_t)r * Bt;
            R* dr = dp.data() + (size_t)r * Bt;
            for (int j = 0; j < n; j++) {
              pr[j] = std::exp(pr[j] - L[i0 + r]);
              dr[j] = pr[j] * (dr[j] - D[i0 + r]);  // ds = p (dp - D): the softmax backward
            }
            std::fill(pr + n, pr + bc, R(0.0));
            std::fill(dr + n, dr + bc, R(0.0));
          }
          // dv_j += p^T dy_i; dq_i += scale ds k_j; dk_j += scale ds^T q_i.
          gemm(CblasRowMajor, CblasTrans, CblasNoTrans, bc, hs, br, R(1.0), p.data(), Bt, dy + (size_t)i0 * C, C,
               R(1.0), dk + CKV + (size_t)j0 * W, W);
          gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, br, hs, bc, scale, dp.data(), Bt, k + (size_t)j0 * W, W,
               R(1.0), dq + (size_t)i0 * W, W);
          gemm(CblasRowMajor, CblasTrans, CblasNoTrans, bc, hs, br, scale, dp.data(), Bt, q + (size_t)i0 * W, W,
               R(1.0), dk + (size_t)j0 * W, W);
        }
      }
    }
  }
}

#define TD_INSTANTIATE(R)                                                                     \
  template void flash_attention_forward<R>(R*, R*, const R*, int, int, int, int, int);        \
  template void flash_attention_backward<R>(R*, const R*, const R*, const R*, const R*, int, int, int, int, int);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
