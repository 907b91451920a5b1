#include "engine/model/gpt.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "engine/common/error.h"
#include "engine/common/rng.h"
#include "engine/model/family.h"
#include "engine/model/model_detail.h"
#include "engine/model/shape.h"
#include "engine/model/tensor_parallel.h"

namespace td {
namespace {

// Forward activations kept for backward. Each buffer is sized for (maxB, maxT) and used
// contiguously from its start for the actual (B, T). Act is the activation type (float, or bf16
// with train.precision = "bf16"); LayerNorm statistics and losses are always fp32.
template <class Act>
struct LayerActs {
  Act* ln1;                          // (B,T,C)
  float *ln1_mean, *ln1_rstd;        // (B,T), (B,T)
  Act* qkv;                          // (B,T,3C)
  Act* atty;                         // (B,T,C) attention output before c_proj
  Act* att;                          // (B,NH,T,T) softmax probabilities (attention "simple"; else null)
  float* lse;                        // (B,NH,T) rows' log-sum-exp (attention "fused"; else null)
  Act* attproj;                      // (B,T,C)
  Act* res2;                         // (B,T,C) residual after attention
  Act* ln2;
  float *ln2_mean, *ln2_rstd;
  Act* fch;                          // (B,T,F) c_fc output
  Act* fch_gelu;                     // (B,T,F)
  Act* fcproj;                       // (B,T,C)
  Act* res3;                         // (B,T,C) residual after the MLP (block output)
};
template <class Act>
struct Acts {
  Act* encoded;  // (B,T,C)
  std::vector<LayerActs<Act>> layers;
  Act* lnf;                          // (B,T,C)
  float *lnf_mean, *lnf_rstd;        // (B,T), (B,T)
  Act* logits;                       // (B,T,V); overwritten by dlogits in backward
  float* losses;                     // (B,T)
};
// Backward scratch (see backward()).
template <class Act>
struct DActs {
  Act* dres;  // (B,T,C) gradient of the residual stream
  Act* dc;    // (B,T,C)
  Act* dqkv;  // (B,T,3C)
  Act* df1;   // (B,T,F)
  Act* df2;   // (B,T,F)
};

using model_detail::Carver;

// Walks the activation layout (bytes); with base == nullptr it only counts.
// w: the widths computed with (tp_widths; the full model's at tp = 1). Under tensor parallelism
// qkv, atty, att, fch and the logits are the rank's local widths; the residual stream is full.
// attn: what attention saves for backward (att or lse, model_detail::attention_saved).
template <class Act>
size_t layout_acts(const ModelConfig& m, const TpWidths& w, int B, int T, void* base, Acts<Act>* a, AttentionKernel attn) {
  const size_t BT = (size_t)B * T, C = m.d_model, F = w.F, V = w.V, CL = (size_t)w.NH * w.hs;
  Carver k(base);
  Acts<Act> tmp;
  Acts<Act>& A = a ? *a : tmp;
  A.encoded = k.take<Act>(BT * C);
  A.layers.resize(m.n_layer);
  for (auto& L : A.layers) {
    L.ln1 = k.take<Act>(BT * C);
    L.ln1_mean = k.take<float>(BT);
    L.ln1_rstd = k.take<float>(BT);
    L.qkv = k.take<Act>(BT * 3 * CL);
    L.atty = k.take<Act>(BT * CL);
    model_detail::attention_saved(k, attn, B, w.NH, T, &L.att, &L.lse);
    L.attproj = k.take<Act>(BT * C);
    L.res2 = k.take<Act>(BT * C);
    L.ln2 = k.take<Act>(BT * C);
    L.ln2_mean = k.take<float>(BT);
    L.ln2_rstd = k.take<float>(BT);
    L.fch = k.take<Act>(BT * F);
    L.fch_gelu = k.take<Act>(BT * F);
    L.fcproj = k.take<Act>(BT * C);
    L.res3 = k.take<Act>(BT * C);
  }
  A.lnf = k.take<Act>(BT * C);
  A.lnf_mean = k.take<float>(BT);
  A.lnf_rstd = k.take<float>(BT);
  A.logits = k.take<Act>(BT * V);
  A.losses = k.take<float>(BT);
  return k.bytes();
}

template <class Act>
size_t layout_dacts(const ModelConfig& m, const TpWidths& w, int B, int T, void* base, DActs<Act>* d) {
  const size_t BT = (size_t)B * T, C = m.d_model, F = w.F, CL = (size_t)w.NH * w.hs;
  Carver k(base);
  DActs<Act> tmp;
  DActs<Act>& D = d ? *d : tmp;
  D.dres = k.take<Act>(BT * C);
  D.dc = k.take<Act>(BT * C);
  D.dqkv = k.take<Act>(BT * 3 * CL);
  D.df1 = k.take<Act>(BT * F);
  D.df2 = k.take<Act>(BT * F);
  return k.bytes();
}

template <class Act>
size_t activation_bytes(const ModelConfig& m, int B, int T, const TpWidths& w, AttentionKernel attn) {
  return layout_acts<Act>(m, w, B, T, nullptr, nullptr, attn) + layout_dacts<Act>(m, w, B, T, nullptr, nullptr);
}
template <class Act>
size_t activation_bytes(const ModelConfig& m, int B, int T, AttentionKernel attn = AttentionKernel::kSimple) {
  return activation_bytes<Act>(m, B, T, tp_widths(m, 0, 1), attn);
}

// Index of each tensor of block l in tensors(): 2 embeddings, then 12 per block.
enum BlockTensor { kLn1W, kLn1B, kAttnW, kAttnB, kProjW, kProjB, kLn2W, kLn2B, kFcW, kFcB, kFcProjW, kFcProjB, kPerBlock };

}  // namespace

std::vector<ParamTensor> gpt_param_tensors(const ModelConfig& m) {
  const int64_t V = m.vocab_size, T = m.seq_len, C = m.d_model, F = m.d_ff;
  std::vector<ParamTensor> t;
  size_t off = 0;
  auto add = [&](std::string name, std::vector<int64_t> shape, bool decay) {
    size_t n = 1;
    for (auto s : shape) n *= (size_t)s;
    t.push_back({std::move(name), std::move(shape), off, n, decay});
    off += n;
  };
  add("wte.weight", {V, C}, false);
  add("wpe.weight", {T, C}, false);
  for (int l = 0; l < m.n_layer; l++) {
    std::string p = "h." + std::to_string(l) + ".";
    add(p + "ln_1.weight", {C}, false);
    add(p + "ln_1.bias", {C}, false);
    add(p + "attn.c_attn.weight", {3 * C, C}, true);
    add(p + "attn.c_attn.bias", {3 * C}, false);
    add(p + "attn.c_proj.weight", {C, C}, true);
    add(p + "attn.c_proj.bias", {C}, false);
    add(p + "ln_2.weight", {C}, false);
    add(p + "ln_2.bias", {C}, false);
    add(p + "mlp.c_fc.weight", {F, C}, true);
    add(p + "mlp.c_fc.bias", {F}, false);
    add(p + "mlp.c_proj.weight", {C, F}, true);
    add(p + "mlp.c_proj.bias", {C}, false);
  }
  add("ln_f.weight", {C}, false);
  add("ln_f.bias", {C}, false);
  if (!m.tie_embeddings) add("lm_head.weight", {V, C}, true);
  return t;
}

size_t gpt_num_params(const ModelConfig& m) {
  auto t = gpt_param_tensors(m);
  return t.back().offset + t.back().numel;
}

std::vector<std::pair<size_t, size_t>> gpt_grad_buckets(const ModelConfig& m) {
  return block_buckets(gpt_param_tensors(m), 2, kPerBlock, m.n_layer);
}

size_t gpt_activation_floats(const ModelConfig& m, int B, int T) { return activation_bytes<float>(m, B, T) / sizeof(float); }

size_t gpt_activation_bytes(const ModelConfig& m, int B, int T, DType act, AttentionKernel attn) {
  return act == DType::kF32 ? activation_bytes<float>(m, B, T, attn) : activation_bytes<bf16>(m, B, T, attn);
}

size_t gpt_activation_bytes(const ModelConfig& m, int B, int T, DType act, const TpWidths& w, AttentionKernel attn) {
  return act == DType::kF32 ? activation_bytes<float>(m, B, T, w, attn) : activation_bytes<bf16>(m, B, T, w, attn);
}

GPT::GPT(const ModelConfig& m, Backend& backend, int max_B, DType act, TensorParallel* tp, AttentionKernel attention,
         GeluFusion gelu)
    : cfg_(m), be_(backend), tp_(tp), max_B_(max_B), act_(act), attn_(attention),
      gelu_(llama_block(m) ? GeluFusion::kNone : gelu), llama_(llama_block(m)), qkv_bias_(qkv_bias(m)) {
  TD_ASSERT(max_B > 0 && m.d_model % m.n_head == 0 && m.d_ff > 0);
  TD_ASSERT(llama_ || model_tensors_per_block(m) == kPerBlock);
  TD_ASSERT(!llama_ || (m.n_kv_head > 0 && m.n_head % m.n_kv_head == 0 && (m.d_model / m.n_head) % 2 == 0));
  std::vector<Op> needed = llama_ ? std::vector<Op>{Op::kEncoderForward, Op::kRmsNormForward, Op::kMatmulForward, Op::kRopeForward,
                                                          Op::kAttentionForward, Op::kSwigluForward, Op::kSoftmaxCrossEntropy}
                                        : std::vector<Op>{Op::kEncoderForward, Op::kLayerNormForward, Op::kMatmulForward,
                                                          Op::kAttentionForward, Op::kSoftmaxCrossEntropy};
  for (Op& op : needed)
    if (op == Op::kAttentionForward && attn_ == AttentionKernel::kFused) op = Op::kFlashAttentionForward;
  if (gelu_ == GeluFusion::kEpilogue) needed.push_back(Op::kMatmulGeluForward);
  for (Op op : needed)
    if (!be_.supports(op, act))
      fail("the " + be_.name() + " backend cannot compute " + op_name(op) + " in " + dtype_name(act) +
           "; set train.precision to a precision it supports (the CPU backend computes in fp32)");
  if (tp_) {
    tp_rank_ = tp_->rank();
    tp_size_ = tp_->size();
    TD_ASSERT(tp_size_ >= 1 && tp_rank_ >= 0 && tp_rank_ < tp_size_);
    if (const std::string why = tp_problem(m, tp_size_); !why.empty()) fail(why);
    for (Op op : {Op::kCrossEntropyShardStats, Op::kCrossEntropyShardBackward})
      if (!be_.supports(op, act)) fail("the " + be_.name() + " backend cannot compute " + op_name(op) + ", which tensor parallelism needs");
  }
  const TpWidths w = tp_widths(m, tp_rank_, tp_size_);
  v0_ = w.v0;
  V_ = w.V;
  tensors_ = tp_ ? tp_param_tensors(m, tp_rank_, tp_size_) : model_param_tensors(m);
  num_params_ = tensors_.back().offset + tensors_.back().numel;
  // Allocated in one go so that a failure frees what was taken (the destructor does not run).
  struct Guard {
    Backend& be;
    std::vector<void*> held;
    void* take(size_t bytes) { held.push_back(be.alloc(bytes)); return held.back(); }
    ~Guard() { for (void* p : held) be.free(p); }
  } g{be_, {}};
  params_ = static_cast<float*>(g.take(num_params_ * sizeof(float)));
  grads_ = static_cast<float*>(g.take(num_params_ * sizeof(float)));
  params_act_ = act == DType::kF32 ? params_ : g.take(num_params_ * dtype_size(act));
  const bool f32 = act == DType::kF32;
  if (llama_) {
    acts_ = g.take(model_detail::llama_acts_bytes(m, max_B, m.seq_len, act, &w, attn_));
    dacts_ = g.take(model_detail::llama_dacts_bytes(m, max_B, m.seq_len, act, &w));
    logits_ = model_detail::llama_logits(m, max_B, m.seq_len, acts_, act, &w, attn_);
    zero_wpe_ = g.take((size_t)m.seq_len * m.d_model * dtype_size(act));  // alloc() zeroes
    dwpe_ = static_cast<float*>(g.take((size_t)m.seq_len * m.d_model * sizeof(float)));
  } else {
    acts_ = g.take(f32 ? layout_acts<float>(m, w, max_B, m.seq_len, nullptr, nullptr, attn_) : layout_acts<bf16>(m, w, max_B, m.seq_len, nullptr, nullptr, attn_));
    dacts_ = g.take(f32 ? layout_dacts<float>(m, w, max_B, m.seq_len, nullptr, nullptr) : layout_dacts<bf16>(m, w, max_B, m.seq_len, nullptr, nullptr));
    if (f32) {
      Acts<float> A;
      layout_acts<float>(m, w, max_B, m.seq_len, acts_, &A, attn_);
      logits_ = A.logits;
    } else {
      Acts<bf16> A;
      layout_acts<bf16>(m, w, max_B, m.seq_len, acts_, &A, attn_);
      logits_ = A.logits;
    }
    // Tensor parallelism: the position embedding is added on rank 0 only (the embedding's
    // all-reduce sums the ranks' rows), so the others add zeros.
    if (tp_ && tp_rank_ > 0) zero_wpe_ = g.take((size_t)m.seq_len * m.d_model * sizeof(float));  // alloc() zeroes
  }
  if (tp_) {
    lse_ = static_cast<float*>(g.take(2 * (size_t)tp_size_ * max_B * m.seq_len * sizeof(float)));
    local_ids_ = static_cast<int32_t*>(g.take((size_t)max_B * m.seq_len * sizeof(int32_t)));
  }
  tokens_ = static_cast<int32_t*>(g.take(2 * (size_t)max_B * m.seq_len * sizeof(int32_t)));
  g.held.clear();
}

GPT::~GPT() {
  be_.free(params_);
  be_.free(grads_);
  if (params_act_ != params_) be_.free(params_act_);
  be_.free(acts_);
  be_.free(dacts_);
  be_.free(tokens_);
  if (zero_wpe_) be_.free(zero_wpe_);
  if (dwpe_) be_.free(dwpe_);
  if (lse_) be_.free(lse_);
  if (local_ids_) be_.free(local_ids_);
}

std::vector<std::pair<size_t, size_t>> GPT::grad_buckets() const {
  return tp_ ? tp_grad_buckets(cfg_, tp_rank_, tp_size_) : model_grad_buckets(cfg_);
}

namespace {

// Tensor t of the seeded initialisation (GPT-2's: N(0, 0.02), the residual projections
// N(0, 0.02 / sqrt(2 L)), norms' weights 1, biases 0), drawing from rng in the table's order.
void initial_tensor(const ModelConfig& m, const ParamTensor& t, Rng& rng, float* p) {
  const float std_proj = 0.02f / std::sqrt(2.0f * m.n_layer);
  const std::string& n = t.name;
  auto ends_with = [&](const char* s) { return n.size() >= std::strlen(s) && n.compare(n.size() - std::strlen(s), std::string::npos, s) == 0; };
  if (ends_with("ln_1.weight") || ends_with("ln_2.weight") || n == "ln_f.weight" || ends_with("layernorm.weight") || n == "norm.weight") {
    for (size_t i = 0; i < t.numel; i++) p[i] = 1.0f;
  } else if (ends_with(".bias")) {
    for (size_t i = 0; i < t.numel; i++) p[i] = 0.0f;
  } else {
    const bool proj = ends_with("attn.c_proj.weight") || ends_with("mlp.c_proj.weight") || ends_with("self_attn.o_proj.weight") ||
                      ends_with("mlp.down_proj.weight");
    const float sd = proj ? std_proj : 0.02f;
    for (size_t i = 0; i < t.numel; i++) p[i] = sd * rng.normal();
  }
}

}  // namespace

void GPT::init_weights(uint64_t seed) {
  if (!tp_) {
    std::vector<float> full = initial_params(cfg_, seed);
    be_.upload(params_, full.data(), num_params_ * sizeof(float));
    return;
  }
  // Tensor parallelism: the full model's initialisation one tensor at a time (the same draws in
  // the same order), each sliced as it is made, so a rank never holds the full model.
  const std::vector<ParamTensor> full = model_param_tensors(cfg_);
  std::vector<float> local(num_params_), tensor;
  Rng rng(seed);
  size_t made = 0;  // tensors made so far; tensor holds full[made - 1]
  tp_for_each_run(cfg_, tp_rank_, tp_size_, [&](size_t fo, size_t lo, size_t n) {
    while (made == 0 || fo >= full[made - 1].offset + full[made - 1].numel) {
      tensor.resize(full[made].numel);
      initial_tensor(cfg_, full[made], rng, tensor.data());
      made++;
    }
    std::memcpy(local.data() + lo, tensor.data() + (fo - full[made - 1].offset), n * sizeof(float));
  });
  be_.upload(params_, local.data(), num_params_ * sizeof(float));
}

std::vector<float> GPT::initial_params(const ModelConfig& m, uint64_t seed) {
  const std::vector<ParamTensor> tensors = model_param_tensors(m);
  std::vector<float> host(tensors.back().offset + tensors.back().numel);
  Rng rng(seed);
  for (const auto& t : tensors) initial_tensor(m, t, rng, host.data() + t.offset);
  return host;
}

void GPT::check_tokens(const int32_t* ids, size_t n) const {
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= cfg_.vocab_size)
      fail("token id " + std::to_string(ids[i]) + " is outside the model's vocabulary [0, " +
           std::to_string(cfg_.vocab_size) + "): the dataset's tokenizer does not match model.vocab_size");
}

