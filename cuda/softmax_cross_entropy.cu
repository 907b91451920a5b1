// Fused softmax + cross-entropy over V classes (torch.nn.functional.cross_entropy, reduction
// none, and its gradient), as td::cpu::softmax_cross_entropy: one block per row, an online
// max/sum (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax") in fp32, then
// a second pass writing (softmax - onehot(target)) * grad_scale. dlogits may alias logits.
#include <cmath>

#include "cuda/common.cuh"
#include "cuda/kernel_util.cuh"
#include "cuda/ops.h"

namespace td::cuda {
namespace {

// 512 threads: a vocabulary row (V = 50304) is ~12 packs of 8 bf16 per thread; four blocks fit
// an SM, so one block's barriers do not idle it.
constexpr int kThreads = 512;

// (m, s) <- the running max and sum of exp(z - m) of both halves. An empty half has
// m = -inf, s = 0; two empty halves stay empty (avoids exp(-inf - -inf) = NaN).
__device__ __forceinline__ void online_merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}
__device__ __forceinline__ void online_add(float& m, float& s, float z) {
  if (z > m) {
    s = s * expf(m - z) + 1.0f;
    m = z;
  } else if (z != -INFINITY) {  // exp(-inf) adds 0; skipping it avoids -inf - -inf = NaN
    s += expf(z - m);
  }
}

// (m, s) <- the whole block's running max and sum, on every thread: warp shuffles, then one
// value per warp through shared memory (one __syncthreads). blockDim.x a multiple of 32, <= 1024.
__device__ __forceinline__ void block_online_reduce(float& m, float& s) {
  __shared__ float sh_m[32], sh_s[32];
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(kFullMask, m, o), s2 = __shfl_xor_sync(kFullMask, s, o);
    online_merge(m, s, m2, s2);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  if (lane == 0) {
    sh_m[warp] = m;
    sh_s[warp] = s;
  }
  __syncthreads();
  m = lane < nwarps ? sh_m[lane] : -INFINITY;
  s = lane < nwarps ? sh_s[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(kFullMask, m, o), s2 = __shfl_xor_sync(kFullMask, s, o);
    online_merge(m, s, m2, s2);
  }
}

// losses (N) = logsumexp(z) - z[target]; dlogits (N,V) = (softmax(z) - onehot) * grad_scale
// when non-null. kVec > 1: V % kVec == 0 and both row bases 16-byte aligned (packed loads).
// logits and dlogits are not __restrict__: they may be the same buffer; each element is read
// (pass 2) by the thread that then writes it, and z[target] is read before the barriers that
// precede any write.
template <class Act, int kVec>
__global__ void __launch_bounds__(kThreads)
    softmax_cross_entropy_kernel(float* __restrict__ losses, Act* dlogits, const Act* logits,
                                 const int32_t* __restrict__ targets, int V, float grad_scale) {
  const int row = blockIdx.x;
  const Act* z = logits + (size_t)row * V;
  const int y = targets[row];
  const bool y_ok = y >= 0 && y < V;  // the host validates targets; never read out of the row
  const float z_y = y_ok ? load_f(z[y]) : NAN;

  // Pass 1: this thread's (max, sum) over its elements, then the block's.
  float m = -INFINITY, s = 0.0f;
  if constexpr (kVec > 1) {
    for (int p = threadIdx.x; p < V / kVec; p += blockDim.x) {
      const Pack16<Act> x = load_pack(z + (size_t)p * kVec);
#pragma unroll
      for (int k = 0; k < kVec; k++) online_add(m, s, load_f(x.v[k]));
    }
  } else {
    for (int j = threadIdx.x; j < V; j += blockDim.x) online_add(m, s, load_f(z[j]));
  }
  block_online_reduce(m, s);
  const float logsum = logf(s) + m;  // the CPU's (float)log(sum) + max
  if (threadIdx.x == 0) losses[row] = logsum - z_y;
  if (dlogits == nullptr) return;

  // Pass 2. Every thread has passed the barrier above, so z[y] (read before it) is not yet
  // overwritten when dlogits aliases logits.
  Act* dz = dlogits + (size_t)row * V;
  if constexpr (kVec > 1) {
    for (int p = threadIdx.x; p < V / kVec; p += blockDim.x) {
      const int j0 = p * kVec;
      Pack16<Act> x = load_pack(z + j0);
#pragma unroll
      for (int k = 0; k < kVec; k++) {
        const float prob = expf(load_f(x.v[k]) - logsum);
        x.v[k] = store_as<Act>((prob - (j0 + k == y ? 1.0f : 0.0f)) * grad_scale);
      }
      store_pack(dz + j0, x);
    }
  } else {
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
      const float prob = expf(load_f(z[j]) - logsum);
      dz[j] = store_as<Act>((prob - (j == y ? 1.0f : 0.0f)) * grad_scale);
    }
  }
}

