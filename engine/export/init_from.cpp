// train --init-from: reading the weights of an export or a checkpoint back (export.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"
#include "engine/export/export.h"
#include "engine/model/family.h"
#include "engine/model/gpt.h"
#include "engine/model/shape.h"

namespace td {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail_errno("cannot open", path);
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw Error("'" + path + "' is not valid JSON (" + e.what() + ")");
  }
}

// Reads tensor `name` of shape `shape` (F32) from f into out; the error names file and shapes.
void read_checked(const SafetensorsFile& f, const std::string& file, const std::string& name, const std::vector<int64_t>& shape,
                  float* out, size_t numel) {
  auto it = f.entries().find(name);
  if (it == f.entries().end())
    fail("'" + file + "' has no tensor \"" + name + "\": it is not a model of this shape (or not of the config's model family)");
  if (it->second.shape != shape)
    fail("'" + file + "': tensor \"" + name + "\" has shape " + shape_str(it->second.shape) + ", the model's config says " + shape_str(shape));
  if (it->second.dtype != "F32")
    fail("'" + file + "': tensor \"" + name + "\" is " + it->second.dtype +
         "; --init-from reads float32 weights only (save the model with torch_dtype float32, e.g. model.float().save_pretrained(dir))");
  f.read_f32(name, out, numel);
}

// GPT2Config, LlamaConfig or Qwen2Config (config.json) -> the engine's shape; refuses a variant
// the engine does not compute.
ModelConfig hf_model_config(const std::string& path) {
  const json c = read_json(path);
  if (!c.is_object()) fail("'" + path + "' is not a transformers config (a JSON object)");
  const std::string type = c.contains("model_type") && c["model_type"].is_string() ? c["model_type"].get<std::string>() : "";
  const ModelFamily* family = family_of_hf_model_type(type);
  if (!family) {
    std::string known;
    for (const ModelFamily& f : model_families()) known += std::string(known.empty() ? "" : ", ") + f.hf_model_type;
    fail("'" + path + "' has model_type \"" + type + "\", which is none of the engine's families: --init-from reads " + known);
  }
  if (family->block == BlockKind::kLlama) return hf_llama_model_config(c, path);
  ModelConfig m;
  try {
    m.d_model = c.at("n_embd").get<int>();
    m.n_layer = c.at("n_layer").get<int>();
    m.n_head = c.at("n_head").get<int>();
    m.vocab_size = c.at("vocab_size").get<int>();
    m.seq_len = c.value("n_positions", 1024);
    m.d_ff = c.contains("n_inner") && !c["n_inner"].is_null() ? c["n_inner"].get<int>() : 4 * m.d_model;
    m.tie_embeddings = c.value("tie_word_embeddings", true);
  } catch (const json::exception& e) {
    throw Error("'" + path + "' lacks a GPT-2 field (" + e.what() + ")");
  }
  const std::string act = c.value("activation_function", std::string("gelu_new"));
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    fail("'" + path + "': activation_function \"" + act + "\" is not the engine's tanh GELU (gelu_new); this model cannot be trained here");
  const double eps = c.value("layer_norm_epsilon", 1e-5);
  if (std::abs(eps - kEngineLayerNormEps) > 1e-12)
    fail("'" + path + "': layer_norm_epsilon " + std::to_string(eps) + " differs from the engine's 1e-5");
  if (c.value("scale_attn_by_inverse_layer_idx", false) || !c.value("scale_attn_weights", true))
    fail("'" + path + "': the attention scaling (scale_attn_weights / scale_attn_by_inverse_layer_idx) differs from the engine's 1/sqrt(head size)");
  if (m.d_model <= 0 || m.n_head <= 0 || m.d_model % m.n_head != 0 || m.n_layer < 0 || m.vocab_size <= 0 || m.seq_len <= 0 || m.d_ff <= 0)
    fail("'" + path + "' holds an impossible GPT-2 shape");
  return m;
}

// A dangling symbolic link (a Hugging Face cache snapshot whose blob is gone) is named as such;
// links that resolve are followed, as the File reader does.
void refuse_dangling_link(const std::string& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec)) && !fs::exists(path, ec))
    fail("'" + path + "' is a symbolic link to '" + fs::read_symlink(path, ec).string() +
         "', which does not exist; copy the file there or point --init-from at a complete directory");
}

