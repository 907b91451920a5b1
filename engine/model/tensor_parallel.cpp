#include "engine/model/tensor_parallel.h"

#include <cstring>
#include <string>

#include "engine/common/error.h"
#include "engine/dist/communicator.h"  // shard_range (inline)
#include "engine/model/family.h"
#include "engine/model/shape.h"

namespace td {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

int64_t piece(int64_t part, int r, int tp) {
  const auto [a, b] = dist::shard_range((size_t)part, r, tp);
  return (int64_t)(b - a);
}

}  // namespace

std::vector<TpSplit> tp_splits(const ModelConfig& m) {
  const int64_t V = m.vocab_size, C = m.d_model, F = m.d_ff;
  const int64_t kv = (int64_t)kv_heads(m) * (C / m.n_head);
  std::vector<TpSplit> out;
  for (const ParamTensor& t : model_param_tensors(m)) {
    const std::string& n = t.name;
    TpSplit s;
    if (n == "wte.weight" || n == "embed_tokens.weight" || n == "lm_head.weight") s = {0, {V}};
    else if (ends_with(n, "attn.c_attn.weight") || ends_with(n, "attn.c_attn.bias")) s = {0, {C, C, C}};
    else if (ends_with(n, "mlp.c_fc.weight") || ends_with(n, "mlp.c_fc.bias")) s = {0, {F}};
    else if (ends_with(n, "attn.c_proj.weight") || ends_with(n, "self_attn.o_proj.weight")) s = {1, {C}};
    else if (ends_with(n, "mlp.c_proj.weight") || ends_with(n, "mlp.down_proj.weight")) s = {1, {F}};
    else if (ends_with(n, "self_attn.q_proj.weight") || ends_with(n, "self_attn.q_proj.bias")) s = {0, {C}};
    else if (ends_with(n, "self_attn.k_proj.weight") || ends_with(n, "self_attn.v_proj.weight") ||
             ends_with(n, "self_attn.k_proj.bias") || ends_with(n, "self_attn.v_proj.bias"))
      s = {0, {kv}};
    else if (ends_with(n, "mlp.gate_proj.weight") || ends_with(n, "mlp.up_proj.weight")) s = {0, {F}};
    out.push_back(std::move(s));  // anything else: replicated
  }
  return out;
}

TpWidths tp_widths(const ModelConfig& m, int tp_rank, int tp_size) {
  TD_ASSERT(tp_size >= 1 && tp_rank >= 0 && tp_rank < tp_size);
  TpWidths w;
  w.C = m.d_model;
  w.hs = m.d_model / m.n_head;
  w.NH = m.n_head / tp_size;
  w.KV = kv_heads(m) / tp_size;
  w.F = m.d_ff / tp_size;
  const auto [a, b] = dist::shard_range((size_t)m.vocab_size, tp_rank, tp_size);
  w.v0 = (int)a;
  w.V = (int)(b - a);
  return w;
}

std::string tp_problem(const ModelConfig& m, int tp) {
  if (tp < 1) return "train.tensor_parallel must be at least 1";
  if (tp == 1) return "";
  const std::string d = std::to_string(tp);
  if (m.n_head % tp != 0)
    return "model.n_head (" + std::to_string(m.n_head) + ") is not a multiple of train.tensor_parallel (" + d +
           "): each rank computes n_head / tensor_parallel attention heads";
  if (llama_block(m) && m.n_kv_head % tp != 0)
    return "model.n_kv_head (" + std::to_string(m.n_kv_head) + ") is not a multiple of train.tensor_parallel (" + d +
           "): each rank holds n_kv_head / tensor_parallel key/value heads";
  if (m.d_ff % tp != 0)
    return "model.d_ff (" + std::to_string(m.d_ff) + ") is not a multiple of train.tensor_parallel (" + d + ")";
  if (m.vocab_size < tp) return "model.vocab_size is smaller than train.tensor_parallel (" + d + ")";
  return "";
}

std::string tp_config_problem(const ModelConfig& m, int tp, const std::string& precision) {
  if (tp <= 1) return "";
  if (const std::string why = tp_problem(m, tp); !why.empty())
    return "value " + std::to_string(tp) + ": " + why + "; choose a degree that divides them";
  (void)precision;  // both precisions train (bf16: the activations' all-reduces sum in fp32)
  return "";
}

