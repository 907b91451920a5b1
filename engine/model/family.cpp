#include "engine/model/family.h"

#include "engine/common/error.h"
#include "engine/config.h"

namespace td {

const std::vector<ModelFamily>& model_families() {
  // Sources: GPT-2, Radford et al. 2019 and transformers' GPT2LMHeadModel; Llama, Touvron et al.
  // 2023 and transformers' LlamaForCausalLM; Qwen2, Yang et al. 2024 ("Qwen2 Technical Report",
  // arXiv:2407.10671, section 2.2.1: "QKV bias for attention") and transformers' Qwen2ForCausalLM
  // (Qwen2Attention: q_proj, k_proj, v_proj with bias=True, o_proj without).
  static const std::vector<ModelFamily> families = {
      {"gpt2", "GPT-2", BlockKind::kGpt2, true, "gpt2", "GPT2LMHeadModel",
       "GPT-2 (LayerNorm, GELU MLP, learned position embeddings, biases)"},
      {"llama", "Llama", BlockKind::kLlama, false, "llama", "LlamaForCausalLM",
       "the Llama layout (RMSNorm, SwiGLU MLP, rotary position embeddings, grouped-query attention, no biases; "
       "Touvron et al. 2023), as Llama 3, SmolLM2 and Mistral"},
      {"qwen2", "Qwen2", BlockKind::kLlama, true, "qwen2", "Qwen2ForCausalLM",
       "the Llama layout with biases on the query, key and value projections (Qwen2 and Qwen2.5; Yang et al. 2024)"},
  };
  return families;
}

const ModelFamily* find_model_family(std::string_view name) {
  for (const ModelFamily& f : model_families())
    if (name == f.name) return &f;
  return nullptr;
}

const ModelFamily& model_family(const ModelConfig& m) {
  const ModelFamily* f = find_model_family(m.family);
  TD_ASSERT(f);  // parse_config accepts only the registry's names
  return *f;
}

const ModelFamily* family_of_hf_model_type(std::string_view hf_model_type) {
  for (const ModelFamily& f : model_families())
    if (hf_model_type == f.hf_model_type) return &f;
  return nullptr;
}

std::vector<std::string> families_with_block(BlockKind block) {
  std::vector<std::string> out;
  for (const ModelFamily& f : model_families())
    if (f.block == block) out.push_back(f.name);
  return out;
}

std::vector<std::string> family_names() {
  std::vector<std::string> out;
  for (const ModelFamily& f : model_families()) out.push_back(f.name);
  return out;
}

bool llama_block(const ModelConfig& m) { return model_family(m).block == BlockKind::kLlama; }
bool qkv_bias(const ModelConfig& m) {
  const ModelFamily& f = model_family(m);
  return f.block == BlockKind::kLlama && f.qkv_bias;
}

}  // namespace td
