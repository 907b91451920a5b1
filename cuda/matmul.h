// The linear layer on the GPU: cuBLASLt GEMMs with the bias in the epilogue, and the cuBLAS
// status check the GEMM files share.
//
// Row-major semantics of engine/ops/ops.h (matmul_forward / matmul_backward). cuBLAS is
// column-major, so a row-major (R,C) matrix is handed to it as its (C,R) transpose; the comments
// at each call in matmul.cu spell out the mapping. Compute type is CUBLAS_COMPUTE_32F in every
// case: fp32 is true fp32 (no TF32, so the parity test against the CPU holds), bf16 inputs
// accumulate in fp32 and round once to the output type (split-K reductions in the output type
// are excluded for bf16 outputs). Source: cuBLAS documentation, cublasLtMatmul.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace td::cuda {

/// Throws td::Error "cuBLAS error in <what>: <status name> (<status string>)" unless
/// status is CUBLAS_STATUS_SUCCESS.
void check_cublas(cublasStatus_t status, const char* what);

/// The cudaDataType_t of a device element type (float, __nv_bfloat16).
template <class T> constexpr cudaDataType_t cuda_data_type();
template <> constexpr cudaDataType_t cuda_data_type<float>() { return CUDA_R_32F; }
template <> constexpr cudaDataType_t cuda_data_type<__nv_bfloat16>() { return CUDA_R_16BF; }

/// cuBLASLt plans (descriptors + the heuristic's algorithm) cached per shape, type and pointer
/// alignment. One per backend; not thread-safe (the backend is used from one thread).
class Matmul {
 public:
  /// blas and lt are the backend's handles (blas already bound to the stream); workspace is a
  /// device buffer of workspace_bytes that both may use (they run on the same stream).
  Matmul(cublasHandle_t blas, cublasLtHandle_t lt, void* workspace, size_t workspace_bytes);
  ~Matmul();
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  /// out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC); bias may be null. Act = float or
  /// __nv_bfloat16. Throws td::Error on a cuBLAS failure.
  template <class Act>
  void forward(Act* out, const Act* inp, const Act* weight, const Act* bias, int N, int C, int OC,
               cudaStream_t stream);

  /// ActivationOps::matmul_gelu_forward: pre (N,OC) = inp @ weight^T + bias, out (N,OC) =
  /// GELU(pre), in one GEMM with the CUBLASLT_EPILOGUE_GELU_AUX(_BIAS) epilogue (pre is the aux
  /// output) where cuBLASLt offers one (lt_gelu_aux_ok, lt_bias_epilogue_ok); otherwise forward()
  /// then the GELU kernel.
  template <class Act>
  void forward_gelu(Act* out, Act* pre, const Act* inp, const Act* weight, const Act* bias, int N, int C, int OC,
                    cudaStream_t stream);

  /// ActivationOps::matmul_backward_dgelu: dpre (N,C) = GELU'(pre) * (dout @ weight), overwritten,
  /// in one GEMM with the CUBLASLT_EPILOGUE_DGELU epilogue (pre the aux input) where cuBLASLt
  /// offers one; otherwise the GEMM (beta 0) then the GELU gradient kernel in place. dweight and
  /// dbias as backward(). scratch: backward_scratch_bytes.
  template <class Act>
  void backward_dgelu(Act* dpre, float* dweight, float* dbias, const Act* dout, const Act* inp, const Act* weight,
                      const Act* pre, int N, int C, int OC, void* scratch, cudaStream_t stream);

  /// Scratch (bytes) that backward needs for the bias gradient's partial column sums.
  static size_t backward_scratch_bytes(int N, int OC);

  /// dinp (N,C) += dout (N,OC) @ weight (OC,C) (skipped when dinp is null; with overwrite_dinp
  /// dinp = dout @ weight, beta 0, dinp not read);
  /// dweight (OC,C) += dout^T @ inp (N,C), fp32; dbias (OC) += column sums of dout, fp32, in a
  /// fixed order (deterministic; skipped when dbias is null). scratch: backward_scratch_bytes.
  template <class Act>
  void backward(Act* dinp, float* dweight, float* dbias, const Act* dout, const Act* inp,
                const Act* weight, int N, int C, int OC, void* scratch, cudaStream_t stream,
                bool overwrite_dinp);

 private:
  // One column-major GEMM D (m,n) = alpha op(A) op(B) + beta C with C == D, optional bias
  // epilogue (bias of length m, type of D, 16-byte aligned: lt_bias_epilogue_ok) and optional
  // GELU epilogue: gelu_aux writes D = GELU(AB + bias) and aux (m,n) = AB + bias; dgelu reads
  // aux and writes D = GELU'(aux) * AB (beta 0); aux has D's type, leading dimension aux_ld
  // (lt_gelu_aux_ok). Returns false when cuBLASLt offers no algorithm, or cublasLtMatmul
  // rejected every one the heuristic gave.
  struct Gemm {
    bool trans_a = false, trans_b = false;
    int m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
    cudaDataType_t ab_type = CUDA_R_32F, d_type = CUDA_R_32F;
    const void* a = nullptr;
    const void* b = nullptr;
    void* d = nullptr;
    const void* bias = nullptr;
    float beta = 0.0f;
    bool gelu_aux = false, dgelu = false;
    const void* aux = nullptr;
    int64_t aux_ld = 0;
  };
  // forward's GEMM, column-major: out^T (OC,N) = weight (OC,C) [stored as (C,OC), op T] @
  // inp^T (C,N); no bias, beta 0.
  template <class Act> static Gemm forward_gemm(Act* out, const Act* inp, const Act* weight, int N, int C, int OC);
  // backward's input-gradient GEMM: dinp^T (C,N) = weight^T (C,OC) [stored as (C,OC), op N] @
  // dout^T (OC,N) + beta dinp^T.
  template <class Act>
  static Gemm dinp_gemm(Act* dinp, const Act* dout, const Act* weight, int N, int C, int OC, float beta);
  bool lt_gemm(const Gemm& g, cudaStream_t stream);
  // The same GEMM through cublasGemmEx (no epilogue), when cuBLASLt has no algorithm.
  void blas_gemm(const Gemm& g);
  void gemm(const Gemm& g, cudaStream_t stream);

  struct Plan;
  using Key = std::tuple<int, int, int, int, int, int, int, int, int, int, int, uint32_t, uint32_t,
                         uint32_t, uint32_t, bool, int, int64_t, uint32_t>;
  cublasHandle_t blas_;
  cublasLtHandle_t lt_;
  void* workspace_;
  size_t workspace_bytes_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace td::cuda

#define TD_CUBLAS_CHECK(call) ::td::cuda::check_cublas((call), #call)
