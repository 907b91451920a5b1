// Fused causal self-attention (train.attention = "fused"): FlashAttention-2 tiles with an online
// softmax, forward and backward, never storing the (T,T) scores (see attention.h for the
// interface and engine/ops/reference/flash_attention.cpp for the CPU reference this mirrors).
//
// A block (4 warps) owns one tile: forward and dq a tile of br query rows of one (b, h), dkv a
// tile of bc key rows of one (b, k/v head). Tiles live in shared memory (layout: FlashLayout,
// cuda/launch.h); the three tile products (s = q k^T, acc += p v, acc += p^T x) run on tensor
// cores (WMMA 16x16x16, bf16 in, fp32 accumulate) when flash_uses_tensor_cores, else as fp32
// FMAs. Key tiles above the diagonal are skipped. Rows past T are zero-padded and never written.
//
// Determinism: no atomics. dq and (dk, dv) are two kernels (each owner sums its own tile), and
// a k/v head's dk and dv are summed over its query heads in order g = 0, 1, ... .
// Precision: as the simple path (attention.h): fp32 scores, softmax and accumulators; the
// probabilities and their gradient are rounded to Act before the tensor-core products; dqkv
// gets one rounding per element. expf/logf, not the fast intrinsics.
#include <mma.h>

#include <cmath>
#include <type_traits>

#include "cuda/attention.h"
#include "cuda/common.cuh"

