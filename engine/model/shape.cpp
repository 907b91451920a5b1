#include "engine/model/shape.h"

#include <string>

#include "engine/common/error.h"
#include "engine/model/family.h"
#include "engine/model/model_detail.h"
#include "engine/model/tensor_parallel.h"

namespace td {
namespace {

// Counts bytes as GPT's Carver hands them out: each buffer rounded up to 64 bytes.
struct ByteCount {
  size_t n = 0;
  void take(size_t count, size_t elem) { n += (count * elem + 63) / 64 * 64; }
};

}  // namespace

std::vector<ParamTensor> llama_param_tensors(const ModelConfig& m) {
  TD_ASSERT(llama_block(m) && m.n_kv_head > 0 && m.d_ff > 0);
  const int64_t V = m.vocab_size, C = m.d_model, F = m.d_ff;
  const int64_t kv = (int64_t)m.n_kv_head * (C / m.n_head);  // KV hs
  std::vector<ParamTensor> t;
  size_t off = 0;
  auto add = [&](std::string name, std::vector<int64_t> shape, bool decay) {
    size_t n = 1;
    for (auto s : shape) n *= (size_t)s;
    t.push_back({std::move(name), std::move(shape), off, n, decay});
    off += n;
  };
  add("embed_tokens.weight", {V, C}, false);
  for (int l = 0; l < m.n_layer; l++) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {C}, false);
    add(p + "self_attn.q_proj.weight", {C, C}, true);
    add(p + "self_attn.k_proj.weight", {kv, C}, true);
    add(p + "self_attn.v_proj.weight", {kv, C}, true);
    add(p + "self_attn.o_proj.weight", {C, C}, true);
    add(p + "post_attention_layernorm.weight", {C}, false);
    add(p + "mlp.gate_proj.weight", {F, C}, true);
    add(p + "mlp.up_proj.weight", {F, C}, true);
    add(p + "mlp.down_proj.weight", {C, F}, true);
    if (qkv_bias(m)) {  // adjacent, so that q|k|v's bias is one (C + 2 KV hs) vector as the weight is one matrix
      add(p + "self_attn.q_proj.bias", {C}, false);
      add(p + "self_attn.k_proj.bias", {kv}, false);
      add(p + "self_attn.v_proj.bias", {kv}, false);
    }
  }
  add("norm.weight", {C}, false);
  if (!m.tie_embeddings) add("lm_head.weight", {V, C}, true);
  return t;
}

std::vector<std::pair<size_t, size_t>> llama_grad_buckets(const ModelConfig& m) {
  return block_buckets(llama_param_tensors(m), model_head_tensors(m), model_tensors_per_block(m), m.n_layer);
}

std::vector<std::pair<size_t, size_t>> block_buckets(const std::vector<ParamTensor>& t, size_t head, size_t per_block, int L) {
  auto at = [&](size_t i) { return i < t.size() ? t[i].offset : t.back().offset + t.back().numel; };
  std::vector<std::pair<size_t, size_t>> b{{0, at(head)}};
  for (int l = 0; l < L; l++) b.push_back({at(head + (size_t)l * per_block), at(head + (size_t)(l + 1) * per_block)});
  b.push_back({at(head + (size_t)L * per_block), at(t.size())});
  return b;
}

size_t model_head_tensors(const ModelConfig& m) { return llama_block(m) ? 1 : 2; }

size_t model_tensors_per_block(const ModelConfig& m) {
  if (!llama_block(m)) return 12;      // ln_1 w, b; c_attn w, b; attn.c_proj w, b; ln_2 w, b; c_fc w, b; mlp.c_proj w, b
  return qkv_bias(m) ? 12 : 9;  // llama_param_tensors' 9 per layer, then the q, k, v biases
}

size_t llama_num_params(const ModelConfig& m) {
  TD_ASSERT(llama_block(m) && m.n_kv_head > 0);
  const size_t V = m.vocab_size, C = m.d_model, F = m.d_ff, L = m.n_layer;
  const size_t kv = (size_t)m.n_kv_head * (C / m.n_head);
  const size_t bias = qkv_bias(m) ? C + 2 * kv : 0;
  return V * C * (m.tie_embeddings ? 1 : 2) + L * (2 * C + 2 * C * C + 2 * C * kv + 3 * C * F + bias) + C;
}

