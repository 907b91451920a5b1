// The Llama block of td::GPT (engine/model/gpt.h): its activation layout, forward and backward,
// for the families that use it (engine/model/family.h: llama, and qwen2 with q/k/v biases).
//
// Per block (Touvron et al. 2023; transformers' LlamaDecoderLayer), x the residual stream:
//   h = rmsnorm(x) * input_layernorm;  q|k|v = h @ [q_proj | k_proj | v_proj]^T (+ [q|k|v biases]);
//   rope(q, k);
//   x = x + o_proj(attention(q, k, v))          (causal, NKV = n_kv_head key/value heads)
//   h = rmsnorm(x) * post_attention_layernorm;  g|u = h @ [gate_proj | up_proj]^T;
//   x = x + down_proj(silu(g) * u)
// then norm and the LM head (embed_tokens when tied, else lm_head). The fused matrices are the
// adjacent tensors of llama_param_tensors (engine/model/shape.h), read as one: no copy.
// There is no position embedding; the embedding lookup reuses encoder_forward with an all-zero
// wpe (T, C) and discards encoder_backward's position gradient.
#include <cmath>
#include <type_traits>
#include <vector>

#include "engine/common/error.h"
#include "engine/model/gpt.h"
#include "engine/model/model_detail.h"
#include "engine/model/shape.h"
#include "engine/model/tensor_parallel.h"

