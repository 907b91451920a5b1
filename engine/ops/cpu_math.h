// Vectorisable float maths for the CPU ops' hot loops.
//
// glibc's tanhf/expf are scalar calls; these are branch-free polynomials that GCC vectorises
// (SSE2 at the baseline, AVX2 / AVX-512 in the target_clones of TD_SIMD_CLONES), accurate to a
// few ulp (exp: Cephes' expf polynomial, Moshier 1992) — far below the ops' parity tolerances.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

// Runtime dispatch: GCC builds the function for AVX-512, AVX2 and the x86-64 baseline and picks
// one when the program loads (an ifunc), so binaries stay portable.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TD_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define TD_SIMD_CLONES
#endif

namespace td::cpu {

/// e^x for x <= 0 (what softmax and tanh need); x below -87 gives e^-87. Relative error < 2e-7.
/// Branch-free: truncation of a negative number rounds it to nearest after the -0.5.
inline float exp_neg_f32(float x) {
  x = std::max(x, -87.0f);
  const float fn = x * 1.44269504088896341f - 0.5f;  // x log2(e), rounded below
  const int n = (int)fn;
  const float nf = (float)n;
  const float r = x - nf * 0.693359375f + nf * 2.12194440e-4f;  // x - n ln2 (Cody-Waite split)
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  const int32_t bits = (n + 127) << 23;  // 2^n
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/// tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2|x|); absolute error < 3e-7.
inline float tanh_f32(float x) {
  float ax = std::fabs(x);
  float e = exp_neg_f32(-2.0f * ax);
  float t = (1.0f - e) / (1.0f + e);
  return std::copysign(t, x);
}

}  // namespace td::cpu
