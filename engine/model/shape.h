// The shape of each model family, without allocating anything: the parameter table, parameter
// counts, the activation memory of a training step and the key/value cache of generation.
// The planner (engine/plan) reads a model only through these functions, so a family is planned
// the same way whether or not its model class is in the build.
//
// Notation (engine/config.h ModelConfig): V vocab_size, T seq_len, L n_layer, C d_model,
// NH n_head, hs = C / NH, KV key/value heads (n_kv_head for llama, NH for gpt2), F d_ff.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/config.h"
#include "engine/model/gpt.h"  // ParamTensor, gpt_* (the GPT-2 family)

namespace td {

/// The parameter table of the Llama block's families (validated config whose family has
/// BlockKind::kLlama, engine/model/family.h: llama, qwen2; no allocation), in the order of
/// transformers' LlamaForCausalLM state dict with its "model." prefix dropped (as the GPT-2
/// table drops "transformer."): embed_tokens.weight (V, C); per layer l "layers.l."
/// input_layernorm.weight (C), self_attn.q_proj.weight (C, C), self_attn.k_proj.weight
/// (KV hs, C), self_attn.v_proj.weight (KV hs, C), self_attn.o_proj.weight (C, C),
/// post_attention_layernorm.weight (C), mlp.gate_proj.weight (F, C), mlp.up_proj.weight (F, C),
/// mlp.down_proj.weight (C, F), and with q/k/v biases (qwen2) self_attn.q_proj.bias (C),
/// self_attn.k_proj.bias (KV hs), self_attn.v_proj.bias (KV hs); norm.weight (C); and
/// lm_head.weight (V, C) when tie_embeddings is false. Linear weights are (out, in) as
/// torch.nn.Linear. decay: the matrices except the embedding (as GPT-2's AdamW groups).
std::vector<ParamTensor> llama_param_tensors(const ModelConfig& m);

/// Tensors of model_param_tensors(m) before the first block (GPT-2: wte, wpe; the Llama block:
/// embed_tokens) and per block (GPT-2 12; llama 9; qwen2 12: llama's and the q, k, v biases).
/// The one place these counts are written.
size_t model_head_tensors(const ModelConfig& m);
size_t model_tensors_per_block(const ModelConfig& m);
/// Gradient buckets of a parameter table t with `head` tensors before L blocks of `per_block`
/// tensors each: [0, block 0), each block, [end of block L-1, end of t) (GradSink, gpt.h).
std::vector<std::pair<size_t, size_t>> block_buckets(const std::vector<ParamTensor>& t, size_t head, size_t per_block, int L);

/// The gradient buckets of a Llama shape (as gpt_grad_buckets for GPT-2; GradSink in gpt.h):
/// bucket 0 = embed_tokens, bucket 1 + l = layer l, bucket L + 1 = norm (and lm_head when
/// untied). They partition [0, llama_num_params(m)).
std::vector<std::pair<size_t, size_t>> llama_grad_buckets(const ModelConfig& m);

/// Parameters of the Llama block's families:
///   V C (1 + untied) + L (2 C + 2 C^2 + 2 C KV hs + 3 C F + qkv_bias (C + 2 KV hs)) + C.
/// SmolLM2-135M (llama, L 30, C 576, NH 9, KV 3, F 1536, V 49152, tied): 134 515 008;
/// Llama-3.2-1B (llama, L 16, C 2048, NH 32, KV 8, F 8192, V 128256, tied): 1 235 814 400;
/// Qwen2.5-0.5B (qwen2, L 24, C 896, NH 14, KV 2, F 4864, V 151936, tied): 494 032 768.
size_t llama_num_params(const ModelConfig& m);

/// Bytes of activation memory of one Llama training step at micro batch B and length T with
/// activations of type act (fp32 or bf16; RMSNorm statistics and losses stay fp32), each buffer
/// 64-byte aligned as GPT allocates them. The planned layout, in GPT's manner (engine/model/gpt.cpp):
/// kept for backward per layer: the input RMSNorm output (B,T,C) and its rstd (B,T), q|k|v
/// (B,T,C + 2 KV hs) with RoPE applied in place (its backward is the inverse rotation and needs
/// no copy), the attention output before o_proj (B,T,C), the softmax probabilities (B,NH,T,T),
/// o_proj's output and the residual after attention (B,T,C) each, the post-attention RMSNorm
/// output (B,T,C) and rstd (B,T), gate and up (B,T,F) each, silu(gate) * up (B,T,F), down's
/// output and the block output (B,T,C) each; then the embedding output (B,T,C), the final
/// norm's output (B,T,C) and rstd, the logits (B,T,V) and losses (B,T); backward scratch: the
/// residual gradient and one more (B,T,C) each, dq|dk|dv (B,T,C + 2 KV hs), and three (B,T,F)
/// (d of gate, up and the SwiGLU output). No activation checkpointing.
size_t llama_activation_bytes(const ModelConfig& m, int B, int T, DType act, AttentionKernel attn = AttentionKernel::kSimple);

/// The model's family's parameter table, count, and the activation memory of one training step
/// (gpt_* for the GPT-2 block, llama_* for the Llama block's families). m must be validated
/// (parse_config). The q/k/v biases of qwen2 add no activation memory.
std::vector<ParamTensor> model_param_tensors(const ModelConfig& m);
size_t model_num_params(const ModelConfig& m);
/// The family's gradient buckets (gpt_grad_buckets or llama_grad_buckets).
std::vector<std::pair<size_t, size_t>> model_grad_buckets(const ModelConfig& m);
/// attn (train.attention): "simple" keeps (B, n_head, T, T) probabilities per layer, "fused"
/// (B, n_head, T) fp32 log-sum-exps (engine/ops/ops.h AttentionKernel).
size_t model_activation_bytes(const ModelConfig& m, int B, int T, DType act, AttentionKernel attn = AttentionKernel::kSimple);
/// The same for a tensor-parallel rank computing with widths w (tp_widths, engine/model/
/// tensor_parallel.h: local heads, d_ff and vocabulary rows; the residual stream stays (B,T,C)),
/// as its GPT allocates them (GPT-2: gpt_activation_bytes; llama: the model's own layout).
size_t model_activation_bytes(const ModelConfig& m, int B, int T, DType act, const TpWidths& w,
                              AttentionKernel attn = AttentionKernel::kSimple);
/// The same in fp32 floats (model_activation_bytes(m, B, T, kF32) / 4).
size_t model_activation_floats(const ModelConfig& m, int B, int T);
/// Embedding parameters: the token embedding V C, the untied LM head V C, and GPT-2's position
/// embedding T C.
size_t model_embedding_params(const ModelConfig& m);
/// Key/value heads: n_kv_head for the Llama block's families, n_head for gpt2 (multi-head).
int kv_heads(const ModelConfig& m);

/// Bytes of the key/value cache generation keeps for `tokens` tokens of context (summed over the
/// batch's sequences), at bytes_per_value bytes per element (2 for bf16/fp16, 4 for fp32):
///   2 (k and v) x L x tokens x KV x hs x bytes_per_value.
/// Grouped-query attention divides it by NH / KV against multi-head attention (Ainslie et al.
/// 2023, "GQA", section 1). SmolLM2-135M, 2048 tokens, bf16: 2*30*2048*3*64*2 = 47 185 920.
uint64_t kv_cache_bytes(const ModelConfig& m, uint64_t tokens, int bytes_per_value);

}  // namespace td
