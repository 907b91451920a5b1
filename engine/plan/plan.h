// The planner: what a model needs, before it runs (parameters, FLOPs, memory per rank).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/config.h"
#include "engine/ops/ops.h"  // AttentionKernel

namespace td {

/// Training FLOPs per token (forward + backward), PaLM's estimate (Chowdhery et al. 2022,
/// appendix B; nanoGPT's estimate_mfu): 6 N + 12 L C T, where 6 N counts the matmuls with the
/// weights (2 FLOPs per multiply-add forward, twice that backward; Kaplan et al. 2020, section
/// 2.1) and 12 L C T the attention score and value matmuls (q k^T and att v: 2 x 2 T C forward per
/// layer and token over the NH query heads, full T x T, as the convention does).
///   gpt2:  N = parameters without the position embedding (a lookup, not a matmul).
///   llama: N = parameters without the token embedding's lookup when untied (tied, the one
///          matrix is the LM head's matmul). Grouped-query attention enters through k_proj and
///          v_proj's C x KV hs weights; the attention term is unchanged (every query head attends);
///          SwiGLU's three C x F matrices are 6 x 3 C F. RMSNorm weights are counted in N (2 L C + C,
///          elementwise, < 0.01 % of N), as PaLM counts all parameters.
/// SmolLM2-135M at T = 2048: 6 x 134 515 008 + 12 x 30 x 576 x 2048 = 1 231 763 328.
double flops_per_token(const ModelConfig& m);

struct Plan {
  uint64_t n_params = 0;
  uint64_t n_params_non_embedding = 0;  // without the token embedding, an untied LM head and gpt2's position embedding
  int kv_heads = 0;                     // key/value heads (n_kv_head; n_head for gpt2)
  uint64_t kv_cache_bytes_per_token = 0;  // generation's key/value cache per token of context, bf16: 2 L KV hs x 2
  uint64_t kv_cache_bytes = 0;          // the same for one full sequence of seq_len tokens
  double flops_per_token = 0;           // training FLOPs per token
  uint64_t tokens_per_step = 0;         // global batch in tokens (micro_batch grad_accum T over the data-parallel replicas)
  int tensor_parallel = 1;              // TP degree planned (train.tensor_parallel when it divides the world size, else 1)
  uint64_t n_params_per_rank = 0;       // the largest tensor-parallel rank's shard (n_params without TP)
  // Memory per rank, bytes (fp32 everywhere on the CPU backend; train.precision bf16 adds the
  // bf16 weight copy and halves the activations):
  uint64_t weights_bytes = 0;           // 4 N (fp32), 6 N (bf16: fp32 master + bf16 copy)
  uint64_t grads_bytes = 0;             // 4 N
  uint64_t optimizer_bytes = 0;         // AdamW m and v: 8 N
  uint64_t activations_bytes = 0;       // what forward keeps for backward at micro_batch, plus backward
                                        // scratch (the model's, and on the CPU the backend's: cpu_backend_scratch_bytes)
  uint64_t total_bytes = 0;
  // Rank 0's host memory while it writes a consolidated checkpoint, beside the above:
  // checkpoint_host_bytes() below.
  uint64_t checkpoint_host_bytes = 0;
};

/// Bytes of host memory rank 0 adds while it writes a consolidated checkpoint of config c on
/// world_size ranks (engine/train/parallel_state.h, engine/checkpoint): the writer streams the
/// state tensor by tensor (save_checkpoint), so
///   * train.device "cpu": 8 N with ZeRO-1/2/3 on more than one rank (the gathered full-size m
///     and v), plus 4 N with ZeRO-3 (its gathered weights), else 0 (written in place);
///   * a GPU: one tensor's download buffer, 4 x the largest tensor's elements (GPT-2 124M: wte,
///     154.4 MB); the gathered ZeRO state is device memory there (8 N, ZeRO-3 12 N on rank 0);
///   * tensor parallelism (engine/train/tp_run.h TpTensorGather): 4 (E + P), E the largest
///     tensor's elements, P the largest piece of a tensor a TP rank holds; on the CPU also the
///     piece in flight (4 P) and with ZeRO over the replicas rank 0's own layout's gathered m and
///     v (8 n0, n0 = tp_num_params of TP rank 0), with ZeRO-3 its weights (4 n0).
/// Before streaming every layout staged 12 N (N = the whole model's parameters; the CPU's ZeRO
/// layouts 20-24 N).
uint64_t checkpoint_host_bytes(const RunConfig& c, int world_size);

/// Bytes the CPU backend keeps from step to step beside the model's own buffers: the gradient of
/// the attention scores of one micro-batch, (B, NH, T, T) fp32 (CpuBackend::attention_backward's
/// scratch_, engine/ops/cpu_ops.cpp). Counted with the activations of CPU plans.
/// Under tensor parallelism a rank holds n_head / tp heads of it (tp: the degree). With fused
/// attention (attn kFused; train.attention) there is none: 0.
uint64_t cpu_backend_scratch_bytes(const ModelConfig& m, int micro_batch, int tp = 1,
                                   AttentionKernel attn = AttentionKernel::kSimple);

/// Estimates for a validated config and world size (any model.family: engine/model/shape.h).
/// Memory is per rank as the engine allocates it (engine/model/gpt.h, engine/train/training_run.cpp;
/// a llama model's activations are shape.h's planned layout until its model lands); with train.zero = 1 and world_size > 1 the
/// AdamW moments are the largest rank's shard, 8 ceil(N / world_size) bytes; with train.zero = 2 the
/// gradients are zero2_grad_floats (the rank's slices and the bucket buffers of backward) and the
/// moments the largest rank's slices, 8 zero2_max_share (engine/train/zero.h); with train.zero = 3
/// (fp32) the weights are zero3_param_floats too. CPU ranks at ZeRO-1 to 3 add Gloo's reduce-scatter
/// receive buffer to the gradients (4 ceil(N / n) bytes; ZeRO-2 and 3: of the largest bucket).
/// With train.tensor_parallel = tp dividing world_size (engine/model/tensor_parallel.h): the
/// world is dp = world_size / tp replicas of a TP group; each rank holds its shard's weights,
/// gradients and moments (tp_num_params), ZeRO shards them over the dp replicas (the rank's own
/// buckets, tp_grad_buckets), the activations are at the rank's widths (model_activation_bytes
/// with tp_widths) plus TP's own buffers (tp_buffer_bytes), and the figures are the largest
/// TP rank's (by total). tp not dividing world_size plans without TP (tensor_parallel = 1).
/// Checked against each rank's RSS at ZeRO 0-3 on 4 ranks: tests/engine/test_zero_memory.cpp.
Plan make_plan(const RunConfig& c, int world_size = 1);
/// A human-readable table.
std::string plan_table(const Plan& p);
nlohmann::json plan_json(const Plan& p);

}  // namespace td
