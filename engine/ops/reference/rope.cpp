#include "engine/ops/reference/rope.h"

#include <cmath>
#include <cstddef>
#include <vector>

namespace td::cpu {
namespace {

// Rotates the first NH + NKV heads (q, then k) of every row of x (B,T,(NH+2NKV)hs) by the
// angles of its position t, in place; sign = +1 forward, -1 the inverse rotation (backward).
// Pairs are (i, i + hs/2) of each head (rotate_half): for i < hs/2, with a = t theta^(-2i/hs),
//   x'[i]        = x[i] cos a - sign x[i + hs/2] sin a
//   x'[i + hs/2] = x[i + hs/2] cos a + sign x[i] sin a.
// The angles are computed in double, whatever R is, once per (t, i) for all rows and heads.
template <class R>
void rotate(R* x, int B, int T, int NH, int NKV, int hs, double theta, int sign) {
  const int half = hs / 2, heads = NH + NKV, W = (NH + 2 * NKV) * hs;
  std::vector<double> inv_freq(half);
  for (int i = 0; i < half; i++) inv_freq[i] = std::pow(theta, -2.0 * i / hs);
  std::vector<R> cos_t((size_t)T * half), sin_t((size_t)T * half);  // (T, hs/2)
#pragma omp parallel for schedule(static)
  for (int t = 0; t < T; t++) {
    for (int i = 0; i < half; i++) {
      const double a = t * inv_freq[i];
      cos_t[(size_t)t * half + i] = (R)std::cos(a);
      sin_t[(size_t)t * half + i] = (R)(sign * std::sin(a));
    }
  }
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      R* row = x + ((size_t)b * T + t) * W;
      const R* cr = cos_t.data() + (size_t)t * half;
      const R* sr = sin_t.data() + (size_t)t * half;
      for (int h = 0; h < heads; h++) {
        R* v = row + (size_t)h * hs;
        for (int i = 0; i < half; i++) {  // contiguous in i: vectorised
          const R x1 = v[i], x2 = v[i + half];
          v[i] = x1 * cr[i] - x2 * sr[i];
          v[i + half] = x2 * cr[i] + x1 * sr[i];
        }
      }
    }
  }
}

}  // namespace

template <class R>
void rope_forward(R* qkv, int B, int T, int NH, int NKV, int hs, double theta) {
  rotate(qkv, B, T, NH, NKV, hs, theta, +1);
}

template <class R>
void rope_backward(R* dqkv, int B, int T, int NH, int NKV, int hs, double theta) {
  // The rotation is orthogonal: the gradient through it is the inverse rotation.
  rotate(dqkv, B, T, NH, NKV, hs, theta, -1);
}

template void rope_forward<float>(float*, int, int, int, int, int, double);
template void rope_forward<double>(double*, int, int, int, int, int, double);
template void rope_backward<float>(float*, int, int, int, int, int, double);
template void rope_backward<double>(double*, int, int, int, int, int, double);

}  // namespace td::cpu