float GPT::forward(const int32_t* inputs, const int32_t* targets, int B, int T, float loss_scale) {
  TD_ASSERT(targets != nullptr && std::isfinite(loss_scale));
  fuse_scale_ = loss_scale;
  struct Reset {  // also when forward throws
    float& s;
    ~Reset() { s = std::numeric_limits<float>::quiet_NaN(); }
  } reset{fuse_scale_};
  return forward(inputs, targets, B, T);
}

template <class Act>
void GPT::classifier_forward(float* losses, Act* logits, const int32_t* d_tg, int BT) {
  ActivationOps<Act>& ops = be_.ops<Act>();
  if (tp_) {
    tp_cross_entropy<Act>(losses, logits, d_tg, BT);
    return;
  }
  if (std::isnan(fuse_scale_)) {
    ops.softmax_cross_entropy(losses, static_cast<Act*>(nullptr), logits, d_tg, BT, V_, 0.0f);
    return;
  }
  // Loss and dlogits = (softmax - onehot) * scale in one pass, over the logits.
  ops.softmax_cross_entropy(losses, logits, logits, d_tg, BT, V_, fuse_scale_);
  dlogits_ready_ = true;
  dlogits_scale_ = fuse_scale_;
}

template <class Act>
void GPT::classifier_backward(float* losses, Act* logits, const int32_t* d_tg, int BT, float loss_scale) {
  ActivationOps<Act>& ops = be_.ops<Act>();
  if (dlogits_ready_) {  // forward's fused classifier made the gradient already
    TD_ASSERT(loss_scale == dlogits_scale_);
    return;
  }
  // Loss -> logits: dlogits = (softmax - onehot) * loss_scale, written over the logits.
  if (tp_)  // softmax over the full vocabulary: exp(z - lse) with the forward's combined lse
    ops.cross_entropy_shard_backward(logits, logits, lse_, d_tg, BT, V_, v0_, loss_scale);
  else
    ops.softmax_cross_entropy(losses, logits, logits, d_tg, BT, V_, loss_scale);
}
template void GPT::classifier_forward<float>(float*, float*, const int32_t*, int);
template void GPT::classifier_forward<bf16>(float*, bf16*, const int32_t*, int);
template void GPT::classifier_backward<float>(float*, float*, const int32_t*, int, float);
template void GPT::classifier_backward<bf16>(float*, bf16*, const int32_t*, int, float);

