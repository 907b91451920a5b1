// LayerNorm over the last dimension (torch.nn.functional.layer_norm, eps = 1e-5, biased
// variance) and its backward, as td::cpu::layernorm_forward / layernorm_backward. One warp per
// row (llm.c layernorm_forward_kernel3); dweight/dbias are reduced over rows in two
// deterministic passes (per-chunk column sums into scratch, then the chunks in order).
// Rows of up to 8 packs of 16 bytes a lane (row_packs_per_lane, cuda/launch.h: C <= 2048 in bf16,
// 1024 in fp32; C a multiple of the pack; all pointers 16-byte aligned) take the packed kernels: 128-bit loads and stores, and the row
// read once into registers (forward: x; backward: x and dout), where the scalar kernels read it
// two or three times. Anything else takes the scalar kernels.
#include <algorithm>

#include "cuda/common.cuh"
#include "cuda/kernel_util.cuh"
#include "cuda/ops.h"

namespace td::cuda {
namespace {

constexpr float kEps = 1e-5f;    // the CPU's R(kLayerNormEps) for R = float
constexpr int kRowsPerBlock = 8;  // warps per block, one row each

// out (N,C) = (x - mean) * rstd * weight + bias; mean, rstd (N) in fp32. Two passes over the
// row (mean, then the variance about it), as the CPU reference: no E[x^2] - mean^2 cancellation.
template <class Act>
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    layernorm_forward_kernel(Act* __restrict__ out, float* __restrict__ mean, float* __restrict__ rstd,
                             const Act* __restrict__ inp, const Act* __restrict__ weight,
                             const Act* __restrict__ bias, int N, int C) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= N) return;  // whole warps leave: the shuffles below stay full-warp
  const Act* x = inp + (size_t)row * C;
  float sum = 0.0f;
  for (int c = lane; c < C; c += 32) sum += load_f(x[c]);
  const float m = warp_sum(sum) / (float)C;
  float var = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float d = load_f(x[c]) - m;
    var += d * d;
  }
  var = warp_sum(var) / (float)C;
  const float s = 1.0f / sqrtf(var + kEps);
  Act* o = out + (size_t)row * C;
  for (int c = lane; c < C; c += 32)
    o[c] = store_as<Act>((load_f(x[c]) - m) * s * load_f(weight[c]) + load_f(bias[c]));
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

// The packed forward: the scalar kernel's arithmetic (mean, then the variance about it) on the
// row held in registers. Lane l holds packs l, l + 32, ... (kPacks of them, the last ones past
// the row's end unused); kN elements a pack.
template <class Act, int kPacks>
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    layernorm_forward_packed_kernel(Act* __restrict__ out, float* __restrict__ mean, float* __restrict__ rstd,
                                    const Act* __restrict__ inp, const Act* __restrict__ weight,
                                    const Act* __restrict__ bias, int N, int C) {
  using P = Pack16<Act>;
  constexpr int kN = P::kN;
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= N) return;
  const Act* x = inp + (size_t)row * C;
  P xs[kPacks];
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kPacks; i++) {
    const int c = (lane + 32 * i) * kN;
    if (c < C) {
      xs[i] = load_pack(x + c);
#pragma unroll
      for (int j = 0; j < kN; j++) sum += load_f(xs[i].v[j]);
    }
  }
  const float m = warp_sum(sum) / (float)C;
  float var = 0.0f;
#pragma unroll
  for (int i = 0; i < kPacks; i++)
    if ((lane + 32 * i) * kN < C) {
#pragma unroll
      for (int j = 0; j < kN; j++) {
        const float d = load_f(xs[i].v[j]) - m;
        var += d * d;
      }
    }
  var = warp_sum(var) / (float)C;
  const float s = 1.0f / sqrtf(var + kEps);
  Act* o = out + (size_t)row * C;
