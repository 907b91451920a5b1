// Rotary position embedding (Su et al. 2021) in the rotate_half convention of transformers'
// LlamaModel, in place on the q and k heads of a fused qkv (B,T,(NH+2NKV)hs); backward is the
// inverse rotation. As td::cpu::rope_forward / rope_backward. One thread per (b, t, i) pair
// index i < hs/2, looping over the NH + NKV heads, so each angle is computed once. The angle
// t theta^(-2i/hs) and its sine and cosine are computed in double, as the CPU reference does
// (in fp32 the angle of position 8192 would be off by ~5e-4 rad).
#include "cuda/common.cuh"
#include "cuda/kernel_util.cuh"
#include "cuda/ops.h"

namespace td::cuda {
namespace {

constexpr int kThreads = 256;

// sign = +1: forward rotation; -1: its inverse.
template <class Act>
__global__ void rope_kernel(Act* __restrict__ x, int B, int T, int NH, int NKV, int hs, double theta, int sign) {
  const int half = hs / 2;
  const size_t n = (size_t)B * T * half;
  const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  const int i = (int)(idx % half);
  const size_t bt = idx / half;
  const int t = (int)(bt % T);
  const double a = (double)t * pow(theta, -2.0 * i / hs);
  double sd, cd;
  sincos(a, &sd, &cd);
  const float c = (float)cd, s = (float)(sign * sd);
  Act* row = x + bt * (size_t)(NH + 2 * NKV) * hs;
  for (int h = 0; h < NH + NKV; h++) {
    Act* v = row + (size_t)h * hs;
    const float x1 = load_f(v[i]), x2 = load_f(v[i + half]);
    v[i] = store_as<Act>(x1 * c - x2 * s);
    v[i + half] = store_as<Act>(x2 * c + x1 * s);
  }
}

template <class Act>
void rope(Act* x, int B, int T, int NH, int NKV, int hs, float theta, int sign, cudaStream_t stream) {
  if (B <= 0 || T <= 0 || hs <= 0) return;
  TD_ASSERT(hs % 2 == 0 && NH > 0 && NKV > 0);
  const size_t n = (size_t)B * T * (hs / 2);
  rope_kernel<Act><<<grid_for(n, kThreads, "rope"), kThreads, 0, stream>>>(x, B, T, NH, NKV, hs, (double)theta, sign);
  check_launch("rope_kernel");
}

}  // namespace

template <class Act>
void rope_forward(Act* qkv, int B, int T, int NH, int NKV, int hs, float theta, cudaStream_t stream) {
  rope(qkv, B, T, NH, NKV, hs, theta, +1, stream);
}

template <class Act>
void rope_backward(Act* dqkv, int B, int T, int NH, int NKV, int hs, float theta, cudaStream_t stream) {
  rope(dqkv, B, T, NH, NKV, hs, theta, -1, stream);
}

template void rope_forward<float>(float*, int, int, int, int, int, float, cudaStream_t);
template void rope_forward<__nv_bfloat16>(__nv_bfloat16*, int, int, int, int, int, float, cudaStream_t);
template void rope_backward<float>(float*, int, int, int, int, int, float, cudaStream_t);
template void rope_backward<__nv_bfloat16>(__nv_bfloat16*, int, int, int, int, int, float, cudaStream_t);

}  // namespace td::cuda