std::vector<ParamTensor> tp_param_tensors(const ModelConfig& m, int r, int tp) {
  std::vector<ParamTensor> t = model_param_tensors(m);
  if (tp == 1) return t;
  TD_ASSERT(tp_problem(m, tp).empty());
  const std::vector<TpSplit> s = tp_splits(m);
  size_t off = 0;
  for (size_t i = 0; i < t.size(); i++) {
    if (s[i].dim >= 0) {
      int64_t len = 0;
      for (int64_t p : s[i].parts) len += piece(p, r, tp);
      t[i].shape[(size_t)s[i].dim] = len;
    }
    size_t n = 1;
    for (int64_t d : t[i].shape) n *= (size_t)d;
    t[i].offset = off;
    t[i].numel = n;
    off += n;
  }
  return t;
}

size_t tp_num_params(const ModelConfig& m, int r, int tp) {
  const auto t = tp_param_tensors(m, r, tp);
  return t.back().offset + t.back().numel;
}

size_t tp_buffer_bytes(const ModelConfig& m, int B, int r, int tp) {
  if (tp <= 1) return 0;
  const size_t BT = (size_t)B * m.seq_len;
  return 2 * (size_t)tp * BT * sizeof(float) + BT * sizeof(int32_t) +
         (!llama_block(m) && r > 0 ? (size_t)m.seq_len * m.d_model * sizeof(float) : 0);
}

std::vector<std::pair<size_t, size_t>> tp_grad_buckets(const ModelConfig& m, int r, int tp) {
  return block_buckets(tp_param_tensors(m, r, tp), model_head_tensors(m), model_tensors_per_block(m), m.n_layer);
}

namespace {

// Calls copy(full_offset, local_offset, count) for every contiguous run of rank r's pieces.
template <class F>
void for_each_run(const ModelConfig& m, int r, int tp, F&& copy) {
  const std::vector<ParamTensor> full = model_param_tensors(m);
  const std::vector<ParamTensor> local = tp_param_tensors(m, r, tp);
  const std::vector<TpSplit> s = tp_splits(m);
  for (size_t i = 0; i < full.size(); i++) {
    const ParamTensor& f = full[i];
    const ParamTensor& l = local[i];
    if (s[i].dim < 0 || tp == 1) {
      copy(f.offset, l.offset, f.numel);
    } else if (s[i].dim == 0) {
      const size_t inner = f.numel / (size_t)f.shape[0];
      size_t po = 0, lo = 0;  // rows: of the part in full, written so far in local
      for (int64_t p : s[i].parts) {
        const auto [a, b] = dist::shard_range((size_t)p, r, tp);
        copy(f.offset + (po + a) * inner, l.offset + lo * inner, (b - a) * inner);
        po += (size_t)p;
        lo += b - a;
      }
    } else {
      const size_t rows = (size_t)f.shape[0], fcols = (size_t)f.shape[1], lcols = (size_t)l.shape[1];
      for (size_t row = 0; row < rows; row++) {
        size_t po = 0, lo = 0;
        for (int64_t p : s[i].parts) {
          const auto [a, b] = dist::shard_range((size_t)p, r, tp);
          copy(f.offset + row * fcols + po + a, l.offset + row * lcols + lo, b - a);
          po += (size_t)p;
          lo += b - a;
        }
      }
    }
  }
}

}  // namespace

void tp_for_each_run(const ModelConfig& m, int r, int tp, const std::function<void(size_t, size_t, size_t)>& copy) {
  for_each_run(m, r, tp, copy);
}

void tp_slice(const ModelConfig& m, int r, int tp, const float* full, float* local) {
  for_each_run(m, r, tp, [&](size_t fo, size_t lo, size_t n) { std::memcpy(local + lo, full + fo, n * sizeof(float)); });
}

void tp_place(const ModelConfig& m, int r, int tp, const float* local, float* full) {
  for_each_run(m, r, tp, [&](size_t fo, size_t lo, size_t n) { std::memcpy(full + fo, local + lo, n * sizeof(float)); });
}

std::vector<std::pair<std::pair<size_t, size_t>, bool>> tp_replicated_ranges(const ModelConfig& m, int r, int tp) {
  const std::vector<ParamTensor> t = tp_param_tensors(m, r, tp);
  const std::vector<TpSplit> s = tp_splits(m);
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> out;
  for (size_t i = 0; i < t.size(); i++) {
    const bool rep = s[i].dim < 0 || tp == 1;
    const size_t lo = t[i].offset, hi = t[i].offset + t[i].numel;
    if (!out.empty() && out.back().second == rep && out.back().first.second == lo) out.back().first.second = hi;
    else out.push_back({{lo, hi}, rep});
  }
  return out;
}

}  // namespace td
