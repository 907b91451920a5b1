// Device helpers shared by the element-wise and reduction kernels (encoder, layernorm, gelu,
// residual, softmax_cross_entropy, optimizer): 128-bit packs, fixed-order warp and block
// reductions (deterministic: the same inputs and launch shape give the same bits), and the
// grid size of a one-thread-per-item launch (grid_for, cuda/launch.h).
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <initializer_list>
#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda/common.cuh"

namespace td::cuda {

/// 16 bytes of T (4 floats or 8 bf16), loaded and stored with one 128-bit access. Only for
/// addresses that are multiples of 16 (check with aligned16).
template <class T>
struct alignas(16) Pack16 {
  static constexpr int kN = 16 / (int)sizeof(T);
  T v[kN];
};
template <class T> __device__ __forceinline__ Pack16<T> load_pack(const T* p) {
  return *reinterpret_cast<const Pack16<T>*>(p);
}
template <class T> __device__ __forceinline__ void store_pack(T* p, const Pack16<T>& x) {
  *reinterpret_cast<Pack16<T>*>(p) = x;
}
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

/// Packs a lane for a warp-per-row kernel over rows of C elements of T (row_packs_per_lane,
/// cuda/launch.h), or 0 when any pointer is not 16-byte aligned: the scalar kernel then.
template <class T> int row_packs(int C, std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (!aligned16(p)) return 0;
  return row_packs_per_lane(C, Pack16<T>::kN);
}

/// f.template operator()<K>() with K = packs (1..kMaxRowPacks): runs the packed kernel's
/// instantiation for a row_packs result, e.g. with_row_packs(p, [&]<int K>() { kernel<Act, K><<<...>>>(...); }).
template <class F> void with_row_packs(int packs, F&& f) {
  static_assert(kMaxRowPacks == 8, "with_row_packs lists 1..8");
  switch (packs) {
    case 1: f.template operator()<1>(); break;
    case 2: f.template operator()<2>(); break;
    case 3: f.template operator()<3>(); break;
    case 4: f.template operator()<4>(); break;
    case 5: f.template operator()<5>(); break;
    case 6: f.template operator()<6>(); break;
    case 7: f.template operator()<7>(); break;
    case 8: f.template operator()<8>(); break;
    default: fail("with_row_packs: " + std::to_string(packs) + " packs a lane (a bug in the launcher)");
  }
}

constexpr unsigned kFullMask = 0xffffffffu;

/// Sum / max over the 32 lanes of a warp (butterfly: every lane gets the result; fixed order).
__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(kFullMask, x, o);
  return x;
}

/// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the
/// result. `shared` holds 32 floats. Contains __syncthreads: call from all threads.
__device__ __forceinline__ float block_sum(float x, float* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  x = warp_sum(x);
  __syncthreads();  // shared may still be read by a previous call
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  x = lane < nwarps ? shared[lane] : 0.0f;
  return warp_sum(x);
}

}  // namespace td::cuda
