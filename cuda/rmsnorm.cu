// RMSNorm over the last dimension (Zhang & Sennrich 2019; transformers' LlamaRMSNorm) and its
// backward, as td::cpu::rmsnorm_forward / rmsnorm_backward. One warp per row, like layernorm.cu;
// dweight is reduced over rows in two deterministic passes (per-chunk column sums into scratch,
// then the chunks in order), so a run's gradients do not depend on scheduling. Rows that
// row_packs allows (cuda/kernel_util.cuh: C a multiple of 16 bytes' elements, up to 8 packs a
// lane, aligned pointers) take the packed kernels: 128-bit accesses and the row read once into
// registers.
#include <algorithm>

#include "cuda/common.cuh"
#include "cuda/kernel_util.cuh"
#include "cuda/ops.h"

namespace td::cuda {
namespace {

constexpr int kRowsPerBlock = 8;  // warps per block, one row each

// out (N,C) = x * rstd * weight, rstd (N) = 1 / sqrt(mean(x^2) + eps) in fp32.
template <class Act>
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    rmsnorm_forward_kernel(Act* __restrict__ out, float* __restrict__ rstd, const Act* __restrict__ inp,
                           const Act* __restrict__ weight, int N, int C, float eps) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= N) return;  // whole warps leave: the shuffles below stay full-warp
  const Act* x = inp + (size_t)row * C;
  float ss = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float v = load_f(x[c]);
    ss += v * v;
  }
  const float s = 1.0f / sqrtf(warp_sum(ss) / (float)C + eps);
  Act* o = out + (size_t)row * C;
  for (int c = lane; c < C; c += 32) o[c] = store_as<Act>(load_f(x[c]) * s * load_f(weight[c]));
  if (lane == 0) rstd[row] = s;
}

// The packed forward (the scalar kernel's arithmetic, x held in registers): lane l holds packs
// l, l + 32, ... of the row (kPacks of them; those past the row's end unused).
template <class Act, int kPacks>
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    rmsnorm_forward_packed_kernel(Act* __restrict__ out, float* __restrict__ rstd, const Act* __restrict__ inp,
                                  const Act* __restrict__ weight, int N, int C, float eps) {
  using P = Pack16<Act>;
  constexpr int kN = P::kN;
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= N) return;
  const Act* x = inp + (size_t)row * C;
  P xs[kPacks];
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < kPacks; i++) {
    const int c = (lane + 32 * i) * kN;
    if (c < C) {
      xs[i] = load_pack(x + c);
#pragma unroll
      for (int j = 0; j < kN; j++) {
        const float v = load_f(xs[i].v[j]);
        ss += v * v;
      }
    }
  }
  const float s = 1.0f / sqrtf(warp_sum(ss) / (float)C + eps);
  Act* o = out + (size_t)row * C;
#pragma unroll
  for (int i = 0; i < kPacks; i++) {
    const int c = (lane + 32 * i) * kN;
    if (c < C) {
      const P w = load_pack(weight + c);
      P y;
#pragma unroll
      for (int j = 0; j < kN; j++) y.v[j] = store_as<Act>(load_f(xs[i].v[j]) * s * load_f(w.v[j]));
      store_pack(o + c, y);
    }
  }
  if (lane == 0) rstd[row] = s;
}

// The packed dinp kernel: the scalar kernel's arithmetic with x and dout held in registers.
template <class Act, int kPacks>
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    rmsnorm_backward_dinp_packed_kernel(Act* __restrict__ dinp, const Act* __restrict__ dout,
                                        const Act* __restrict__ inp, const Act* __restrict__ weight,
                                        const float* __restrict__ rstd, int N, int C) {
  using P = Pack16<Act>;
  constexpr int kN = P::kN;
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= N) return;
  const size_t off = (size_t)row * C;
  const float s = rstd[row];
  P xs[kPacks], dys[kPacks];
  float dnorm_norm_mean = 0.0f;
#pragma unroll
  for (int i = 0; i < kPacks; i++) {
    const int c = (lane + 32 * i) * kN;
    if (c < C) {
      xs[i] = load_pack(inp + off + c);
      dys[i] = load_pack(dout + off + c);
      const P w = load_pack(weight + c);
#pragma unroll
      for (int j = 0; j < kN; j++) dnorm_norm_mean += load_f(w.v[j]) * load_f(dys[i].v[j]) * load_f(xs[i].v[j]) * s;
    }
  }
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / (float)C;
#pragma unroll
  for (int i = 0; i < kPacks; i++) {
    const int c = (lane + 32 * i) * kN;
    if (c < C) {
      const P w = load_pack(weight + c);
      P dx = load_pack(dinp + off + c);
#pragma unroll
      for (int j = 0; j < kN; j++) {
        const float dnorm = load_f(w.v[j]) * load_f(dys[i].v[j]);
        dx.v[j] = store_as<Act>(load_f(dx.v[j]) + s * (dnorm - load_f(xs[i].v[j]) * s * dnorm_norm_mean));
      }
      store_pack(dinp + off + c, dx);
    }
  }
}

// dinp (N,C) += rstd * (dnorm - norm * mean(dnorm * norm)), norm = x * rstd, dnorm = weight * dout.
template <class Act>
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    rmsnorm_backward_dinp_kernel(Act* __restrict__ dinp, const Act* __restrict__ dout, const Act* __restrict__ inp,
                                 const Act* __restrict__ weight, const float* __restrict__ rstd, int N, int C) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= N) return;
  const size_t off = (size_t)row * C;
  const Act* x = inp + off;
  const Act* dy = dout + off;
  Act* dx = dinp + off;
  const float s = rstd[row];
  float dnorm_norm_mean = 0.0f;
  for (int c = lane; c < C; c += 32) dnorm_norm_mean += load_f(weight[c]) * load_f(dy[c]) * load_f(x[c]) * s;
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / (float)C;
  for (int c = lane; c < C; c += 32) {
    const float dnorm = load_f(weight[c]) * load_f(dy[c]);
    dx[c] = store_as<Act>(load_f(dx[c]) + s * (dnorm - load_f(x[c]) * s * dnorm_norm_mean));
  }
}

