// Causal self-attention: permutes, strided batched cuBLAS GEMMs and warp-per-row causal
// softmax kernels (see attention.h for the plan and the precision rules).
#include "cuda/attention.h"

#include <algorithm>
#include <cmath>

#include "cuda/common.cuh"
#include "cuda/matmul.h"

namespace td::cuda {
namespace {

size_t align_up(size_t x) { return (x + 255) / 256 * 256; }

// Byte offsets of the scratch buffers for a chunk of bc batch rows. Per head and batch row,
// q, k, v and y (forward) or dy (backward) are (T,hs) in Act; scores (T,T) fp32 (the scaled
// scores forward, datt backward); backward adds dpre (T,T) in Act and dq, dk, dv (T,hs) fp32.
struct Layout {
  size_t q = 0, k = 0, v = 0, y = 0, scores = 0, dpre = 0, dq = 0, dk = 0, dv = 0, total = 0;
};

Layout layout(int bc, int T, int C, int NH, size_t act, bool backward) {
  const size_t tc = (size_t)bc * T * C, tt = (size_t)bc * NH * T * T;
  Layout L;
  size_t off = 0;
  auto take = [&off](size_t bytes) {
    const size_t o = off;
    off += align_up(bytes);
    return o;
  };
  L.q = take(tc * act);
  L.k = take(tc * act);
  L.v = take(tc * act);
  L.y = take(tc * act);
  L.scores = take(tt * sizeof(float));
  if (backward) {
    L.dpre = take(tt * act);
    L.dq = take(tc * sizeof(float));
    L.dk = take(tc * sizeof(float));
    L.dv = take(tc * sizeof(float));
  }
  L.total = off;
  return L;
}

// Batch rows per chunk: as many as fit the budget, at least one. Depends on the shapes only,
// so the results are the same on every run.
int batch_chunk(int B, int T, int C, int NH, size_t act, bool backward) {
  const size_t per_row = layout(1, T, C, NH, act, backward).total;
  const size_t fit = kAttentionScratchBudget / std::max<size_t>(per_row, 1);
  return (int)std::clamp<size_t>(fit, 1, (size_t)std::max(B, 1));
}

// Row-major, strided batched: C (M,N) = alpha op(A) op(B) + beta C for `batch` matrices, with
// lda/ldb/ldc the row-major leading dimensions of the stored matrices and strides in elements.
// cuBLAS is column-major, so it computes C^T = op(B)^T op(A)^T: the operands swap, the ops stay.
void gemm_rm(cublasHandle_t h, bool ta, bool tb, int M, int N, int K, float alpha, const void* A,
             cudaDataType_t type_a, int lda, long long stride_a, const void* B,
             cudaDataType_t type_b, int ldb, long long stride_b, float beta, void* C,
             cudaDataType_t type_c, int ldc, long long stride_c, int batch) {
  TD_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, type_b,
      ldb, stride_b, A, type_a, lda, stride_a, &beta, C, type_c, ldc, stride_c, batch,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// qkv (bc,T,NH+2NKV,hs) -> q, k, v (bc,NH,T,hs), k and v of head h taken from k/v head
// h / (NH / NKV) (repeat_kv); one thread per element of q.
template <class Act>
__global__ void permute_qkv_kernel(Act* q, Act* k, Act* v, const Act* qkv, int bc, int T, int NH,
                                   int NKV, int hs) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)bc * NH * T * hs) return;
  const int d = (int)(i % hs);
  size_t r = i / hs;
  const int t = (int)(r % T);
  r /= T;
  const int h = (int)(r % NH);
  const size_t b = r / NH;
  const size_t C = (size_t)NH * hs, CKV = (size_t)NKV * hs;
  const size_t row = (b * T + t) * (C + 2 * CKV);
  const size_t kv = row + C + (size_t)(h / (NH / NKV)) * hs + d;
  q[i] = qkv[row + (size_t)h * hs + d];
  k[i] = qkv[kv];
  v[i] = qkv[kv + CKV];
}

