// CPU reference: The optimizer ops: AdamW, the squared gradient norm, scaling.
// Shapes, accumulation (+=) and sources: the matching ActivationOps / Backend method in
// engine/ops/ops.h. Instantiated for float (the CPU backend) and double (the gradient checks of
// tests/engine/test_ops.cpp and the parity harness's reference).
#pragma once

#include <cstddef>
#include <cstdint>

namespace td::cpu {

template <class R> void adamw(R* params, const R* grads, R* m, R* v, size_t n, R lr, R beta1, R beta2, R eps, R weight_decay, int t);
template <class R> double grad_norm_squared(const R* g, size_t n);
template <class R> void scale(R* x, R s, size_t n);

}  // namespace td::cpu
