// CPU reference: SwiGLU, the gated MLP activation of Llama (Shazeer 2020), forward and backward.
// Shapes, accumulation (+=) and sources: swiglu_forward / swiglu_backward in engine/ops/ops.h.
// Instantiated for float (the CPU backend) and double (the gradient checks of
// tests/engine/test_ops.cpp and the parity harness's reference).
#pragma once

namespace td::cpu {

template <class R> void swiglu_forward(R* out, const R* inp, int N, int F);
template <class R> void swiglu_backward(R* dinp, const R* inp, const R* dout, int N, int F);

}  // namespace td::cpu