// x (bc,T,NH,hs) -> y (bc,NH,T,hs) when to_heads, else y -> x (heads re-joined).
template <class Act>
__global__ void permute_heads_kernel(Act* dst, const Act* src, int bc, int T, int NH, int hs,
                                     bool to_heads) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;  // index in (bc,NH,T,hs)
  if (i >= (size_t)bc * NH * T * hs) return;
  const int d = (int)(i % hs);
  size_t r = i / hs;
  const int t = (int)(r % T);
  r /= T;
  const int h = (int)(r % NH);
  const size_t b = r / NH;
  const size_t j = ((b * T + t) * NH + h) * hs + d;  // index in (bc,T,NH,hs)
  if (to_heads)
    dst[i] = src[j];
  else
    dst[j] = src[i];
}

// dqkv (bc,T,NH+2NKV,hs) += dq, dk, dv (bc,NH,T,hs), one rounding to Act per element. The
// thread of the first query head of a group also adds the group's dk and dv, summed over its
// G = NH / NKV heads in order (deterministic).
template <class Act>
__global__ void accumulate_dqkv_kernel(Act* dqkv, const float* dq, const float* dk,
                                       const float* dv, int bc, int T, int NH, int NKV, int hs) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)bc * NH * T * hs) return;
  const int d = (int)(i % hs);
  size_t r = i / hs;
  const int t = (int)(r % T);
  r /= T;
  const int h = (int)(r % NH);
  const size_t b = r / NH;
  const size_t C = (size_t)NH * hs, CKV = (size_t)NKV * hs;
  const int G = NH / NKV;
  const size_t row = (b * T + t) * (C + 2 * CKV);
  const size_t j = row + (size_t)h * hs + d;
  dqkv[j] = store_as<Act>(load_f(dqkv[j]) + dq[i]);
  if (h % G != 0) return;
  float sk = dk[i], sv = dv[i];
  const size_t head = (size_t)T * hs;  // from head h to head h + 1 in (bc,NH,T,hs)
  for (int g = 1; g < G; g++) {
    sk += dk[i + g * head];
    sv += dv[i + g * head];
  }
  const size_t jk = row + C + (size_t)(h / G) * hs + d;
  dqkv[jk] = store_as<Act>(load_f(dqkv[jk]) + sk);
  dqkv[jk + CKV] = store_as<Act>(load_f(dqkv[jk + CKV]) + sv);
}

// Butterfly reductions: every lane ends with the same value, in the same order on every run.
__device__ __forceinline__ float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

constexpr int kRowBlock = 256;  // 8 warps per block, one warp per row of T scores

// att row (T) = softmax over j <= t of the scaled scores; 0 for j > t. rows = bc*NH*T, row
// r is query position t = r % T. expf, not __expf: the parity test compares with libm's exp.
template <class Act>
__global__ void causal_softmax_kernel(Act* att, const float* scores, size_t rows, int T) {
  const size_t row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // whole warps leave together
  const int t = (int)(row % T);
  const float* x = scores + row * T;
  Act* a = att + row * T;
  float mx = -INFINITY;
  for (int j = lane; j <= t; j += 32) mx = fmaxf(mx, x[j]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int j = lane; j <= t; j += 32) sum += expf(x[j] - mx);
  const float inv = 1.0f / warp_sum(sum);
  for (int j = lane; j < T; j += 32) a[j] = store_as<Act>(j <= t ? expf(x[j] - mx) * inv : 0.0f);
}

// Softmax backward: dpre[j] = att[j] * (datt[j] - sum_k att[k] datt[k]) for j <= t, else 0.
// (The 1/sqrt(hs) scale is applied by the dq and dk GEMMs, as in the CPU reference.)
template <class Act>
__global__ void causal_softmax_backward_kernel(Act* dpre, const Act* att, const float* datt,
                                               size_t rows, int T) {
  const size_t row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = (int)(row % T);
  const Act* a = att + row * T;
  const float* d = datt + row * T;
  Act* out = dpre + row * T;
  float dot = 0.0f;
  for (int j = lane; j <= t; j += 32) dot += load_f(a[j]) * d[j];
  dot = warp_sum(dot);
  for (int j = lane; j < T; j += 32)
    out[j] = store_as<Act>(j <= t ? load_f(a[j]) * (d[j] - dot) : 0.0f);
}

