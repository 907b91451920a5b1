// CPU reference: RMSNorm (Zhang & Sennrich 2019), forward and backward.
// Shapes, accumulation (+=) and sources: rmsnorm_forward / rmsnorm_backward in engine/ops/ops.h.
// Instantiated for float (the CPU backend) and double (the gradient checks of
// tests/engine/test_ops.cpp and the parity harness's reference).
#pragma once

namespace td::cpu {

template <class R> void rmsnorm_forward(R* out, R* rstd, const R* inp, const R* weight, int N, int C, R eps);
template <class R> void rmsnorm_backward(R* dinp, R* dweight, const R* dout, const R* inp, const R* weight, const R* rstd, int N, int C);

}  // namespace td::cpu
