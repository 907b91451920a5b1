// The model families the engine computes, as data: one entry per family in model_families().
//
// Whatever differs between families and is not a block's arithmetic is read from here, never
// from a comparison of model.family with a string literal: the config's allowed values and
// family-only fields (engine/config.cpp), the parameter table's optional tensors and the
// tensor-parallel rules (engine/model/shape.cpp, tensor_parallel.cpp), the planner, Hugging Face
// export and import (engine/export), the designer (gui/designer).
//
// A family is a block body plus options of that body. The two bodies:
//   kGpt2   LayerNorm, learned position embeddings, GELU MLP, biases (engine/model/gpt.cpp)
//   kLlama  RMSNorm, rotary positions, grouped-query attention, SwiGLU MLP (engine/model/llama.cpp)
// A family that reuses a body (Qwen2 is the Llama body with q/k/v biases) costs an entry here, its
// option in the body, its Hugging Face names (engine/export/hf_llama.cpp) and its tests; a new
// body is a new file beside gpt.cpp and llama.cpp (docs/models.md, "Adding a model family").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace td {

struct ModelConfig;  // engine/config.h

/// The block body a family computes (see above).
enum class BlockKind { kGpt2, kLlama };

/// One model family. All strings are static.
struct ModelFamily {
  const char* name;             // model.family in a run config: "gpt2", "llama", "qwen2"
  const char* title;            // for people: "GPT-2", "Llama", "Qwen2"
  BlockKind block;
  bool qkv_bias;                // kLlama: q_proj, k_proj and v_proj carry biases (Qwen2); kGpt2 always has biases
  const char* hf_model_type;    // Hugging Face config.json "model_type"
  const char* hf_architecture;  // Hugging Face config.json "architectures"[0]
  const char* summary;          // one sentence for the config reference and the designer
};

/// Every family, in the order the designer lists them (the default, gpt2, first).
const std::vector<ModelFamily>& model_families();
/// The family called `name` (model.family), or null when there is none.
const ModelFamily* find_model_family(std::string_view name);
/// The family of a validated config (parse_config refuses unknown names; TD_ASSERT otherwise).
const ModelFamily& model_family(const ModelConfig& m);
/// The family whose Hugging Face model_type is `hf_model_type`, or null.
const ModelFamily* family_of_hf_model_type(std::string_view hf_model_type);
/// The names of the families with block body `block` ("llama qwen2" for kLlama), in registry order.
std::vector<std::string> families_with_block(BlockKind block);
/// The names of every family, in registry order.
std::vector<std::string> family_names();

/// Shorthands for a validated config: its block body is kLlama (RMSNorm, RoPE, GQA, SwiGLU),
/// and its q/k/v projections carry biases.
bool llama_block(const ModelConfig& m);
bool qkv_bias(const ModelConfig& m);

}  // namespace td
