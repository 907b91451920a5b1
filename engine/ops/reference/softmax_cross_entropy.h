// CPU reference: Fused softmax + cross-entropy (torch.nn.functional.cross_entropy) and its gradient.
// Shapes, accumulation (+=) and sources: the matching ActivationOps / Backend method in
// engine/ops/ops.h. Instantiated for float (the CPU backend) and double (the gradient checks of
// tests/engine/test_ops.cpp and the parity harness's reference).
#pragma once

#include <cstddef>
#include <cstdint>

namespace td::cpu {

template <class R> void softmax_cross_entropy(R* losses, R* dlogits, const R* logits, const int32_t* targets, int N, int V, R grad_scale);
// The vocabulary-parallel halves: logits (N,V) hold token ids [v0, v0 + V) (ops.h).
template <class R> void cross_entropy_shard_stats(R* lse, R* target_logit, const R* logits, const int32_t* targets, int N, int V, int v0);
template <class R> void cross_entropy_shard_backward(R* dlogits, const R* logits, const R* lse, const int32_t* targets, int N, int V, int v0, R grad_scale);

}  // namespace td::cpu
