// The linear layer (matmul_forward / matmul_backward of engine/ops/ops.h) through cuBLASLt,
// plus the deterministic bias-gradient reduction. See matmul.h for the precision rules.
#include "cuda/matmul.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "cuda/common.cuh"
#include "cuda/launch.h"
#include "cuda/ops.h"
#include "engine/common/error.h"

namespace td::cuda {

void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string msg = std::string("cuBLAS error in ") + what + ": " + cublasGetStatusName(status) +
                    " (" + cublasGetStatusString(status) + ")";
  if (status == CUBLAS_STATUS_ALLOC_FAILED)
    msg += "; the GPU is out of memory: lower train.micro_batch or the model size";
  fail(msg);
}

namespace {

// Largest power of two (<= 256) dividing the address: the alignment cuBLASLt may assume.
uint32_t alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && (a % al) != 0) al >>= 1;
  return al;
}

template <class T>
void set_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v) {
  TD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof v));
}
template <class T>
void set_pref(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const T& v) {
  TD_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, attr, &v, sizeof v));
}

// Bias gradient: dbias (OC) += sum over n of dout (N,OC). Block (32,8) covers 32 columns (one
// coalesced row segment per warp); slice blockIdx.y takes rows y, y + 8*slices, ...; each thread
// adds its rows in order, then the 8 row groups are added in order and the slices in order by
// the second kernel: the same sums in the same order on every run (no atomics).
constexpr int kBiasCols = 32;
constexpr int kBiasRows = 8;

int bias_slices(int N) { return std::clamp((N + 255) / 256, 1, 64); }

template <class Act>
__global__ void dbias_partials_kernel(float* partials, const Act* dout, int N, int OC, int slices) {
  __shared__ float part[kBiasRows][kBiasCols + 1];
  const int col = blockIdx.x * kBiasCols + threadIdx.x;
  float sum = 0.0f;
  if (col < OC)
    for (int r = blockIdx.y * kBiasRows + threadIdx.y; r < N; r += kBiasRows * slices)
      sum += load_f(dout[(size_t)r * OC + col]);
  part[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < OC) {
    float t = 0.0f;
    for (int y = 0; y < kBiasRows; y++) t += part[y][threadIdx.x];
    partials[(size_t)blockIdx.y * OC + col] = t;
  }
}

__global__ void dbias_reduce_kernel(float* dbias, const float* partials, int OC, int slices) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= OC) return;
  float t = 0.0f;
  for (int s = 0; s < slices; s++) t += partials[(size_t)s * OC + col];
  dbias[col] += t;
}

// out (N,OC) = bias broadcast over rows: the fallback when no cuBLASLt bias epilogue exists
// (the GEMM then adds with beta = 1, as the CPU reference does).
template <class Act>
__global__ void fill_rows_kernel(Act* out, const Act* bias, size_t n, int OC) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = bias[i % OC];
}

}  // namespace

// How many of the heuristic's algorithms a plan keeps: the first is used; the others are the
// fallbacks when cublasLtMatmul rejects one at call time.
constexpr int kHeuristicAlgos = 8;

// cublasLtMatmul's answers that mean "not this algorithm for this call" (an algorithm the
// heuristic offered but the call's pointers or sizes rule out) rather than a real error: the
// next algorithm, then cublasGemmEx, is tried.
bool lt_rejected(cublasStatus_t st) {
  return st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE;
}

struct Matmul::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  // The heuristic's algorithms, best first, from `next` on: those before it were rejected by
  // cublasLtMatmul. None left: cuBLASLt cannot do this GEMM, use cublasGemmEx.
  cublasLtMatmulAlgo_t algos[kHeuristicAlgos] = {};
  int count = 0, next = 0;
  ~Plan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

Matmul::Matmul(cublasHandle_t blas, cublasLtHandle_t lt, void* workspace, size_t workspace_bytes)
    : blas_(blas), lt_(lt), workspace_(workspace), workspace_bytes_(workspace_bytes) {}

Matmul::~Matmul() = default;