namespace td::cuda {
namespace {

constexpr int kThreads = 128;  // 4 warps

template <class T> __device__ __forceinline__ T* smem_at(unsigned char* base, size_t off) {
  return reinterpret_cast<T*>(base + off);
}

__device__ __forceinline__ float fa_warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float fa_warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// dst (rows, hs) with stride ld = src rows row0.. (stride src_ld), zero past T.
template <class Act>
__device__ void load_rows(Act* dst, int ld, const Act* src, size_t src_ld, int row0, int rows, int T, int hs) {
  for (int i = threadIdx.x; i < rows * hs; i += blockDim.x) {
    const int r = i / hs, d = i % hs, t = row0 + r;
    dst[r * ld + d] = t < T ? src[(size_t)t * src_ld + d] : store_as<Act>(0.0f);
  }
}

__device__ void fill_f(float* x, int n, float v) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = v;
}

// out (M,N) fp32 = alpha a (M,hs) b (N,hs)^T; a, b Act with stride lda; out stride ldo.
template <class Act, bool TC>
__device__ void mm_nt(float* out, int ldo, const Act* a, const Act* b, int lda, int M, int N, int hs, float alpha) {
  if constexpr (TC) {
    using namespace nvcuda;
    const int warp = threadIdx.x / 32, nw = blockDim.x / 32, tn = N / 16;
    for (int t = warp; t < (M / 16) * tn; t += nw) {
      const int r = t / tn, c = t % tn;
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int k = 0; k < hs; k += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;  // b^T
        wmma::load_matrix_sync(fa, a + r * 16 * lda + k, lda);
        wmma::load_matrix_sync(fb, b + c * 16 * lda + k, lda);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      for (int i = 0; i < acc.num_elements; i++) acc.x[i] *= alpha;
      wmma::store_matrix_sync(out + r * 16 * ldo + c * 16, acc, ldo, wmma::mem_row_major);
    }
  } else {
    for (int i = threadIdx.x; i < M * N; i += blockDim.x) {
      const int r = i / N, c = i % N;
      float dot = 0.0f;
      for (int d = 0; d < hs; d++) dot += load_f(a[r * lda + d]) * load_f(b[c * lda + d]);
      out[r * ldo + c] = alpha * dot;
    }
  }
}

// acc (M,hs) fp32 (stride ldc) += alpha op(p) x: op(p) = p (M,K) (stride ldp) when !trans,
// p^T with p (K,M) when trans; x (K,hs) Act with stride ldx.
template <class Act, bool TC, bool kTrans>
__device__ void mm_acc(float* acc, int ldc, const Act* p, int ldp, const Act* x, int ldx, int M, int K, int hs,
                       float alpha) {
  if constexpr (TC) {
    using namespace nvcuda;
    using ALayout = std::conditional_t<kTrans, wmma::col_major, wmma::row_major>;
    const int warp = threadIdx.x / 32, nw = blockDim.x / 32, tn = hs / 16;
    for (int t = warp; t < (M / 16) * tn; t += nw) {
      const int r = t / tn, c = t % tn;
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> sum, part;
      wmma::load_matrix_sync(sum, acc + r * 16 * ldc + c * 16, ldc, wmma::mem_row_major);
      wmma::fill_fragment(part, 0.0f);
      for (int k = 0; k < K; k += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, ALayout> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
        // op(p) rows r*16.., columns k..: p (M,K) row-major at (r*16, k); p^T: p (K,M) at (k, r*16).
        wmma::load_matrix_sync(fa, kTrans ? p + k * ldp + r * 16 : p + r * 16 * ldp + k, ldp);
        wmma::load_matrix_sync(fb, x + k * ldx + c * 16, ldx);
        wmma::mma_sync(part, fa, fb, part);
      }
      for (int i = 0; i < sum.num_elements; i++) sum.x[i] += alpha * part.x[i];
      wmma::store_matrix_sync(acc + r * 16 * ldc + c * 16, sum, ldc, wmma::mem_row_major);
    }
  } else {
    for (int i = threadIdx.x; i < M * hs; i += blockDim.x) {
      const int r = i / hs, d = i % hs;
      float dot = 0.0f;
      for (int k = 0; k < K; k++) dot += load_f(kTrans ? p[k * ldp + r] : p[r * ldp + k]) * load_f(x[k * ldx + d]);
      acc[r * ldc + d] += alpha * dot;
    }
  }
}

// Grid (ceil(T/br), B*NH). out (B,T,C), lse (B,NH,T).
template <class Act, bool TC>
__global__ void __launch_bounds__(kThreads)
    flash_forward_kernel(Act* out, float* lse, const Act* qkv, int T, int C, int NH, int NKV, float scale, FlashLayout L) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int br = L.br, bc = L.bc, hs = L.hs;
  Act* qs = smem_at<Act>(smem, L.q);
  Act* ks = smem_at<Act>(smem, L.k);
  Act* vs = smem_at<Act>(smem, L.v);
  float* s = smem_at<float>(smem, L.s);
  Act* p = smem_at<Act>(smem, L.p);
  float* o = smem_at<float>(smem, L.acc0);
  float* m = smem_at<float>(smem, L.row0);
  float* l = smem_at<float>(smem, L.row1);
  const int i0 = blockIdx.x * br, bh = blockIdx.y, b = bh / NH, h = bh % NH, G = NH / NKV;
  const size_t W = (size_t)C + 2 * (size_t)NKV * hs;
  const Act* q = qkv + (size_t)b * T * W + (size_t)h * hs;
  const Act* k = qkv + (size_t)b * T * W + C + (size_t)(h / G) * hs;
  const Act* v = k + (size_t)NKV * hs;
  load_rows(qs, L.ld_act, q, W, i0, br, T, hs);
  fill_f(o, br * L.ld_acc, 0.0f);
  fill_f(m, br, -INFINITY);
  fill_f(l, br, 0.0f);
  __syncthreads();
  const int last = min(i0 + br, T) - 1;  // the tile's last query row
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
  for (int j0 = 0; j0 <= last; j0 += bc) {
    load_rows(ks, L.ld_act, k, W, j0, bc, T, hs);
    load_rows(vs, L.ld_act, v, W, j0, bc, T, hs);
    __syncthreads();
    mm_nt<Act, TC>(s, L.ld_s, qs, ks, L.ld_act, br, bc, hs, scale);
    __syncthreads();
    for (int r = warp; r < br; r += nw) {  // online softmax, one warp per row
      const int t = i0 + r, n = min(bc, t - j0 + 1);  // keys j0 .. j0 + n - 1 are <= t
      float* sr = s + r * L.ld_s;
      Act* pr = p + r * L.ld_p;
      if (t >= T || n <= 0) {
        for (int c = lane; c < bc; c += 32) pr[c] = store_as<Act>(0.0f);
        continue;
      }
      const float m_old = m[r];
      float mx = m_old;
      for (int c = lane; c < n; c += 32) mx = fmaxf(mx, sr[c]);
      mx = fa_warp_max(mx);
      const float corr = expf(m_old - mx);  // 0 on the first tile (m_old = -inf)
      float sum = 0.0f;
      for (int c = lane; c < bc; c += 32) {
        const float e = c < n ? expf(sr[c] - mx) : 0.0f;
        pr[c] = store_as<Act>(e);
        sum += e;
      }
      sum = fa_warp_sum(sum);
      float* orow = o + r * L.ld_acc;
      for (int d = lane; d < hs; d += 32) orow[d] *= corr;
      __syncwarp();
      if (lane == 0) {
        m[r] = mx;
        l[r] = l[r] * corr + sum;
      }
    }
    __syncthreads();
    mm_acc<Act, TC, false>(o, L.ld_acc, p, L.ld_p, vs, L.ld_act, br, bc, hs, 1.0f);
    __syncthreads();
  }
  for (int r = warp; r < br; r += nw) {
    const int t = i0 + r;
    if (t >= T) break;
    const float inv = 1.0f / l[r];
    Act* dst = out + ((size_t)b * T + t) * C + (size_t)h * hs;
    for (int d = lane; d < hs; d += 32) dst[d] = store_as<Act>(o[r * L.ld_acc + d] * inv);
    if (lane == 0) lse[(size_t)bh * T + t] = m[r] + logf(l[r]);
  }
}

