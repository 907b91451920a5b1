#include "engine/ops/reference/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/ops/reference/blas.h"

namespace td::cpu {

template <class R>
void matmul_forward(R* out, const R* inp, const R* weight, const R* bias, int N,
                    int C, int OC) {
  R beta = R(0.0);
  if (bias) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) std::memcpy(out + (size_t)i * OC, bias, sizeof(R) * OC);
    beta = R(1.0);
  }
  gemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, R(1.0), inp, C, weight, C, beta,
              out, OC);
}

template <class R>
void matmul_backward(R* dinp, R* dweight, R* dbias, const R* dout,
                     const R* inp, const R* weight, int N, int C, int OC) {
  if (dinp)
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, R(1.0), dout, OC, weight, C,
                R(1.0), dinp, C);
  gemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, R(1.0), dout, OC, inp, C, R(1.0),
              dweight, C);
  if (dbias) {
    // dbias (OC) += dout^T (OC,N) @ ones (N): a GEMV, contiguous reads instead of a strided column walk.
    std::vector<R> ones((size_t)N, R(1));
    gemv(CblasRowMajor, CblasTrans, N, OC, R(1), dout, OC, ones.data(), 1, R(1), dbias, 1);
  }
}

#define TD_INSTANTIATE(R) \
  template void matmul_forward<R>(R*, const R*, const R*, const R*, int, int, int); \
  template void matmul_backward<R>(R*, R*, R*, const R*, const R*, const R*, int, int, int);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