// Warp per row: kRowBlock / 32 rows per block.
unsigned row_blocks(size_t rows, const char* kernel) { return grid_for(rows * 32, kRowBlock, kernel); }

template <class T> T* at(void* base, size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

}  // namespace

size_t attention_scratch_bytes(int B, int T, int C, int NH, size_t act_bytes, bool backward) {
  const int bc = batch_chunk(B, T, C, NH, act_bytes, backward);
  return layout(bc, T, C, NH, act_bytes, backward).total;
}

template <class Act>
void attention_forward(cublasHandle_t blas, Act* out, Act* att, const Act* qkv, int B, int T,
                       int C, int NH, int NKV, void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  TD_ASSERT(B > 0 && T > 0 && NH > 0 && C % NH == 0 && NKV > 0 && NH % NKV == 0);
  const int hs = C / NH;
  const size_t W = (size_t)C + 2 * (size_t)NKV * hs;  // qkv row width
  const float scale = 1.0f / std::sqrt((float)hs);
  const int bc = batch_chunk(B, T, C, NH, sizeof(Act), false);
  const Layout L = layout(bc, T, C, NH, sizeof(Act), false);
  TD_ASSERT(scratch != nullptr && L.total <= scratch_bytes);
  Act* q = at<Act>(scratch, L.q);
  Act* k = at<Act>(scratch, L.k);
  Act* v = at<Act>(scratch, L.v);
  Act* y = at<Act>(scratch, L.y);
  float* scores = at<float>(scratch, L.scores);
  const cudaDataType_t act = cuda_data_type<Act>();
  const long long s_th = (long long)T * hs, s_tt = (long long)T * T;

  for (int b0 = 0; b0 < B; b0 += bc) {
    const int nb = std::min(bc, B - b0);
    const size_t n = (size_t)nb * T * C;  // elements of q (and of out for this chunk)
    const size_t rows = (size_t)nb * NH * T;
    Act* att_b = att + (size_t)b0 * NH * T * T;
    permute_qkv_kernel<<<grid_for(n, 256, "permute_qkv"), 256, 0, stream>>>(q, k, v, qkv + (size_t)b0 * T * W,
                                                            nb, T, NH, NKV, hs);
    check_launch("permute_qkv_kernel");
    // scores (T,T) = scale * q (T,hs) @ k^T, per (b, h).
    gemm_rm(blas, false, true, T, T, hs, scale, q, act, hs, s_th, k, act, hs, s_th, 0.0f, scores,
            CUDA_R_32F, T, s_tt, nb * NH);
    causal_softmax_kernel<<<row_blocks(rows, "causal_softmax"), kRowBlock, 0, stream>>>(att_b, scores, rows, T);
    check_launch("causal_softmax_kernel");
    // y (T,hs) = att (T,T) @ v (T,hs).
    gemm_rm(blas, false, false, T, hs, T, 1.0f, att_b, act, T, s_tt, v, act, hs, s_th, 0.0f, y, act,
            hs, s_th, nb * NH);
    permute_heads_kernel<<<grid_for(n, 256, "permute_heads"), 256, 0, stream>>>(out + (size_t)b0 * T * C, y, nb, T,
                                                              NH, hs, false);
    check_launch("permute_heads_kernel");
  }
}