// D (B,NH,T) = dout . out per row (FlashAttention-2, Algorithm 2 line 4); one warp per row.
template <class Act>
__global__ void flash_row_dot_kernel(float* D, const Act* dout, const Act* out, size_t rows, int T, int NH, int hs) {
  const size_t row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;  // (b, h, t)
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = (int)(row % T), h = (int)(row / T % NH);
  const size_t b = row / T / NH, C = (size_t)NH * hs;
  const size_t at = (b * T + t) * C + (size_t)h * hs;
  float dot = 0.0f;
  for (int d = lane; d < hs; d += 32) dot += load_f(dout[at + d]) * load_f(out[at + d]);
  dot = fa_warp_sum(dot);
  if (lane == 0) D[row] = dot;
}

// For the backward tile pair (query rows i0.., key rows j0..) with s = scale q k^T and dp =
// dout v^T in shared memory: p = exp(s - lse) (0 above the diagonal and past T) into p_act (if
// non-null) and ds = p (dp - D) into ds_act.
template <class Act>
__device__ void softmax_backward_tile(Act* p_act, Act* ds_act, const float* s, const float* dp, const float* lse,
                                      const float* D, const FlashLayout& L, int i0, int j0, int T) {
  for (int i = threadIdx.x; i < L.br * L.bc; i += blockDim.x) {
    const int r = i / L.bc, c = i % L.bc, t = i0 + r, j = j0 + c;
    float pv = 0.0f, dsv = 0.0f;
    if (t < T && j <= t) {
      pv = expf(s[r * L.ld_s + c] - lse[r]);
      dsv = pv * (dp[r * L.ld_s + c] - D[r]);
    }
    if (p_act) p_act[r * L.ld_p + c] = store_as<Act>(pv);
    ds_act[r * L.ld_p + c] = store_as<Act>(dsv);
  }
}

// Loads lse and D of query rows i0.. of row block bh (0 past T).
__device__ void load_row_stats(float* lse_s, float* D_s, const float* lse, const float* D, size_t bh, int i0, int br,
                               int T) {
  for (int r = threadIdx.x; r < br; r += blockDim.x) {
    const int t = i0 + r;
    lse_s[r] = t < T ? lse[bh * T + t] : 0.0f;
    D_s[r] = t < T ? D[bh * T + t] : 0.0f;
  }
}

