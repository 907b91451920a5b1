#include "engine/plan/plan.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "engine/train/zero.h"

#include "engine/model/family.h"
#include "engine/model/shape.h"
#include "engine/model/tensor_parallel.h"

namespace td {

double flops_per_token(const ModelConfig& m) {
  double n;
  if (llama_block(m))  // the untied token embedding is a lookup
    n = (double)llama_num_params(m) - (m.tie_embeddings ? 0.0 : (double)m.vocab_size * m.d_model);
  else
    n = (double)gpt_num_params(m) - (double)m.seq_len * m.d_model;  // without wpe
  return 6.0 * n + 12.0 * m.n_layer * (double)m.d_model * m.seq_len;
}

uint64_t cpu_backend_scratch_bytes(const ModelConfig& m, int micro_batch, int tp, AttentionKernel attn) {
  if (attn == AttentionKernel::kFused) return 0;
  return 4 * (uint64_t)micro_batch * (m.n_head / std::max(1, tp)) * (uint64_t)m.seq_len * m.seq_len;
}

namespace {

// The memory of tensor-parallel rank tp_rank (tp = 1: the unsplit model) with ZeRO over dp
// data-parallel ranks, into p's *_bytes fields.
void rank_memory(Plan& p, const RunConfig& c, int tp_rank, int tp, int dp) {
  const ModelConfig& m = c.model;
  const uint64_t n = tp > 1 ? tp_num_params(m, tp_rank, tp) : model_num_params(m);
  const auto buckets = tp > 1 ? tp_grad_buckets(m, tp_rank, tp) : model_grad_buckets(m);
  // Mixed precision keeps a bf16 copy of the weights beside the fp32 master (engine/model/gpt.h).
  const bool bf16 = resolved_precision(c.train) == "bf16";
  p.weights_bytes = (bf16 ? 6 : 4) * n;
  // ZeRO-2 (engine/train/zero.h) frees the full-size gradient: a rank holds its accumulated
  // slices of every bucket and the bucket buffers open during backward (zero2_grad_floats), and
  // the AdamW moments of its slices only. ZeRO-3 (fp32) also frees the full-size parameters: its
  // slices plus the gathered buckets in flight (zero3_param_floats).
  const bool zero2 = c.train.zero >= 2 && dp > 1;
  if (c.train.zero == 3 && zero2 && !bf16) p.weights_bytes = 4 * (uint64_t)zero3_param_floats(buckets, dp);
  p.grads_bytes = 4 * (zero2 ? (uint64_t)zero2_grad_floats(buckets, dp) : n);
  // ZeRO-1 keeps this rank's shard of m and v (dist::shard_range: at most ceil(N / dp)).
  const uint64_t n_dp = dp > 1 ? (uint64_t)dp : 1;
  p.optimizer_bytes = 8 * (c.train.zero == 1 ? (n + n_dp - 1) / n_dp : zero2 ? (uint64_t)zero2_max_share(buckets, dp) : n);
  // Gloo's reduce-scatter (CPU ranks) keeps a receive buffer of the largest chunk it reduced
  // (engine/dist/gloo_communicator.cpp, scratch_): ZeRO-1 ceil(N / n) floats, ZeRO-2 the largest
  // bucket's ceil(len / n). Counted with the gradients.
  if (c.train.device == "cpu" && dp > 1 && (c.train.zero == 1 || zero2)) {
    uint64_t chunk = (n + n_dp - 1) / n_dp;
    if (zero2) {
      chunk = 0;
      for (const auto& [lo, hi] : buckets) chunk = std::max<uint64_t>(chunk, (hi - lo + n_dp - 1) / n_dp);
    }
    p.grads_bytes += 4 * chunk;
  }
  const DType act = bf16 ? DType::kBF16 : DType::kF32;
  const AttentionKernel attn = parse_attention_kernel(c.train.attention);
  p.activations_bytes = tp > 1 ? model_activation_bytes(m, c.train.micro_batch, m.seq_len, act, tp_widths(m, tp_rank, tp), attn) +
                                     tp_buffer_bytes(m, c.train.micro_batch, tp_rank, tp)
                               : model_activation_bytes(m, c.train.micro_batch, m.seq_len, act, attn);
  if (c.train.device == "cpu") p.activations_bytes += cpu_backend_scratch_bytes(m, c.train.micro_batch, tp, attn);
  p.total_bytes = p.weights_bytes + p.grads_bytes + p.optimizer_bytes + p.activations_bytes;
  p.n_params_per_rank = n;
}

}  // namespace

uint64_t checkpoint_host_bytes(const RunConfig& c, int world_size) {
  const ModelConfig& m = c.model;
  const uint64_t n = model_num_params(m);
  world_size = std::max(1, world_size);
  const int t = c.train.tensor_parallel;
  const bool cpu = c.train.device == "cpu";  // backend memory is host memory
  uint64_t largest = 0;
  for (const auto& pt : model_param_tensors(m)) largest = std::max<uint64_t>(largest, pt.numel);
  if (t > 1 && world_size % t == 0 && tp_problem(m, t).empty()) {
    // Tensor parallelism (TpTensorGather): the assembled tensor and a rank's piece of it on the
    // host, the piece in flight in backend memory; with ZeRO over dp > 1 replicas rank 0's own
    // layout's gathered m and v (and ZeRO-3's weights), n0 = its shard's parameters.
    uint64_t piece = 0;
    for (int r = 0; r < t; r++)
      for (const auto& pt : tp_param_tensors(m, r, t)) piece = std::max<uint64_t>(piece, pt.numel);
    const bool sharded = c.train.zero >= 1 && world_size / t > 1;
    const uint64_t n0 = tp_num_params(m, 0, t);
    return 4 * (largest + piece) + (cpu ? 4 * piece + (sharded ? 8 * n0 : 0) + (sharded && c.train.zero == 3 ? 4 * n0 : 0) : 0);
  }
  const bool sharded = c.train.zero >= 1 && world_size > 1;
  if (cpu) return (sharded ? 8 * n : 0) + (sharded && c.train.zero == 3 ? 4 * n : 0);  // read in place
  return 4 * largest;  // one tensor's download buffer
}

Plan make_plan(const RunConfig& c, int world_size) {
  const ModelConfig& m = c.model;
  Plan p;
  p.n_params = model_num_params(m);
  p.n_params_non_embedding = p.n_params - model_embedding_params(m);
  p.kv_heads = kv_heads(m);
  p.kv_cache_bytes_per_token = kv_cache_bytes(m, 1, 2);
  p.kv_cache_bytes = kv_cache_bytes(m, (uint64_t)m.seq_len, 2);
  p.flops_per_token = flops_per_token(m);
  world_size = std::max(1, world_size);
  const int t = c.train.tensor_parallel;
  p.tensor_parallel = t > 1 && world_size % t == 0 && tp_problem(m, t).empty() ? t : 1;
  const int dp = world_size / p.tensor_parallel;
  p.tokens_per_step = (uint64_t)c.train.micro_batch * c.train.grad_accum * dp * m.seq_len;
  p.checkpoint_host_bytes = checkpoint_host_bytes(c, world_size);
  // The largest rank's figures (tensor-parallel ranks differ by a vocabulary row and GPT-2's
  // zero position table).
  for (int r = 0; r < p.tensor_parallel; r++) {
    Plan q = p;
    rank_memory(q, c, r, p.tensor_parallel, dp);
    if (r == 0 || q.total_bytes > p.total_bytes) p = q;
  }
  return p;
}

static std::string human_bytes(uint64_t b) {
  char buf[64];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
  else std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1ull << 20));
  return buf;
}

