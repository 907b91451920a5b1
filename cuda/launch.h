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

/// Most 16-byte packs a lane holds on the packed row kernels (row_packs_per_lane).
constexpr int kMaxRowPacks = 8;

/// Packs a lane of a warp holds when the warp keeps one row of C elements in registers as
/// 16-byte packs of pack_elems elements (8 bf16, 4 fp32): lane l takes packs l, l + 32, ..., so
/// ceil(C / (32 pack_elems)). 0, meaning "use the scalar kernel", when C is not a multiple of
/// pack_elems (a pack would straddle two rows) or the row needs more than kMaxRowPacks a lane
/// (registers). Used by layernorm.cu and rmsnorm.cu; the caller also checks that every
/// pointer is 16-byte aligned (row_packs in kernel_util.cuh).
inline int row_packs_per_lane(int C, int pack_elems) {
  if (C <= 0 || pack_elems <= 0 || C % pack_elems != 0) return 0;
  const size_t packs = ceil_div((size_t)C, (size_t)32 * pack_elems);
  return packs <= (size_t)kMaxRowPacks ? (int)packs : 0;
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

/// Whether cuBLASLt's GELU epilogues (CUBLASLT_EPILOGUE_GELU_AUX(_BIAS) writing the GELU input,
/// CUBLASLT_EPILOGUE_DGELU reading it) may take `aux` with leading dimension ld (elements): the
/// header requires ld divisible by 8, and aux is read and written with 16-byte accesses like the
/// bias. Otherwise the caller runs the GEMM and the GELU kernel separately. Source: cublasLt.h,
/// CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD.
inline bool lt_gelu_aux_ok(const void* aux, int64_t ld) {
  return aux != nullptr && ld > 0 && ld % 8 == 0 && reinterpret_cast<uintptr_t>(aux) % 16 == 0;
}

/// Shared-memory layout of one block of the fused attention kernels (cuda/flash_attention.cu),
/// computed on the host and passed to the kernel by value. A block holds tiles of br query rows
/// and bc key rows of hs channels: Act tiles (q, k, v, dout) with row stride ld_act, fp32
/// score-sized tiles (s, dp) with stride ld_s, their Act copies fed to the tensor cores (p, ds)
/// with stride ld_p, fp32 (rows, hs) accumulators (acc0, acc1) with stride ld_acc, and per-row
/// fp32 vectors (row0, row1: m and l forward, lse and D backward). Strides are padded by 16
/// bytes (fewer shared-memory bank conflicts; WMMA needs a multiple of 16 bytes), every buffer
/// starts at a multiple of 128 bytes (WMMA needs 32), and a buffer a kernel does not use has
/// size 0. Offsets are bytes from the start of dynamic shared memory.
enum class FlashKernel { kForward, kBackwardDq, kBackwardDkv };
struct FlashLayout {
  int br = 0, bc = 0, hs = 0;
  int ld_act = 0, ld_s = 0, ld_p = 0, ld_acc = 0;
  size_t q = 0, k = 0, v = 0, dout = 0, s = 0, dp = 0, p = 0, ds = 0, acc0 = 0, acc1 = 0, row0 = 0, row1 = 0;
  size_t bytes = 0;  // the block's dynamic shared memory
};

/// The layout of `kernel` for square tiles of `tile` rows (br = bc = tile), head size hs and an
/// activation type of act_bytes (4 = float, 2 = bf16).
inline FlashLayout flash_layout(FlashKernel kernel, int tile, int hs, size_t act_bytes) {
  FlashLayout L;
  L.br = L.bc = tile;
  L.hs = hs;
  const int pad_act = (int)(16 / act_bytes);
  L.ld_act = hs + pad_act;
  L.ld_acc = hs + 4;
  L.ld_s = tile + 4;
  L.ld_p = tile + pad_act;
  size_t off = 0;
  auto take = [&off](size_t bytes) {
    const size_t o = off;
    off += (bytes + 127) / 128 * 128;
    return o;
  };
  const size_t act_tile = (size_t)tile * L.ld_act * act_bytes, f_tile = (size_t)tile * L.ld_s * 4,
               p_tile = (size_t)tile * L.ld_p * act_bytes, acc = (size_t)tile * L.ld_acc * 4, row = (size_t)tile * 4;
  L.q = take(act_tile);
  L.k = take(act_tile);
  L.v = take(act_tile);
  if (kernel != FlashKernel::kForward) L.dout = take(act_tile);
  L.s = take(f_tile);
  if (kernel != FlashKernel::kForward) L.dp = take(f_tile);
  if (kernel != FlashKernel::kBackwardDq) L.p = take(p_tile);
  if (kernel != FlashKernel::kForward) L.ds = take(p_tile);
  L.acc0 = take(acc);
  if (kernel == FlashKernel::kBackwardDkv) L.acc1 = take(acc);
  L.row0 = take(row);
  L.row1 = take(row);
  L.bytes = off;
  return L;
}

/// Whether the fused attention kernels multiply their tiles on tensor cores (WMMA 16x16x16,
/// bf16 in, fp32 accumulate): bf16 activations and hs a multiple of 16. Otherwise (fp32, whose
/// only tensor-core type is TF32, too coarse for the fp32 parity tolerance; or an odd head size)
/// the same kernels multiply with fp32 FMAs.
inline bool flash_uses_tensor_cores(int hs, size_t act_bytes) { return act_bytes == 2 && hs > 0 && hs % 16 == 0; }

/// The layout a fused attention kernel launches with: the largest tile of 64, 32 and 16 rows
/// whose layout fits max_smem bytes (cudaDevAttrMaxSharedMemoryPerBlockOptin). Throws td::Error
/// when not even 16 fits (a head size too large for this GPU's shared memory), saying to use
/// train.attention = "simple".
inline FlashLayout flash_attention_plan(FlashKernel kernel, int hs, size_t act_bytes, size_t max_smem) {
  if (hs <= 0) fail("fused attention: head size " + std::to_string(hs) + " (a bug in the caller)");
  for (int tile : {64, 32, 16}) {
    FlashLayout L = flash_layout(kernel, tile, hs, act_bytes);
    if (L.bytes <= max_smem) return L;
  }
  fail("fused attention: a head size of " + std::to_string(hs) + " needs " +
       std::to_string(flash_layout(kernel, 16, hs, act_bytes).bytes) + " bytes of shared memory per block, and this GPU allows " +
       std::to_string(max_smem) + "; set train.attention = \"simple\"");
}

}  // namespace td::cuda