#pragma unroll
  for (int i = 0; i < kPacks; i++) {
    const int c = (lane + 32 * i) * kN;
    if (c < C) {
      const P w = load_pack(weight + c), b = load_pack(bias + c);
      P y;
#pragma unroll
      for (int j = 0; j < kN; j++) y.v[j] = store_as<Act>((load_f(xs[i].v[j]) - m) * s * load_f(w.v[j]) + load_f(b.v[j]));
      store_pack(o + c, y);
    }
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

// dinp (N,C) += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = weight * dout,
// norm = (x - mean) * rstd. One warp per row.
template <class Act>
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    layernorm_backward_dinp_kernel(Act* dinp, const Act* dout,  // may alias: read before written
                                   const Act* __restrict__ inp, const Act* __restrict__ weight,
                                   const float* __restrict__ mean, const float* __restrict__ rstd, int N,
                                   int C) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= N) return;
  const size_t off = (size_t)row * C;
  const Act* x = inp + off;
  const Act* dy = dout + off;
  Act* dx = dinp + off;
  const float m = mean[row], s = rstd[row];
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float norm = (load_f(x[c]) - m) * s;
    const float dnorm = load_f(weight[c]) * load_f(dy[c]);
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * norm;
  }
  dnorm_mean = warp_sum(dnorm_mean) / (float)C;
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / (float)C;
  for (int c = lane; c < C; c += 32) {
    const float norm = (load_f(x[c]) - m) * s;
    const float dnorm = load_f(weight[c]) * load_f(dy[c]);
    dx[c] = store_as<Act>(load_f(dx[c]) + s * (dnorm - dnorm_mean - norm * dnorm_norm_mean));
  }
}

// The packed dinp kernel: the scalar kernel's arithmetic with x and dout read once into
// registers (lane layout as the packed forward). dinp may alias dout: each lane reads its own
// packs of dout before it writes them.
template <class Act, int kPacks>
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    layernorm_backward_dinp_packed_kernel(Act* dinp, const Act* dout, const Act* __restrict__ inp,
                                          const Act* __restrict__ weight, const float* __restrict__ mean,
                                          const float* __restrict__ rstd, int N, int C) {
  using P = Pack16<Act>;
  constexpr int kN = P::kN;
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= N) return;
  const size_t off = (size_t)row * C;
  const float m = mean[row], s = rstd[row];
  P xs[kPacks], dys[kPacks];
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
#pragma unroll
  for (int i = 0; i < kPacks; i++) {
    const int c = (lane + 32 * i) * kN;
    if (c < C) {
      xs[i] = load_pack(inp + off + c);
      dys[i] = load_pack(dout + off + c);
      const P w = load_pack(weight + c);
#pragma unroll
      for (int j = 0; j < kN; j++) {
        const float norm = (load_f(xs[i].v[j]) - m) * s;
        const float dnorm = load_f(w.v[j]) * load_f(dys[i].v[j]);
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * norm;
      }
    }
  }
  dnorm_mean = warp_sum(dnorm_mean) / (float)C;
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / (float)C;
#pragma unroll
  for (int i = 0; i < kPacks; i++) {
    const int c = (lane + 32 * i) * kN;
    if (c < C) {
      const P w = load_pack(weight + c);
      P dx = load_pack(dinp + off + c);
#pragma unroll
      for (int j = 0; j < kN; j++) {
        const float norm = (load_f(xs[i].v[j]) - m) * s;
        const float dnorm = load_f(w.v[j]) * load_f(dys[i].v[j]);
        dx.v[j] = store_as<Act>(load_f(dx.v[j]) + s * (dnorm - dnorm_mean - norm * dnorm_norm_mean));
      }
      store_pack(dinp + off + c, dx);
    }
  }
}

// The row chunking of the dweight/dbias reduction: a pure function of (N, C), so the scratch
// size and both kernels agree and the summation order never depends on anything else. About
// 2^19 (chunk, column) threads in all (fills a GPU), chunks of at least 16 rows.
struct Chunks {
  int rows;   // rows per chunk (the last may be shorter)
  int count;  // number of chunks
};
Chunks chunks_of(int N, int C) {
  if (N <= 0 || C <= 0) return {0, 0};
  size_t want = std::min<size_t>(ceil_div((size_t)N, 16), ceil_div((size_t)1 << 19, (size_t)C));
  want = std::max<size_t>(1, std::min<size_t>(want, 65535));  // gridDim.y limit
  const int rows = (int)ceil_div((size_t)N, want);
  return {rows, (int)ceil_div((size_t)N, (size_t)rows)};
}

// scratch[k] = (dweight part (C), dbias part (C)) of chunk k: column sums of norm * dout and of
// dout over the chunk's rows, rows in order (the CPU's per-chunk loop). Thread per column.
template <class Act>
__global__ void layernorm_backward_partial_kernel(float* __restrict__ scratch, const Act* __restrict__ dout,
                                                  const Act* __restrict__ inp, const float* __restrict__ mean,
                                                  const float* __restrict__ rstd, int N, int C, int rows) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const int k = blockIdx.y;
  const int begin = k * rows, end = min(N, begin + rows);
  float pw = 0.0f, pb = 0.0f;
  for (int i = begin; i < end; i++) {
    const size_t off = (size_t)i * C + c;
    const float dy = load_f(dout[off]);
    pw += (load_f(inp[off]) - mean[i]) * rstd[i] * dy;
    pb += dy;
  }
  float* part = scratch + (size_t)k * 2 * C;
  part[c] = pw;
  part[C + c] = pb;
}

