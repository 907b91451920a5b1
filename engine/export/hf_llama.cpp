// Llama's and Qwen2's (Hugging Face transformers) names and config.json for the engine's Llama
// block families (llama, qwen2; engine/model/family.h), both ways: export writes them, train
// --init-from reads them back (export.h).
// Sources: transformers/models/llama/configuration_llama.py (LlamaConfig fields and defaults)
// and modeling_llama.py (LlamaForCausalLM: "model." prefix, nn.Linear weights (out, in), RoPE by
// rotate_half, repeat_kv for grouped-query attention); transformers/models/qwen2/
// configuration_qwen2.py (Qwen2Config: LlamaConfig's size fields plus use_sliding_window,
// sliding_window, max_window_layers; no attention_bias field: Qwen2Attention's q_proj, k_proj
// and v_proj always carry biases, o_proj none) and modeling_qwen2.py (the same names as Llama's,
// the biases as "<proj>.bias").
#include <cmath>

#include "engine/common/error.h"
#include "engine/export/export.h"
#include "engine/model/family.h"

namespace td {

using json = nlohmann::json;

std::string hf_llama_name(const std::string& engine_name) {
  if (engine_name == "lm_head.weight") return engine_name;
  return "model." + engine_name;
}

json hf_llama_config(const ModelConfig& m, int bos_id, int eos_id) {
  // Every LlamaConfig field that changes the forward pass is explicit, so no default of another
  // transformers version (rms_norm_eps 1e-6, tie_word_embeddings false, ...) changes the model.
  // No q/k permutation is needed or recorded: the engine's RoPE already pairs dimension i of a
  // head with i + hs/2 (rotate_half), transformers' convention.
  const ModelFamily& family = model_family(m);
  TD_ASSERT(family.block == BlockKind::kLlama);
  const bool qwen2 = family.qkv_bias;
  json c = json::object();
  c["architectures"] = json::array({family.hf_architecture});
  c["model_type"] = family.hf_model_type;
  c["vocab_size"] = m.vocab_size;
  c["hidden_size"] = m.d_model;
  c["intermediate_size"] = m.d_ff;
  c["num_hidden_layers"] = m.n_layer;
  c["num_attention_heads"] = m.n_head;
  c["num_key_value_heads"] = m.n_kv_head;
  c["head_dim"] = m.d_model / m.n_head;
  c["max_position_embeddings"] = m.seq_len;
  c["rms_norm_eps"] = m.rms_norm_eps;
  c["rope_theta"] = m.rope_theta;
  c["rope_scaling"] = nullptr;
  c["hidden_act"] = "silu";
  c["attention_dropout"] = 0.0;
  if (qwen2) {
    // Full attention in every layer: Qwen2's sliding window is off (use_sliding_window false);
    // sliding_window and max_window_layers are then unused, set as Qwen2.5's configs set them.
    c["use_sliding_window"] = false;
    c["sliding_window"] = m.seq_len;
    c["max_window_layers"] = m.n_layer;
  } else {
    c["attention_bias"] = false;
    c["mlp_bias"] = false;
    c["pretraining_tp"] = 1;
  }
  c["initializer_range"] = 0.02;
  c["tie_word_embeddings"] = m.tie_embeddings;
  c["bos_token_id"] = bos_id;
  c["eos_token_id"] = eos_id;
  c["use_cache"] = true;
  c["torch_dtype"] = "float32";
  return c;
}

ModelConfig hf_llama_model_config(const json& c, const std::string& path) {
  ModelConfig m;
  const std::string type = c.contains("model_type") && c["model_type"].is_string() ? c["model_type"].get<std::string>() : "llama";
  const ModelFamily* family = family_of_hf_model_type(type);
  if (!family || family->block != BlockKind::kLlama)
    fail("'" + path + "': model_type \"" + type + "\" is not one of the engine's Llama-block families (llama, qwen2)");
  m.family = family->name;
  try {
    m.d_model = c.at("hidden_size").get<int>();
    m.n_layer = c.at("num_hidden_layers").get<int>();
    m.n_head = c.at("num_attention_heads").get<int>();
    m.vocab_size = c.at("vocab_size").get<int>();
    m.d_ff = c.at("intermediate_size").get<int>();
    // LlamaConfig's defaults for the fields a config may leave out.
    m.n_kv_head = c.contains("num_key_value_heads") && !c["num_key_value_heads"].is_null() ? c["num_key_value_heads"].get<int>() : m.n_head;
    m.seq_len = c.value("max_position_embeddings", 2048);
    m.tie_embeddings = c.value("tie_word_embeddings", false);
    m.rope_theta = c.value("rope_theta", 10000.0);
    m.rms_norm_eps = c.value("rms_norm_eps", 1e-6);
  } catch (const json::exception& e) {
    throw Error("'" + path + "' lacks a " + family->title + " field (" + e.what() + ")");
  }
  const std::string act = c.value("hidden_act", std::string("silu"));
  if (act != "silu")
    fail("'" + path + "': hidden_act \"" + act + "\" is not the engine's SwiGLU activation (silu); this model cannot be trained here");
  if (!family->qkv_bias && (c.value("attention_bias", false) || c.value("mlp_bias", false)))
    fail("'" + path + "': attention_bias / mlp_bias is true, but the engine's Llama has no biases; this model cannot be trained here");
  if (family->qkv_bias && c.value("use_sliding_window", false))
    fail("'" + path + "': use_sliding_window is true, but the engine's " + family->title +
         " attends over the whole context in every layer; this model cannot be trained here");
  if (c.contains("rope_scaling") && !c["rope_scaling"].is_null())
    fail("'" + path + "': rope_scaling is " + c["rope_scaling"].dump() +
         ", but the engine computes plain RoPE (rope_scaling null); this model cannot be trained here");
  if (m.d_model <= 0 || m.n_head <= 0 || m.d_model % m.n_head != 0 || m.n_kv_head <= 0 || m.n_head % m.n_kv_head != 0 ||
      (m.d_model / m.n_head) % 2 != 0 || m.n_layer < 0 || m.vocab_size <= 0 || m.seq_len <= 0 || m.d_ff <= 0 ||
      !(m.rope_theta > 0) || !(m.rms_norm_eps > 0))
    fail("'" + path + "' holds a Llama shape the engine cannot compute (hidden_size a multiple of num_attention_heads with an even "
         "head size, num_attention_heads a multiple of num_key_value_heads, positive sizes)");
  if (c.contains("head_dim") && !c["head_dim"].is_null() && c["head_dim"] != m.d_model / m.n_head)
    fail("'" + path + "': head_dim " + c["head_dim"].dump() + " is not hidden_size / num_attention_heads = " +
         std::to_string(m.d_model / m.n_head) + ", which the engine's Llama requires");
  return m;
}

}  // namespace td
