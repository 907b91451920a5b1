// The BLAS routines of the reference ops, overloaded on the precision (float: OpenBLAS's s*,
// double: d*), so one template serves the CPU backend and the double gradient checks.
// Internal to engine/ops/reference/.
#pragma once

#include <cblas.h>

namespace td::cpu {

// C (M,N) = alpha op(A) op(B) + beta C, row-major.
inline void gemm(CBLAS_ORDER o, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha,
                 const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(o, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void gemm(CBLAS_ORDER o, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, double alpha,
                 const double* A, int lda, const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(o, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
// y = alpha op(A) x + beta y.
inline void gemv(CBLAS_ORDER o, CBLAS_TRANSPOSE t, int M, int N, float alpha, const float* A, int lda,
                 const float* x, int incx, float beta, float* y, int incy) {
  cblas_sgemv(o, t, M, N, alpha, A, lda, x, incx, beta, y, incy);
}
inline void gemv(CBLAS_ORDER o, CBLAS_TRANSPOSE t, int M, int N, double alpha, const double* A, int lda,
                 const double* x, int incx, double beta, double* y, int incy) {
  cblas_dgemv(o, t, M, N, alpha, A, lda, x, incx, beta, y, incy);
}

}  // namespace td::cpu