// dweight (C) += sum over chunks of the dweight parts, dbias likewise, chunks in order.
__global__ void layernorm_backward_reduce_kernel(float* __restrict__ dweight, float* __restrict__ dbias,
                                                 const float* __restrict__ scratch, int C, int count) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float w = dweight[c], b = dbias[c];
  for (int k = 0; k < count; k++) {
    w += scratch[(size_t)k * 2 * C + c];
    b += scratch[(size_t)k * 2 * C + C + c];
  }
  dweight[c] = w;
  dbias[c] = b;
}

}  // namespace

template <class Act>
void layernorm_forward(Act* out, float* mean, float* rstd, const Act* inp, const Act* weight, const Act* bias,
                       int N, int C, cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  const unsigned grid = grid_for((size_t)N, kRowsPerBlock, "layernorm_forward");
  if (const int packs = row_packs<Act>(C, {out, inp, weight, bias})) {
    with_row_packs(packs, [&]<int K>() {
      layernorm_forward_packed_kernel<Act, K><<<grid, 32 * kRowsPerBlock, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C);
    });
    check_launch("layernorm_forward_packed_kernel");
    return;
  }
  layernorm_forward_kernel<Act><<<grid, 32 * kRowsPerBlock, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C);
  check_launch("layernorm_forward_kernel");
}

size_t layernorm_backward_scratch_floats(int N, int C) {
  const Chunks ch = chunks_of(N, C);
  return (size_t)ch.count * 2 * (size_t)(C > 0 ? C : 0);
}

template <class Act>
void layernorm_backward(Act* dinp, float* dweight, float* dbias, const Act* dout, const Act* inp, const Act* weight,
                        const float* mean, const float* rstd, int N, int C, float* scratch, cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  // dweight/dbias first: they read dout, which dinp may alias (the dinp kernel reads each dout
  // element before its own thread overwrites it).
  const Chunks ch = chunks_of(N, C);
  constexpr int kThreads = 256;
  const unsigned column_blocks = grid_for((size_t)C, kThreads, "layernorm_backward");
  layernorm_backward_partial_kernel<Act><<<dim3(column_blocks, grid_yz(ch.count, "layernorm_backward_partial")), kThreads, 0, stream>>>(
      scratch, dout, inp, mean, rstd, N, C, ch.rows);
  check_launch("layernorm_backward_partial_kernel");
  layernorm_backward_reduce_kernel<<<column_blocks, kThreads, 0, stream>>>(dweight, dbias, scratch, C, ch.count);
  check_launch("layernorm_backward_reduce_kernel");
  const unsigned grid = grid_for((size_t)N, kRowsPerBlock, "layernorm_backward_dinp");
  if (const int packs = row_packs<Act>(C, {dinp, dout, inp, weight})) {
    with_row_packs(packs, [&]<int K>() {
      layernorm_backward_dinp_packed_kernel<Act, K><<<grid, 32 * kRowsPerBlock, 0, stream>>>(dinp, dout, inp, weight, mean, rstd, N, C);
    });
    check_launch("layernorm_backward_dinp_packed_kernel");
    return;
  }
  layernorm_backward_dinp_kernel<Act><<<grid, 32 * kRowsPerBlock, 0, stream>>>(dinp, dout, inp, weight, mean, rstd, N, C);
  check_launch("layernorm_backward_dinp_kernel");
}

template void layernorm_forward<float>(float*, float*, float*, const float*, const float*, const float*, int, int,
                                       cudaStream_t);
template void layernorm_forward<__nv_bfloat16>(__nv_bfloat16*, float*, float*, const __nv_bfloat16*,
                                               const __nv_bfloat16*, const __nv_bfloat16*, int, int, cudaStream_t);
template void layernorm_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                        const float*, const float*, int, int, float*, cudaStream_t);
template void layernorm_backward<__nv_bfloat16>(__nv_bfloat16*, float*, float*, const __nv_bfloat16*,
                                                const __nv_bfloat16*, const __nv_bfloat16*, const float*,
                                                const float*, int, int, float*, cudaStream_t);

}  // namespace td::cuda
