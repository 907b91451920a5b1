// The backend interface: every op the GPT-2 and Llama models need, one entry point each.
//
// Pointers are backend memory (host memory for the CPU backend, device memory for CUDA).
// Shapes use B = batch, T = sequence length, C = channels (d_model), NH = heads, hs = C / NH,
// NKV = key/value heads (grouped-query attention), V = vocabulary, N = rows (B*T), OC = output
// channels, F = MLP hidden channels. Tensors are row-major and contiguous. Backward ops
// ACCUMULATE into their gradient outputs (+=), as PyTorch's autograd does for leaves; the caller
// zeroes gradients before a step (llm.c's convention). The exceptions: rope_backward works in
// place, and cross_entropy_shard_backward overwrites (see there).
//
// Mixed precision (train.precision = "bf16"): the activation ops come in two element types Act,
// float and bf16 (engine/ops/dtype.h). With Act = bf16, activations and the weights the ops
// read are bf16 (a copy of the fp32 master weights, made by convert()), while everything that
// accumulates over many rows or steps stays fp32: weight and bias gradients, LayerNorm's mean
// and rstd, RMSNorm's rstd, per-token losses, and all arithmetic inside an op (fp32
// accumulation, one rounding to bf16 per output element). The optimizer ops (AdamW, norm, scale) are fp32 only.
//
// The CPU reference (engine/ops/reference/<op>.h) is the definition; other backends are tested
// against it op by op in the parity harness (tests/engine/test_parity.cpp holds the table of
// (op, dtype) rows; it fails when a backend supports an op that has no row). docs/cuda.md
// "Adding an op" lists the files a new op touches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "engine/ops/dtype.h"