float GPT::forward(const int32_t* inputs, const int32_t* targets, int B, int T) {
  TD_ASSERT(B >= 1 && B <= max_B_ && T >= 1 && T <= cfg_.seq_len);
  dlogits_ready_ = false;
  const size_t BT = (size_t)B * T;
  check_tokens(inputs, BT);
  int32_t* d_in = tokens_;
  int32_t* d_tg = tokens_ + (size_t)max_B_ * cfg_.seq_len;
  be_.upload(d_in, inputs, BT * sizeof(int32_t));
  if (targets) {
    check_tokens(targets, BT);
    be_.upload(d_tg, targets, BT * sizeof(int32_t));
  }
  if (tp_) {
    // The vocabulary-parallel embedding: this rank's rows [v0, v0 + V) by local id, -1 elsewhere.
    std::vector<int32_t> local(BT);
    for (size_t i = 0; i < BT; i++) local[i] = inputs[i] >= v0_ && inputs[i] < v0_ + V_ ? inputs[i] - v0_ : -1;
    be_.upload(local_ids_, local.data(), BT * sizeof(int32_t));
  }
  B_ = B;
  T_ = T;
  has_targets_ = targets != nullptr;
  const int32_t* tg = targets ? d_tg : nullptr;
  const float* losses = llama_ ? (act_ == DType::kF32 ? llama_forward_impl<float>(d_in, tg, B, T) : llama_forward_impl<bf16>(d_in, tg, B, T))
                               : (act_ == DType::kF32 ? forward_impl<float>(d_in, tg, B, T) : forward_impl<bf16>(d_in, tg, B, T));
  if (!targets) return std::numeric_limits<float>::quiet_NaN();
  std::vector<float> host(BT);
  be_.download(host.data(), losses, BT * sizeof(float));
  double sum = 0.0;
  for (float v : host) sum += v;
  return (float)(sum / BT);
}

