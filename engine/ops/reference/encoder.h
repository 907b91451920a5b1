// CPU reference: GPT-2 input embedding: token + position (llm.c encoder_forward).
// Shapes, accumulation (+=) and sources: the matching ActivationOps / Backend method in
// engine/ops/ops.h. Instantiated for float (the CPU backend) and double (the gradient checks of
// tests/engine/test_ops.cpp and the parity harness's reference).
#pragma once

#include <cstddef>
#include <cstdint>

namespace td::cpu {

template <class R> void encoder_forward(R* out, const int32_t* inp, const R* wte, const R* wpe, int B, int T, int C);
template <class R> void encoder_backward(R* dwte, R* dwpe, const R* dout, const int32_t* inp, int B, int T, int C);

}  // namespace td::cpu