// The vocabulary-parallel stats (engine/ops/ops.h cross_entropy_shard_stats): one block per row,
// the same online max/sum as above over the shard's V columns (scalar loads: a shard's V need not
// be a multiple of the pack).
template <class Act>
__global__ void __launch_bounds__(kThreads)
    cross_entropy_shard_stats_kernel(float* __restrict__ lse, float* __restrict__ target_logit, const Act* __restrict__ logits,
                                     const int32_t* __restrict__ targets, int V, int v0) {
  const int row = blockIdx.x;
  const Act* z = logits + (size_t)row * V;
  float m = -INFINITY, s = 0.0f;
  for (int j = threadIdx.x; j < V; j += blockDim.x) online_add(m, s, load_f(z[j]));
  block_online_reduce(m, s);
  if (threadIdx.x == 0) {
    lse[row] = logf(s) + m;
    const int y = targets[row] - v0;
    target_logit[row] = y >= 0 && y < V ? load_f(z[y]) : 0.0f;
  }
}

// dlogits (N,V) = (exp(z - lse[row]) - onehot) * grad_scale, one thread per element; each element
// is read by the thread that writes it, so dlogits may alias logits.
template <class Act>
__global__ void cross_entropy_shard_backward_kernel(Act* dlogits, const Act* logits, const float* __restrict__ lse,
                                                    const int32_t* __restrict__ targets, size_t n, int V, int v0, float grad_scale) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const size_t row = i / V;
  const int j = (int)(i % V);
  const float prob = expf(load_f(logits[i]) - lse[row]);
  dlogits[i] = store_as<Act>((prob - (targets[row] == v0 + j ? 1.0f : 0.0f)) * grad_scale);
}

}  // namespace

template <class Act>
void softmax_cross_entropy(float* losses, Act* dlogits, const Act* logits, const int32_t* targets, int N, int V,
                           float grad_scale, cudaStream_t stream) {
  if (N <= 0) return;
  if (V <= 0) fail("softmax_cross_entropy: vocabulary size must be positive, got " + std::to_string(V));
  constexpr int kW = Pack16<Act>::kN;
  const bool vec = (size_t)V * sizeof(Act) % 16 == 0 && aligned16(logits) && (dlogits == nullptr || aligned16(dlogits));
  if (vec)
    softmax_cross_entropy_kernel<Act, kW><<<grid_for((size_t)N, 1, "softmax_cross_entropy"), kThreads, 0, stream>>>(losses, dlogits, logits, targets, V, grad_scale);
  else
    softmax_cross_entropy_kernel<Act, 1><<<grid_for((size_t)N, 1, "softmax_cross_entropy"), kThreads, 0, stream>>>(losses, dlogits, logits, targets, V, grad_scale);
  check_launch("softmax_cross_entropy_kernel");
}

template void softmax_cross_entropy<float>(float*, float*, const float*, const int32_t*, int, int, float, cudaStream_t);
template void softmax_cross_entropy<__nv_bfloat16>(float*, __nv_bfloat16*, const __nv_bfloat16*, const int32_t*, int,
                                                   int, float, cudaStream_t);

template <class Act>
void cross_entropy_shard_stats(float* lse, float* target_logit, const Act* logits, const int32_t* targets, int N, int V, int v0,
                               cudaStream_t stream) {
  if (N <= 0) return;
  if (V <= 0) fail("cross_entropy_shard_stats: the shard's vocabulary size must be positive, got " + std::to_string(V));
  cross_entropy_shard_stats_kernel<Act><<<grid_for((size_t)N, 1, "cross_entropy_shard_stats"), kThreads, 0, stream>>>(
      lse, target_logit, logits, targets, V, v0);
  check_launch("cross_entropy_shard_stats_kernel");
}

template <class Act>
void cross_entropy_shard_backward(Act* dlogits, const Act* logits, const float* lse, const int32_t* targets, int N, int V, int v0,
                                  float grad_scale, cudaStream_t stream) {
  const size_t n = (size_t)N * V;
  if (n == 0) return;
  constexpr int kT = 256;
  cross_entropy_shard_backward_kernel<Act><<<grid_for(n, kT, "cross_entropy_shard_backward"), kT, 0, stream>>>(
      dlogits, logits, lse, targets, n, V, v0, grad_scale);
  check_launch("cross_entropy_shard_backward_kernel");
}

template void cross_entropy_shard_stats<float>(float*, float*, const float*, const int32_t*, int, int, int, cudaStream_t);
template void cross_entropy_shard_stats<__nv_bfloat16>(float*, float*, const __nv_bfloat16*, const int32_t*, int, int, int, cudaStream_t);
template void cross_entropy_shard_backward<float>(float*, const float*, const float*, const int32_t*, int, int, int, float, cudaStream_t);
template void cross_entropy_shard_backward<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, const float*, const int32_t*, int, int,
                                                          int, float, cudaStream_t);

}  // namespace td::cuda