bool Matmul::lt_gemm(const Gemm& g, cudaStream_t stream) {
  // An unaligned bias must never reach the epilogue (forward checks first; this is the guard).
  TD_ASSERT(g.bias == nullptr || lt_bias_epilogue_ok(g.bias, g.d_type == CUDA_R_32F ? 4 : 2));
  TD_ASSERT(!(g.gelu_aux && g.dgelu) && (!(g.gelu_aux || g.dgelu) || lt_gelu_aux_ok(g.aux, g.aux_ld)));
  TD_ASSERT(!g.dgelu || (g.bias == nullptr && g.beta == 0.0f));
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (g.gelu_aux) epilogue = g.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
  else if (g.dgelu) epilogue = CUBLASLT_EPILOGUE_DGELU;
  else if (g.bias) epilogue = CUBLASLT_EPILOGUE_BIAS;
  const Key key{g.trans_a, g.trans_b, g.m, g.n, g.k, g.lda, g.ldb, g.ldd, (int)g.ab_type,
                (int)g.d_type, g.beta != 0.0f, alignment_of(g.a), alignment_of(g.b),
                alignment_of(g.d), alignment_of(g.bias), g.bias != nullptr, (int)epilogue, g.aux_ld,
                alignment_of(g.aux)};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    auto p = std::make_unique<Plan>();
    TD_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_attr(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, ta);
    set_attr(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, tb);
    if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) set_attr(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    // Bias of D's type (the default of CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE for non-IMMA,
    // non-fp8 GEMMs), length m; the heuristic reads the pointer for its alignment.
    if (g.bias) set_attr(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);
    // The GELU input matrix (m,n), D's type (the default of EPILOGUE_AUX_DATA_TYPE outside fp8).
    if (g.aux) {
      set_attr(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux);
      set_attr(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, g.aux_ld);
    }
    // Stored (column-major) shapes: op(A) is (m,k), op(B) is (k,n).
    TD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, g.ab_type, g.trans_a ? g.k : g.m,
                                               g.trans_a ? g.m : g.k, g.lda));
    TD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, g.ab_type, g.trans_b ? g.n : g.k,
                                               g.trans_b ? g.k : g.n, g.ldb));
    TD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->d, g.d_type, g.m, g.n, g.ldd));

    cublasLtMatmulPreference_t pref = nullptr;
    TD_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulHeuristicResult_t results[kHeuristicAlgos] = {};
    int returned = 0;
    try {
      set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, (uint64_t)workspace_bytes_);
      // Buffers inside one big allocation are not always 256-byte aligned: tell the heuristic.
      set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, std::get<11>(key));
      set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, std::get<12>(key));
      set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, std::get<13>(key));
      set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, std::get<13>(key));
      if (g.d_type != CUDA_R_32F) {
        // bf16 output: split-K partial sums must be added in fp32, not in bf16 (one rounding
        // per output element, ops.h).
        set_pref(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                 (uint32_t)(CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE));
      }
      st = cublasLtMatmulAlgoGetHeuristic(lt_, p->desc, p->a, p->b, p->d, p->d, pref, kHeuristicAlgos,
                                          results, &returned);
    } catch (...) {
      cublasLtMatmulPreferenceDestroy(pref);
      throw;
    }
    cublasLtMatmulPreferenceDestroy(pref);
    // No algorithm (usually CUBLAS_STATUS_NOT_SUPPORTED: an odd leading dimension or an
    // unaligned pointer): cublasGemmEx takes over, and reports any real error itself.
    if (st == CUBLAS_STATUS_SUCCESS)
      for (int i = 0; i < returned; i++)
        if (results[i].state == CUBLAS_STATUS_SUCCESS) p->algos[p->count++] = results[i].algo;
    it = plans_.emplace(key, std::move(p)).first;
  }
  Plan& p = *it->second;
  if (g.bias) set_attr(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);
  if (g.aux) set_attr(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux);
  const float alpha = 1.0f;
  // The heuristic's algorithms in order, from the last one that worked: the first accepted
  // runs the GEMM. One that cublasLtMatmul rejects (lt_rejected) is dropped for this plan for
  // good; any other status is a real error and throws.
  for (; p.next < p.count; p.next++) {
    const cublasStatus_t st = cublasLtMatmul(lt_, p.desc, &alpha, g.a, p.a, g.b, p.b, &g.beta, g.d,
                                             p.d, g.d, p.d, &p.algos[p.next], workspace_,
                                             workspace_bytes_, stream);
    if (st == CUBLAS_STATUS_SUCCESS) return true;
    if (!lt_rejected(st)) check_cublas(st, "cublasLtMatmul");
    std::fprintf(stderr, "note: cuBLASLt rejected heuristic algorithm %d of %d for a %dx%dx%d GEMM (%s); %s\n",
                 p.next + 1, p.count, g.m, g.n, g.k, cublasGetStatusName(st),
                 p.next + 1 < p.count ? "trying the next" : "using cublasGemmEx");
  }
  return false;  // no algorithm (left): the caller uses cublasGemmEx
}

