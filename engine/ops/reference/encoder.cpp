#include "engine/ops/reference/encoder.h"

#include <algorithm>
#include <cmath>

namespace td::cpu {

template <class R>
void encoder_forward(R* out, const int32_t* inp, const R* wte, const R* wpe, int B,
                     int T, int C) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      R* o = out + ((size_t)b * T + t) * C;
      const int32_t id = inp[b * T + t];
      const R* pe = wpe + (size_t)t * C;
      if (id < 0) {  // another tensor-parallel rank's row (ops.h)
        for (int c = 0; c < C; c++) o[c] = pe[c];
        continue;
      }
      const R* te = wte + (size_t)id * C;
      for (int c = 0; c < C; c++) o[c] = te[c] + pe[c];
    }
  }
}

template <class R>
void encoder_backward(R* dwte, R* dwpe, const R* dout, const int32_t* inp, int B,
                      int T, int C) {
  // Parallel over channels: every thread owns whole columns, so tokens that repeat never race
  // and the summation order is fixed (deterministic).
#pragma omp parallel for schedule(static)
  for (int c = 0; c < C; c++) {
    for (int b = 0; b < B; b++) {
      for (int t = 0; t < T; t++) {
        R d = dout[((size_t)b * T + t) * C + c];
        if (const int32_t id = inp[b * T + t]; id >= 0) dwte[(size_t)id * C + c] += d;
        dwpe[(size_t)t * C + c] += d;
      }
    }
  }
}

#define TD_INSTANTIATE(R) \
  template void encoder_forward<R>(R*, const int32_t*, const R*, const R*, int, int, int); \
  template void encoder_backward<R>(R*, R*, const R*, const int32_t*, int, int, int);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
