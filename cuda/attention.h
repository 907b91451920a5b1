// Causal multi-head self-attention on the GPU (attention_forward / attention_backward of
// engine/ops/ops.h): q, k, v are permuted out of qkv into per-head contiguous (B,NH,T,hs)
// buffers, the scores and the weighted sums are strided batched cuBLAS GEMMs (one batch entry
// per (b, h)), and the causal softmax and its backward are warp-per-row kernels. Not fused
// (no flash attention): the (B,NH,T,T) scores live in scratch, processed a few batch rows at a
// time so that scratch stays under kAttentionScratchBudget.
//
// Precision: every GEMM accumulates in fp32 (CUBLAS_COMPUTE_32F, no TF32); scores and their
// gradients are fp32; att and the probabilities' gradient fed back to the GEMMs are Act;
// dq, dk, dv are fp32 and added to dqkv with one rounding.
// Source: Vaswani et al. 2017, eq. 1, causal mask of GPT-2; the CPU reference
// td::cpu::attention_forward / attention_backward (engine/ops/cpu_ops.cpp).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace td::cuda {

/// Upper bound (bytes) that the batch-chunking aims for; one batch row may need more.
constexpr size_t kAttentionScratchBudget = size_t(256) << 20;

/// Scratch bytes attention_forward (backward = false) or attention_backward (backward = true)
/// needs for these shapes and an Act of act_bytes (4 = float, 2 = bf16).
size_t attention_scratch_bytes(int B, int T, int C, int NH, size_t act_bytes, bool backward);

/// out (B,T,C) = softmax_causal(q k^T / sqrt(hs)) v per head; att (B,NH,T,T) = the
/// probabilities, zero above the diagonal. qkv (B,T,C+2 NKV hs): q | k | v with NKV k/v heads,
/// each shared by NH / NKV query heads (grouped-query attention; NKV = NH: qkv (B,T,3C)). k and
/// v are expanded to NH heads in scratch (transformers' repeat_kv), so the GEMMs are those of
/// multi-head attention. blas is bound to `stream`; scratch holds attention_scratch_bytes(...,
/// false) bytes. Act = float or __nv_bfloat16.
template <class Act>
void attention_forward(cublasHandle_t blas, Act* out, Act* att, const Act* qkv, int B, int T,
                       int C, int NH, int NKV, void* scratch, size_t scratch_bytes, cudaStream_t stream);

/// dqkv (B,T,C+2 NKV hs) += gradient of attention_forward given dout (B,T,C), qkv and the saved
/// att; a k/v head's dk and dv are summed over its group of query heads in a fixed order.
/// scratch holds attention_scratch_bytes(..., true) bytes.
template <class Act>
void attention_backward(cublasHandle_t blas, Act* dqkv, const Act* dout, const Act* qkv,
                        const Act* att, int B, int T, int C, int NH, int NKV, void* scratch,
                        size_t scratch_bytes, cudaStream_t stream);

/// Fused attention (FlashAttention-2; cuda/flash_attention.cu, the ActivationOps
/// flash_attention_forward of engine/ops/ops.h): out (B,T,C) as attention_forward's, lse
/// (B,NH,T) fp32 the rows' log-sum-exp of the scaled scores. Needs no scratch. Throws td::Error
/// when the head size's tiles do not fit the GPU's shared memory (flash_attention_plan).
template <class Act>
void flash_attention_forward(Act* out, float* lse, const Act* qkv, int B, int T, int C, int NH, int NKV,
                             cudaStream_t stream);

/// Scratch bytes flash_attention_backward needs: D (B,NH,T) fp32.
size_t flash_attention_scratch_bytes(int B, int T, int NH);

/// dqkv (B,T,C+2 NKV hs) += gradient of flash_attention_forward given dout (B,T,C), qkv, its out
/// and lse; scratch holds flash_attention_scratch_bytes(B, T, NH) bytes. Deterministic (no
/// atomics): dq in one kernel, dk and dv (summed over the query heads of a group in order) in
/// another.
template <class Act>
void flash_attention_backward(Act* dqkv, const Act* dout, const Act* qkv, const Act* out, const float* lse, int B,
                              int T, int C, int NH, int NKV, void* scratch, size_t scratch_bytes, cudaStream_t stream);

}  // namespace td::cuda
