// CPU reference: LayerNorm (torch.nn.functional.layer_norm, eps 1e-5), forward and backward.
// Shapes, accumulation (+=) and sources: the matching ActivationOps / Backend method in
// engine/ops/ops.h. Instantiated for float (the CPU backend) and double (the gradient checks of
// tests/engine/test_ops.cpp and the parity harness's reference).
#pragma once

#include <cstddef>
#include <cstdint>

namespace td::cpu {

template <class R> void layernorm_forward(R* out, R* mean, R* rstd, const R* inp, const R* weight, const R* bias, int N, int C);
template <class R> void layernorm_backward(R* dinp, R* dweight, R* dbias, const R* dout, const R* inp, const R* weight, const R* mean, const R* rstd, int N, int C);

}  // namespace td::cpu