namespace td {

// Every op, in one list: X(enum name, printed name). The enum Op and op_name() are made from it.
#define TD_OPS(X)                                  \
  X(kEncoderForward, "encoder_forward")            \
  X(kEncoderBackward, "encoder_backward")          \
  X(kLayerNormForward, "layernorm_forward")        \
  X(kLayerNormBackward, "layernorm_backward")      \
  X(kRmsNormForward, "rmsnorm_forward")            \
  X(kRmsNormBackward, "rmsnorm_backward")          \
  X(kMatmulForward, "matmul_forward")              \
  X(kMatmulBackward, "matmul_backward")            \
  X(kMatmulGeluForward, "matmul_gelu_forward")     \
  X(kMatmulBackwardDgelu, "matmul_backward_dgelu") \
  X(kAttentionForward, "attention_forward")        \
  X(kAttentionBackward, "attention_backward")      \
  X(kFlashAttentionForward, "flash_attention_forward") \
  X(kFlashAttentionBackward, "flash_attention_backward") \
  X(kGeluForward, "gelu_forward")                  \
  X(kGeluBackward, "gelu_backward")                \
  X(kSwigluForward, "swiglu_forward")              \
  X(kSwigluBackward, "swiglu_backward")            \
  X(kRopeForward, "rope_forward")                  \
  X(kRopeBackward, "rope_backward")                \
  X(kResidualForward, "residual_forward")          \
  X(kSoftmaxCrossEntropy, "softmax_cross_entropy") \
  X(kCrossEntropyShardStats, "cross_entropy_shard_stats") \
  X(kCrossEntropyShardBackward, "cross_entropy_shard_backward") \
  X(kConvert, "convert")                           \
  X(kAdamW, "adamw")                               \
  X(kGradNormSquared, "grad_norm_squared")         \
  X(kScale, "scale")

enum class Op {
#define TD_OP_ENUM(e, name) e,
  TD_OPS(TD_OP_ENUM)
#undef TD_OP_ENUM
  kCount
};
const char* op_name(Op op);

/// Which attention ops a model uses (train.attention). kSimple: attention_forward/backward,
/// saving the (B,NH,T,T) probabilities; kFused: flash_attention_forward/backward, saving the
/// (B,NH,T) log-sum-exp. Both compute the same function (engine/ops/reference/flash_attention.h).
enum class AttentionKernel { kSimple, kFused };
/// "simple" / "fused" (the values of train.attention).
const char* attention_kernel_name(AttentionKernel a);
/// The inverse of attention_kernel_name; td::Error on any other string.
AttentionKernel parse_attention_kernel(const std::string& name);

/// Where GPT-2's MLP computes its GELU (train.gelu_fusion). kNone: gelu_forward/backward as
/// passes of their own between the GEMMs; kEpilogue: inside the GEMMs' epilogues
/// (matmul_gelu_forward, matmul_backward_dgelu). The same function to rounding. Llama's SwiGLU
/// is not affected.
enum class GeluFusion { kNone, kEpilogue };
/// "none" / "epilogue" (the values of train.gelu_fusion).
const char* gelu_fusion_name(GeluFusion g);
/// The inverse of gelu_fusion_name; td::Error on any other string.
GeluFusion parse_gelu_fusion(const std::string& name);

/// The activation ops for one element type Act (float or bf16), reached as backend.ops<Act>().
/// See the file comment for which arguments are Act and which stay fp32.
template <class Act>
class ActivationOps {
 public:
  virtual ~ActivationOps() = default;
  // out (B,T,C) = wte[inp[b,t]] + wpe[t]; inp (B,T) token ids, wte (V,C), wpe (maxT,C).
  // An id < 0 adds no wte row (out = wpe[t]): that row lives on another tensor-parallel rank
  // (the vocabulary-parallel embedding, Megatron-LM sec. 3). Source: GPT-2 input embedding
  // (llm.c encoder_forward).
  virtual void encoder_forward(Act* out, const int32_t* inp, const Act* wte, const Act* wpe,
                               int B, int T, int C) = 0;
  // dwte (V,C) += scatter of dout by token (ids < 0 scatter nothing), dwpe (maxT,C) += sum over
  // b of dout; dout (B,T,C).
  virtual void encoder_backward(float* dwte, float* dwpe, const Act* dout, const int32_t* inp,
                                int B, int T, int C) = 0;
  // out (N,C) = (inp - mean) * rstd * weight + bias; mean, rstd (N) saved for backward.
  // Source: torch.nn.functional.layer_norm, eps = 1e-5.
  virtual void layernorm_forward(Act* out, float* mean, float* rstd, const Act* inp,
                                 const Act* weight, const Act* bias, int N, int C) = 0;
  // dinp (N,C), dweight (C), dbias (C) += gradients of layernorm_forward given dout (N,C).
  virtual void layernorm_backward(Act* dinp, float* dweight, float* dbias, const Act* dout,
                                  const Act* inp, const Act* weight, const float* mean,
                                  const float* rstd, int N, int C) = 0;
  // out (N,C) = inp * rstd * weight, rstd (N) = 1 / sqrt(mean_c inp^2 + eps), saved for backward.
  // No mean is subtracted and there is no bias. Source: Zhang & Sennrich 2019, "Root Mean Square
  // Layer Normalization", eq. 4; transformers' LlamaRMSNorm (eps = model.rms_norm_eps).
  virtual void rmsnorm_forward(Act* out, float* rstd, const Act* inp, const Act* weight, int N, int C,
                               float eps) = 0;
  // dinp (N,C) += rstd * (dnorm - norm * mean_c(dnorm * norm)), norm = inp * rstd,
  // dnorm = dout * weight; dweight (C) += sum_n norm * dout.
  virtual void rmsnorm_backward(Act* dinp, float* dweight, const Act* dout, const Act* inp,
                                const Act* weight, const float* rstd, int N, int C) = 0;
  // out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC) (bias may be null).
  // Source: torch.nn.functional.linear.
  virtual void matmul_forward(Act* out, const Act* inp, const Act* weight, const Act* bias,
                              int N, int C, int OC) = 0;
  // dinp (N,C) += dout @ weight; dweight (OC,C) += dout^T @ inp; dbias (OC) += sum_n dout (if
  // non-null). dinp may be null (no input gradient wanted). overwrite_dinp: dinp = dout @ weight
  // instead (the GEMM's beta = 0: dinp is not read, so it needs no memset when this is its first
  // contribution); the weight and bias gradients always accumulate.
  virtual void matmul_backward(Act* dinp, float* dweight, float* dbias, const Act* dout,
                               const Act* inp, const Act* weight, int N, int C, int OC,
                               bool overwrite_dinp) = 0;
  // The MLP's up-projection with the GELU fused into the GEMM's epilogue (train.gelu_fusion =
  // "epilogue"): pre (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC) (bias may be null), and
  // out (N,OC) = GELU(pre) computed from the unrounded pre (each output rounded once to Act).
  // The same function as matmul_forward then gelu_forward. Source: cuBLASLt
  // CUBLASLT_EPILOGUE_GELU_AUX_BIAS (llm.c's gelu_fusion).
  virtual void matmul_gelu_forward(Act* out, Act* pre, const Act* inp, const Act* weight, const Act* bias, int N,
                                   int C, int OC) = 0;
  // The backward of a linear layer whose input is inp = GELU(pre) (N,C), through the GELU:
  // dpre (N,C) = GELU'(pre) * (dout (N,OC) @ weight (OC,C)), OVERWRITTEN (not read: no memset
  // before), the product taken unrounded; dweight (OC,C) += dout^T @ inp and dbias (OC) += sum_n
  // dout (if non-null), as matmul_backward. The same function as matmul_backward into a
  // temporary then gelu_backward. Source: cuBLASLt CUBLASLT_EPILOGUE_DGELU.
  virtual void matmul_backward_dgelu(Act* dpre, float* dweight, float* dbias, const Act* dout, const Act* inp,
                                     const Act* weight, const Act* pre, int N, int C, int OC) = 0;
  // Causal multi-head self-attention core, with grouped-query attention. hs = C / NH; qkv
  // (B,T,C+2 NKV hs) holds q (NH heads) | k (NKV heads) | v (NKV heads), each head hs channels
  // (PyTorch's view(B,T,heads,hs)); query head h attends with k/v head h / (NH / NKV), so each
  // k/v head serves a group of NH / NKV query heads (NKV = NH: multi-head attention, qkv
  // (B,T,3C), GPT-2; NKV = 1: multi-query). NH must be a multiple of NKV. att (B,NH,T,T) saves
  // the softmax probabilities (zero above the diagonal); out (B,T,C) = att @ v with heads
  // re-joined. Source: Vaswani et al. 2017, eq. 1, with the causal mask of GPT-2, scale
  // 1/sqrt(hs); GQA: Ainslie et al. 2023, "GQA", sec. 2.2 (transformers' repeat_kv).
  virtual void attention_forward(Act* out, Act* att, const Act* qkv, int B, int T, int C,
                                 int NH, int NKV) = 0;
  // dqkv (B,T,C+2 NKV hs) += gradient of attention_forward given dout (B,T,C) and the saved
  // att; dk and dv of a k/v head are the sums over the query heads of its group.
  virtual void attention_backward(Act* dqkv, const Act* dout, const Act* qkv, const Act* att,
                                  int B, int T, int C, int NH, int NKV) = 0;
  // The same attention, fused (train.attention = "fused"): out (B,T,C) as attention_forward's,
  // computed tile by tile with an online softmax so that no (T,T) scores are stored, and
  // lse (B,NH,T) fp32 = the log-sum-exp of each row of scaled scores, log sum_{j<=t}
  // exp(q_t k_j / sqrt(hs)), saved for backward instead of att. Source: Dao 2023,
  // "FlashAttention-2", arXiv:2307.08691, Algorithm 1 (no dropout).
  virtual void flash_attention_forward(Act* out, float* lse, const Act* qkv, int B, int T, int C,
                                       int NH, int NKV) = 0;
  // dqkv (B,T,C+2 NKV hs) += gradient of flash_attention_forward given dout (B,T,C), qkv, its
  // out and lse: the probabilities are recomputed tile by tile from lse, with
  // D_t = dout_t . out_t in the softmax backward. Source: FlashAttention-2, Algorithm 2.
  virtual void flash_attention_backward(Act* dqkv, const Act* dout, const Act* qkv, const Act* out,
                                        const float* lse, int B, int T, int C, int NH, int NKV) = 0;
  // out (N) = GELU(inp), tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  // Source: Hendrycks & Gimpel 2016; torch.nn.functional.gelu(approximate="tanh").
  virtual void gelu_forward(Act* out, const Act* inp, size_t N) = 0;
  // dinp (N) += GELU'(inp) * dout.
  virtual void gelu_backward(Act* dinp, const Act* inp, const Act* dout, size_t N) = 0;
  // SwiGLU over a fused gate/up projection: inp (N,2F) holds rows [gate (F) | up (F)];
  // out (N,F) = silu(gate) * up, silu(g) = g sigmoid(g). Source: Shazeer 2020, "GLU Variants
  // Improve Transformer", eq. 6 (FFN_SwiGLU without its projections); transformers' LlamaMLP,
  // act_fn(gate_proj(x)) * up_proj(x) with act_fn = silu.
  virtual void swiglu_forward(Act* out, const Act* inp, int N, int F) = 0;
  // dinp (N,2F) += [dout * up * silu'(gate) | dout * silu(gate)], dout (N,F);
  // silu'(g) = sigmoid(g) (1 + g (1 - sigmoid(g))).
  virtual void swiglu_backward(Act* dinp, const Act* inp, const Act* dout, int N, int F) = 0;
  // Rotary position embedding, IN PLACE, on the q and k heads of qkv (B,T,(NH+2NKV)hs): the NH q
  // heads and NKV k heads of each row (v is untouched) are rotated by the angles of position t
  // (0-based): for i < hs/2, a = t theta^(-2i/hs),
  //   x[i] <- x[i] cos a - x[i+hs/2] sin a,   x[i+hs/2] <- x[i+hs/2] cos a + x[i] sin a.
  // That is the rotate_half convention over the two halves of each head that transformers'
  // LlamaModel uses (q * cos + rotate_half(q) * sin), so its checkpoints load without permuting
  // q/k. hs must be even. Angles are computed in double. Source: Su et al. 2021, "RoFormer",
  // eq. 34; theta = model.rope_theta (10000; Llama 3: 500000).
  virtual void rope_forward(Act* qkv, int B, int T, int NH, int NKV, int hs, float theta) = 0;
  // The gradient through rope_forward, IN PLACE on dqkv (B,T,(NH+2NKV)hs): the inverse rotation
  // (angle -a) of the dq and dk heads; dv is untouched. Unlike the other backward ops this does
  // not accumulate: it turns the gradient of the rotated qkv into that of the unrotated one.
  virtual void rope_backward(Act* dqkv, int B, int T, int NH, int NKV, int hs, float theta) = 0;
  // out (N) = a + b.
  virtual void residual_forward(Act* out, const Act* a, const Act* b, size_t N) = 0;
  // Fused softmax + cross-entropy over V classes for N rows. losses (N) = -log softmax(logits)[target].
  // If dlogits is non-null (it may alias logits) it receives (softmax - onehot(target)) * grad_scale.
  // Source: torch.nn.functional.cross_entropy (reduction none); its gradient.
  virtual void softmax_cross_entropy(float* losses, Act* dlogits, const Act* logits,
                                     const int32_t* targets, int N, int V, float grad_scale) = 0;
  // The vocabulary-parallel cross-entropy's two halves (Megatron-LM: Shoeybi et al. 2019,
  // arXiv:1909.08053, sec. 3). logits (N,V) are one rank's columns of the full logits: token ids
  // [v0, v0 + V); targets (N) are global ids. Stats: lse (N) = log sum_j exp(logits[n,j]) over
  // the shard (max-subtracted, fp32), target_logit (N) = logits[n, targets[n] - v0] when the
  // target is in the shard, else 0. The caller combines the ranks' rows: full lse =
  // log sum_r exp(lse_r), loss = full lse - sum_r target_logit_r.
  virtual void cross_entropy_shard_stats(float* lse, float* target_logit, const Act* logits,
                                         const int32_t* targets, int N, int V, int v0) = 0;
  // dlogits (N,V) = (exp(logits - lse[n]) - [targets[n] == v0 + j]) * grad_scale with lse (N)
  // the FULL vocabulary's log-sum-exp: the shard's columns of softmax_cross_entropy's gradient.
  // OVERWRITES dlogits (no accumulation); it may alias logits.
  virtual void cross_entropy_shard_backward(Act* dlogits, const Act* logits, const float* lse,
                                            const int32_t* targets, int N, int V, int v0,
                                            float grad_scale) = 0;
};

/// What a backend reports about its device for the run's events (bytes; 0 where unknown).
struct DeviceInfo {
  std::string name;             // "cpu", or the GPU's name ("NVIDIA H200")
  int compute_capability = 0;   // major * 10 + minor for CUDA devices, else 0
  uint64_t memory_total = 0;    // device memory (CUDA: cudaMemGetInfo's total)
  uint64_t memory_free = 0;     // free device memory when device_info() was called (CUDA:
                                // cudaMemGetInfo: all processes' use and this context counted)
  uint64_t memory_allocated = 0;  // bytes held by this backend's alloc() now
  uint64_t memory_peak = 0;       // high-water mark of memory_allocated
  double peak_bf16_tflops = 0;  // dense bf16 peak from the device table; 0 = unknown (no MFU)
  std::string pci_bus_id;       // CUDA's "0000:3b:00.0" (cudaDeviceGetPCIBusId); empty = none (CPU)
};

/// One span of the parameter buffer that Backend::adamw updates: elements [offset, offset +
/// numel), with the weight decay when decay is true and none otherwise.
struct AdamWSpan {
  size_t offset = 0;
  size_t numel = 0;
  bool decay = true;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  /// Whether this backend implements op for dtype (a caller asks instead of crashing).
  /// kConvert is listed under kBF16; the optimizer ops under kF32 only.
  virtual bool supports(Op op, DType dtype) const = 0;
  virtual DeviceInfo device_info() const = 0;

