// CPU reference: Causal multi-head self-attention (Vaswani et al. 2017; GPT-2's mask) with
// grouped-query attention (Ainslie et al. 2023), forward and backward.
// Shapes, accumulation (+=) and sources: the matching ActivationOps / Backend method in
// engine/ops/ops.h. Instantiated for float (the CPU backend) and double (the gradient checks of
// tests/engine/test_ops.cpp and the parity harness's reference).
#pragma once

#include <cstddef>
#include <cstdint>

namespace td::cpu {

template <class R> void attention_forward(R* out, R* att, const R* qkv, int B, int T, int C, int NH, int NKV);
// datt (B,NH,T,T) is scratch (the gradient of the attention scores).
template <class R> void attention_backward(R* dqkv, R* datt, const R* dout, const R* qkv, const R* att, int B, int T, int C, int NH, int NKV);

}  // namespace td::cpu