template <class Act>
const float* GPT::forward_impl(const int32_t* d_in, const int32_t* d_tg, int B, int T) {
  const TpWidths w = tp_widths(cfg_, tp_rank_, tp_size_);
  const int C = cfg_.d_model, NH = w.NH, CL = w.NH * w.hs, F = w.F, V = w.V;
  const size_t BT = (size_t)B * T;
  ActivationOps<Act>& ops = be_.ops<Act>();
  Acts<Act> A;
  layout_acts<Act>(cfg_, w, max_B_, cfg_.seq_len, acts_, &A, attn_);
  // Tensor parallelism (Megatron-LM sec. 3): the residual stream is replicated; each row-parallel
  // output (embedding, attn.c_proj, mlp.c_proj) is a partial sum, all-reduced before the residual
  // add, with its replicated bias added on rank 0 alone.
  auto tp_sum = [&](Act* x, size_t n) {
    tp_reduce(x, n);
  };
  auto row_bias = [&](const Act* b) { return tp_rank_ == 0 ? b : nullptr; };
  // The weights the ops read: the fp32 master weights themselves, or their bf16 copy, refreshed
  // here because the optimizer (or a checkpoint load) may have changed the master weights.
  if constexpr (!std::is_same_v<Act, float>) be_.convert(static_cast<Act*>(params_act_), params_, num_params_);
  const Act* P = static_cast<const Act*>(params_act_);
  model_detail::WeightView<Act, ParamSource> wv(P, param_src_, grad_buckets());  // ZeRO-3: bucket by bucket
  auto W = [&](int l, int k) { return wv.at(tensors_[2 + l * kPerBlock + k].offset); };

  wv.need(0);
  const Act* wpe = zero_wpe_ ? static_cast<const Act*>(zero_wpe_) : wv.at(tensors_[1].offset);
  ops.encoder_forward(A.encoded, tp_ ? local_ids_ : d_in, wv.at(tensors_[0].offset), wpe, B, T, C);
  tp_sum(A.encoded, BT * C);
  const Act* x = A.encoded;  // residual stream (B,T,C)
  for (int l = 0; l < cfg_.n_layer; l++) {
    LayerActs<Act>& L = A.layers[l];
    wv.need(1 + l);
    ops.layernorm_forward(L.ln1, L.ln1_mean, L.ln1_rstd, x, W(l, kLn1W), W(l, kLn1B), (int)BT, C);
    ops.matmul_forward(L.qkv, L.ln1, W(l, kAttnW), W(l, kAttnB), (int)BT, C, 3 * CL);
    model_detail::attention_forward(ops, L.atty, L.att, L.lse, L.qkv, B, T, CL, NH, NH);
    ops.matmul_forward(L.attproj, L.atty, W(l, kProjW), row_bias(W(l, kProjB)), (int)BT, CL, C);
    tp_sum(L.attproj, BT * C);
    ops.residual_forward(L.res2, x, L.attproj, BT * C);
    ops.layernorm_forward(L.ln2, L.ln2_mean, L.ln2_rstd, L.res2, W(l, kLn2W), W(l, kLn2B), (int)BT, C);
    if (gelu_ == GeluFusion::kEpilogue) {
      ops.matmul_gelu_forward(L.fch_gelu, L.fch, L.ln2, W(l, kFcW), W(l, kFcB), (int)BT, C, F);
    } else {
      ops.matmul_forward(L.fch, L.ln2, W(l, kFcW), W(l, kFcB), (int)BT, C, F);
      ops.gelu_forward(L.fch_gelu, L.fch, BT * F);
    }
    ops.matmul_forward(L.fcproj, L.fch_gelu, W(l, kFcProjW), row_bias(W(l, kFcProjB)), (int)BT, F, C);
    tp_sum(L.fcproj, BT * C);
    ops.residual_forward(L.res3, L.res2, L.fcproj, BT * C);
    x = L.res3;
    wv.done(1 + l);
  }
  const size_t nt = tensors_.size();
  const size_t lnf = 2 + (size_t)cfg_.n_layer * kPerBlock;
  wv.need(cfg_.n_layer + 1);
  ops.layernorm_forward(A.lnf, A.lnf_mean, A.lnf_rstd, x, wv.at(tensors_[lnf].offset), wv.at(tensors_[lnf + 1].offset), (int)BT, C);
  const Act* head = cfg_.tie_embeddings ? wv.at(tensors_[0].offset) : wv.at(tensors_[nt - 1].offset);
  ops.matmul_forward(A.logits, A.lnf, head, static_cast<const Act*>(nullptr), (int)BT, C, V);
  wv.done(cfg_.n_layer + 1);
  wv.done(0);
  if (!d_tg) return nullptr;
  classifier_forward<Act>(A.losses, A.logits, d_tg, (int)BT);
  return A.losses;
}

