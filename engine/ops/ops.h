// The backend interface: every op the GPT model needs, one entry point each.
//
// Pointers are backend memory (host memory for the CPU backend, device memory for CUDA).
// Shapes use B = batch, T = sequence length, C = channels (d_model), NH = heads, hs = C / NH,
// V = vocabulary, N = rows (B*T), OC = output channels. Tensors are row-major and contiguous.
// Backward ops ACCUMULATE into their gradient outputs (+=), as PyTorch's autograd does for
// leaves; the caller zeroes gradients before a step (llm.c's convention).
//
// The CPU reference (cpu_ops.cpp) is the definition; other backends are tested against it op
// by op in the parity harness (tests/engine/test_ops.cpp holds the table of ops).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace td {

enum class Op {
  kEncoderForward,
  kEncoderBackward,
  kLayerNormForward,
  kLayerNormBackward,
  kMatmulForward,
  kMatmulBackward,
  kAttentionForward,
  kAttentionBackward,
  kGeluForward,
  kGeluBackward,
  kResidualForward,
  kSoftmaxCrossEntropy,
  kAdamW,
  kGradNormSquared,
  kScale,
  kCount
};
const char* op_name(Op op);

enum class DType { kF32, kBF16 };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  /// Whether this backend implements op for dtype (a caller asks instead of crashing).
  virtual bool supports(Op op, DType dtype) const = 0;

  // Memory. alloc throws td::Error on failure (naming the bytes asked for).
  virtual void* alloc(size_t bytes) = 0;
  virtual void free(void* p) = 0;
  virtual void upload(void* dst, const void* src_host, size_t bytes) = 0;
  virtual void download(void* dst_host, const void* src, size_t bytes) = 0;
  virtual void zero(void* p, size_t bytes) = 0;
  virtual void synchronize() = 0;

  // out (B,T,C) = wte[inp[b,t]] + wpe[t]; inp (B,T) token ids, wte (V,C), wpe (maxT,C).
  // Source: GPT-2 input embedding (llm.c encoder_forward).
  virtual void encoder_forward(float* out, const int32_t* inp, const float* wte, const float* wpe,
                               int B, int T, int C) = 0;
  // dwte (V,C) += scatter of dout by token, dwpe (maxT,C) += sum over b of dout; dout (B,T,C).
  virtual void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* inp,
                                int B, int T, int C) = 0;
  // out (N,C) = (inp - mean) * rstd * weight + bias; mean, rstd (N) saved for backward.
  // Source: torch.nn.functional.layer_norm, eps = 1e-5.
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                 const float* weight, const float* bias, int N, int C) = 0;
  // dinp (N,C), dweight (C), dbias (C) += gradients of layernorm_forward given dout (N,C).
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, const float* mean,
                                  const float* rstd, int N, int C) = 0;
  // out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC) (bias may be null).
  // Source: torch.nn.functional.linear.
  virtual void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                              int N, int C, int OC) = 0;
  // dinp (N,C) += dout @ weight; dweight (OC,C) += dout^T @ inp; dbias (OC) += sum_n dout (if non-null).
  virtual void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                               const float* inp, const float* weight, int N, int C, int OC) = 0;
  // Causal multi-head self-attention core. qkv (B,T,3C) holds q | k | v, each split into NH
  // heads of hs channels (PyTorch's view(B,T,NH,hs)); att (B,NH,T,T) saves the softmax
  // probabilities (zero above the diagonal); out (B,T,C) = att @ v with heads re-joined.
  // Source: Vaswani et al. 2017, eq. 1, with the causal mask of GPT-2; scale 1/sqrt(hs).
  virtual void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C,
                                 int NH) = 0;
  // dqkv (B,T,3C) += gradient of attention_forward given dout (B,T,C) and the saved att.
  virtual void attention_backward(float* dqkv, const float* dout, const float* qkv,
                                  const float* att, int B, int T, int C, int NH) = 0;
  // out (N) = GELU(inp), tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  // Source: Hendrycks & Gimpel 2016; torch.nn.functional.gelu(approximate="tanh").
  virtual void gelu_forward(float* out, const float* inp, size_t N) = 0;
  // dinp (N) += GELU'(inp) * dout.
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout, size_t N) = 0;
  // out (N) = a + b.
  virtual void residual_forward(float* out, const float* a, const float* b, size_t N) = 0;
  // Fused softmax + cross-entropy over V classes for N rows. losses (N) = -log softmax(logits)[target].
  // If dlogits is non-null (it may alias logits) it receives (softmax - onehot(target)) * grad_scale.
  // Source: torch.nn.functional.cross_entropy (reduction none); its gradient.
  virtual void softmax_cross_entropy(float* losses, float* dlogits, const float* logits,
                                     const int32_t* targets, int N, int V, float grad_scale) = 0;
  // AdamW on n elements: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
  // p -= lr * (m / (1-b1^t) / (sqrt(v / (1-b2^t)) + eps) + wd * p). t is the 1-based step.
  // Source: Loshchilov & Hutter 2019, Algorithm 2; matches torch.optim.AdamW.
  virtual void adamw(float* params, const float* grads, float* m, float* v, size_t n, float lr,
                     float beta1, float beta2, float eps, float weight_decay, int t) = 0;
  // Returns sum of g^2 over n elements (accumulated in double).
  virtual double grad_norm_squared(const float* g, size_t n) = 0;
  // x (n) *= s.
  virtual void scale(float* x, float s, size_t n) = 0;
};

}  // namespace td