// dq: grid (ceil(T/br), B*NH). dqkv's q part += scale sum_j ds k_j.
template <class Act, bool TC>
__global__ void __launch_bounds__(kThreads)
    flash_backward_dq_kernel(Act* dqkv, const Act* dout, const Act* qkv, const float* lse, const float* D, int T, int C,
                             int NH, int NKV, float scale, FlashLayout L) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int br = L.br, bc = L.bc, hs = L.hs;
  Act* qs = smem_at<Act>(smem, L.q);
  Act* ks = smem_at<Act>(smem, L.k);
  Act* vs = smem_at<Act>(smem, L.v);
  Act* dos = smem_at<Act>(smem, L.dout);
  float* s = smem_at<float>(smem, L.s);
  float* dp = smem_at<float>(smem, L.dp);
  Act* ds = smem_at<Act>(smem, L.ds);
  float* dq = smem_at<float>(smem, L.acc0);
  float* lse_s = smem_at<float>(smem, L.row0);
  float* D_s = smem_at<float>(smem, L.row1);
  const int i0 = blockIdx.x * br, bh = blockIdx.y, b = bh / NH, h = bh % NH, G = NH / NKV;
  const size_t W = (size_t)C + 2 * (size_t)NKV * hs;
  const Act* q = qkv + (size_t)b * T * W + (size_t)h * hs;
  const Act* k = qkv + (size_t)b * T * W + C + (size_t)(h / G) * hs;
  const Act* v = k + (size_t)NKV * hs;
  load_rows(qs, L.ld_act, q, W, i0, br, T, hs);
  load_rows(dos, L.ld_act, dout + (size_t)b * T * C + (size_t)h * hs, C, i0, br, T, hs);
  load_row_stats(lse_s, D_s, lse, D, bh, i0, br, T);
  fill_f(dq, br * L.ld_acc, 0.0f);
  __syncthreads();
  const int last = min(i0 + br, T) - 1;
  for (int j0 = 0; j0 <= last; j0 += bc) {
    load_rows(ks, L.ld_act, k, W, j0, bc, T, hs);
    load_rows(vs, L.ld_act, v, W, j0, bc, T, hs);
    __syncthreads();
    mm_nt<Act, TC>(s, L.ld_s, qs, ks, L.ld_act, br, bc, hs, scale);
    mm_nt<Act, TC>(dp, L.ld_s, dos, vs, L.ld_act, br, bc, hs, 1.0f);
    __syncthreads();
    softmax_backward_tile<Act>(nullptr, ds, s, dp, lse_s, D_s, L, i0, j0, T);
    __syncthreads();
    mm_acc<Act, TC, false>(dq, L.ld_acc, ds, L.ld_p, ks, L.ld_act, br, bc, hs, scale);
    __syncthreads();
  }
  for (int i = threadIdx.x; i < br * hs; i += blockDim.x) {
    const int r = i / hs, d = i % hs, t = i0 + r;
    if (t >= T) continue;
    Act* dst = dqkv + ((size_t)b * T + t) * W + (size_t)h * hs + d;
    *dst = store_as<Act>(load_f(*dst) + dq[r * L.ld_acc + d]);
  }
}

