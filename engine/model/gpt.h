// The GPT-2 model: parameters, activations, forward and backward on a Backend.
//
// Architecture (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners";
// nanoGPT's model.py): token + learned position embeddings; n_layer pre-LayerNorm blocks
// x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)) with causal multi-head self-attention (biases)
// and a GELU (tanh) MLP; a final LayerNorm; the LM head tied to the token embedding (or a
// separate lm_head when tie_embeddings is false). No dropout.
//
// The same class computes the Llama block's families (model.family "llama" and "qwen2", whose
// q_proj, k_proj and v_proj add a bias; engine/model/family.h, engine/model/llama.cpp):
// embed_tokens, n_layer pre-RMSNorm blocks x = x + o_proj(attn(rope(qkv_proj(norm(x)))));
// x = x + down_proj(swiglu(gate_up_proj(norm(x)))) with grouped-query attention, a final RMSNorm
// and the LM head tied or untied; no biases, no position embedding (Touvron et al. 2023;
// transformers' modeling_llama). Its tensors (engine/model/shape.h llama_param_tensors) keep
// Llama's separate names, and the ops read them fused where they are adjacent in the layout:
// q_proj | k_proj | v_proj is one (C + 2 KV hs, C) matrix, gate_proj | up_proj one (2F, C).
// Everything below (parameters, forward, backward, GradSink buckets) holds for both families.
//
// All parameters live in ONE contiguous fp32 buffer and all gradients in another with the same
// layout (params()[i] <-> grads()[i]); tensors() lists name, shape and offset of each tensor, in
// the order of docs/formats.md. Linear weights are stored (out, in) as torch.nn.Linear.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "engine/config.h"
#include "engine/ops/ops.h"