InitSource read_hf(const std::string& dir) {
  InitSource s;
  s.kind = "hf";
  s.path = dir;
  s.model = hf_model_config(dir + "/config.json");
  const std::string file = dir + "/model.safetensors";
  refuse_dangling_link(file);
  if (!fs::exists(file)) fail("'" + dir + "' has config.json but no model.safetensors (only the safetensors weights format is read)");
  SafetensorsFile f(file);
  const auto tensors = model_param_tensors(s.model);
  s.params.resize(tensors.back().offset + tensors.back().numel);
  if (llama_block(s.model)) {
    // LlamaForCausalLM's (and Qwen2ForCausalLM's) state dict: "model." + the engine's name, lm_head.weight as is, every
    // matrix (out, in) as the engine's; LlamaModel alone (no "model." prefix) is read too.
    const bool prefixed = f.has("model.embed_tokens.weight");
    for (const auto& t : tensors) {
      const std::string name = prefixed ? hf_llama_name(t.name) : t.name;
      read_checked(f, file, name, t.shape, s.params.data() + t.offset, t.numel);
    }
    if (s.model.tie_embeddings && f.has("lm_head.weight")) {
      // A tied model's file may hold lm_head.weight too; it must be the embedding.
      std::vector<float> head((size_t)s.model.vocab_size * s.model.d_model);
      read_checked(f, file, "lm_head.weight", tensors[0].shape, head.data(), head.size());
      if (!std::equal(head.begin(), head.end(), s.params.begin()))
        fail("'" + dir + "/config.json' says tie_word_embeddings true, but '" + file +
             "' holds an lm_head.weight that differs from the embedding: set tie_word_embeddings false in config.json");
    }
    return s;
  }
  // transformers writes "transformer.h.0..."; GPT-2 files of the Hub also come without the prefix.
  const bool prefixed = f.has("transformer.wte.weight");
  std::vector<float> buf;
  for (const auto& t : tensors) {
    std::string name = hf_gpt2_name(t.name);
    if (!prefixed && name.rfind("transformer.", 0) == 0) name = name.substr(12);
    float* dst = s.params.data() + t.offset;
    if (!hf_gpt2_is_conv1d(t.name)) {
      read_checked(f, file, name, t.shape, dst, t.numel);
      continue;
    }
    const int64_t rows = t.shape[0], cols = t.shape[1];  // engine [out, in]; GPT-2 [in, out]
    buf.resize(t.numel);
    read_checked(f, file, name, {cols, rows}, buf.data(), t.numel);
    for (int64_t i = 0; i < cols; i++)
      for (int64_t o = 0; o < rows; o++) dst[(size_t)o * cols + i] = buf[(size_t)i * rows + o];
  }
  return s;
}

InitSource read_checkpoint_source(const std::string& ckpt) {
  std::string problem = checkpoint_problem(ckpt);
  if (!problem.empty()) fail("checkpoint '" + ckpt + "' cannot be used: " + problem);
  TrainerState st = read_trainer_state(ckpt);
  InitSource s;
  s.kind = "checkpoint";
  s.path = ckpt;
  s.step = st.step;
  try {
    s.model = parse_config(st.config).model;
  } catch (const Error& e) {
    throw Error("checkpoint '" + ckpt + "' holds a config this engine cannot read (" + e.what() + ")");
  }
  s.params = read_model_weights(ckpt + "/model.safetensors", s.model);
  return s;
}

}  // namespace

std::vector<float> read_model_weights(const std::string& path, const ModelConfig& m) {
  SafetensorsFile f(path);
  const auto tensors = model_param_tensors(m);
  std::vector<float> params(tensors.back().offset + tensors.back().numel);
  for (const auto& t : tensors) read_checked(f, path, t.name, t.shape, params.data() + t.offset, t.numel);
  return params;
}

