#include "engine/ops/reference/gelu.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "engine/ops/cpu_math.h"

namespace td::cpu {

namespace {
// sqrt(2 / pi), the constant of the tanh approximation of GELU.
constexpr double kGeluScale = 0.7978845608028654;
}  // namespace

template <class R>
void gelu_forward(R* out, const R* inp, size_t N) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < N; i++) {
    R x = inp[i];
    out[i] = R(0.5) * x * (R(1.0) + std::tanh(R(kGeluScale) * (x + R(0.044715) * x * x * x)));
  }
}

template <class R>
void gelu_backward(R* dinp, const R* inp, const R* dout, size_t N) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < N; i++) {
    R x = inp[i];
    R u = R(kGeluScale) * (x + R(0.044715) * x * x * x);
    R th = std::tanh(u);
    R sech2 = R(1.0) - th * th;
    R du = R(kGeluScale) * (R(1.0) + R(3.0) * R(0.044715) * x * x);
    dinp[i] += (R(0.5) * (R(1.0) + th) + R(0.5) * x * sech2 * du) * dout[i];
  }
}

// The fp32 GELU loops, vectorised with tanh_f32 and built for AVX-512 / AVX2 / baseline.
TD_SIMD_CLONES static void gelu_forward_f32(float* out, const float* inp, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanh_f32((float)kGeluScale * (x + 0.044715f * x * x * x)));
  }
}
TD_SIMD_CLONES static void gelu_backward_f32(float* dinp, const float* inp, const float* dout, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float x = inp[i];
    float th = tanh_f32((float)kGeluScale * (x + 0.044715f * x * x * x));
    float du = (float)kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du) * dout[i];
  }
}
// Splits [0, n) into one contiguous block per thread.
template <class F>
static void parallel_blocks(size_t n, F&& f) {
#pragma omp parallel
  {
    size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
    size_t per = (n + nt - 1) / nt, begin = std::min(n, id * per), end = std::min(n, begin + per);
    if (end > begin) f(begin, end - begin);
  }
}
template <>
void gelu_forward<float>(float* out, const float* inp, size_t N) {
  parallel_blocks(N, [&](size_t b, size_t n) { gelu_forward_f32(out + b, inp + b, n); });
}
template <>
void gelu_backward<float>(float* dinp, const float* inp, const float* dout, size_t N) {
  parallel_blocks(N, [&](size_t b, size_t n) { gelu_backward_f32(dinp + b, inp + b, dout + b, n); });
}

#define TD_INSTANTIATE(R) \
  template void gelu_forward<R>(R*, const R*, size_t); \
  template void gelu_backward<R>(R*, const R*, const R*, size_t);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