namespace td {

struct ParamTensor {
  std::string name;             // e.g. "h.0.attn.c_attn.weight"
  std::vector<int64_t> shape;   // e.g. {3C, C}
  size_t offset = 0;            // in elements, into params()/grads()
  size_t numel = 0;
  bool decay = false;           // AdamW weight decay applies (matrices except embeddings)
};

/// The parameter table of a model shape (no allocation). Order: wte, wpe, blocks, ln_f, lm_head.
std::vector<ParamTensor> gpt_param_tensors(const ModelConfig& m);
/// Total parameter count (every tensor, tied embedding counted once).
size_t gpt_num_params(const ModelConfig& m);
/// Floats of activation memory (forward activations kept for backward, plus backward scratch)
/// with micro batch B and sequence length T, in fp32.
size_t gpt_activation_floats(const ModelConfig& m, int B, int T);
/// Bytes of the same with activations of type act (bf16 halves the activations; LayerNorm
/// statistics and losses stay fp32). Buffers are 64-byte aligned, as GPT allocates them.
/// attn: the attention ops (train.attention): "simple" keeps (B,NH,T,T) probabilities per layer,
/// "fused" (B,NH,T) fp32 log-sum-exps.
size_t gpt_activation_bytes(const ModelConfig& m, int B, int T, DType act, AttentionKernel attn = AttentionKernel::kSimple);
struct TpWidths;  // engine/model/tensor_parallel.h
/// The same for a tensor-parallel rank computing with widths w (tp_widths: local heads, d_ff and
/// vocabulary rows; the residual stream stays (B,T,C)).
size_t gpt_activation_bytes(const ModelConfig& m, int B, int T, DType act, const TpWidths& w,
                            AttentionKernel attn = AttentionKernel::kSimple);

/// The gradient buckets of a GPT-2 shape: element ranges [first, second) of the parameter layout,
/// in layout order: bucket 0 = wte and wpe, bucket 1 + l = block l (l = 0..L-1), bucket L + 1 =
/// ln_f (and lm_head when untied). They partition [0, gpt_num_params(m)). ZeRO-2 reduces and
/// shards the gradient bucket by bucket (GradSink; engine/train/zero.h).
std::vector<std::pair<size_t, size_t>> gpt_grad_buckets(const ModelConfig& m);

/// Receives backward's gradients bucket by bucket (gpt_grad_buckets) instead of grads():
/// ZeRO-2's reduce-scatter during backward (engine/train/zero.h), so that a rank never holds the
/// whole gradient. For each backward, every bucket b is opened once, written, then closed once:
/// open(b) returns a buffer of hi - lo floats in backend memory (element i: the gradient of
/// parameter lo + i) that backward ADDS to, as it adds to grads(); close(b) says the bucket's
/// gradient of this backward is complete. The order: open(L+1); with tied embeddings open(0)
/// (the LM head's gradient goes to wte); close(L+1); then for l = L-1 down to 0 open(1+l),
/// close(1+l); open(0) when untied; close(0). So at most buckets 0, L+1 and one block are open.
class GradSink {
 public:
  virtual ~GradSink() = default;
  virtual float* open(int bucket) = 0;
  virtual void close(int bucket) = 0;
};

/// Lends forward and backward the parameters bucket by bucket (gpt_grad_buckets) instead of
/// params(): ZeRO-3 (engine/train/zero.h), whose ranks keep only a shard of each bucket and
/// all-gather the bucket just before its use. need(b) returns a buffer of hi - lo floats in
/// backend memory (element i: parameter lo + i), valid until done(b). The order, in forward:
/// need(0); for l = 0..L-1 need(1+l), done(1+l); need(L+1); done(L+1); done(0) (bucket 0 stays
/// lent for the tied LM head). In backward, the GradSink's order (above): need(b) with each
/// open(b), done(b) with each close(b). So at most buckets 0, L+1 and one block are lent at once.
/// fp32 models only (the bf16 copy of the weights is made from params()).
class ParamSource {
 public:
  virtual ~ParamSource() = default;
  virtual const float* need(int bucket) = 0;
  virtual void done(int bucket) = 0;
};

/// The collectives tensor parallelism needs inside forward and backward (Megatron-LM: Shoeybi
/// et al. 2019, arXiv:1909.08053, sec. 3), over the tp ranks of one tensor-parallel group.
/// Buffers are backend memory, fp32. Every rank of the group calls each in the same order.
/// engine/train/tp_run.h adapts a dist::Communicator group; tests use threads.
class TensorParallel {
 public:
  virtual ~TensorParallel() = default;
  virtual int rank() const = 0;  // 0 .. size() - 1 within the group
  virtual int size() const = 0;
  /// x (n) = the sum over the group's ranks of their x (n), in place.
  virtual void all_reduce_sum(float* x, size_t n) = 0;
  /// x (size() * n): rank r's n floats at x + r n reach every rank, in place.
  virtual void all_gather(float* x, size_t n) = 0;
};

class GPT {
 public:
  /// Allocates parameters, gradients and activations for up to max_B x m.seq_len tokens.
  /// act: the activation type. kF32 computes everything in fp32; kBF16 is mixed precision:
  /// fp32 master weights and gradients, a bf16 copy of the weights (refreshed by every
  /// forward) and bf16 activations (engine/ops/ops.h). Throws td::Error when the backend
  /// cannot allocate or does not support act.
  /// tp: tensor parallelism (null: none). The instance then holds tp rank tp->rank()'s shard
  /// (engine/model/tensor_parallel.h: tensors() is tp_param_tensors, num_params() the local
  /// count); forward, backward and download_logits call tp's collectives, and every rank of the
  /// group must call them alike with the same tokens. Not owned.
  /// attention: the attention ops (train.attention; engine/ops/ops.h AttentionKernel): what the
  /// activations keep for backward and which ops compute it (td::Error when the backend lacks them).
  /// gelu: where GPT-2's GELU runs (train.gelu_fusion; engine/ops/ops.h GeluFusion); ignored
  /// by Llama (SwiGLU). Activation memory is the same either way.
  GPT(const ModelConfig& m, Backend& backend, int max_B, DType act = DType::kF32, TensorParallel* tp = nullptr,
      AttentionKernel attention = AttentionKernel::kSimple, GeluFusion gelu = GeluFusion::kNone);
  ~GPT();
  GPT(const GPT&) = delete;
  GPT& operator=(const GPT&) = delete;

