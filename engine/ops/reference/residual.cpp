#include "engine/ops/reference/residual.h"

#include <algorithm>
#include <cmath>

namespace td::cpu {

template <class R>
void residual_forward(R* out, const R* a, const R* b, size_t N) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}

#define TD_INSTANTIATE(R) \
  template void residual_forward<R>(R*, const R*, const R*, size_t);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