// dk, dv: grid (ceil(T/bc), B*NKV). For key rows j0.. of k/v head kh: dv += sum p^T dout,
// dk += scale sum ds^T q over the group's query heads (in order) and the query tiles i >= j.
template <class Act, bool TC>
__global__ void __launch_bounds__(kThreads)
    flash_backward_dkv_kernel(Act* dqkv, const Act* dout, const Act* qkv, const float* lse, const float* D, int T, int C,
                              int NH, int NKV, float scale, FlashLayout L) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int br = L.br, bc = L.bc, hs = L.hs;
  Act* qs = smem_at<Act>(smem, L.q);
  Act* ks = smem_at<Act>(smem, L.k);
  Act* vs = smem_at<Act>(smem, L.v);
  Act* dos = smem_at<Act>(smem, L.dout);
  float* s = smem_at<float>(smem, L.s);
  float* dp = smem_at<float>(smem, L.dp);
  Act* p = smem_at<Act>(smem, L.p);
  Act* ds = smem_at<Act>(smem, L.ds);
  float* dk = smem_at<float>(smem, L.acc0);
  float* dv = smem_at<float>(smem, L.acc1);
  float* lse_s = smem_at<float>(smem, L.row0);
  float* D_s = smem_at<float>(smem, L.row1);
  const int j0 = blockIdx.x * bc, bk = blockIdx.y, b = bk / NKV, kh = bk % NKV, G = NH / NKV;
  const size_t W = (size_t)C + 2 * (size_t)NKV * hs, CKV = (size_t)NKV * hs;
  const Act* k = qkv + (size_t)b * T * W + C + (size_t)kh * hs;
  load_rows(ks, L.ld_act, k, W, j0, bc, T, hs);
  load_rows(vs, L.ld_act, k + CKV, W, j0, bc, T, hs);
  fill_f(dk, bc * L.ld_acc, 0.0f);
  fill_f(dv, bc * L.ld_acc, 0.0f);
  for (int g = 0; g < G; g++) {
    const int h = kh * G + g;
    const size_t bh = (size_t)b * NH + h;
    const Act* q = qkv + (size_t)b * T * W + (size_t)h * hs;
    const Act* dy = dout + (size_t)b * T * C + (size_t)h * hs;
    for (int i0 = j0 / br * br; i0 < T; i0 += br) {  // query tiles that reach key j0
      __syncthreads();  // the previous tile's products are done with qs, dos, p, ds
      load_rows(qs, L.ld_act, q, W, i0, br, T, hs);
      load_rows(dos, L.ld_act, dy, C, i0, br, T, hs);
      load_row_stats(lse_s, D_s, lse, D, bh, i0, br, T);
      __syncthreads();
      mm_nt<Act, TC>(s, L.ld_s, qs, ks, L.ld_act, br, bc, hs, scale);
      mm_nt<Act, TC>(dp, L.ld_s, dos, vs, L.ld_act, br, bc, hs, 1.0f);
      __syncthreads();
      softmax_backward_tile<Act>(p, ds, s, dp, lse_s, D_s, L, i0, j0, T);
      __syncthreads();
      mm_acc<Act, TC, true>(dv, L.ld_acc, p, L.ld_p, dos, L.ld_act, bc, br, hs, 1.0f);
      mm_acc<Act, TC, true>(dk, L.ld_acc, ds, L.ld_p, qs, L.ld_act, bc, br, hs, scale);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < bc * hs; i += blockDim.x) {
    const int c = i / hs, d = i % hs, t = j0 + c;
    if (t >= T) continue;
    Act* dst = dqkv + ((size_t)b * T + t) * W + C + (size_t)kh * hs + d;
    *dst = store_as<Act>(load_f(*dst) + dk[c * L.ld_acc + d]);
    dst[CKV] = store_as<Act>(load_f(dst[CKV]) + dv[c * L.ld_acc + d]);
  }
}

size_t max_smem_optin() {
  int device = 0, bytes = 0;
  TD_CUDA_CHECK(cudaGetDevice(&device));
  TD_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return (size_t)bytes;
}

// Launches kernel (grid x, y) with L's dynamic shared memory, raising the kernel's limit first
// (above 48 KiB a kernel must opt in: CUDA C Programming Guide, "Shared Memory").
template <class Kernel, class... Args>
void launch(Kernel kernel, const char* name, unsigned gx, unsigned gy, const FlashLayout& L, cudaStream_t stream,
            Args... args) {
  TD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)L.bytes));
  kernel<<<dim3(gx, gy), kThreads, L.bytes, stream>>>(args..., L);
  check_launch(name);
}

void check_shapes(int B, int T, int C, int NH, int NKV) {
  TD_ASSERT(B > 0 && T > 0 && NH > 0 && C % NH == 0 && NKV > 0 && NH % NKV == 0);
}

}  // namespace

size_t flash_attention_scratch_bytes(int B, int T, int NH) { return (size_t)B * NH * T * sizeof(float); }