template <class Act>
void attention_backward(cublasHandle_t blas, Act* dqkv, const Act* dout, const Act* qkv,
                        const Act* att, int B, int T, int C, int NH, int NKV, void* scratch,
                        size_t scratch_bytes, cudaStream_t stream) {
  TD_ASSERT(B > 0 && T > 0 && NH > 0 && C % NH == 0 && NKV > 0 && NH % NKV == 0);
  const int hs = C / NH;
  const size_t W = (size_t)C + 2 * (size_t)NKV * hs;  // qkv row width
  const float scale = 1.0f / std::sqrt((float)hs);
  const int bc = batch_chunk(B, T, C, NH, sizeof(Act), true);
  const Layout L = layout(bc, T, C, NH, sizeof(Act), true);
  TD_ASSERT(scratch != nullptr && L.total <= scratch_bytes);
  Act* q = at<Act>(scratch, L.q);
  Act* k = at<Act>(scratch, L.k);
  Act* v = at<Act>(scratch, L.v);
  Act* dy = at<Act>(scratch, L.y);
  float* datt = at<float>(scratch, L.scores);
  Act* dpre = at<Act>(scratch, L.dpre);
  float* dq = at<float>(scratch, L.dq);
  float* dk = at<float>(scratch, L.dk);
  float* dv = at<float>(scratch, L.dv);
  const cudaDataType_t act = cuda_data_type<Act>();
  const long long s_th = (long long)T * hs, s_tt = (long long)T * T;

  for (int b0 = 0; b0 < B; b0 += bc) {
    const int nb = std::min(bc, B - b0);
    const size_t n = (size_t)nb * T * C;
    const size_t rows = (size_t)nb * NH * T;
    const Act* att_b = att + (size_t)b0 * NH * T * T;
    const int batch = nb * NH;
    permute_qkv_kernel<<<grid_for(n, 256, "permute_qkv"), 256, 0, stream>>>(q, k, v, qkv + (size_t)b0 * T * W,
                                                            nb, T, NH, NKV, hs);
    check_launch("permute_qkv_kernel");
    permute_heads_kernel<<<grid_for(n, 256, "permute_heads"), 256, 0, stream>>>(dy, dout + (size_t)b0 * T * C, nb,
                                                              T, NH, hs, true);
    check_launch("permute_heads_kernel");
    // datt (T,T) = dy (T,hs) @ v^T; dv (T,hs) = att^T (T,T) @ dy.
    gemm_rm(blas, false, true, T, T, hs, 1.0f, dy, act, hs, s_th, v, act, hs, s_th, 0.0f, datt,
            CUDA_R_32F, T, s_tt, batch);
    gemm_rm(blas, true, false, T, hs, T, 1.0f, att_b, act, T, s_tt, dy, act, hs, s_th, 0.0f, dv,
            CUDA_R_32F, hs, s_th, batch);
    causal_softmax_backward_kernel<<<row_blocks(rows, "causal_softmax_backward"), kRowBlock, 0, stream>>>(dpre, att_b, datt,
                                                                               rows, T);
    check_launch("causal_softmax_backward_kernel");
    // dq (T,hs) = scale * dpre @ k; dk (T,hs) = scale * dpre^T @ q.
    gemm_rm(blas, false, false, T, hs, T, scale, dpre, act, T, s_tt, k, act, hs, s_th, 0.0f, dq,
            CUDA_R_32F, hs, s_th, batch);
    gemm_rm(blas, true, false, T, hs, T, scale, dpre, act, T, s_tt, q, act, hs, s_th, 0.0f, dk,
            CUDA_R_32F, hs, s_th, batch);
    accumulate_dqkv_kernel<<<grid_for(n, 256, "accumulate_dqkv"), 256, 0, stream>>>(dqkv + (size_t)b0 * T * W, dq,
                                                                dk, dv, nb, T, NH, NKV, hs);
    check_launch("accumulate_dqkv_kernel");
  }
}

template void attention_forward<float>(cublasHandle_t, float*, float*, const float*, int, int, int,
                                       int, int, void*, size_t, cudaStream_t);
template void attention_forward<__nv_bfloat16>(cublasHandle_t, __nv_bfloat16*, __nv_bfloat16*,
                                               const __nv_bfloat16*, int, int, int, int, int, void*,
                                               size_t, cudaStream_t);
template void attention_backward<float>(cublasHandle_t, float*, const float*, const float*,
                                        const float*, int, int, int, int, int, void*, size_t,
                                        cudaStream_t);
template void attention_backward<__nv_bfloat16>(cublasHandle_t, __nv_bfloat16*,
                                                const __nv_bfloat16*, const __nv_bfloat16*,
                                                const __nv_bfloat16*, int, int, int, int, int, void*,
                                                size_t, cudaStream_t);

}  // namespace td::cuda