InitSource read_init_source(const std::string& dir) {
  if (!fs::is_directory(dir)) fail("--init-from '" + dir + "' is not a directory");
  for (const char* f : {"traindeck_export.json", "trainer.json", "config.json"}) refuse_dangling_link(dir + "/" + f);
  if (fs::exists(dir + "/traindeck_export.json")) {
    const json side = read_json(dir + "/traindeck_export.json");
    if (side.value("format", std::string()) != "traindeck-export")
      fail("'" + dir + "/traindeck_export.json' is not a TrainDeck export sidecar (format \"traindeck-export\")");
    InitSource s;
    s.kind = "safetensors";
    s.path = dir;
    s.step = side.value("step", -1);
    try {
      s.model = parse_config(side.at("config")).model;
    } catch (const std::exception& e) {
      throw Error("'" + dir + "/traindeck_export.json' holds no usable config (" + e.what() + ")");
    }
    s.params = read_model_weights(dir + "/" + side.value("weights", std::string("model.safetensors")), s.model);
    return s;
  }
  if (fs::exists(dir + "/trainer.json")) return read_checkpoint_source(dir);
  if (fs::exists(dir + "/config.json")) return read_hf(dir);
  if (fs::is_directory(dir + "/checkpoints")) {
    std::vector<std::string> damaged;
    auto latest = latest_checkpoint(dir + "/checkpoints", &damaged);
    if (!latest)
      fail("run '" + dir + "' has no usable checkpoint" + (damaged.empty() ? std::string() : " (damaged: " + damaged.front() + ")"));
    return read_checkpoint_source(*latest);
  }
  fail("--init-from '" + dir + "' holds no model: expected an hf export (config.json), a safetensors export "
       "(traindeck_export.json), a checkpoint (trainer.json) or a run directory (checkpoints/)");
}

std::string init_mismatch(const ModelConfig& src, const ModelConfig& dst) {
  std::string out;
  auto diff = [&](const char* name, long long a, long long b) {
    if (a == b) return;
    out += std::string(out.empty() ? "" : "; ") + name + ": source " + std::to_string(a) + ", config " + std::to_string(b);
  };
  if (src.family != dst.family)
    out += "family: source " + src.family + ", config " + dst.family;
  diff("vocab_size", src.vocab_size, dst.vocab_size);
  diff("n_layer", src.n_layer, dst.n_layer);
  diff("n_head", src.n_head, dst.n_head);
  diff("d_model", src.d_model, dst.d_model);
  diff("d_ff", src.d_ff, dst.d_ff);
  if (src.tie_embeddings != dst.tie_embeddings)
    out += std::string(out.empty() ? "" : "; ") + "tie_embeddings: source " + (src.tie_embeddings ? "true" : "false") +
           ", config " + (dst.tie_embeddings ? "true" : "false");
  const ModelFamily* sf = find_model_family(src.family);
  const ModelFamily* df = find_model_family(dst.family);
  const bool llama = sf && df && sf->block == BlockKind::kLlama && df->block == BlockKind::kLlama;
  if (llama) {
    diff("n_kv_head", src.n_kv_head, dst.n_kv_head);
    auto diff_real = [&](const char* name, double a, double b) {
      if (std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b))) return;
      char buf[96];
      std::snprintf(buf, sizeof buf, ": source %g, config %g", a, b);
      out += std::string(out.empty() ? "" : "; ") + name + buf;
    };
    diff_real("rope_theta", src.rope_theta, dst.rope_theta);
    diff_real("rms_norm_eps", src.rms_norm_eps, dst.rms_norm_eps);
  }
  if (!llama && dst.seq_len > src.seq_len)
    out += std::string(out.empty() ? "" : "; ") + "seq_len: config " + std::to_string(dst.seq_len) +
           " is longer than the source's " + std::to_string(src.seq_len) + " positions";
  return out;
}

std::vector<float> init_source_params(const InitSource& src, const ModelConfig& target) {
  const std::string why = init_mismatch(src.model, target);
  if (!why.empty())
    fail("--init-from '" + src.path + "': the model differs from the config (" + why +
         "); set the config's model section to the source's shape");
  const auto from = model_param_tensors(src.model), to = model_param_tensors(target);
  std::vector<float> host(model_num_params(target));
  for (size_t i = 0; i < to.size(); i++) {
    const ParamTensor& t = to[i];
    TD_ASSERT(from[i].name == t.name && from[i].numel >= t.numel);  // wpe may be longer
    std::copy_n(src.params.data() + from[i].offset, t.numel, host.data() + t.offset);
  }
  return host;
}

void apply_init_source(const InitSource& src, GPT& model) {
  const std::vector<float> host = init_source_params(src, model.config());
  TD_ASSERT(host.size() == model.num_params());  // an unsplit model (tensor parallelism: init_source_params)
  model.backend().upload(model.params(), host.data(), host.size() * sizeof(float));
}

}  // namespace td
