// Shared pieces of the CUDA kernels: error checks that throw td::Error, and loads/stores that
// convert between the storage type (float or __nv_bfloat16) and fp32 arithmetic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>

#include "cuda/launch.h"  // grid_for, grid_yz, ceil_div
#include "engine/common/error.h"
#include "engine/ops/dtype.h"

namespace td::cuda {

/// The device type of a host element type: float -> float, td::bf16 -> __nv_bfloat16 (same
/// size and bits, engine/ops/dtype.h).
template <class T> struct DeviceType { using type = T; };
template <> struct DeviceType<bf16> { using type = __nv_bfloat16; };
template <class T> using dev_t = typename DeviceType<T>::type;
template <class T> inline dev_t<T>* dev(T* p) { return reinterpret_cast<dev_t<T>*>(p); }
template <class T> inline const dev_t<T>* dev(const T* p) { return reinterpret_cast<const dev_t<T>*>(p); }

__device__ __forceinline__ float load_f(float x) { return x; }
__device__ __forceinline__ float load_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T> __device__ __forceinline__ T store_as(float x);
template <> __device__ __forceinline__ float store_as<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 store_as<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

/// Throws td::Error "<what>: <cuda error string>" when err is not cudaSuccess.
void check(cudaError_t err, const char* what);
/// Checks the last kernel launch (cudaGetLastError).
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

}  // namespace td::cuda

#define TD_CUDA_CHECK(call) ::td::cuda::check((call), #call)