// The vocabulary-parallel cross-entropy (Megatron-LM sec. 3, "parallel cross-entropy"): each rank
// has logits (BT, V_local) for token ids [v0, v0 + V_local); loss = log sum_v exp(z_v) - z_target
// over the FULL vocabulary, from each rank's (lse, target logit) per row: lse = log sum_r
// exp(lse_r) (max-subtracted), z_target = the sum of the target logits (0 on ranks without it).
// Gathers 2 BT floats per rank instead of the logits. losses (BT) and lse_ (BT, the full lse for
// backward) receive the results.
template <class Act>
void GPT::tp_cross_entropy(float* losses, const Act* logits, const int32_t* d_tg, int BT) {
  const size_t n = 2 * (size_t)BT;
  float* mine = lse_ + (size_t)tp_rank_ * n;
  be_.ops<Act>().cross_entropy_shard_stats(mine, mine + BT, logits, d_tg, BT, V_, v0_);
  tp_->all_gather(lse_, n);
  std::vector<float> all((size_t)tp_size_ * n), loss(BT), lse(BT);
  be_.download(all.data(), lse_, all.size() * sizeof(float));
  for (int i = 0; i < BT; i++) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int r = 0; r < tp_size_; r++) mx = std::max(mx, all[(size_t)r * n + i]);
    double s = 0.0, target = 0.0;
    for (int r = 0; r < tp_size_; r++) {
      s += std::exp((double)all[(size_t)r * n + i] - mx);
      target += all[(size_t)r * n + BT + i];
    }
    lse[i] = (float)(mx + std::log(s));
    loss[i] = (float)(mx + std::log(s) - target);
  }
  be_.upload(losses, loss.data(), BT * sizeof(float));
  be_.upload(lse_, lse.data(), BT * sizeof(float));  // backward reads the full lse from here
}
template void GPT::tp_cross_entropy<float>(float*, const float*, const int32_t*, int);
template void GPT::tp_cross_entropy<bf16>(float*, const bf16*, const int32_t*, int);