template <class Act>
void flash_attention_forward(Act* out, float* lse, const Act* qkv, int B, int T, int C, int NH, int NKV,
                             cudaStream_t stream) {
  check_shapes(B, T, C, NH, NKV);
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt((float)hs);
  const FlashLayout L = flash_attention_plan(FlashKernel::kForward, hs, sizeof(Act), max_smem_optin());
  const unsigned gx = grid_for((size_t)T, (size_t)L.br, "flash_forward"), gy = grid_yz((size_t)B * NH, "flash_forward");
  if constexpr (std::is_same_v<Act, __nv_bfloat16>) {
    if (flash_uses_tensor_cores(hs, sizeof(Act))) {
      launch(flash_forward_kernel<Act, true>, "flash_forward_kernel", gx, gy, L, stream, out, lse, qkv, T, C, NH, NKV,
             scale);
      return;
    }
  }
  launch(flash_forward_kernel<Act, false>, "flash_forward_kernel", gx, gy, L, stream, out, lse, qkv, T, C, NH, NKV,
         scale);
}

template <class Act>
void flash_attention_backward(Act* dqkv, const Act* dout, const Act* qkv, const Act* out, const float* lse, int B,
                              int T, int C, int NH, int NKV, void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  check_shapes(B, T, C, NH, NKV);
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt((float)hs);
  TD_ASSERT(scratch != nullptr && flash_attention_scratch_bytes(B, T, NH) <= scratch_bytes);
  float* D = static_cast<float*>(scratch);
  const size_t rows = (size_t)B * NH * T;
  flash_row_dot_kernel<Act><<<grid_for(rows * 32, 256, "flash_row_dot"), 256, 0, stream>>>(D, dout, out, rows, T, NH, hs);
  check_launch("flash_row_dot_kernel");
  const size_t smem = max_smem_optin();
  const FlashLayout Lq = flash_attention_plan(FlashKernel::kBackwardDq, hs, sizeof(Act), smem);
  const FlashLayout Lkv = flash_attention_plan(FlashKernel::kBackwardDkv, hs, sizeof(Act), smem);
  const unsigned gq = grid_for((size_t)T, (size_t)Lq.br, "flash_backward_dq"),
                 gkv = grid_for((size_t)T, (size_t)Lkv.bc, "flash_backward_dkv");
  const unsigned yq = grid_yz((size_t)B * NH, "flash_backward_dq"), ykv = grid_yz((size_t)B * NKV, "flash_backward_dkv");
  bool tc = false;
  if constexpr (std::is_same_v<Act, __nv_bfloat16>) tc = flash_uses_tensor_cores(hs, sizeof(Act));
  if (tc) {
    if constexpr (std::is_same_v<Act, __nv_bfloat16>) {
      launch(flash_backward_dq_kernel<Act, true>, "flash_backward_dq_kernel", gq, yq, Lq, stream, dqkv, dout, qkv, lse,
             (const float*)D, T, C, NH, NKV, scale);
      launch(flash_backward_dkv_kernel<Act, true>, "flash_backward_dkv_kernel", gkv, ykv, Lkv, stream, dqkv, dout, qkv,
             lse, (const float*)D, T, C, NH, NKV, scale);
    }
    return;
  }
  launch(flash_backward_dq_kernel<Act, false>, "flash_backward_dq_kernel", gq, yq, Lq, stream, dqkv, dout, qkv, lse,
         (const float*)D, T, C, NH, NKV, scale);
  launch(flash_backward_dkv_kernel<Act, false>, "flash_backward_dkv_kernel", gkv, ykv, Lkv, stream, dqkv, dout, qkv,
         lse, (const float*)D, T, C, NH, NKV, scale);
}

template void flash_attention_forward<float>(float*, float*, const float*, int, int, int, int, int, cudaStream_t);
template void flash_attention_forward<__nv_bfloat16>(__nv_bfloat16*, float*, const __nv_bfloat16*, int, int, int, int,
                                                     int, cudaStream_t);
template void flash_attention_backward<float>(float*, const float*, const float*, const float*, const float*, int, int,
                                              int, int, int, void*, size_t, cudaStream_t);
template void flash_attention_backward<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*,
                                                      const __nv_bfloat16*, const float*, int, int, int, int, int,
                                                      void*, size_t, cudaStream_t);

}  // namespace td::cuda