namespace td {
namespace {

using model_detail::Carver;

// Forward activations kept for backward (sized for (maxB, maxT), used from their start for the
// actual (B, T)); the planned layout of llama_activation_bytes. QKV = C + 2 KV hs.
template <class Act>
struct LayerActs {
  Act* ln1;       // (B,T,C) input_layernorm output
  float* rstd1;   // (B,T)
  Act* qkv;       // (B,T,QKV) q|k|v, RoPE applied in place to q and k
  Act* atty;      // (B,T,C) attention output before o_proj
  Act* att;       // (B,NH,T,T) softmax probabilities (attention "simple"; else null)
  float* lse;     // (B,NH,T) rows' log-sum-exp (attention "fused"; else null)
  Act* attproj;   // (B,T,C) o_proj output
  Act* res2;      // (B,T,C) residual after attention
  Act* ln2;       // (B,T,C) post_attention_layernorm output
  float* rstd2;   // (B,T)
  Act* gateup;    // (B,T,2F) rows [gate | up]
  Act* swiglu;    // (B,T,F) silu(gate) * up
  Act* down;      // (B,T,C) down_proj output
  Act* res3;      // (B,T,C) block output
};
template <class Act>
struct Acts {
  Act* encoded;  // (B,T,C) embed_tokens[inputs]
  std::vector<LayerActs<Act>> layers;
  Act* lnf;      // (B,T,C)
  float* rstdf;  // (B,T)
  Act* logits;   // (B,T,V); overwritten by dlogits in backward
  float* losses; // (B,T)
};
template <class Act>
struct DActs {
  Act* dres;     // (B,T,C) gradient of the residual stream
  Act* dc;       // (B,T,C)
  Act* dqkv;     // (B,T,QKV)
  Act* dgateup;  // (B,T,2F)
  Act* dswiglu;  // (B,T,F)
};

// q|k|v width of a rank (w: tp_widths; the full model's at tp = 1): (NH + 2 KV) hs.
size_t qkv_width(const TpWidths& w) { return ((size_t)w.NH + 2 * (size_t)w.KV) * w.hs; }

// Under tensor parallelism qkv, atty, att, gate|up, swiglu and the logits have the rank's local
// widths (w); the residual stream is full.
template <class Act>
size_t layout_acts(const ModelConfig& m, const TpWidths& w, int B, int T, void* base, Acts<Act>* a, AttentionKernel attn) {
  const size_t BT = (size_t)B * T, C = m.d_model, F = w.F, V = w.V, QKV = qkv_width(w), CL = (size_t)w.NH * w.hs;
  Carver k(base);
  Acts<Act> tmp;
  Acts<Act>& A = a ? *a : tmp;
  A.encoded = k.take<Act>(BT * C);
  A.layers.resize(m.n_layer);
  for (auto& L : A.layers) {
    L.ln1 = k.take<Act>(BT * C);
    L.rstd1 = k.take<float>(BT);
    L.qkv = k.take<Act>(BT * QKV);
    L.atty = k.take<Act>(BT * CL);
    model_detail::attention_saved(k, attn, B, w.NH, T, &L.att, &L.lse);
    L.attproj = k.take<Act>(BT * C);
    L.res2 = k.take<Act>(BT * C);
    L.ln2 = k.take<Act>(BT * C);
    L.rstd2 = k.take<float>(BT);
    L.gateup = k.take<Act>(BT * 2 * F);
    L.swiglu = k.take<Act>(BT * F);
    L.down = k.take<Act>(BT * C);
    L.res3 = k.take<Act>(BT * C);
  }
  A.lnf = k.take<Act>(BT * C);
  A.rstdf = k.take<float>(BT);
  A.logits = k.take<Act>(BT * V);
  A.losses = k.take<float>(BT);
  return k.bytes();
}

template <class Act>
size_t layout_dacts(const ModelConfig& m, const TpWidths& w, int B, int T, void* base, DActs<Act>* d) {
  const size_t BT = (size_t)B * T, C = m.d_model, F = w.F, QKV = qkv_width(w);
  Carver k(base);
  DActs<Act> tmp;
  DActs<Act>& D = d ? *d : tmp;
  D.dres = k.take<Act>(BT * C);
  D.dc = k.take<Act>(BT * C);
  D.dqkv = k.take<Act>(BT * QKV);
  D.dgateup = k.take<Act>(BT * 2 * F);
  D.dswiglu = k.take<Act>(BT * F);
  return k.bytes();
}

// Index of each tensor of layer l in tensors(): embed_tokens, then model_tensors_per_block per
// layer (shape.h): these 9, then with q/k/v biases (qwen2) the three biases from kQBias on.
enum LayerTensor { kIn, kQ, kK, kV, kO, kPost, kGate, kUp, kDown, kQBias };

}  // namespace

namespace model_detail {

size_t llama_acts_bytes(const ModelConfig& m, int B, int T, DType act, const TpWidths* w, AttentionKernel attn) {
  const TpWidths ww = w ? *w : tp_widths(m, 0, 1);
  return act == DType::kF32 ? layout_acts<float>(m, ww, B, T, nullptr, nullptr, attn) : layout_acts<bf16>(m, ww, B, T, nullptr, nullptr, attn);
}
size_t llama_dacts_bytes(const ModelConfig& m, int B, int T, DType act, const TpWidths* w) {
  const TpWidths ww = w ? *w : tp_widths(m, 0, 1);
  return act == DType::kF32 ? layout_dacts<float>(m, ww, B, T, nullptr, nullptr) : layout_dacts<bf16>(m, ww, B, T, nullptr, nullptr);
}
void* llama_logits(const ModelConfig& m, int B, int T, void* base, DType act, const TpWidths* w, AttentionKernel attn) {
  const TpWidths ww = w ? *w : tp_widths(m, 0, 1);
  if (act == DType::kF32) {
    Acts<float> A;
    layout_acts<float>(m, ww, B, T, base, &A, attn);
    return A.logits;
  }
  Acts<bf16> A;
  layout_acts<bf16>(m, ww, B, T, base, &A, attn);
  return A.logits;
}

}  // namespace model_detail

template <class Act>
const float* GPT::llama_forward_impl(const int32_t* d_in, const int32_t* d_tg, int B, int T) {
  // Tensor parallelism as in GPT::forward_impl (gpt.cpp): local widths w, an all-reduce after the
  // embedding, o_proj and down_proj.
  const TpWidths w = tp_widths(cfg_, tp_rank_, tp_size_);
  const int C = cfg_.d_model, NH = w.NH, KV = w.KV, F = w.F, V = w.V;
  const int hs = w.hs, QKV = (int)qkv_width(w), CL = NH * hs;
  const float eps = (float)cfg_.rms_norm_eps, theta = (float)cfg_.rope_theta;
  const int BT = B * T;
  ActivationOps<Act>& ops = be_.ops<Act>();
  Acts<Act> A;
  layout_acts<Act>(cfg_, w, max_B_, cfg_.seq_len, acts_, &A, attn_);
  if constexpr (!std::is_same_v<Act, float>) be_.convert(static_cast<Act*>(params_act_), params_, num_params_);
  const Act* P = static_cast<const Act*>(params_act_);
  model_detail::WeightView<Act, ParamSource> wv(P, param_src_, grad_buckets());  // ZeRO-3: bucket by bucket
  const size_t per = model_tensors_per_block(cfg_);
  auto W = [&](int l, int k) { return wv.at(tensors_[1 + (size_t)l * per + k].offset); };
  auto tp_sum = [&](Act* x, size_t n) {
    tp_reduce(x, n);
  };

  wv.need(0);
  ops.encoder_forward(A.encoded, tp_ ? local_ids_ : d_in, wv.at(tensors_[0].offset), static_cast<const Act*>(zero_wpe_), B, T, C);
  tp_sum(A.encoded, (size_t)BT * C);
  const Act* x = A.encoded;  // residual stream (B,T,C)
  for (int l = 0; l < cfg_.n_layer; l++) {
    LayerActs<Act>& L = A.layers[l];
    wv.need(1 + l);
    ops.rmsnorm_forward(L.ln1, L.rstd1, x, W(l, kIn), BT, C, eps);
    ops.matmul_forward(L.qkv, L.ln1, W(l, kQ), qkv_bias_ ? W(l, kQBias) : nullptr, BT, C, QKV);  // q|k|v fused
    ops.rope_forward(L.qkv, B, T, NH, KV, hs, theta);
    model_detail::attention_forward(ops, L.atty, L.att, L.lse, L.qkv, B, T, CL, NH, KV);
    ops.matmul_forward(L.attproj, L.atty, W(l, kO), static_cast<const Act*>(nullptr), BT, CL, C);
    tp_sum(L.attproj, (size_t)BT * C);
    ops.residual_forward(L.res2, x, L.attproj, (size_t)BT * C);
    ops.rmsnorm_forward(L.ln2, L.rstd2, L.res2, W(l, kPost), BT, C, eps);
    ops.matmul_forward(L.gateup, L.ln2, W(l, kGate), static_cast<const Act*>(nullptr), BT, C, 2 * F);  // gate|up fused
    ops.swiglu_forward(L.swiglu, L.gateup, BT, F);
    ops.matmul_forward(L.down, L.swiglu, W(l, kDown), static_cast<const Act*>(nullptr), BT, F, C);
    tp_sum(L.down, (size_t)BT * C);
    ops.residual_forward(L.res3, L.res2, L.down, (size_t)BT * C);
    x = L.res3;
    wv.done(1 + l);
  }
  const size_t norm = 1 + (size_t)cfg_.n_layer * per;
  wv.need(cfg_.n_layer + 1);
  ops.rmsnorm_forward(A.lnf, A.rstdf, x, wv.at(tensors_[norm].offset), BT, C, eps);
  const Act* head = wv.at(tensors_[cfg_.tie_embeddings ? 0 : norm + 1].offset);
  ops.matmul_forward(A.logits, A.lnf, head, static_cast<const Act*>(nullptr), BT, C, V);
  wv.done(cfg_.n_layer + 1);
  wv.done(0);
  if (!d_tg) return nullptr;
  classifier_forward<Act>(A.losses, A.logits, d_tg, BT);
  return A.losses;
}

template <class Act>
void GPT::llama_backward_impl(float loss_scale) {
  const int B = B_, T = T_;
  // Tensor parallelism as in GPT::backward_impl: the input gradients of the column-parallel
  // layers (head, gate|up, q|k|v) all-reduced.
  const TpWidths w = tp_widths(cfg_, tp_rank_, tp_size_);
  const int C = cfg_.d_model, NH = w.NH, KV = w.KV, F = w.F, V = w.V;
  const int hs = w.hs, QKV = (int)qkv_width(w), CL = NH * hs;
  const float theta = (float)cfg_.rope_theta;
  const int BT = B * T;
  ActivationOps<Act>& ops = be_.ops<Act>();
  Acts<Act> A;
  layout_acts<Act>(cfg_, w, max_B_, cfg_.seq_len, acts_, &A, attn_);
  DActs<Act> D;
  layout_dacts<Act>(cfg_, w, max_B_, cfg_.seq_len, dacts_, &D);
  const Act* P = static_cast<const Act*>(params_act_);
  const auto buckets = grad_buckets();
  model_detail::WeightView<Act, ParamSource> wv(P, param_src_, buckets);  // ZeRO-3: lent with each open bucket
  TD_ASSERT(grads_ || sink_);
  auto tp_sum = [&](Act* x, size_t n) {
    tp_reduce(x, n);
  };
  // With a GradSink, each bucket's gradients go to the buffer it opened (gpt.h GradSink).
  const int last = cfg_.n_layer + 1;  // the bucket of norm (and an untied lm_head)
  const size_t per = model_tensors_per_block(cfg_);
  const size_t norm = 1 + (size_t)cfg_.n_layer * per;
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
    if (!sink_) return grads_ + tensors_[t].offset;
    const int b = t == 0 ? 0 : t >= norm ? last : 1 + (int)((t - 1) / per);
    TD_ASSERT(open[b]);
    return open[b] + (tensors_[t].offset - buckets[b].first);
  };
  auto W = [&](int l, int k) { return wv.at(tensors_[1 + (size_t)l * per + k].offset); };
  auto dW = [&](int l, int k) { return dT(1 + (size_t)l * per + k); };
  const int32_t* d_in = tokens_;
  const int32_t* d_tg = tokens_ + (size_t)max_B_ * cfg_.seq_len;
  const size_t BTC = (size_t)BT * C * sizeof(Act);

