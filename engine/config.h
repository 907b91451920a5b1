// Run configuration: the JSON document `traindeck-engine train --config run.json` reads.
//
// Sections `model`, `train`, `data` (docs/config.md documents every field with its default and
// range). Unknown fields are errors; every validation error is a td::ConfigError that names the
// field path ("train.lr"), the value and the allowed range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace td {
namespace alerts {
struct AlertRules;  // engine/metrics/alerts.h
}

/// The model's shape. C = d_model, NH = n_head, hs = C / NH, F = d_ff, V = vocab_size,
/// T = seq_len, KV = n_kv_head.
///
/// family: a name of engine/model/family.h's registry. "gpt2" (the default): GPT-2
/// (engine/model/gpt.h). "llama": the Llama layout (Touvron et al. 2023, arXiv:2302.13971;
/// transformers' modeling_llama): pre-norm RMSNorm, rotary position embeddings on q and k,
/// grouped-query attention with KV key/value heads, a SwiGLU MLP of width F, no biases, no
/// position embedding. "qwen2": the Llama layout with q/k/v biases. The fields of the Llama
/// block's families (n_kv_head, ffn_multiple_of, rope_theta, rms_norm_eps) are errors in a gpt2
/// config (config_field_docs' FieldDoc::families says which).
struct ModelConfig {
  std::string family = "gpt2";  // "gpt2", "llama" or "qwen2" (engine/model/family.h)
  int vocab_size = 257;
  int seq_len = 256;
  int n_layer = 6;
  int n_head = 6;
  int d_model = 384;
  int d_ff = 0;  // 0 in JSON: 4 * d_model (gpt2) or llama_default_d_ff (llama); after validation always set
  bool tie_embeddings = true;
  // the Llama block's families only (llama, qwen2)
  int n_kv_head = 0;            // 0 in JSON means n_head (multi-head); 1 is multi-query; after validation always set
  int ffn_multiple_of = 256;    // d_ff = 0 rounds the Llama rule's width up to a multiple of this
  double rope_theta = 10000.0;  // RoPE base (Su et al. 2021); Llama 3 uses 500000
  double rms_norm_eps = 1e-5;   // RMSNorm epsilon (Zhang & Sennrich 2019)
};

/// The Llama rule for the SwiGLU hidden width, as Meta's reference code computes it
/// (facebookresearch/llama, llama/model.py, FeedForward.__init__ with hidden_dim = 4 * dim and
/// no ffn_dim_multiplier; the paper's "2/3 4d", Touvron et al. 2023, section 2.2):
///   F = multiple_of * ceil(floor(8 d_model / 3) / multiple_of).
/// d_model 4096, multiple_of 256: 11008 (Llama-7B). d_model >= 1, multiple_of >= 1.
int llama_default_d_ff(int d_model, int multiple_of);

struct TrainConfig {
  std::string device = "cpu";
  std::string precision = "auto";  // "auto", "fp32" or "bf16": see resolved_precision()
  std::string attention = "simple";  // "simple" or "fused": which attention ops (engine/ops/ops.h AttentionKernel)
  std::string gelu_fusion = "none";  // "none" or "epilogue": where GPT-2's GELU runs (engine/ops/ops.h GeluFusion)
  int threads = 0;  // 0: all cores
  uint64_t seed = 1337;
  int steps = 1000;
  double lr = 6e-4;
  int warmup = 100;
  double min_lr = 6e-5;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double grad_clip = 1.0;  // 0 disables clipping
  int micro_batch = 8;
  int grad_accum = 1;
  int eval_interval = 100;  // 0 disables evaluation
  int eval_batches = 10;
  int sample_interval = 200;  // 0 disables samples
  int sample_tokens = 200;
  double sample_temperature = 0.8;
  int sample_top_k = 40;
  std::string sample_prompt;
  int checkpoint_interval = 500;  // 0: only at the end
  int keep_checkpoints = 3;
  int log_interval = 1;  // steps between stderr progress lines
  int tensor_parallel = 1;  // Megatron-LM tensor-parallel degree: ranks per TP group (engine/model/tensor_parallel.h)
  int zero = 0;  // ZeRO stage: 0 all-reduce of gradients, 1 optimizer state sharded over ranks, 2 gradients too (engine/train/zero.h)
  double dist_timeout_s = 60;  // rendezvous and collective timeout (a dead or frozen rank)
  std::string dist_ifname;     // network interface for Gloo ("" = TRAINDECK_GLOO_IFNAME or default)
  int metrics_port = -1;       // rank 0 serves Prometheus text on it (-1 off, 0 a free port; metrics/prometheus.h)
  std::string metrics_address = "127.0.0.1";  // where metrics_port listens
  // Alert thresholds (engine/metrics/alerts.h AlertRules, docs/events.md "Alerts").
  int alert_spike_window = 50;
  double alert_spike_sigma = 6.0;
  double alert_spike_factor = 1.5;
  int alert_throughput_window = 20;
  double alert_throughput_window_s = 60.0;
  double alert_throughput_fraction = 0.5;  // 0 disables
  double alert_stall_factor = 10.0;
  double alert_stall_min_s = 120.0;
  uint64_t alert_disk_min_free_bytes = 1ull << 30;
  double alert_disk_min_free_fraction = 0.02;
  double alert_connection_lost_s = 180.0;
  double alert_interval_s = 600.0;
};

struct DataConfig {
  std::string path;  // a prepared dataset directory (traindeck-engine prepare)
};

struct RunConfig {
  ModelConfig model;
  TrainConfig train;
  DataConfig data;
};

/// The precision a validated config trains in: "bf16" or "fp32" ("auto" is bf16 on CUDA, fp32 on
/// the CPU).
std::string resolved_precision(const TrainConfig& t);

/// The alert rules of a validated config's train.alert_* fields (the rest at AlertRules' defaults).
alerts::AlertRules alert_rules(const TrainConfig& t);

/// Parses and validates a config document. Throws td::ConfigError.
RunConfig parse_config(const nlohmann::json& j);
/// Reads a JSON file (td::Error when unreadable or not JSON, with line/column).
nlohmann::json read_json_file(const std::string& path);
/// Applies "--set section.field=value" overrides to a document before parse_config.
/// The value is parsed as JSON when it is valid JSON, else taken as a string.
/// Throws td::ConfigError for a malformed override or an unknown path.
void apply_override(nlohmann::json& doc, const std::string& assignment);
/// The full config as JSON (every field of its model.family, defaults filled in; the fields of
/// another family are left out, so parse_config(to_json(c)) accepts it).
nlohmann::json to_json(const RunConfig& c);

/// Documentation of every field: path, default (as JSON), range/allowed values, meaning.
/// docs/config.md is generated from it by `traindeck-engine config --markdown`.
struct FieldDoc {
  std::string path;
  std::string default_value;
  std::string range;
  std::string meaning;
  std::vector<std::string> families;  // empty: every model family; else the model.family values it may be set in ("llama", "qwen2")
};
std::vector<FieldDoc> config_field_docs();

}  // namespace td
