// CPU reference: GELU, tanh approximation (Hendrycks & Gimpel 2016), forward and backward.
// Shapes, accumulation (+=) and sources: the matching ActivationOps / Backend method in
// engine/ops/ops.h. Instantiated for float (the CPU backend) and double (the gradient checks of
// tests/engine/test_ops.cpp and the parity harness's reference).
#pragma once

#include <cstddef>
#include <cstdint>

namespace td::cpu {

template <class R> void gelu_forward(R* out, const R* inp, size_t N);
template <class R> void gelu_backward(R* dinp, const R* inp, const R* dout, size_t N);

}  // namespace td::cpu