size_t llama_activation_bytes(const ModelConfig& m, int B, int T, DType act, AttentionKernel attn) {
  TD_ASSERT(llama_block(m) && m.n_kv_head > 0);
  const size_t a = dtype_size(act), f = sizeof(float);
  const size_t BT = (size_t)B * T, C = m.d_model, F = m.d_ff, V = m.vocab_size;
  const size_t QKV = C + 2 * (size_t)m.n_kv_head * (C / m.n_head);
  ByteCount k;
  k.take(BT * C, a);  // embedding output
  for (int l = 0; l < m.n_layer; l++) {
    k.take(BT * C, a);  // input RMSNorm output
    k.take(BT, f);      // its rstd
    k.take(BT * QKV, a);  // q | k | v, RoPE applied in place
    k.take(BT * C, a);    // attention output before o_proj
    if (attn == AttentionKernel::kSimple)
      k.take((size_t)B * m.n_head * T * T, a);  // softmax probabilities
    else
      k.take((size_t)B * m.n_head * T, f);  // the rows' log-sum-exp
    k.take(BT * C, a);  // o_proj output
    k.take(BT * C, a);  // residual after attention
    k.take(BT * C, a);  // post-attention RMSNorm output
    k.take(BT, f);      // its rstd
    k.take(BT * F, a);  // gate
    k.take(BT * F, a);  // up
    k.take(BT * F, a);  // silu(gate) * up
    k.take(BT * C, a);  // down_proj output
    k.take(BT * C, a);  // block output
  }
  k.take(BT * C, a);  // final norm output
  k.take(BT, f);      // its rstd
  k.take(BT * V, a);  // logits
  k.take(BT, f);      // losses
  // Backward scratch.
  k.take(BT * C, a);    // residual gradient
  k.take(BT * C, a);    // one more (B,T,C)
  k.take(BT * QKV, a);  // dq | dk | dv
  for (int i = 0; i < 3; i++) k.take(BT * F, a);  // d gate, d up, d swiglu
  return k.n;
}

std::vector<ParamTensor> model_param_tensors(const ModelConfig& m) { return llama_block(m) ? llama_param_tensors(m) : gpt_param_tensors(m); }

size_t model_num_params(const ModelConfig& m) { return llama_block(m) ? llama_num_params(m) : gpt_num_params(m); }

std::vector<std::pair<size_t, size_t>> model_grad_buckets(const ModelConfig& m) {
  return llama_block(m) ? llama_grad_buckets(m) : gpt_grad_buckets(m);
}

size_t model_activation_bytes(const ModelConfig& m, int B, int T, DType act, AttentionKernel attn) {
  return llama_block(m) ? llama_activation_bytes(m, B, T, act, attn) : gpt_activation_bytes(m, B, T, act, attn);
}

size_t model_activation_bytes(const ModelConfig& m, int B, int T, DType act, const TpWidths& w, AttentionKernel attn) {
  if (!llama_block(m)) return gpt_activation_bytes(m, B, T, act, w, attn);
  return model_detail::llama_acts_bytes(m, B, T, act, &w, attn) + model_detail::llama_dacts_bytes(m, B, T, act, &w);
}

size_t model_activation_floats(const ModelConfig& m, int B, int T) { return model_activation_bytes(m, B, T, DType::kF32) / sizeof(float); }

size_t model_embedding_params(const ModelConfig& m) {
  const size_t V = m.vocab_size, C = m.d_model;
  return V * C * (m.tie_embeddings ? 1 : 2) + (llama_block(m) ? 0 : (size_t)m.seq_len * C);
}

int kv_heads(const ModelConfig& m) { return llama_block(m) ? m.n_kv_head : m.n_head; }

uint64_t kv_cache_bytes(const ModelConfig& m, uint64_t tokens, int bytes_per_value) {
  const uint64_t hs = (uint64_t)(m.d_model / m.n_head);
  return 2ull * m.n_layer * tokens * (uint64_t)kv_heads(m) * hs * (uint64_t)bytes_per_value;
}

}  // namespace td
