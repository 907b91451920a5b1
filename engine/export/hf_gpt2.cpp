// GPT-2's (Hugging Face transformers) names, layout and config for the engine's model.
// Sources: transformers/models/gpt2/configuration_gpt2.py (GPT2Config fields) and
// modeling_gpt2.py (GPT2LMHeadModel: "transformer." prefix, Conv1D weights [in, out]);
// openai/gpt-2 src/encoder.py (bytes_to_unicode).
#include <algorithm>

#include "engine/export/export.h"

namespace td {

using json = nlohmann::json;

namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += (char)cp;
  } else if (cp < 0x800) {
    out += (char)(0xC0 | (cp >> 6));
    out += (char)(0x80 | (cp & 0x3F));
  } else {
    out += (char)(0xE0 | (cp >> 12));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::string hf_gpt2_name(const std::string& engine_name) {
  if (engine_name == "lm_head.weight") return engine_name;
  return "transformer." + engine_name;
}

bool hf_gpt2_is_conv1d(const std::string& n) {
  return n.rfind("h.", 0) == 0 && (ends_with(n, ".attn.c_attn.weight") || ends_with(n, ".attn.c_proj.weight") ||
                                   ends_with(n, ".mlp.c_fc.weight") || ends_with(n, ".mlp.c_proj.weight"));
}

json hf_gpt2_config(const ModelConfig& m, int bos_id, int eos_id) {
  // Field order as transformers writes it; every GPT2Config field that changes the forward pass
  // is explicit, so no default of another transformers version can change the model.
  json c = json::object();
  c["architectures"] = json::array({"GPT2LMHeadModel"});
  c["model_type"] = "gpt2";
  c["vocab_size"] = m.vocab_size;
  c["n_positions"] = m.seq_len;
  c["n_ctx"] = m.seq_len;
  c["n_embd"] = m.d_model;
  c["n_layer"] = m.n_layer;
  c["n_head"] = m.n_head;
  c["n_inner"] = m.d_ff;
  c["activation_function"] = kEngineHfActivation;
  c["layer_norm_epsilon"] = kEngineLayerNormEps;
  c["resid_pdrop"] = 0.0;
  c["embd_pdrop"] = 0.0;
  c["attn_pdrop"] = 0.0;
  c["initializer_range"] = 0.02;
  c["scale_attn_weights"] = true;                 // scores / sqrt(head size)
  c["scale_attn_by_inverse_layer_idx"] = false;
  c["reorder_and_upcast_attn"] = false;
  c["tie_word_embeddings"] = m.tie_embeddings;
  c["bos_token_id"] = bos_id;
  c["eos_token_id"] = eos_id;
  c["use_cache"] = true;
  c["torch_dtype"] = "float32";
  return c;
}

std::vector<std::string> gpt2_byte_strings() {
  // bytes_to_unicode(): bytes '!'..'~', 0xA1..0xAC, 0xAE..0xFF map to themselves; the other 68
  // (controls, space, 0x7F..0xA0, 0xAD) to U+0100 + n in increasing byte order.
  std::vector<std::string> out(256);
  uint32_t n = 0;
  for (uint32_t b = 0; b < 256; b++) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    append_utf8(out[b], printable ? b : 256 + n++);
  }
  return out;
}

}  // namespace td
