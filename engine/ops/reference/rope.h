// CPU reference: rotary position embedding (RoPE, Su et al. 2021) on the q and k heads of a
// fused qkv, in the rotate_half convention of transformers' LlamaModel; forward and backward.
// Shapes and sources: rope_forward / rope_backward in engine/ops/ops.h (both work in place).
// Instantiated for float (the CPU backend) and double (the gradient checks of
// tests/engine/test_ops.cpp and the parity harness's reference).
#pragma once

namespace td::cpu {

template <class R> void rope_forward(R* qkv, int B, int T, int NH, int NKV, int hs, double theta);
template <class R> void rope_backward(R* dqkv, int B, int T, int NH, int NKV, int hs, double theta);

}  // namespace td::cpu