  const ModelConfig& config() const { return cfg_; }
  DType activation_dtype() const { return act_; }
  AttentionKernel attention_kernel() const { return attn_; }
  GeluFusion gelu_fusion() const { return gelu_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  size_t num_params() const { return num_params_; }
  float* params() { return params_; }  // backend memory, num_params() floats
  float* grads() { return grads_; }
  Backend& backend() { return be_; }

  /// GPT-2 initialisation from seed: N(0, 0.02) weights and embeddings, N(0, 0.02/sqrt(2 L))
  /// for the residual projections (attn.c_proj, mlp.c_proj), zero biases, unit LN weights.
  /// Llama: the same scheme on its names (N(0, 0.02), o_proj and down_proj N(0, 0.02/sqrt(2 L)),
  /// unit RMSNorm weights).
  /// With tensor parallelism each rank keeps its slice of the full model's initialisation, so
  /// the group's weights are the unsplit model's for the same seed.
  void init_weights(uint64_t seed);
  /// The full model's initial weights for `seed` (host, model_num_params(m) floats, the layout
  /// of model_param_tensors): what init_weights uploads (sliced with tp_slice under TP).
  static std::vector<float> initial_params(const ModelConfig& m, uint64_t seed);
  /// Tensor parallelism of this instance (null: none).
  TensorParallel* tensor_parallel() const { return tp_; }

  /// Forward pass. inputs, targets: host arrays (B,T) of token ids (targets may be null).
  /// Returns the mean cross-entropy in nats per token (NaN when targets is null).
  /// Requires B <= max_B, T <= seq_len; ids must be < vocab_size (td::Error otherwise).
  float forward(const int32_t* inputs, const int32_t* targets, int B, int T);
  /// Forward for training with the classifier fused (one pass over the logits; llm.c's fused
  /// classifier): forward(inputs, targets, B, T), and in the same pass the gradient of
  /// (sum of the per-token losses) * loss_scale with respect to the logits written over them, so
  /// the backward(loss_scale) that must follow (with the same loss_scale) starts from it. The
  /// logits are gone: logits() and download_logits() are invalid until the next forward. targets
  /// must be non-null. Under tensor parallelism (whose loss needs the group's log-sum-exp first)
  /// the gradient is left to backward as with the plain forward. Same bits as forward + backward.
  float forward(const int32_t* inputs, const int32_t* targets, int B, int T, float loss_scale);
  /// Backward of the last forward (which must have had targets): grads() += d(loss * loss_scale)
  /// where loss is the SUM of per-token losses. Use loss_scale = 1 / (tokens in the global batch).
  void backward(float loss_scale);
  /// Logits (B,T,V) of the last forward, in backend memory (valid until the next forward/backward).
  /// fp32 models only (TD_ASSERT); download_logits works for both.
  const float* logits() const;
  /// Copies rows [first_row, first_row + rows) of the last forward's logits (rows of V, row =
  /// b * T + t) to host memory dst as float. Valid until the next backward.
  void download_logits(float* dst, size_t first_row, size_t rows) const;
  void zero_grad();

  /// Gradient buckets of this model (model_grad_buckets of its config, engine/model/shape.h).
  std::vector<std::pair<size_t, size_t>> grad_buckets() const;
  /// Backward writes into `sink` instead of grads() (null: grads() again). Not owned; it must
  /// outlive its use.
  void set_grad_sink(GradSink* sink) { sink_ = sink; }
  /// Frees the full-size gradient buffer (4 num_params() bytes) when a GradSink takes the
  /// gradients: grads() is then null and zero_grad() does nothing; a backward without a sink
  /// after it is a programming error (TD_ASSERT).
  void release_grads();
  /// Forward and backward read the weights from `src` bucket by bucket instead of params()
  /// (null: params() again). Not owned. fp32 models only (TD_ASSERT).
  void set_param_source(ParamSource* src);
  /// Frees the full-size parameter buffer (4 num_params() bytes) when a ParamSource lends the
  /// weights: params() is then null. acquire_params() allocates it again (contents undefined),
  /// e.g. for rank 0 to gather a checkpoint's weights into. Throws td::Error when the backend
  /// cannot allocate.
  void release_params();
  void acquire_params();

 private:
  void check_tokens(const int32_t* ids, size_t n) const;
  template <class Act> const float* forward_impl(const int32_t* d_in, const int32_t* d_tg, int B, int T);
  template <class Act> void backward_impl(float loss_scale);
  // The Llama family's forward and backward (engine/model/llama.cpp).
  template <class Act> const float* llama_forward_impl(const int32_t* d_in, const int32_t* d_tg, int B, int T);
  template <class Act> void llama_backward_impl(float loss_scale);
  // Tensor parallelism (tp_ null: none): the vocabulary-parallel cross-entropy's per-row
  // combination over the group, in forward (host side; the full lse kept in lse_ for backward).
  // Act: float or bf16 logits (explicitly instantiated in gpt.cpp for both).
  template <class Act> void tp_cross_entropy(float* losses, const Act* logits, const int32_t* d_tg, int BT);
  void tp_reduce(float* x, size_t n) {
    if (tp_) tp_->all_reduce_sum(x, n);
  }
  // bf16 activations (mixed precision): summed in fp32 through the host (the communicators
  // reduce fp32), then rounded to bf16 once: the same rounding as the unsplit model's bf16
  // output of the whole matmul. A device-side path (NCCL's bf16 all-reduce, no host copy) is
  // the GPU's to add (docs/cuda.md).
  void tp_reduce(bf16* x, size_t n);
  ModelConfig cfg_;
  Backend& be_;
  TensorParallel* tp_ = nullptr;
  int tp_rank_ = 0, tp_size_ = 1;
  int v0_ = 0, V_ = 0;            // this rank's vocabulary rows [v0_, v0_ + V_) (all: 0, vocab_size)
  float* lse_ = nullptr;          // TP: (tp, 2, max_B T) gathered [lse | target logit] per rank, then (max_B T) full lse
  int32_t* local_ids_ = nullptr;  // TP: (max_B, T) input ids relative to v0_ (-1: another rank's row)
  int max_B_;
  DType act_;
  AttentionKernel attn_ = AttentionKernel::kSimple;
  GeluFusion gelu_ = GeluFusion::kNone;
  std::vector<ParamTensor> tensors_;
  size_t num_params_ = 0;
  float* params_ = nullptr;
  float* grads_ = nullptr;
  GradSink* sink_ = nullptr;
  ParamSource* param_src_ = nullptr;
  void* params_act_ = nullptr;  // the weights the ops read: params_ (fp32) or a bf16 copy
  void* acts_ = nullptr;        // forward activations, layout in gpt.cpp
  void* dacts_ = nullptr;       // backward scratch
  void* logits_ = nullptr;      // (max_B, T, V) Act, inside acts_
  bool llama_ = false;          // the family's block is the Llama one (engine/model/family.h)
  bool qkv_bias_ = false;       // and its q/k/v projections carry biases (qwen2)
  void* zero_wpe_ = nullptr;    // llama: (T, C) Act zeros, the position embedding encoder_forward adds
  float* dwpe_ = nullptr;       // llama: (T, C) scratch for encoder_backward's unused position gradient
  int32_t* tokens_ = nullptr;   // (max_B, T) inputs then (max_B, T) targets, backend memory
  int B_ = 0, T_ = 0;           // shape of the last forward
  bool has_targets_ = false;
  // The fused classifier (forward with a loss_scale): the scale of the next forward (NaN: none)
  // and whether the last forward left the logits' gradient in place.
  float fuse_scale_ = std::numeric_limits<float>::quiet_NaN();
  bool dlogits_ready_ = false;
  float dlogits_scale_ = 0;  // the loss_scale of the gradient forward left in place
  // The classifier's loss of forward (losses (BT); dlogits in place when fuse_scale_ is set) and
  // its gradient in backward (skipped when forward made it). Both families; Act: float or bf16.
  template <class Act> void classifier_forward(float* losses, Act* logits, const int32_t* d_tg, int BT);
  template <class Act> void classifier_backward(float* losses, Act* logits, const int32_t* d_tg, int BT, float loss_scale);
};

}  // namespace td
