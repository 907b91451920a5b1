#include "engine/ops/reference/swiglu.h"

#include <cmath>
#include <cstddef>

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

template void swiglu_forward<float>(float*, const float*, int, int);
template void swiglu_forward<double>(double*, const double*, int, int);
template void swiglu_backward<float>(float*, const float*, const float*, int, int);
template void swiglu_backward<double>(double*, const double*, const double*, int, int);

}  // namespace td::cpu