  classifier_backward<Act>(A.losses, A.logits, d_tg, BT, loss_scale);
  const size_t head_t = cfg_.tie_embeddings ? 0 : norm + 1;
  open_bucket(last);
  if (cfg_.tie_embeddings) open_bucket(0);
  ops.matmul_backward(D.dc, dT(head_t), nullptr, A.logits, A.lnf, wv.at(tensors_[head_t].offset), BT, C, V, true);
  tp_sum(D.dc, (size_t)BT * C);
  const Act* xL = cfg_.n_layer > 0 ? A.layers.back().res3 : A.encoded;
  be_.zero(D.dres, BTC);
  ops.rmsnorm_backward(D.dres, dT(norm), D.dc, xL, wv.at(tensors_[norm].offset), A.rstdf, BT, C);
  close_bucket(last);
  for (int l = cfg_.n_layer - 1; l >= 0; l--) {
    open_bucket(1 + l);
    LayerActs<Act>& L = A.layers[l];
    const Act* x = l == 0 ? A.encoded : A.layers[l - 1].res3;
    // res3 = res2 + down: d down = dres, and dres carries on as d res2.
    ops.matmul_backward(D.dswiglu, dW(l, kDown), nullptr, D.dres, L.swiglu, W(l, kDown), BT, F, C, true);
    be_.zero(D.dgateup, (size_t)BT * 2 * F * sizeof(Act));
    ops.swiglu_backward(D.dgateup, L.gateup, D.dswiglu, BT, F);
    ops.matmul_backward(D.dc, dW(l, kGate), nullptr, D.dgateup, L.ln2, W(l, kGate), BT, C, 2 * F, true);  // d gate_proj | up_proj
    tp_sum(D.dc, (size_t)BT * C);
    ops.rmsnorm_backward(D.dres, dW(l, kPost), D.dc, L.res2, W(l, kPost), L.rstd2, BT, C);
    // res2 = x + attproj: d attproj = dres, and dres carries on as d x.
    ops.matmul_backward(D.dc, dW(l, kO), nullptr, D.dres, L.atty, W(l, kO), BT, CL, C, true);
    be_.zero(D.dqkv, (size_t)BT * QKV * sizeof(Act));
    model_detail::attention_backward(ops, D.dqkv, D.dc, L.qkv, L.atty, L.att, L.lse, B, T, CL, NH, KV);
    ops.rope_backward(D.dqkv, B, T, NH, KV, hs, theta);  // d rotated q, k -> d q, k
    ops.matmul_backward(D.dc, dW(l, kQ), qkv_bias_ ? dW(l, kQBias) : nullptr, D.dqkv, L.ln1, W(l, kQ), BT, C, QKV,
                        true);  // d q_proj | k_proj | v_proj (and their biases)
    tp_sum(D.dc, (size_t)BT * C);
    ops.rmsnorm_backward(D.dres, dW(l, kIn), D.dc, x, W(l, kIn), L.rstd1, BT, C);
    close_bucket(1 + l);
  }
  if (!cfg_.tie_embeddings) open_bucket(0);
  be_.zero(dwpe_, (size_t)cfg_.seq_len * C * sizeof(float));  // the position gradient is discarded
  ops.encoder_backward(dT(0), dwpe_, D.dres, tp_ ? local_ids_ : d_in, B, T, C);
  close_bucket(0);
}

template const float* GPT::llama_forward_impl<float>(const int32_t*, const int32_t*, int, int);
template const float* GPT::llama_forward_impl<bf16>(const int32_t*, const int32_t*, int, int);
template void GPT::llama_backward_impl<float>(float);
template void GPT::llama_backward_impl<bf16>(float);

}  // namespace td