void GPT::tp_reduce(bf16* x, size_t n) {
  if (!tp_) return;
  std::vector<bf16> h(n);
  std::vector<float> f(n);
  be_.download(h.data(), x, n * sizeof(bf16));
  for (size_t i = 0; i < n; i++) f[i] = to_float(h[i]);
  tp_->all_reduce_sum(f.data(), n);
  for (size_t i = 0; i < n; i++) h[i] = to_bf16(f[i]);
  be_.upload(x, h.data(), n * sizeof(bf16));
}

const float* GPT::logits() const {
  TD_ASSERT(act_ == DType::kF32);
  return static_cast<const float*>(logits_);
}

void GPT::download_logits(float* dst, size_t first_row, size_t rows) const {
  const size_t V = cfg_.vocab_size;
  TD_ASSERT(first_row + rows <= (size_t)B_ * T_);
  if (tp_) {
    // Each rank's columns [v0, v0 + V_local) of the rows, padded to the widest shard and
    // all-gathered through a backend buffer (every rank of the group calls this alike).
    const size_t widest = (size_t)(cfg_.vocab_size + tp_size_ - 1) / tp_size_, n = rows * widest;
    std::vector<float> mine(n, 0.0f), all(n * tp_size_);
    if (act_ == DType::kF32) {
      for (size_t r = 0; r < rows; r++) be_.download(&mine[r * widest], logits() + (first_row + r) * V_, V_ * sizeof(float));
    } else {
      std::vector<bf16> row(V_);
      for (size_t r = 0; r < rows; r++) {
        be_.download(row.data(), static_cast<const bf16*>(logits_) + (first_row + r) * V_, V_ * sizeof(bf16));
        for (int v = 0; v < V_; v++) mine[r * widest + v] = to_float(row[v]);
      }
    }
    float* buf = static_cast<float*>(be_.alloc(all.size() * sizeof(float)));
    be_.upload(buf + (size_t)tp_rank_ * n, mine.data(), n * sizeof(float));
    tp_->all_gather(buf, n);
    be_.download(all.data(), buf, all.size() * sizeof(float));
    be_.free(buf);
    for (int q = 0; q < tp_size_; q++) {
      const TpWidths wq = tp_widths(cfg_, q, tp_size_);
      for (size_t r = 0; r < rows; r++) std::memcpy(dst + r * V + wq.v0, &all[(size_t)q * n + r * widest], wq.V * sizeof(float));
    }
    return;
  }
  if (act_ == DType::kF32) {
    be_.download(dst, logits() + first_row * V, rows * V * sizeof(float));
    return;
  }
  std::vector<bf16> tmp(rows * V);
  be_.download(tmp.data(), static_cast<const bf16*>(logits_) + first_row * V, tmp.size() * sizeof(bf16));
  for (size_t i = 0; i < tmp.size(); i++) dst[i] = to_float(tmp[i]);
}

