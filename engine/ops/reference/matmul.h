// CPU reference: The linear layer (torch.nn.functional.linear) through BLAS, forward and backward.
// Shapes, accumulation (+=) and sources: the matching ActivationOps / Backend method in
// engine/ops/ops.h. Instantiated for float (the CPU backend) and double (the gradient checks of
// tests/engine/test_ops.cpp and the parity harness's reference).
#pragma once

#include <cstddef>
#include <cstdint>

namespace td::cpu {

template <class R> void matmul_forward(R* out, const R* inp, const R* weight, const R* bias, int N, int C, int OC);
template <class R> void matmul_backward(R* dinp, R* dweight, R* dbias, const R* dout, const R* inp, const R* weight, int N, int C, int OC);

}  // namespace td::cpu
