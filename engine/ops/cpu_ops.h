// The CPU backend: the reference implementation of every op in ops.h.
//
// fp32; GEMMs through OpenBLAS cblas_sgemm, everything else plain loops parallelised with
// OpenMP (static schedules, so results are bitwise reproducible for a fixed thread count).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/ops/ops.h"

namespace td {

/// Sets the thread count of OpenMP and OpenBLAS (0: all cores). Returns the count in effect.
int set_cpu_threads(int threads);

/// The CPU backend (fp32). Thread-compatible: one instance per training loop.
std::unique_ptr<Backend> make_cpu_backend();

/// The reference ops, instantiated for float (the CPU backend) and double (gradient checks
/// against finite differences in tests). Shapes and sources: the matching Backend method in
/// ops.h. attention_backward takes a scratch buffer datt (B,NH,T,T).
namespace cpu {
template <class R> void encoder_forward(R* out, const int32_t* inp, const R* wte, const R* wpe, int B, int T, int C);
template <class R> void encoder_backward(R* dwte, R* dwpe, const R* dout, const int32_t* inp, int B, int T, int C);
template <class R> void layernorm_forward(R* out, R* mean, R* rstd, const R* inp, const R* weight, const R* bias, int N, int C);
template <class R> void layernorm_backward(R* dinp, R* dweight, R* dbias, const R* dout, const R* inp, const R* weight, const R* mean, const R* rstd, int N, int C);
template <class R> void matmul_forward(R* out, const R* inp, const R* weight, const R* bias, int N, int C, int OC);
template <class R> void matmul_backward(R* dinp, R* dweight, R* dbias, const R* dout, const R* inp, const R* weight, int N, int C, int OC);
template <class R> void attention_forward(R* out, R* att, const R* qkv, int B, int T, int C, int NH);
template <class R> void attention_backward(R* dqkv, R* datt, const R* dout, const R* qkv, const R* att, int B, int T, int C, int NH);
template <class R> void gelu_forward(R* out, const R* inp, size_t N);
template <class R> void gelu_backward(R* dinp, const R* inp, const R* dout, size_t N);
template <class R> void residual_forward(R* out, const R* a, const R* b, size_t N);
template <class R> void softmax_cross_entropy(R* losses, R* dlogits, const R* logits, const int32_t* targets, int N, int V, R grad_scale);
template <class R> void adamw(R* params, const R* grads, R* m, R* v, size_t n, R lr, R beta1, R beta2, R eps, R weight_decay, int t);
template <class R> double grad_norm_squared(const R* g, size_t n);
template <class R> void scale(R* x, R s, size_t n);
}  // namespace cpu

}  // namespace td
