// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) and its derivative
// (Hendrycks & Gimpel 2016; torch.nn.functional.gelu(approximate="tanh")), as td::cpu::gelu_forward
// / gelu_backward. Element-wise; 16-byte loads when every pointer is 16-byte aligned.
#include "cuda/common.cuh"
#include "cuda/kernel_util.cuh"
#include "cuda/ops.h"

namespace td::cuda {
namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi), the CPU's constant
constexpr float kGeluCube = 0.044715f;
constexpr int kThreads = 256;

__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(kGeluScale * (x + kGeluCube * x * x * x)));
}
// d gelu(x) / dx = 0.5 (1 + th) + 0.5 x (1 - th^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
__device__ __forceinline__ float gelu_grad(float x) {
  const float th = tanhf(kGeluScale * (x + kGeluCube * x * x * x));
  const float du = kGeluScale * (1.0f + 3.0f * kGeluCube * x * x);
  return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
}

// One thread per kVec elements (kVec = 1 or a 16-byte pack); the last pack of an N that is not a
// multiple of kVec is done element by element.
template <class Act, int kVec>
__global__ void gelu_forward_kernel(Act* out, const Act* inp, size_t N) {
  const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * kVec;
  if (i >= N) return;
  if (kVec > 1 && i + kVec <= N) {
    Pack16<Act> x = load_pack(inp + i), o;
#pragma unroll
    for (int k = 0; k < Pack16<Act>::kN; k++) o.v[k] = store_as<Act>(gelu(load_f(x.v[k])));
    store_pack(out + i, o);
  } else {
    for (size_t j = i; j < N && j < i + kVec; j++) out[j] = store_as<Act>(gelu(load_f(inp[j])));
  }
}

// dinp += gelu'(inp) * dout (kAccumulate) or dinp = gelu'(inp) * dout (dinp not read). dinp may
// alias dout (each element is read before it is written).
template <class Act, int kVec, bool kAccumulate>
__global__ void gelu_backward_kernel(Act* dinp, const Act* inp, const Act* dout, size_t N) {
  const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * kVec;
  if (i >= N) return;
  if (kVec > 1 && i + kVec <= N) {
    Pack16<Act> x = load_pack(inp + i), dy = load_pack(dout + i), dx;
    if (kAccumulate) dx = load_pack(dinp + i);
#pragma unroll
    for (int k = 0; k < Pack16<Act>::kN; k++)
      dx.v[k] = store_as<Act>((kAccumulate ? load_f(dx.v[k]) : 0.0f) + gelu_grad(load_f(x.v[k])) * load_f(dy.v[k]));
    store_pack(dinp + i, dx);
  } else {
    for (size_t j = i; j < N && j < i + kVec; j++)
      dinp[j] = store_as<Act>((kAccumulate ? load_f(dinp[j]) : 0.0f) + gelu_grad(load_f(inp[j])) * load_f(dout[j]));
  }
}

}  // namespace

template <class Act>
void gelu_forward(Act* out, const Act* inp, size_t N, cudaStream_t stream) {
  if (N == 0) return;
  constexpr int kW = Pack16<Act>::kN;
  if (aligned16(out) && aligned16(inp))
    gelu_forward_kernel<Act, kW><<<grid_for(N, (size_t)kThreads * kW, "gelu_forward"), kThreads, 0, stream>>>(out, inp, N);
  else
    gelu_forward_kernel<Act, 1><<<grid_for(N, kThreads, "gelu_forward"), kThreads, 0, stream>>>(out, inp, N);
  check_launch("gelu_forward_kernel");
}

template <class Act, bool kAccumulate>
static void launch_gelu_backward(Act* dinp, const Act* inp, const Act* dout, size_t N, cudaStream_t stream) {
  constexpr int kW = Pack16<Act>::kN;
  if (aligned16(dinp) && aligned16(inp) && aligned16(dout))
    gelu_backward_kernel<Act, kW, kAccumulate><<<grid_for(N, (size_t)kThreads * kW, "gelu_backward"), kThreads, 0,
                                                 stream>>>(dinp, inp, dout, N);
  else
    gelu_backward_kernel<Act, 1, kAccumulate><<<grid_for(N, kThreads, "gelu_backward"), kThreads, 0, stream>>>(
        dinp, inp, dout, N);
  check_launch("gelu_backward_kernel");
}

template <class Act>
void gelu_backward(Act* dinp, const Act* inp, const Act* dout, size_t N, cudaStream_t stream, bool overwrite) {
  if (N == 0) return;
  if (overwrite) launch_gelu_backward<Act, false>(dinp, inp, dout, N, stream);
  else launch_gelu_backward<Act, true>(dinp, inp, dout, N, stream);
}

template void gelu_forward<float>(float*, const float*, size_t, cudaStream_t);
template void gelu_forward<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, size_t, cudaStream_t);
template void gelu_backward<float>(float*, const float*, const float*, size_t, cudaStream_t, bool);
template void gelu_backward<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, size_t,
                                           cudaStream_t, bool);

}  // namespace td::cuda
