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

// Every op: the activation ops of activation_ops.def (each printed as its method name,
// "layernorm_forward"), then the backend's conversion and optimizer ops, X(enum name, printed
// name). The enum Op and op_name() are made from them.
#define TD_BACKEND_OPS(X)                      \
  X(kConvert, "convert")                       \
  X(kAdamW, "adamw")                           \
  X(kGradNormSquared, "grad_norm_squared")     \
  X(kScale, "scale")

enum class Op {
#define TD_ACTIVATION_OP(name, op, params, args) op,
#include "engine/ops/activation_ops.def"
#define TD_OP_ENUM(e, name) e,
  TD_BACKEND_OPS(TD_OP_ENUM)
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
  // One pure virtual per entry of activation_ops.def (each op's contract is there).
#define TD_ACTIVATION_OP(name, op, params, args) virtual void name params = 0;
#include "engine/ops/activation_ops.def"
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
