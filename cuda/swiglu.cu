// SwiGLU: out = silu(gate) * up over rows [gate | up] of a fused gate/up projection, and its
// backward (Shazeer 2020, "GLU Variants Improve Transformer"; transformers' LlamaMLP), as
// td::cpu::swiglu_forward / swiglu_backward. Element-wise, one thread per output element; expf
// (not __expf): the parity test compares with libm's exp.
#include "cuda/common.cuh"
#include "cuda/kernel_util.cuh"
#include "cuda/ops.h"

namespace td::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

// out (N,F) = silu(inp[:, :F]) * inp[:, F:], inp (N,2F).
template <class Act>
__global__ void swiglu_forward_kernel(Act* __restrict__ out, const Act* __restrict__ inp, size_t NF, int F) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= NF) return;
  const size_t row = i / F, j = i % F;
  const float g = load_f(inp[row * 2 * F + j]), u = load_f(inp[row * 2 * F + F + j]);
  out[i] = store_as<Act>(g * sigmoid(g) * u);
}

// dinp (N,2F) += [dout * up * silu'(gate) | dout * silu(gate)], silu'(g) = s (1 + g (1 - s)).
template <class Act>
__global__ void swiglu_backward_kernel(Act* __restrict__ dinp, const Act* __restrict__ inp,
                                       const Act* __restrict__ dout, size_t NF, int F) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= NF) return;
  const size_t row = i / F, j = i % F;
  const size_t ig = row * 2 * F + j, iu = ig + F;
  const float g = load_f(inp[ig]), u = load_f(inp[iu]), dy = load_f(dout[i]);
  const float s = sigmoid(g);
  dinp[ig] = store_as<Act>(load_f(dinp[ig]) + dy * u * s * (1.0f + g * (1.0f - s)));
  dinp[iu] = store_as<Act>(load_f(dinp[iu]) + dy * g * s);
}

}  // namespace

template <class Act>
void swiglu_forward(Act* out, const Act* inp, int N, int F, cudaStream_t stream) {
  if (N <= 0 || F <= 0) return;
  const size_t NF = (size_t)N * F;
  swiglu_forward_kernel<Act><<<grid_for(NF, kThreads, "swiglu_forward"), kThreads, 0, stream>>>(out, inp, NF, F);
  check_launch("swiglu_forward_kernel");
}

template <class Act>
void swiglu_backward(Act* dinp, const Act* inp, const Act* dout, int N, int F, cudaStream_t stream) {
  if (N <= 0 || F <= 0) return;
  const size_t NF = (size_t)N * F;
  swiglu_backward_kernel<Act><<<grid_for(NF, kThreads, "swiglu_backward"), kThreads, 0, stream>>>(dinp, inp, dout,
                                                                                                   NF, F);
  check_launch("swiglu_backward_kernel");
}

template void swiglu_forward<float>(float*, const float*, int, int, cudaStream_t);
template void swiglu_forward<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, int, int, cudaStream_t);
template void swiglu_backward<float>(float*, const float*, const float*, int, int, cudaStream_t);
template void swiglu_backward<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, int, int,
                                             cudaStream_t);

}  // namespace td::cuda
