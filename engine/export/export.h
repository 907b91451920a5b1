// Export of trained models for other tools, and import of weights to start a new run from.
//
//   export_model()   a checkpoint -> a directory in one of two formats (docs/export.md):
//     "hf"           Hugging Face transformers' GPT-2 (GPT2LMHeadModel) for a gpt2 model, or
//                    Llama (LlamaForCausalLM) for a llama model: config.json, model.safetensors
//                    with transformers' names (and GPT-2's Conv1D layout), generation_config.json
//                    and the tokenizer files; loads with AutoModelForCausalLM.from_pretrained(dir).
//     "safetensors"  the engine's weights under the engine's own names plus a JSON sidecar
//                    (traindeck_export.json: config, tokenizer, step, tensor table).
//   read_init_source() / apply_init_source()   `train --init-from DIR`: the weights of an hf
//                    export, a safetensors export, or a TrainDeck checkpoint / run directory.
//
// GPT-2's layout (transformers' modeling_gpt2.py): Conv1D computes x @ W + b with W stored
// [in, out], i.e. the transpose of torch.nn.Linear's [out, in] that the engine stores. The four
// block matrices (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) are transposed; embeddings,
// LayerNorms, biases and lm_head (an nn.Linear) are not. The engine's activation is the tanh
// GELU ("gelu_new"), its LayerNorm eps 1e-5 (engine/ops/ops.h).
//
// Llama's layout (transformers' modeling_llama.py): the engine's names with "model." in front
// (lm_head.weight as is), every matrix an nn.Linear (out, in) as the engine stores it, q_proj /
// k_proj / v_proj and gate_proj / up_proj separate tensors as in the engine: nothing is
// transposed, split or permuted (the engine's RoPE is already transformers' rotate_half).
//
// Threading: every function here is synchronous and uses no shared state (call from any thread).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config.h"