// Rows per chunk of the dweight reduction: a pure function of (N, C) (scratch size and both
// kernels agree; the summation order depends on nothing else). About 2^19 (chunk, column)
// threads in all, chunks of at least 16 rows.
int chunk_rows(int N, int C) {
  size_t want = std::min<size_t>(ceil_div((size_t)N, 16), ceil_div((size_t)1 << 19, (size_t)C));
  want = std::max<size_t>(1, std::min<size_t>(want, 65535));  // gridDim.y limit
  return (int)ceil_div((size_t)N, want);
}

// scratch[k] (C) = column sums of norm * dout over chunk k's rows, rows in order. Thread per column.
template <class Act>
__global__ void rmsnorm_backward_partial_kernel(float* __restrict__ scratch, const Act* __restrict__ dout,
                                                const Act* __restrict__ inp, const float* __restrict__ rstd, int N,
                                                int C, int rows) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const int k = blockIdx.y;
  const int begin = k * rows, end = min(N, begin + rows);
  float pw = 0.0f;
  for (int i = begin; i < end; i++) {
    const size_t off = (size_t)i * C + c;
    pw += load_f(inp[off]) * rstd[i] * load_f(dout[off]);
  }
  scratch[(size_t)k * C + c] = pw;
}

// dweight (C) += the chunks' column sums, chunks in order.
__global__ void rmsnorm_backward_reduce_kernel(float* __restrict__ dweight, const float* __restrict__ scratch, int C,
                                               int count) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float w = dweight[c];
  for (int k = 0; k < count; k++) w += scratch[(size_t)k * C + c];
  dweight[c] = w;
}

}  // namespace

template <class Act>
void rmsnorm_forward(Act* out, float* rstd, const Act* inp, const Act* weight, int N, int C, float eps,
                     cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  const unsigned grid = grid_for((size_t)N, kRowsPerBlock, "rmsnorm_forward");
  if (const int packs = row_packs<Act>(C, {out, inp, weight})) {
    with_row_packs(packs, [&]<int K>() {
      rmsnorm_forward_packed_kernel<Act, K><<<grid, 32 * kRowsPerBlock, 0, stream>>>(out, rstd, inp, weight, N, C, eps);
    });
    check_launch("rmsnorm_forward_packed_kernel");
    return;
  }
  rmsnorm_forward_kernel<Act><<<grid, 32 * kRowsPerBlock, 0, stream>>>(out, rstd, inp, weight, N, C, eps);
  check_launch("rmsnorm_forward_kernel");
}

size_t rmsnorm_backward_scratch_floats(int N, int C) {
  if (N <= 0 || C <= 0) return 0;
  return ceil_div((size_t)N, (size_t)chunk_rows(N, C)) * (size_t)C;
}

template <class Act>
void rmsnorm_backward(Act* dinp, float* dweight, const Act* dout, const Act* inp, const Act* weight,
                      const float* rstd, int N, int C, float* scratch, cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  const int rows = chunk_rows(N, C);
  const int count = (int)ceil_div((size_t)N, (size_t)rows);
  constexpr int kThreads = 256;
  const unsigned column_blocks = grid_for((size_t)C, kThreads, "rmsnorm_backward");
  rmsnorm_backward_partial_kernel<Act><<<dim3(column_blocks, grid_yz(count, "rmsnorm_backward_partial")), kThreads, 0, stream>>>(scratch, dout, inp,
                                                                                           rstd, N, C, rows);
  check_launch("rmsnorm_backward_partial_kernel");
  rmsnorm_backward_reduce_kernel<<<column_blocks, kThreads, 0, stream>>>(dweight, scratch, C, count);
  check_launch("rmsnorm_backward_reduce_kernel");
  const unsigned grid = grid_for((size_t)N, kRowsPerBlock, "rmsnorm_backward_dinp");
  if (const int packs = row_packs<Act>(C, {dinp, dout, inp, weight})) {
    with_row_packs(packs, [&]<int K>() {
      rmsnorm_backward_dinp_packed_kernel<Act, K><<<grid, 32 * kRowsPerBlock, 0, stream>>>(dinp, dout, inp, weight, rstd, N, C);
    });
    check_launch("rmsnorm_backward_dinp_packed_kernel");
    return;
  }
  rmsnorm_backward_dinp_kernel<Act><<<grid, 32 * kRowsPerBlock, 0, stream>>>(dinp, dout, inp, weight, rstd, N, C);
  check_launch("rmsnorm_backward_dinp_kernel");
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, int, int, float, cudaStream_t);
template void rmsnorm_forward<__nv_bfloat16>(__nv_bfloat16*, float*, const __nv_bfloat16*, const __nv_bfloat16*, int,
                                             int, float, cudaStream_t);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*, const float*, int,
                                      int, float*, cudaStream_t);
template void rmsnorm_backward<__nv_bfloat16>(__nv_bfloat16*, float*, const __nv_bfloat16*, const __nv_bfloat16*,
                                              const __nv_bfloat16*, const float*, int, int, float*, cudaStream_t);

}  // namespace td::cuda
