// Residual connection: out (N) = a + b (td::cpu::residual_forward), fp32 add, one rounding to Act.
// Element-wise; 16-byte loads when every pointer is 16-byte aligned.
#include "cuda/common.cuh"
#include "cuda/kernel_util.cuh"
#include "cuda/ops.h"

namespace td::cuda {
namespace {

constexpr int kThreads = 256;

// One thread per kVec elements; out may alias a or b (each element is read before written).
template <class Act, int kVec>
__global__ void residual_forward_kernel(Act* out, const Act* a, const Act* b, size_t N) {
  const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * kVec;
  if (i >= N) return;
  if (kVec > 1 && i + kVec <= N) {
    Pack16<Act> x = load_pack(a + i), y = load_pack(b + i), o;
#pragma unroll
    for (int k = 0; k < Pack16<Act>::kN; k++) o.v[k] = store_as<Act>(load_f(x.v[k]) + load_f(y.v[k]));
    store_pack(out + i, o);
  } else {
    for (size_t j = i; j < N && j < i + kVec; j++) out[j] = store_as<Act>(load_f(a[j]) + load_f(b[j]));
  }
}

}  // namespace

template <class Act>
void residual_forward(Act* out, const Act* a, const Act* b, size_t N, cudaStream_t stream) {
  if (N == 0) return;
  constexpr int kW = Pack16<Act>::kN;
  if (aligned16(out) && aligned16(a) && aligned16(b))
    residual_forward_kernel<Act, kW><<<grid_for(N, (size_t)kThreads * kW, "residual_forward"), kThreads, 0, stream>>>(
        out, a, b, N);
  else
    residual_forward_kernel<Act, 1><<<grid_for(N, kThreads, "residual_forward"), kThreads, 0, stream>>>(out, a, b, N);
  check_launch("residual_forward_kernel");
}

template void residual_forward<float>(float*, const float*, const float*, size_t, cudaStream_t);
template void residual_forward<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, size_t,
                                              cudaStream_t);

}  // namespace td::cuda