void GPT::zero_grad() {
  if (grads_) be_.zero(grads_, num_params_ * sizeof(float));
}

void GPT::release_grads() {
  be_.free(grads_);
  grads_ = nullptr;
}

void GPT::set_param_source(ParamSource* src) {
  TD_ASSERT(!src || act_ == DType::kF32);
  param_src_ = src;
}

void GPT::release_params() {
  TD_ASSERT(act_ == DType::kF32);  // params_act_ is params_
  be_.free(params_);
  params_ = nullptr;
  params_act_ = nullptr;
}

void GPT::acquire_params() {
  if (params_) return;
  params_ = static_cast<float*>(be_.alloc(num_params_ * sizeof(float)));
  params_act_ = params_;
}

void GPT::backward(float loss_scale) {
  TD_ASSERT(has_targets_);
  if (llama_ && act_ == DType::kF32)
    llama_backward_impl<float>(loss_scale);
  else if (llama_)
    llama_backward_impl<bf16>(loss_scale);
  else if (act_ == DType::kF32)
    backward_impl<float>(loss_scale);
  else
    backward_impl<bf16>(loss_scale);
  has_targets_ = false;  // the logits now hold gradients
  dlogits_ready_ = false;
}

template <class Act>
void GPT::backward_impl(float loss_scale) {
  const int B = B_, T = T_;
  const TpWidths w = tp_widths(cfg_, tp_rank_, tp_size_);
  const int C = cfg_.d_model, NH = w.NH, CL = w.NH * w.hs, F = w.F, V = w.V;
  const size_t BT = (size_t)B * T;
  ActivationOps<Act>& ops = be_.ops<Act>();
  Acts<Act> A;
  layout_acts<Act>(cfg_, w, max_B_, cfg_.seq_len, acts_, &A, attn_);
  DActs<Act> D;
  layout_dacts<Act>(cfg_, w, max_B_, cfg_.seq_len, dacts_, &D);
  const Act* P = static_cast<const Act*>(params_act_);
  const auto buckets = grad_buckets();
  model_detail::WeightView<Act, ParamSource> wv(P, param_src_, buckets);  // ZeRO-3: lent with each open bucket
  float* G = grads_;
  TD_ASSERT(G || sink_);
  // Tensor parallelism: the input gradient of each column-parallel layer (c_attn, c_fc, the
  // vocabulary-parallel head) is a partial sum over the group: all-reduced (the conjugate of the
  // forward's identity, Megatron-LM's operator f) before it joins the replicated residual stream.
  auto tp_sum = [&](Act* x, size_t n) {
    tp_reduce(x, n);
  };
  // With a GradSink, each bucket's gradients go to the buffer it opened (gpt.h GradSink).
  const int last = cfg_.n_layer + 1;  // the bucket of ln_f (and an untied lm_head)
  std::vector<float*> open(buckets.size(), nullptr);
  auto open_bucket = [&](int b) {
    if (sink_) open[b] = sink_->open(b);
    wv.need(b);
  };
  auto close_bucket = [&](int b) {
    if (sink_) sink_->close(b);
    wv.done(b);
  };
  auto dT = [&](size_t t) {  // the gradient of tensor t
    if (!sink_) return G + tensors_[t].offset;
    const int b = t < 2 ? 0 : t >= 2 + (size_t)cfg_.n_layer * kPerBlock ? last : 1 + (int)((t - 2) / kPerBlock);
    TD_ASSERT(open[b]);
    return open[b] + (tensors_[t].offset - buckets[b].first);
  };
  auto W = [&](int l, int k) { return wv.at(tensors_[2 + l * kPerBlock + k].offset); };
  auto dW = [&](int l, int k) { return dT(2 + l * kPerBlock + k); };
  const int32_t* d_in = tokens_;
  const int32_t* d_tg = tokens_ + (size_t)max_B_ * cfg_.seq_len;

  classifier_backward<Act>(A.losses, A.logits, d_tg, (int)BT, loss_scale);
  const size_t nt = tensors_.size();
  const size_t lnf = 2 + (size_t)cfg_.n_layer * kPerBlock;
  const size_t head_t = cfg_.tie_embeddings ? 0 : nt - 1;
  open_bucket(last);
  if (cfg_.tie_embeddings) open_bucket(0);
  // logits = lnf @ head^T: dlnf (in dc), dhead.
  ops.matmul_backward(D.dc, dT(head_t), nullptr, A.logits, A.lnf, wv.at(tensors_[head_t].offset), (int)BT, C, V, true);
  tp_sum(D.dc, BT * C);
  // lnf = LN(x_L): dres = d x_L.
  const Act* xL = cfg_.n_layer > 0 ? A.layers.back().res3 : A.encoded;
  be_.zero(D.dres, BT * C * sizeof(Act));
  ops.layernorm_backward(D.dres, dT(lnf), dT(lnf + 1), D.dc, xL,
                         wv.at(tensors_[lnf].offset), A.lnf_mean, A.lnf_rstd, (int)BT, C);
  close_bucket(last);
  for (int l = cfg_.n_layer - 1; l >= 0; l--) {
    open_bucket(1 + l);
    LayerActs<Act>& L = A.layers[l];
    const Act* x = l == 0 ? A.encoded : A.layers[l - 1].res3;
    // res3 = res2 + fcproj: d fcproj = dres, and dres carries on as d res2.
    // fch_gelu = GELU(fch): d fch (in df2) through the GELU, overwritten either way.
    if (gelu_ == GeluFusion::kEpilogue) {
      ops.matmul_backward_dgelu(D.df2, dW(l, kFcProjW), dW(l, kFcProjB), D.dres, L.fch_gelu, W(l, kFcProjW), L.fch,
                                (int)BT, F, C);
    } else {
      ops.matmul_backward(D.df1, dW(l, kFcProjW), dW(l, kFcProjB), D.dres, L.fch_gelu, W(l, kFcProjW), (int)BT, F, C, true);
      be_.zero(D.df2, BT * F * sizeof(Act));
      ops.gelu_backward(D.df2, L.fch, D.df1, BT * F);
    }
    ops.matmul_backward(D.dc, dW(l, kFcW), dW(l, kFcB), D.df2, L.ln2, W(l, kFcW), (int)BT, C, F, true);
    tp_sum(D.dc, BT * C);
    ops.layernorm_backward(D.dres, dW(l, kLn2W), dW(l, kLn2B), D.dc, L.res2, W(l, kLn2W), L.ln2_mean, L.ln2_rstd, (int)BT, C);
    // res2 = x + attproj: d attproj = dres, and dres carries on as d x.
    ops.matmul_backward(D.dc, dW(l, kProjW), dW(l, kProjB), D.dres, L.atty, W(l, kProjW), (int)BT, CL, C, true);
    be_.zero(D.dqkv, BT * 3 * CL * sizeof(Act));
    model_detail::attention_backward(ops, D.dqkv, D.dc, L.qkv, L.atty, L.att, L.lse, B, T, CL, NH, NH);
    ops.matmul_backward(D.dc, dW(l, kAttnW), dW(l, kAttnB), D.dqkv, L.ln1, W(l, kAttnW), (int)BT, C, 3 * CL, true);
    tp_sum(D.dc, BT * C);
    ops.layernorm_backward(D.dres, dW(l, kLn1W), dW(l, kLn1B), D.dc, x, W(l, kLn1W), L.ln1_mean, L.ln1_rstd, (int)BT, C);
    close_bucket(1 + l);
  }
  if (!cfg_.tie_embeddings) open_bucket(0);
  // Under TP every rank adds the full (replicated) position gradient; the token rows are its own.
  ops.encoder_backward(dT(0), dT(1), D.dres, tp_ ? local_ids_ : d_in, B, T, C);
  close_bucket(0);
}

template const float* GPT::forward_impl<float>(const int32_t*, const int32_t*, int, int);
template const float* GPT::forward_impl<bf16>(const int32_t*, const int32_t*, int, int);
template void GPT::backward_impl<float>(float);
template void GPT::backward_impl<bf16>(float);

}  // namespace td
