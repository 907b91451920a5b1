#include "engine/ops/reference/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/ops/reference/blas.h"
#include "engine/ops/reference/gelu.h"

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
                     const R* inp, const R* weight, int N, int C, int OC, bool overwrite_dinp) {
  if (dinp)
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, R(1.0), dout, OC, weight, C,
                overwrite_dinp ? R(0.0) : R(1.0), dinp, C);
  gemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, R(1.0), dout, OC, inp, C, R(1.0),
              dweight, C);
  if (dbias) {
    // dbias (OC) += dout^T (OC,N) @ ones (N): a GEMV, contiguous reads instead of a strided column walk.
    std::vector<R> ones((size_t)N, R(1));
    gemv(CblasRowMajor, CblasTrans, N, OC, R(1), dout, OC, ones.data(), 1, R(1), dbias, 1);
  }
}

template <class R>
void matmul_gelu_forward(R* out, R* pre, const R* inp, const R* weight, const R* bias, int N, int C, int OC) {
  matmul_forward(pre, inp, weight, bias, N, C, OC);
  gelu_forward(out, pre, (size_t)N * OC);
}

template <class R>
void matmul_backward_dgelu(R* dpre, R* dweight, R* dbias, const R* dout, const R* inp, const R* weight, const R* pre,
                           int N, int C, int OC) {
  // d GELU(pre) = dout @ weight into a temporary, then dpre = 0 + GELU'(pre) * that: the same
  // operations as the separate matmul_backward and gelu_backward.
  const size_t n = (size_t)N * C;
  std::vector<R> dgelu(n);
  matmul_backward(dgelu.data(), dweight, dbias, dout, inp, weight, N, C, OC, true);
  std::fill(dpre, dpre + n, R(0));
  gelu_backward(dpre, pre, dgelu.data(), n);
}

#define TD_INSTANTIATE(R) \
  template void matmul_forward<R>(R*, const R*, const R*, const R*, int, int, int); \
  template void matmul_backward<R>(R*, R*, R*, const R*, const R*, const R*, int, int, int, bool); \
  template void matmul_gelu_forward<R>(R*, R*, const R*, const R*, const R*, int, int, int); \
  template void matmul_backward_dgelu<R>(R*, R*, R*, const R*, const R*, const R*, const R*, int, int, int);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace td::cpu
