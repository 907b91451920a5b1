// The fp32 optimizer ops: AdamW (td::cpu::adamw), the partial sums of the gradient norm, scaling,
// and the bf16 copy of the master weights (Backend::convert).
#include <algorithm>
#include <cmath>

#include "cuda/common.cuh"
#include "cuda/kernel_util.cuh"
#include "cuda/ops.h"
#include "engine/ops/ops.h"

namespace td::cuda {
namespace {

constexpr int kThreads = 256;

// Up to kAdamWSpansPerLaunch spans of one launch, passed by value (kernel parameters: 2.6 KB of
// the 4 KB limit): span k is elements [begin[k], end[k]) with weight decay wd[k]; sorted, disjoint.
struct SpanTable {
  unsigned long long begin[kAdamWSpansPerLaunch];
  unsigned long long end[kAdamWSpansPerLaunch];
  float wd[kAdamWSpansPerLaunch];
  int count;
};

// AdamW, one thread per parameter: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr (m / bc1 / (sqrt(v / bc2) + eps) + wd p), bc = 1 - beta^t (bias corrections).
// Source: Loshchilov & Hutter 2019, Algorithm 2 (torch.optim.AdamW). Thread i updates element
// begin[0] + i; its span is found by binary search over the table (7 steps for 128 spans; the
// threads of a warp take the same path except at a span boundary); an element between spans
// is left alone.
__global__ void adamw_kernel(float* __restrict__ params, const float* __restrict__ grads, float* __restrict__ m,
                             float* __restrict__ v, const SpanTable spans, float lr, float beta1, float beta2,
                             float eps, float bc1, float bc2) {
  const unsigned long long i = spans.begin[0] + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  int lo = 0, hi = spans.count - 1;  // the last span with begin <= i
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (spans.begin[mid] <= i) lo = mid;
    else hi = mid - 1;
  }
  if (i >= spans.end[lo]) return;
  const float weight_decay = spans.wd[lo];
  const float g = grads[i];
  const float mi = beta1 * m[i] + (1.0f - beta1) * g;
  const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  const float mhat = mi / bc1, vhat = vi / bc2;
  const float p = params[i];
  params[i] = p - lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * p);
}

// partials[block] = sum of g^2 over the elements i = block*256 + thread + k * (grid*256):
// fixed grid and block sizes and fixed reduction trees, so the same g gives the same bits.
__global__ void grad_norm_partials_kernel(float* __restrict__ partials, const float* __restrict__ g, size_t n) {
  __shared__ float shared[32];
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  float acc = 0.0f;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc += g[i] * g[i];
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void scale_kernel(float* x, float s, size_t n) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

// dst = bf16(src), round to nearest even (NaN stays NaN; CUDA writes the canonical NaN).
__global__ void convert_to_bf16_kernel(__nv_bfloat16* __restrict__ dst, const float* __restrict__ src, size_t n) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = __float2bfloat16_rn(src[i]);
}

}  // namespace

void adamw(float* params, const float* grads, float* m, float* v, const AdamWSpan* spans, size_t n_spans, float lr,
           float beta1, float beta2, float eps, float weight_decay, int t, cudaStream_t stream) {
  // The CPU reference's bias corrections, computed the same way (float pow) on the host.
  const float bc1 = 1.0f - std::pow(beta1, (float)t);
  const float bc2 = 1.0f - std::pow(beta2, (float)t);
  SpanTable table;
  table.count = 0;
  auto launch = [&] {
    if (table.count == 0) return;
    const size_t n = table.end[table.count - 1] - table.begin[0];
    adamw_kernel<<<grid_for(n, kThreads, "adamw"), kThreads, 0, stream>>>(params, grads, m, v, table, lr, beta1, beta2,
                                                                          eps, bc1, bc2);
    check_launch("adamw_kernel");
    table.count = 0;
  };
  size_t prev_end = 0;
  for (size_t k = 0; k < n_spans; k++) {
    const AdamWSpan& s = spans[k];
    if (s.offset < prev_end) fail("adamw: spans overlap or are out of order (a bug in the caller)");
    prev_end = s.offset + s.numel;
    if (s.numel == 0) continue;
    table.begin[table.count] = s.offset;
    table.end[table.count] = s.offset + s.numel;
    table.wd[table.count] = s.decay ? weight_decay : 0.0f;
    if (++table.count == kAdamWSpansPerLaunch) launch();
  }
  launch();
}

// One block per 2048 elements, at most 1024 blocks (enough to fill an H200), at least one.
size_t grad_norm_partials_count(size_t n) {
  return std::clamp<size_t>((n + 2047) / 2048, 1, 1024);
}

void grad_norm_partials(float* partials, const float* g, size_t n, cudaStream_t stream) {
  // Launched even for n = 0: the caller reads grad_norm_partials_count(n) partials.
  grad_norm_partials_kernel<<<grid_for(grad_norm_partials_count(n), 1, "grad_norm_partials"), kThreads, 0, stream>>>(partials, g, n);
  check_launch("grad_norm_partials_kernel");
}

void scale(float* x, float s, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  scale_kernel<<<grid_for(n, kThreads, "scale"), kThreads, 0, stream>>>(x, s, n);
  check_launch("scale_kernel");
}

void convert_to_bf16(__nv_bfloat16* dst, const float* src, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  convert_to_bf16_kernel<<<grid_for(n, kThreads, "convert_to_bf16"), kThreads, 0, stream>>>(dst, src, n);
  check_launch("convert_to_bf16_kernel");
}

}  // namespace td::cuda
