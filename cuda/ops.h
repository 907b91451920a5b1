// The CUDA kernels' launchers, one .cu file per op family (named below), each templated on the
// activation type Act = float or __nv_bfloat16 where ops.h's interface has an Act. Shapes,
// accumulation (+=) and sources are those of the matching method in engine/ops/ops.h; every
// launcher runs on `stream` and returns without synchronising. Arithmetic is fp32 inside every
// kernel; Act values are rounded once when stored.
//
// A newcomer's map: the CPU reference of op X is td::cpu::X in engine/ops/reference/, its CUDA
// kernel is in cuda/<file>.cu listed here, its parity row is in tests/engine/test_parity.cpp.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace td {
struct AdamWSpan;  // engine/ops/ops.h
}

namespace td::cuda {

// encoder.cu
template <class Act> void encoder_forward(Act* out, const int32_t* inp, const Act* wte, const Act* wpe, int B, int T, int C, cudaStream_t stream);
// Deterministic: no atomics (each thread owns a channel of one vocabulary row / position).
template <class Act> void encoder_backward(float* dwte, float* dwpe, const Act* dout, const int32_t* inp, int B, int T, int C, cudaStream_t stream);

// layernorm.cu. layernorm_backward needs scratch of layernorm_backward_scratch_floats(N, C)
// floats (per-block partial sums of dweight and dbias, reduced in a fixed order: deterministic).
template <class Act> void layernorm_forward(Act* out, float* mean, float* rstd, const Act* inp, const Act* weight, const Act* bias, int N, int C, cudaStream_t stream);
size_t layernorm_backward_scratch_floats(int N, int C);
template <class Act> void layernorm_backward(Act* dinp, float* dweight, float* dbias, const Act* dout, const Act* inp, const Act* weight, const float* mean, const float* rstd, int N, int C, float* scratch, cudaStream_t stream);

// rmsnorm.cu. rmsnorm_backward needs scratch of rmsnorm_backward_scratch_floats(N, C) floats
// (per-chunk partial sums of dweight, reduced in a fixed order: deterministic).
template <class Act> void rmsnorm_forward(Act* out, float* rstd, const Act* inp, const Act* weight, int N, int C, float eps, cudaStream_t stream);
size_t rmsnorm_backward_scratch_floats(int N, int C);
template <class Act> void rmsnorm_backward(Act* dinp, float* dweight, const Act* dout, const Act* inp, const Act* weight, const float* rstd, int N, int C, float* scratch, cudaStream_t stream);

// gelu.cu, residual.cu
template <class Act> void gelu_forward(Act* out, const Act* inp, size_t N, cudaStream_t stream);
// gelu_backward with overwrite: dinp = gelu'(inp) * dout (dinp not read; it may alias dout).
template <class Act> void gelu_backward(Act* dinp, const Act* inp, const Act* dout, size_t N, cudaStream_t stream,
                                        bool overwrite = false);
template <class Act> void residual_forward(Act* out, const Act* a, const Act* b, size_t N, cudaStream_t stream);

// swiglu.cu, rope.cu (rope works in place, on the q and k heads of qkv).
template <class Act> void swiglu_forward(Act* out, const Act* inp, int N, int F, cudaStream_t stream);
template <class Act> void swiglu_backward(Act* dinp, const Act* inp, const Act* dout, int N, int F, cudaStream_t stream);
template <class Act> void rope_forward(Act* qkv, int B, int T, int NH, int NKV, int hs, float theta, cudaStream_t stream);
template <class Act> void rope_backward(Act* dqkv, int B, int T, int NH, int NKV, int hs, float theta, cudaStream_t stream);

// softmax_cross_entropy.cu: one block per row, online max/sum over V in fp32; dlogits may alias logits.
template <class Act> void softmax_cross_entropy(float* losses, Act* dlogits, const Act* logits, const int32_t* targets, int N, int V, float grad_scale, cudaStream_t stream);
// The vocabulary-parallel halves (engine/ops/ops.h): stats one block per row; backward one
// thread per element (overwrites; dlogits may alias logits).
template <class Act> void cross_entropy_shard_stats(float* lse, float* target_logit, const Act* logits, const int32_t* targets, int N, int V, int v0, cudaStream_t stream);
template <class Act> void cross_entropy_shard_backward(Act* dlogits, const Act* logits, const float* lse, const int32_t* targets, int N, int V, int v0, float grad_scale, cudaStream_t stream);

// attention.h / matmul.h: attention (cuBLAS batched GEMMs + causal softmax kernels) and the
// cuBLASLt linear layers have their own headers (they hold handles and workspaces).

// optimizer.cu: fp32 only. adamw: Backend::adamw (engine/ops/ops.h) over the spans, one launch per
// kAdamWSpansPerLaunch spans.
constexpr int kAdamWSpansPerLaunch = 128;
void adamw(float* params, const float* grads, float* m, float* v, const AdamWSpan* spans, size_t n_spans, float lr, float beta1,
           float beta2, float eps, float weight_decay, int t, cudaStream_t stream);
// Writes grad_norm_partials_count(n) fp32 partial sums of g^2 to partials (deterministic order);
// the backend downloads and adds them in double.
size_t grad_norm_partials_count(size_t n);
void grad_norm_partials(float* partials, const float* g, size_t n, cudaStream_t stream);
void scale(float* x, float s, size_t n, cudaStream_t stream);
void convert_to_bf16(__nv_bfloat16* dst, const float* src, size_t n, cudaStream_t stream);

}  // namespace td::cuda
