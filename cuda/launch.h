// Host-side decisions of the CUDA backend that need no GPU: the checked grid sizes every kernel
// launch in cuda/*.cu uses, and when cuBLASLt's bias epilogue may be used. Plain C++ (no CUDA
// header), so the CPU test tests/engine/test_cuda_launch.cpp checks them on machines without a
// GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/common/error.h"

namespace td::cuda {

/// CUDA's grid limits (CUDA C Programming Guide, "Compute Capabilities", table "Technical
/// Specifications"): gridDim.x up to 2^31 - 1, gridDim.y and gridDim.z up to 65535.
constexpr size_t kMaxGridX = 2147483647u;
constexpr size_t kMaxGridYZ = 65535u;

/// ceil(a / b) in size_t, for sizes and counts (never a launch dimension: use grid_for).
inline size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/// gridDim.x for n items at per_block items per block: ceil(n / per_block), at least 1 (a
/// launch for n = 0 is legal and does nothing). Throws td::Error naming `kernel` when per_block
/// is 0 or the grid would pass 2^31 - 1 blocks (the caller must split the tensor).
inline unsigned grid_for(size_t n, size_t per_block, const char* kernel) {
  if (per_block == 0) fail(std::string(kernel) + ": grid_for with 0 items per block (a bug in the launcher)");
  const size_t g = n == 0 ? 1 : ceil_div(n, per_block);
  if (g > kMaxGridX)
    fail(std::string(kernel) + ": " + std::to_string(n) + " items need " + std::to_string(g) +
         " blocks, past CUDA's grid limit of 2^31 - 1; split the tensor (a smaller train.micro_batch)");
  return (unsigned)g;
}

/// gridDim.y or gridDim.z of `blocks` blocks, checked against CUDA's 65535. Throws td::Error
/// naming `kernel` past it, or for 0 blocks.
inline unsigned grid_yz(size_t blocks, const char* kernel) {
  if (blocks == 0 || blocks > kMaxGridYZ)
    fail(std::string(kernel) + ": " + std::to_string(blocks) +
         " blocks in grid dimension y/z; CUDA allows 1 to 65535 (a bug in the launcher's chunking)");
  return (unsigned)blocks;
}

/// Whether cuBLASLt's bias epilogue (CUBLASLT_EPILOGUE_BIAS; likewise BGRADA/BGRADB) may read
/// `bias`: its kernels load the bias vector with 16-byte accesses, and cuBLASLt has no
/// preference attribute telling the heuristic the bias's alignment, so an unaligned bias (a
/// bias at an odd offset in the single parameter buffer: d_model or d_ff not a multiple of 8 in
/// bf16, 4 in fp32) can fault with a misaligned address and kill the CUDA context. True only
/// for a non-null bias whose address is a multiple of 16 bytes and whose element is 2 or 4
/// bytes (bf16, fp32); otherwise the caller adds the bias itself (Matmul::forward: rows filled
/// with the bias, then the GEMM with beta = 1). Source: cuBLAS documentation, "cublasLtMatmul",
/// the alignment requirements of the epilogue's auxiliary pointers (16 bytes).
inline bool lt_bias_epilogue_ok(const void* bias, size_t elem_bytes) {
  if (bias == nullptr || (elem_bytes != 2 && elem_bytes != 4)) return false;
  return reinterpret_cast<uintptr_t>(bias) % 16 == 0;
}

}  // namespace td::cuda
