// Tensor parallelism's split of a model's parameters (Megatron-LM: Shoeybi, Patwary, Puri,
// LeGresley, Casper, Catanzaro 2019, "Megatron-LM: Training Multi-Billion Parameter Language
// Models Using Model Parallelism", arXiv:1909.08053, section 3), without allocating anything.
//
// Within a tensor-parallel group of tp ranks, rank r holds:
//   - column-parallel matrices split by output rows: GPT-2's attn.c_attn (its q, k and v thirds
//     each cut by heads, so the rank's rows are q|k|v of heads [r NH/tp, (r+1) NH/tp)) and
//     mlp.c_fc, with their biases; Llama's q_proj, k_proj, v_proj (key/value heads split too),
//     gate_proj and up_proj;
//   - row-parallel matrices split by input columns: attn.c_proj, mlp.c_proj, o_proj, down_proj
//     (their GPT-2 biases are replicated and added once, after the all-reduce);
//   - the vocabulary-parallel token embedding and LM head: rows shard_range(V, r, tp) of wte /
//     embed_tokens (and lm_head when untied);
//   - everything else replicated: position embedding, LayerNorm / RMSNorm weights and biases.
// The rank's table (tp_param_tensors) keeps the full model's names and order with the local
// shapes, laid out contiguously as a model's parameter buffer is, so one GPT instance holds one
// rank's shard and a checkpoint is gathered into the full layout (tp_place) by the names' order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/config.h"
#include "engine/model/gpt.h"  // ParamTensor

namespace td {

/// How one tensor of the full table is split across a tensor-parallel group.
struct TpSplit {
  int dim = -1;                 // -1 replicated; 0 rows (column-parallel, vocabulary); 1 columns (row-parallel)
  std::vector<int64_t> parts;   // sizes along dim of its fused parts, each cut into tp pieces by shard_range
};

/// The split of each tensor of model_param_tensors(m), in that order.
std::vector<TpSplit> tp_splits(const ModelConfig& m);

/// The widths a tensor-parallel rank computes with. C, hs are the model's; the rest are local:
/// NH = n_head / tp query heads, KV = key/value heads / tp (GPT-2: = NH), F = d_ff / tp,
/// V = the rank's vocabulary rows starting at token id v0 (shard_range(vocab_size, rank, tp)).
/// tp = 1 gives the full model's widths.
struct TpWidths {
  int C = 0, hs = 0, NH = 0, KV = 0, F = 0, V = 0, v0 = 0;
};
TpWidths tp_widths(const ModelConfig& m, int tp_rank, int tp_size);

/// "" when the model can be split over tp ranks, else what is wrong, naming the field
/// (n_head, n_kv_head and d_ff must be multiples of tp; vocab_size at least tp).
std::string tp_problem(const ModelConfig& m, int tp_size);

/// Why train.tensor_parallel = tp cannot train model m at train.precision `precision` ("" when
/// it can; tp <= 1 always can), as the trainer and the workbench's designer both say it, after
/// the field's name: "value 4: model.n_head (2) is not a multiple of train.tensor_parallel (4):
/// ...; choose a degree that divides them". Every precision trains (the parameter is kept for
/// the rules a precision may bring).
std::string tp_config_problem(const ModelConfig& m, int tp, const std::string& precision);

/// Rank tp_rank's parameter table: the names of model_param_tensors(m) in order, local shapes,
/// offsets in the rank's contiguous layout. tp_size = 1: model_param_tensors(m). Requires
/// tp_problem(m, tp_size) == "".
std::vector<ParamTensor> tp_param_tensors(const ModelConfig& m, int tp_rank, int tp_size);

/// Parameters of rank tp_rank's shard (the total of tp_param_tensors).
size_t tp_num_params(const ModelConfig& m, int tp_rank, int tp_size);

/// Bytes a tensor-parallel rank's GPT allocates for tensor parallelism itself at micro batch B
/// (engine/model/gpt.cpp): the parallel cross-entropy's gathered [lse | target logit], 2 tp B T
/// fp32; the rank's local token ids, B T int32; and on GPT-2 ranks > 0 the zero position table
/// added instead of wpe, T C fp32. 0 for tp_size = 1.
size_t tp_buffer_bytes(const ModelConfig& m, int B, int tp_rank, int tp_size);

/// The gradient (and ZeRO) buckets of a rank's table: bucket 0 the embeddings, 1 + l block l,
/// L + 1 the final norm and an untied head, as gpt_grad_buckets / llama_grad_buckets.
std::vector<std::pair<size_t, size_t>> tp_grad_buckets(const ModelConfig& m, int tp_rank, int tp_size);

/// Host copies between the full layout (model_param_tensors, num = model_num_params floats) and
/// rank tp_rank's local layout (tp_param_tensors): tp_slice copies the rank's pieces out of
/// `full` into `local`; tp_place writes `local` into its place in `full` (replicated tensors
/// included: every rank's copy is the same). Applied to the parameters and to AdamW's moments.
void tp_slice(const ModelConfig& m, int tp_rank, int tp_size, const float* full, float* local);
/// The runs tp_slice copies: copy(full_offset, local_offset, count) for each contiguous run of
/// rank tp_rank's pieces, in the order of the full table's tensors (full offsets ascending
/// tensor by tensor), so a caller can produce the full model one tensor at a time.
void tp_for_each_run(const ModelConfig& m, int tp_rank, int tp_size, const std::function<void(size_t, size_t, size_t)>& copy);
void tp_place(const ModelConfig& m, int tp_rank, int tp_size, const float* local, float* full);

/// For each element range [first, second) of the rank's layout, whether it is replicated over
/// the group (1) or the rank's own piece (0): the tensors as listed, merged where adjacent.
/// The global gradient norm counts replicated elements once (tensor-parallel rank 0's).
std::vector<std::pair<std::pair<size_t, size_t>, bool>> tp_replicated_ranges(const ModelConfig& m, int tp_rank, int tp_size);

}  // namespace td
