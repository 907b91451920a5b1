#include "engine/ops/reference/swiglu.h"

#include <cmath>
#include <cstddef>

#include "engine/ops/cpu_math.h"

namespace td::cpu {

template <class R>
void swiglu_forward(R* out, const R* inp, int N, int F) {
  // inp (N,2F) rows [gate (F) | up (F)], out (N,F) = silu(gate) * up, silu(g) = g sigmoid(g).
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* gate = inp + (size_t)i * 2 * F;
    const R* up = gate + F;
    R* o = out + (size_t)i * F;
    for (int j = 0; j < F; j++) {
      const R g = gate[j];
      const R sig = R(1.0) / (R(1.0) + std::exp(-g));
      o[j] = g * sig * up[j];
    }
  }
}

template <class R>
void swiglu_backward(R* dinp, const R* inp, const R* dout, int N, int F) {
  // d gate = dout * up * silu'(gate), silu'(g) = sigmoid(g) (1 + g (1 - sigmoid(g)));
  // d up = dout * silu(gate).
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* gate = inp + (size_t)i * 2 * F;
    const R* up = gate + F;
    const R* dy = dout + (size_t)i * F;
    R* dgate = dinp + (size_t)i * 2 * F;
    R* dup = dgate + F;
    for (int j = 0; j < F; j++) {
      const R g = gate[j];
      const R sig = R(1.0) / (R(1.0) + std::exp(-g));
      dgate[j] += dy[j] * up[j] * sig * (R(1.0) + g * (R(1.0) - sig));
      dup[j] += dy[j] * g * sig;
    }
  }
}

// The fp32 rows, vectorised (glibc's expf is a scalar call): sigmoid(g) from e = exp(-|g|)
// (cpu_math.h, relative error < 2e-7) as 1 / (1 + e) for g >= 0 and e / (1 + e) below, which
// never overflows. Built for AVX-512 / AVX2 / baseline.
namespace {
TD_SIMD_CLONES void swiglu_forward_row_f32(float* o, const float* gate, const float* up, int F) {
  for (int j = 0; j < F; j++) {
    const float g = gate[j], e = exp_neg_f32(-std::fabs(g)), r = 1.0f / (1.0f + e);
    const float sig = g >= 0.0f ? r : e * r;
    o[j] = g * sig * up[j];
  }
}
TD_SIMD_CLONES void swiglu_backward_row_f32(float* dgate, float* dup, const float* gate, const float* up, const float* dy, int F) {
  for (int j = 0; j < F; j++) {
    const float g = gate[j], e = exp_neg_f32(-std::fabs(g)), r = 1.0f / (1.0f + e);
    const float sig = g >= 0.0f ? r : e * r;
    dgate[j] += dy[j] * up[j] * sig * (1.0f + g * (1.0f - sig));
    dup[j] += dy[j] * g * sig;
  }
}
}  // namespace

template <>
void swiglu_forward<float>(float* out, const float* inp, int N, int F) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const float* gate = inp + (size_t)i * 2 * F;
    swiglu_forward_row_f32(out + (size_t)i * F, gate, gate + F, F);
  }
}

template <>
void swiglu_backward<float>(float* dinp, const float* inp, const float* dout, int N, int F) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const float* gate = inp + (size_t)i * 2 * F;
    float* dgate = dinp + (size_t)i * 2 * F;
    swiglu_backward_row_f32(dgate, dgate + F, gate, gate + F, dout + (size_t)i * F, F);
  }
}

template void swiglu_forward<double>(double*, const double*, int, int);
template void swiglu_backward<double>(double*, const double*, const double*, int, int);

}  // namespace td::cpu
