// CPU reference: causal self-attention computed tile by tile with an online softmax
// (FlashAttention-2: Dao 2023, arXiv:2307.08691, Algorithm 1 forward, Algorithm 2 backward),
// with grouped-query attention. The same function as attention_forward / attention_backward
// (engine/ops/reference/attention.h), but it saves the rows' log-sum-exp (B,NH,T) for backward
// instead of the (B,NH,T,T) probabilities, and never holds more than one (Br,Bc) tile of scores
// per thread. Key tiles wholly above the diagonal are skipped.
// Shapes, accumulation (+=) and sources: the matching ActivationOps methods in engine/ops/ops.h
// (flash_attention_forward / flash_attention_backward). Instantiated for float (the CPU backend)
// and double (the gradient checks of tests/engine/test_ops.cpp and the parity harness).
#pragma once

namespace td::cpu {

/// Rows of queries (Br) and keys (Bc) per tile. The CUDA kernel (cuda/flash_attention.cu) uses
/// its own tiles; the result does not depend on them beyond rounding.
constexpr int kFlashTile = 64;

template <class R> void flash_attention_forward(R* out, R* lse, const R* qkv, int B, int T, int C, int NH, int NKV);
template <class R>
void flash_attention_backward(R* dqkv, const R* dout, const R* qkv, const R* out, const R* lse, int B, int T, int C,
                              int NH, int NKV);

}  // namespace td::cpu