namespace td {

class GPT;

/// The engine's LayerNorm epsilon and GELU variant, as GPT-2's config.json names them.
constexpr double kEngineLayerNormEps = 1e-5;
constexpr const char* kEngineHfActivation = "gelu_new";  // 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))

/// GPT-2's (transformers) name of an engine tensor: "wte.weight" -> "transformer.wte.weight",
/// "h.3.mlp.c_fc.bias" -> "transformer.h.3.mlp.c_fc.bias", "lm_head.weight" stays.
std::string hf_gpt2_name(const std::string& engine_name);
/// True for the tensors GPT-2 stores as Conv1D weights, transposed: [in, out] instead of the
/// engine's [out, in] (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj weights).
bool hf_gpt2_is_conv1d(const std::string& engine_name);
/// GPT-2's config.json for a model shape (GPT2Config field names; vocab_size is the model's,
/// n_positions = n_ctx = seq_len, dropout 0, float32). bos/eos: token ids (the end-of-text id).
nlohmann::json hf_gpt2_config(const ModelConfig& m, int bos_id, int eos_id);
/// The 256 strings GPT-2's byte-level BPE uses for the byte values (bytes_to_unicode() of
/// openai/gpt-2 encoder.py), UTF-8 encoded: printable bytes are themselves, the others are
/// shifted to U+0100.. . The byte tokenizer's vocab.json maps string[b] -> b.
std::vector<std::string> gpt2_byte_strings();

/// Llama's (transformers LlamaForCausalLM; Qwen2ForCausalLM alike) name of an engine tensor of a
/// Llama-block family (llama, qwen2): "embed_tokens.weight" -> "model.embed_tokens.weight",
/// "layers.3.mlp.up_proj.weight" -> "model.layers.3.mlp.up_proj.weight",
/// "layers.0.self_attn.q_proj.bias" -> "model.layers.0.self_attn.q_proj.bias", "lm_head.weight"
/// stays. No tensor changes layout.
std::string hf_llama_name(const std::string& engine_name);
/// The config.json of a Llama-block model shape m (validated: n_kv_head and d_ff set), with the
/// family's model_type and architecture (LlamaConfig for llama, Qwen2Config for qwen2):
/// hidden_size d_model, intermediate_size d_ff, num_key_value_heads n_kv_head, head_dim
/// d_model / n_head, max_position_embeddings seq_len, rms_norm_eps, rope_theta, rope_scaling
/// null, hidden_act "silu", float32; llama: attention_bias and mlp_bias false; qwen2:
/// use_sliding_window false. bos/eos: token ids.
nlohmann::json hf_llama_config(const ModelConfig& m, int bos_id, int eos_id);
/// The engine's shape of a LlamaConfig or Qwen2Config (config.json read from path, for
/// messages; the family from model_type "llama" (the default) or "qwen2"); fields left out take
/// LlamaConfig's defaults (num_key_value_heads = heads, max_position_embeddings 2048,
/// tie_word_embeddings false, rope_theta 1e4, rms_norm_eps 1e-6). Throws td::Error naming the
/// field for a missing size, a hidden_act other than silu, Llama biases, a Qwen2 sliding window,
/// rope_scaling, a head_dim other than hidden_size / heads, or a shape the engine cannot compute.
ModelConfig hf_llama_model_config(const nlohmann::json& config, const std::string& path);

/// The weights file of a model of shape m in the engine's layout (model_param_tensors(m) order,
/// model_num_params(m) floats; either family): a checkpoint's or a safetensors export's model.safetensors.
/// Throws td::Error naming the file and tensor when one is missing or has another shape.
std::vector<float> read_model_weights(const std::string& safetensors_path, const ModelConfig& m);

struct ExportOptions {
  std::string run_dir;      // a run directory: its newest valid checkpoint is exported, or
  std::string checkpoint;   // one checkpoint directory (step_NNNNNNNN); exactly one of the two
  std::string format = "hf";  // "hf" or "safetensors"
  std::string out_dir;      // created; must not exist or be empty unless force
  bool force = false;       // replace an existing non-empty out_dir that is an earlier export
  std::string data_dir;     // dataset whose tokenizer to export (default: the run's data.path)
  // Progress, when given: called with (0, total) before the first write, then after each weight
  // tensor of model.safetensors and each other file is written (done = 1 .. total, in order; the
  // last call has done == total, before the rename into out_dir). total = the model's tensors
  // plus the other files of the format (export_progress_total()). `export --progress` prints it.
  std::function<void(int done, int total)> on_progress;
};

struct ExportResult {
  std::string out_dir;      // absolute
  std::string checkpoint;   // the checkpoint directory exported
  int step = 0;
  std::vector<std::string> files;  // file names written into out_dir, sorted
  uint64_t bytes = 0;              // their total size
  std::vector<std::string> warnings;  // newer checkpoints of the run skipped (not verifying), one without checksums
};

/// The number of progress steps of an export (ExportOptions::on_progress): one per weight tensor
/// of a model of shape m, plus one per other file written: hf: config.json,
/// generation_config.json, the tokenizer files (byte: vocab.json, merges.txt,
/// tokenizer_config.json, special_tokens_map.json; bpe: tokenizer.model, tokenizer_config.json,
/// special_tokens_map.json) and the marker; safetensors: traindeck_export.json, tokenizer.model
/// (bpe) and the marker.
int export_progress_total(const ModelConfig& m, const std::string& format, const std::string& tokenizer_kind);

/// Exports a checkpoint. Writes everything into "<out_dir>.tmp-XXXXXX" beside out_dir (files
/// fsynced, with the marker ".traindeck-export" listing the other files), then renames it to
/// out_dir, so a failure leaves no partial export and an existing out_dir intact. A checkpoint
/// must verify (checkpoint_problem(): checksums, finite weights); for a run, the newest that
/// does. Throws td::Error: no / damaged checkpoint (naming the problem), an unknown format, a
/// non-empty out_dir without force, or with force one that is not an earlier export whose marker
/// lists exactly its files (the message names what it holds: a store, a run, a dataset, a
/// checkpoint, other files; docs/export.md), a missing dataset tokenizer (use data_dir), I/O.
ExportResult export_model(const ExportOptions& opt);

/// Weights to start a new run from (train --init-from).
struct InitSource {
  std::string kind;          // "hf", "safetensors" (an export) or "checkpoint"
  std::string path;          // the directory the weights came from (for a run: its checkpoint)
  ModelConfig model;         // the source's shape; seq_len is its number of positions (n_positions)
  std::vector<float> params; // host, the layout of model_param_tensors(model)
  int step = -1;             // the source's training step, -1 when unknown (hf)
};

/// Reads the weights of dir: an hf export (config.json with model_type "gpt2", "llama" or "qwen2" and
/// model.safetensors; names with or without the "transformer." / "model." prefix, F32; files may
/// be symlinks, as in a Hugging Face cache snapshot), a safetensors
/// export (traindeck_export.json), a checkpoint directory (trainer.json) or a run directory (its
/// newest valid checkpoint). Throws td::Error naming what is missing or malformed (a tensor, its
/// shape or dtype, a config field), and for an hf model whose activation, LayerNorm eps,
/// biases or RoPE scaling the engine does not compute.
InitSource read_init_source(const std::string& dir);

/// Why a source cannot initialise a model of shape `target` ("" when it can): each differing
/// field as "n_layer: source 2, config 3", joined by "; ". Must be equal: family, vocab_size,
/// n_layer, n_head, d_model, d_ff, tie_embeddings, and for llama n_kv_head, rope_theta and
/// rms_norm_eps; gpt2: target seq_len <= the source's positions (llama has no position table:
/// any seq_len).
std::string init_mismatch(const ModelConfig& source, const ModelConfig& target);

/// The source's weights in the layout of model_param_tensors(target) (host, model_num_params
/// floats; gpt2's wpe: the first seq_len positions). Throws td::Error with init_mismatch()'s
/// text when the shapes do not fit ("... --init-from DIR: ..."). A tensor-parallel run slices
/// this (tp_scatter_tensors, engine/train/tp_run.h).
std::vector<float> init_source_params(const InitSource& src, const ModelConfig& target);

/// Copies the source's weights into model (init_source_params into an unsplit model's
/// parameters). Throws as init_source_params.
void apply_init_source(const InitSource& src, GPT& model);

}  // namespace td