  // Memory. alloc throws td::Error on failure (naming the bytes asked for); memory is zeroed.
  virtual void* alloc(size_t bytes) = 0;
  virtual void free(void* p) = 0;
  virtual void upload(void* dst, const void* src_host, size_t bytes) = 0;
  virtual void download(void* dst_host, const void* src, size_t bytes) = 0;
  virtual void zero(void* p, size_t bytes) = 0;
  virtual void synchronize() = 0;

  /// The activation ops in element type Act (float or bf16):
  /// `backend.ops<Act>().layernorm_forward(...)`. A backend implements them once, as a class
  /// template over Act (cpu_ops.cpp, cuda/backend.cu), and returns its two instances below.
  template <class Act> ActivationOps<Act>& ops() {
    if constexpr (std::is_same_v<Act, float>) return ops_f32();
    else return ops_bf16();
  }

  // dst (n) = bf16(src), round to nearest even (the bf16 copy of the master weights).
  virtual void convert(bf16* dst, const float* src, size_t n) = 0;
  // AdamW on the elements of `spans` (n_spans of them, sorted by offset and disjoint; elements
  // between spans are not touched) of the buffers params, grads, m, v: m = b1 m + (1-b1) g;
  // v = b2 v + (1-b2) g^2; p -= lr * (m / (1-b1^t) / (sqrt(v / (1-b2^t)) + eps) + wd * p),
  // wd = weight_decay in a span with decay, 0 in the others. t is the 1-based step. One call
  // updates a whole parameter buffer (CUDA: one launch per 128 spans; the same bits as one call a
  // span). Source: Loshchilov & Hutter 2019, Algorithm 2; matches torch.optim.AdamW.
  virtual void adamw(float* params, const float* grads, float* m, float* v, const AdamWSpan* spans,
                     size_t n_spans, float lr, float beta1, float beta2, float eps, float weight_decay,
                     int t) = 0;
  // Returns sum of g^2 over n elements (accumulated in double on the CPU, fp32 partial sums
  // combined in double on CUDA).
  virtual double grad_norm_squared(const float* g, size_t n) = 0;
  // x (n) *= s.
  virtual void scale(float* x, float s, size_t n) = 0;

 protected:
  virtual ActivationOps<float>& ops_f32() = 0;
  virtual ActivationOps<bf16>& ops_bf16() = 0;
};

}  // namespace td