void Matmul::blas_gemm(const Gemm& g) {
  TD_ASSERT(g.bias == nullptr && g.aux == nullptr);
  const float alpha = 1.0f;
  TD_CUBLAS_CHECK(cublasGemmEx(blas_, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                               g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &alpha, g.a,
                               g.ab_type, g.lda, g.b, g.ab_type, g.ldb, &g.beta, g.d, g.d_type,
                               g.ldd, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void Matmul::gemm(const Gemm& g, cudaStream_t stream) {
  if (!lt_gemm(g, stream)) blas_gemm(g);
}

template <class Act>
Matmul::Gemm Matmul::forward_gemm(Act* out, const Act* inp, const Act* weight, int N, int C, int OC) {
  Gemm g;
  g.trans_a = true;
  g.m = OC, g.n = N, g.k = C;
  g.a = weight, g.lda = C;
  g.b = inp, g.ldb = C;
  g.d = out, g.ldd = OC;
  g.ab_type = g.d_type = cuda_data_type<Act>();
  return g;
}

template <class Act>
Matmul::Gemm Matmul::dinp_gemm(Act* dinp, const Act* dout, const Act* weight, int N, int C, int OC, float beta) {
  Gemm g;
  g.m = C, g.n = N, g.k = OC;
  g.a = weight, g.lda = C;
  g.b = dout, g.ldb = OC;
  g.d = dinp, g.ldd = C;
  g.ab_type = g.d_type = cuda_data_type<Act>();
  g.beta = beta;
  return g;
}

template <class Act>
void Matmul::forward(Act* out, const Act* inp, const Act* weight, const Act* bias, int N, int C,
                     int OC, cudaStream_t stream) {
  TD_ASSERT(N > 0 && C > 0 && OC > 0);
  Gemm g = forward_gemm(out, inp, weight, N, C, OC);
  if (bias) {
    // The epilogue adds bias[m] to row m of out^T (bias[oc] to every token), but only a
    // 16-byte aligned bias may reach it (lt_bias_epilogue_ok, cuda/launch.h): a bias at an odd
    // offset in the parameter buffer takes the rows-filled-with-bias path below.
    if (lt_bias_epilogue_ok(bias, sizeof(Act))) {
      g.bias = bias;
      if (lt_gemm(g, stream)) return;
    }
    const size_t n = (size_t)N * OC;
    fill_rows_kernel<<<grid_for(n, 256, "fill_rows"), 256, 0, stream>>>(out, bias, n, OC);
    check_launch("fill_rows_kernel");
    g.bias = nullptr;
    g.beta = 1.0f;
  }
  gemm(g, stream);
}

template <class Act>
void Matmul::forward_gelu(Act* out, Act* pre, const Act* inp, const Act* weight, const Act* bias, int N, int C,
                          int OC, cudaStream_t stream) {
  TD_ASSERT(N > 0 && C > 0 && OC > 0);
  // As forward(), out^T (OC,N) = weight @ inp^T with the bias, GELU and aux (pre^T, ld OC) in the
  // epilogue: the GELU from the fp32 accumulator, D and aux rounded once each.
  if (lt_gelu_aux_ok(pre, OC) && (bias == nullptr || lt_bias_epilogue_ok(bias, sizeof(Act)))) {
    Gemm g = forward_gemm(out, inp, weight, N, C, OC);
    g.bias = bias;
    g.gelu_aux = true;
    g.aux = pre, g.aux_ld = OC;
    if (lt_gemm(g, stream)) return;
  }
  forward(pre, inp, weight, bias, N, C, OC, stream);
  gelu_forward(out, pre, (size_t)N * OC, stream);
}

template <class Act>
void Matmul::backward_dgelu(Act* dpre, float* dweight, float* dbias, const Act* dout, const Act* inp,
                            const Act* weight, const Act* pre, int N, int C, int OC, void* scratch,
                            cudaStream_t stream) {
  TD_ASSERT(N > 0 && C > 0 && OC > 0 && dpre != nullptr);
  // dpre^T (C,N) = GELU'(pre^T) * (weight^T @ dout^T), beta 0, as backward()'s dinp GEMM.
  Gemm g = dinp_gemm(dpre, dout, weight, N, C, OC, 0.0f);
  bool fused = false;
  if (lt_gelu_aux_ok(pre, C)) {
    g.dgelu = true;
    g.aux = pre, g.aux_ld = C;
    fused = lt_gemm(g, stream);
    g.dgelu = false;
    g.aux = nullptr, g.aux_ld = 0;
  }
  if (!fused) {
    gemm(g, stream);
    gelu_backward(dpre, pre, dpre, (size_t)N * C, stream, /*overwrite=*/true);
  }
  backward<Act>(nullptr, dweight, dbias, dout, inp, weight, N, C, OC, scratch, stream, false);
}

size_t Matmul::backward_scratch_bytes(int N, int OC) {
  return (size_t)bias_slices(N) * (size_t)OC * sizeof(float);
}

template <class Act>
void Matmul::backward(Act* dinp, float* dweight, float* dbias, const Act* dout, const Act* inp,
                      const Act* weight, int N, int C, int OC, void* scratch,
                      cudaStream_t stream, bool overwrite_dinp) {
  TD_ASSERT(N > 0 && C > 0 && OC > 0);
  if (dinp) {
    // dinp^T (C,N) += weight^T (C,OC) [weight stored as (C,OC), op N] @ dout^T (OC,N); with
    // overwrite_dinp beta = 0 (dinp is not read: no memset needed before).
    gemm(dinp_gemm(dinp, dout, weight, N, C, OC, overwrite_dinp ? 0.0f : 1.0f), stream);
  }
  {
    // dweight^T (C,OC) += inp^T (C,N) @ dout (N,OC) [dout stored as (OC,N), op T]; fp32 C/D
    // with Act A/B (CUBLAS_COMPUTE_32F allows bf16 A/B with fp32 C/D).
    Gemm g;
    g.trans_b = true;
    g.m = C, g.n = OC, g.k = N;
    g.a = inp, g.lda = C;
    g.b = dout, g.ldb = OC;
    g.d = dweight, g.ldd = C;
    g.ab_type = cuda_data_type<Act>();
    g.d_type = CUDA_R_32F;
    g.beta = 1.0f;
    gemm(g, stream);
  }
  if (dbias) {
    TD_ASSERT(scratch != nullptr);
    const int slices = bias_slices(N);
    float* partials = static_cast<float*>(scratch);
    dim3 grid(grid_for((size_t)OC, kBiasCols, "dbias_partials"), grid_yz(slices, "dbias_partials"));
    dbias_partials_kernel<<<grid, dim3(kBiasCols, kBiasRows), 0, stream>>>(partials, dout, N, OC,
                                                                          slices);
    check_launch("dbias_partials_kernel");
    dbias_reduce_kernel<<<grid_for((size_t)OC, 256, "dbias_reduce"), 256, 0, stream>>>(dbias, partials, OC, slices);
    check_launch("dbias_reduce_kernel");
  }
}

template void Matmul::forward<float>(float*, const float*, const float*, const float*, int, int,
                                     int, cudaStream_t);
template void Matmul::forward<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*,
                                             const __nv_bfloat16*, const __nv_bfloat16*, int, int,
                                             int, cudaStream_t);
template void Matmul::forward_gelu<float>(float*, float*, const float*, const float*, const float*, int, int, int,
                                          cudaStream_t);
template void Matmul::forward_gelu<__nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, const __nv_bfloat16*,
                                                  const __nv_bfloat16*, const __nv_bfloat16*, int, int, int,
                                                  cudaStream_t);
template void Matmul::backward_dgelu<float>(float*, float*, float*, const float*, const float*, const float*,
                                            const float*, int, int, int, void*, cudaStream_t);
template void Matmul::backward_dgelu<__nv_bfloat16>(__nv_bfloat16*, float*, float*, const __nv_bfloat16*,
                                                    const __nv_bfloat16*, const __nv_bfloat16*,
                                                    const __nv_bfloat16*, int, int, int, void*, cudaStream_t);
template void Matmul::backward<float>(float*, float*, float*, const float*, const float*,
                                      const float*, int, int, int, void*, cudaStream_t, bool);
template void Matmul::backward<__nv_bfloat16>(__nv_bfloat16*, float*, float*,
                                              const __nv_bfloat16*, const __nv_bfloat16*,
                                              const __nv_bfloat16*, int, int, int, void*,
                                              cudaStream_t, bool);

}  // namespace td::cuda