std::string plan_table(const Plan& p) {
  std::ostringstream o;
  char buf[128];
  std::snprintf(buf, sizeof buf, "%-28s %15llu\n", "parameters", (unsigned long long)p.n_params);
  o << buf;
  std::snprintf(buf, sizeof buf, "%-28s %15llu\n", "  without embeddings", (unsigned long long)p.n_params_non_embedding);
  o << buf;
  std::snprintf(buf, sizeof buf, "%-28s %15.4g\n", "training FLOPs per token", p.flops_per_token);
  o << buf;
  std::snprintf(buf, sizeof buf, "%-28s %15llu\n", "tokens per step (global)", (unsigned long long)p.tokens_per_step);
  o << buf;
  if (p.tensor_parallel > 1) {
    std::snprintf(buf, sizeof buf, "%-28s %15d\n", "tensor parallel (ranks)", p.tensor_parallel);
    o << buf;
    std::snprintf(buf, sizeof buf, "%-28s %15llu\n", "  parameters per rank", (unsigned long long)p.n_params_per_rank);
    o << buf;
  }
  std::snprintf(buf, sizeof buf, "%-28s %15s\n", "KV cache per sequence (bf16)", human_bytes(p.kv_cache_bytes).c_str());
  o << buf;
  o << "memory per rank:\n";
  auto row = [&](const char* name, uint64_t b) {
    std::snprintf(buf, sizeof buf, "  %-26s %15s\n", name, human_bytes(b).c_str());
    o << buf;
  };
  row("weights (fp32)", p.weights_bytes);
  row("gradients (fp32)", p.grads_bytes);
  row("optimizer (AdamW m, v)", p.optimizer_bytes);
  row("activations", p.activations_bytes);
  row("total", p.total_bytes);
  row("checkpoint staging (rank 0)", p.checkpoint_host_bytes);
  return o.str();
}

nlohmann::json plan_json(const Plan& p) {
  return {{"n_params", p.n_params},
          {"n_params_non_embedding", p.n_params_non_embedding},
          {"flops_per_token", p.flops_per_token},
          {"tokens_per_step", p.tokens_per_step},
          {"tensor_parallel", p.tensor_parallel},
          {"n_params_per_rank", p.n_params_per_rank},
          {"kv_heads", p.kv_heads},
          {"kv_cache_bytes_per_token", p.kv_cache_bytes_per_token},
          {"kv_cache_bytes", p.kv_cache_bytes},
          {"memory_per_rank", {{"weights_bytes", p.weights_bytes}, {"grads_bytes", p.grads_bytes},
                               {"optimizer_bytes", p.optimizer_bytes}, {"activations_bytes", p.activations_bytes},
                               {"total_bytes", p.total_bytes}}},
          {"checkpoint_host_bytes", p.checkpoint_host_bytes}};
}

}  // namespace td
