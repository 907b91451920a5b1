#include "engine/config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "engine/common/error.h"
#include "engine/metrics/alerts.h"
#include "engine/model/family.h"

namespace td {
namespace {

using json = nlohmann::json;

// One row per config field: its path, documentation and how to read, check and write it.
// Validation, to_json and docs/config.md all come from this table.
struct Field {
  std::string section, name;
  std::string range, meaning;
  std::vector<std::string> families;  // empty: every model family; else the model.family values it may be set in
  std::function<void(RunConfig&, const json&, const std::string&)> read;
  std::function<json(const RunConfig&)> write;
};

std::string show(const json& v) { return v.dump(); }


// Integer field in [lo, hi].
template <class S>
Field make_int(std::string sec, std::string name, S RunConfig::*section, int S::*member, long lo,
               long hi, std::string meaning) {
  Field f;
  f.section = sec;
  f.name = name;
  f.range = "integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  f.meaning = std::move(meaning);
  f.read = [=](RunConfig& c, const json& v, const std::string& path) {
    if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()))
      throw ConfigError(path, "expected an integer in [" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + "], got " + show(v));
    double d = v.get<double>();
    if (d < lo || d > hi)
      throw ConfigError(path, "value " + show(v) + " is out of range: allowed [" +
                                  std::to_string(lo) + ", " + std::to_string(hi) + "]");
    (c.*section).*member = static_cast<int>(d);
  };
  f.write = [=](const RunConfig& c) { return json((c.*section).*member); };
  return f;
}

template <class S>
Field make_u64(std::string sec, std::string name, S RunConfig::*section, uint64_t S::*member,
               std::string meaning) {
  Field f;
  f.section = sec;
  f.name = name;
  f.range = "integer >= 0";
  f.meaning = std::move(meaning);
  f.read = [=](RunConfig& c, const json& v, const std::string& path) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      throw ConfigError(path, "expected a non-negative integer, got " + show(v));
    (c.*section).*member = v.get<uint64_t>();
  };
  f.write = [=](const RunConfig& c) { return json((c.*section).*member); };
  return f;
}

// Real field in [lo, hi] (inclusive unless open_lo).
template <class S>
Field make_real(std::string sec, std::string name, S RunConfig::*section, double S::*member,
                double lo, double hi, bool open_lo, std::string meaning) {
  Field f;
  f.section = sec;
  f.name = name;
  std::ostringstream r;
  r << "number in " << (open_lo ? "(" : "[") << lo << ", " << hi << "]";
  f.range = r.str();
  f.meaning = std::move(meaning);
  std::string range = f.range;
  f.read = [=](RunConfig& c, const json& v, const std::string& path) {
    if (!v.is_number()) throw ConfigError(path, "expected a " + range + ", got " + show(v));
    double d = v.get<double>();
    if (!std::isfinite(d) || d < lo || d > hi || (open_lo && d == lo))
      throw ConfigError(path, "value " + show(v) + " is out of range: allowed " + range);
    (c.*section).*member = d;
  };
  f.write = [=](const RunConfig& c) { return json((c.*section).*member); };
  return f;
}

template <class S>
Field make_bool(std::string sec, std::string name, S RunConfig::*section, bool S::*member,
                std::string meaning) {
  Field f;
  f.section = sec;
  f.name = name;
  f.range = "true or false";
  f.meaning = std::move(meaning);
  f.read = [=](RunConfig& c, const json& v, const std::string& path) {
    if (!v.is_boolean()) throw ConfigError(path, "expected true or false, got " + show(v));
    (c.*section).*member = v.get<bool>();
  };
  f.write = [=](const RunConfig& c) { return json((c.*section).*member); };
  return f;
}

template <class S>
Field make_string(std::string sec, std::string name, S RunConfig::*section, std::string S::*member,
                  std::vector<std::string> allowed, std::string meaning) {
  Field f;
  f.section = sec;
  f.name = name;
  if (allowed.empty()) {
    f.range = "string";
  } else {
    for (size_t i = 0; i < allowed.size(); ++i) f.range += (i ? " or " : "") + ("\"" + allowed[i] + "\"");
  }
  f.meaning = std::move(meaning);
  std::string range = f.range;
  f.read = [=](RunConfig& c, const json& v, const std::string& path) {
    if (!v.is_string()) throw ConfigError(path, "expected a string, got " + show(v));
    std::string s = v.get<std::string>();
    if (!allowed.empty()) {
      bool ok = false;
      for (const auto& a : allowed) ok |= (a == s);
      if (!ok) throw ConfigError(path, "value " + show(v) + " is not allowed: use " + range);
    }
    (c.*section).*member = s;
  };
  f.write = [=](const RunConfig& c) { return json((c.*section).*member); };
  return f;
}

const std::vector<Field>& fields() {
  static const std::vector<Field> table = [] {
    using M = ModelConfig;
    using T = TrainConfig;
    using D = DataConfig;
    auto m = &RunConfig::model;
    auto t = &RunConfig::train;
    auto d = &RunConfig::data;
    const long big = 1L << 30;
    std::vector<Field> v;
    {
      std::string meaning = "Model family (engine/model/family.h).";
      const auto& fams = model_families();
      for (size_t i = 0; i < fams.size(); i++)
        meaning += std::string(" \"") + fams[i].name + "\": " + fams[i].summary + (i + 1 < fams.size() ? ";" : ".");
      meaning += " The fields marked for other families are errors.";
      v.push_back(make_string<M>("model", "family", m, &M::family, family_names(), meaning));
    }
    v.push_back(make_int<M>("model", "vocab_size", m, &M::vocab_size, 2, 1 << 24, "Vocabulary size V; must equal the dataset's tokenizer (257 for the byte tokenizer)."));
    v.push_back(make_int<M>("model", "seq_len", m, &M::seq_len, 1, 1 << 16, "Context length T in tokens (gpt2: the learned position embeddings' length; llama: the longest sequence trained, RoPE has no table)."));
    v.push_back(make_int<M>("model", "n_layer", m, &M::n_layer, 1, 1024, "Number of transformer blocks L."));
    v.push_back(make_int<M>("model", "n_head", m, &M::n_head, 1, 1024, "Attention (query) heads NH; d_model must be a multiple of n_head (llama: with an even head size d_model / n_head, as RoPE rotates pairs)."));
    v.push_back(make_int<M>("model", "d_model", m, &M::d_model, 1, 1 << 16, "Residual stream width C."));
    v.push_back(make_int<M>("model", "d_ff", m, &M::d_ff, 0, 1 << 18, "MLP hidden width F; 0 means 4 * d_model (gpt2) or the Llama rule ffn_multiple_of * ceil(floor(8 d_model / 3) / ffn_multiple_of) (llama; the SwiGLU MLP has three C x F matrices)."));
    v.push_back(make_bool<M>("model", "tie_embeddings", m, &M::tie_embeddings, "The LM head reuses the token embedding matrix (GPT-2, SmolLM2, Llama-3.2-1B; Llama-3-8B does not)."));
    auto llama = [&](Field f) {  // the fields of the Llama block's families
      f.families = families_with_block(BlockKind::kLlama);
      v.push_back(std::move(f));
    };
    llama(make_int<M>("model", "n_kv_head", m, &M::n_kv_head, 0, 1024, "Key/value heads KV of grouped-query attention (Ainslie et al. 2023): each serves n_head / n_kv_head query heads, so n_head must be a multiple of it; 0 means n_head (multi-head attention), 1 is multi-query attention."));
    llama(make_int<M>("model", "ffn_multiple_of", m, &M::ffn_multiple_of, 1, 1 << 16, "With d_ff = 0, the Llama rule rounds the SwiGLU width up to a multiple of this (Meta's reference code's multiple_of)."));
    llama(make_real<M>("model", "rope_theta", m, &M::rope_theta, 0, 1e12, true, "Base of the rotary position embedding's frequencies theta^(-2i/hs) (Su et al. 2021); 10000 as Llama 2, 500000 as Llama 3."));
    llama(make_real<M>("model", "rms_norm_eps", m, &M::rms_norm_eps, 0, 1, true, "Epsilon of RMSNorm, x / sqrt(mean(x^2) + eps) * weight (Zhang and Sennrich 2019)."));

    v.push_back(make_string<T>("train", "device", t, &T::device, {}, "\"cpu\", \"cuda\" (GPU 0) or \"cuda:N\" (GPU N; the CUDA backend, docs/cuda.md)."));
    v.push_back(make_string<T>("train", "precision", t, &T::precision, {"auto", "fp32", "bf16"},
                               "Arithmetic precision. \"bf16\": mixed precision (bf16 activations and matmuls with fp32 accumulation, fp32 master weights, "
                               "gradients and AdamW state; CUDA only); \"fp32\": fp32 everywhere; \"auto\": bf16 on CUDA, fp32 on the CPU."));
    v.push_back(make_string<T>("train", "attention", t, &T::attention, {"simple", "fused"},
                               "Attention kernel. \"simple\": the scores as matrices, saving the (B, n_head, T, T) probabilities for backward; "
                               "\"fused\": FlashAttention-2 tiles with an online softmax, saving one log-sum-exp per row instead, so activation memory "
                               "no longer grows with T^2 (the same function to rounding; on CUDA not yet checked on a GPU, docs/cuda.md)."));
    v.push_back(make_string<T>("train", "gelu_fusion", t, &T::gelu_fusion, {"none", "epilogue"},
                               "Where GPT-2's MLP computes its GELU. \"none\": a pass of its own after the up-projection (and one for its gradient); "
                               "\"epilogue\": inside the up-projection's GEMM and, for the gradient, inside the down-projection's input-gradient GEMM "
                               "(cuBLASLt GELU_AUX_BIAS and DGELU epilogues on CUDA), saving those passes over the (B, T, d_ff) activations "
                               "(the same function to rounding; on CUDA not yet checked on a GPU, docs/cuda.md). Llama's SwiGLU is not affected."));
    v.push_back(make_int<T>("train", "threads", t, &T::threads, 0, 4096, "CPU threads for OpenMP and OpenBLAS; 0 means all cores."));
    v.push_back(make_u64<T>("train", "seed", t, &T::seed, "Seed of the weight initialisation, the data order and sampling."));
    v.push_back(make_int<T>("train", "steps", t, &T::steps, 1, big, "Optimizer steps to train."));
    v.push_back(make_real<T>("train", "lr", t, &T::lr, 0, 10, true, "Peak learning rate (after warmup)."));
    v.push_back(make_int<T>("train", "warmup", t, &T::warmup, 0, big, "Steps of linear warmup from 0 to lr."));
    v.push_back(make_real<T>("train", "min_lr", t, &T::min_lr, 0, 10, false, "Learning rate at the end of the cosine decay; at most lr."));
    v.push_back(make_real<T>("train", "weight_decay", t, &T::weight_decay, 0, 10, false, "AdamW decoupled weight decay, applied to matrices only (not biases, norms, embeddings)."));
    v.push_back(make_real<T>("train", "beta1", t, &T::beta1, 0, 0.999999, false, "AdamW first-moment decay."));
    v.push_back(make_real<T>("train", "beta2", t, &T::beta2, 0, 0.999999, false, "AdamW second-moment decay."));
    v.push_back(make_real<T>("train", "eps", t, &T::eps, 0, 1, true, "AdamW epsilon."));
    v.push_back(make_real<T>("train", "grad_clip", t, &T::grad_clip, 0, 1e6, false, "Clip the global gradient L2 norm to this value; 0 disables clipping."));
    v.push_back(make_int<T>("train", "micro_batch", t, &T::micro_batch, 1, 1 << 16, "Sequences per forward/backward on each rank (B)."));
    v.push_back(make_int<T>("train", "grad_accum", t, &T::grad_accum, 1, 1 << 16, "Micro batches accumulated per optimizer step; global batch = micro_batch * grad_accum * world_size sequences."));
    v.push_back(make_int<T>("train", "eval_interval", t, &T::eval_interval, 0, big, "Steps between evaluations on the validation split; 0 disables them."));
    v.push_back(make_int<T>("train", "eval_batches", t, &T::eval_batches, 1, 1 << 20, "Micro batches per evaluation."));
    v.push_back(make_int<T>("train", "sample_interval", t, &T::sample_interval, 0, big, "Steps between text samples; 0 disables them."));
    v.push_back(make_int<T>("train", "sample_tokens", t, &T::sample_tokens, 1, 1 << 20, "Tokens generated per sample."));
    v.push_back(make_real<T>("train", "sample_temperature", t, &T::sample_temperature, 0, 100, false, "Sampling temperature; 0 picks the most likely token."));
    v.push_back(make_int<T>("train", "sample_top_k", t, &T::sample_top_k, 0, 1 << 24, "Sample among the k most likely tokens; 0 means all."));
    v.push_back(make_string<T>("train", "sample_prompt", t, &T::sample_prompt, {}, "Text the samples continue (empty: start after an end-of-text token)."));
    v.push_back(make_int<T>("train", "checkpoint_interval", t, &T::checkpoint_interval, 0, big, "Steps between checkpoints; 0 writes one only at the end."));
    v.push_back(make_int<T>("train", "keep_checkpoints", t, &T::keep_checkpoints, 1, 1 << 20, "Newest checkpoints kept; older ones are deleted."));
    v.push_back(make_int<T>("train", "log_interval", t, &T::log_interval, 1, big, "Steps between progress lines on stderr (every step is an event)."));
    v.push_back(make_int<T>("train", "zero", t, &T::zero, 0, 3, "Data parallel across ranks (docs/distributed.md): 0 averages gradients with an all-reduce; 1 (ZeRO-1) reduce-scatters them, updates each rank's shard with AdamW (optimizer state sharded) and all-gathers the parameters; 2 (ZeRO-2) also shards the gradients: each layer's gradient is reduce-scattered as soon as backward has computed it, and a rank keeps only its shard; 3 (ZeRO-3) also shards the parameters: each layer's weights are all-gathered just before its forward and again before its backward, then freed (fp32 only)."));
    v.push_back(make_int<T>("train", "tensor_parallel", t, &T::tensor_parallel, 1, 64, "Tensor parallelism (Megatron-LM; docs/distributed.md): each layer is split across this many consecutive ranks, attention heads and MLP columns shared out and the vocabulary too, with an all-reduce after each row-parallel layer; the world size must be a multiple of it (world = data parallel x tensor parallel), a group must stay on one node, and model.n_head, model.n_kv_head and model.d_ff must be multiples of it. Combines with train.zero 1-3 over the data-parallel ranks."));
    v.push_back(make_real<T>("train", "dist_timeout_s", t, &T::dist_timeout_s, 0, 86400, true, "Seconds the rendezvous and each collective wait for the other ranks; a dead or frozen rank ends the run with an error naming it after this long."));
    v.push_back(make_string<T>("train", "dist_ifname", t, &T::dist_ifname, {}, "Network interface Gloo uses between ranks (e.g. \"eth0\"); empty: TRAINDECK_GLOO_IFNAME, else the loopback for local ranks or this host's name."));

    v.push_back(make_int<T>("train", "metrics_port", t, &T::metrics_port, -1, 65535, "Rank 0 serves the run's current figures to Prometheus on this TCP port (text format at /metrics, docs/events.md \"Prometheus\"); -1 off, 0 a free port (named in run_start's metrics_url)."));
    v.push_back(make_string<T>("train", "metrics_address", t, &T::metrics_address, {}, "Address metrics_port listens on: 127.0.0.1 (this machine only) or another of this machine's addresses (0.0.0.0: every interface)."));

    v.push_back(make_int<T>("train", "alert_spike_window", t, &T::alert_spike_window, 2, 1 << 20, "Alerts (docs/events.md \"Alerts\"): a loss spike is judged against the mean and standard deviation of the finite losses of this many previous steps (at least 10 of them, or all when fewer)."));
    v.push_back(make_real<T>("train", "alert_spike_sigma", t, &T::alert_spike_sigma, 0, 1e6, true, "A step's loss is a spike when it exceeds mean + alert_spike_sigma * std of the window ..."));
    v.push_back(make_real<T>("train", "alert_spike_factor", t, &T::alert_spike_factor, 1, 1e6, false, "... and alert_spike_factor * mean."));
    v.push_back(make_int<T>("train", "alert_throughput_window", t, &T::alert_throughput_window, 1, 1 << 20, "A throughput drop compares the median tokens/s of at least this many last steps with the median of all earlier steps (the first 10 steps not counted) ..."));
    v.push_back(make_real<T>("train", "alert_throughput_window_s", t, &T::alert_throughput_window_s, 0, 1e7, false, "... and of as many more as it takes to cover this many seconds of step time, so that millisecond steps do not turn scheduler noise into alerts. The alert re-arms after a whole window back above the limit."));
    v.push_back(make_real<T>("train", "alert_throughput_fraction", t, &T::alert_throughput_fraction, 0, 1, false, "A throughput drop alert fires when the recent median falls below this fraction of the earlier one; 0 disables it."));
    v.push_back(make_real<T>("train", "alert_stall_factor", t, &T::alert_stall_factor, 0, 1e6, true, "The workbench reports a stall when no step came for this many times the median step time ..."));
    v.push_back(make_real<T>("train", "alert_stall_min_s", t, &T::alert_stall_min_s, 0, 1e7, false, "... and at least this many seconds."));
    v.push_back(make_u64<T>("train", "alert_disk_min_free_bytes", t, &T::alert_disk_min_free_bytes, "Disk alert: the run directory's filesystem has fewer free bytes than this ..."));
    v.push_back(make_real<T>("train", "alert_disk_min_free_fraction", t, &T::alert_disk_min_free_fraction, 0, 1, false, "... or less than this fraction of its size free (checked every 50 steps and after each checkpoint)."));
    v.push_back(make_real<T>("train", "alert_connection_lost_s", t, &T::alert_connection_lost_s, 0, 1e7, true, "The workbench reports a remote run's connection lost after this many seconds without it."));
    v.push_back(make_real<T>("train", "alert_interval_s", t, &T::alert_interval_s, 0, 1e7, false, "At most one loss spike alert and one throughput drop alert per this many seconds of the run's step time, however often the figure crosses its limit."));

    v.push_back(make_string<D>("data", "path", d, &D::path, {}, "A prepared dataset directory (traindeck-engine prepare); relative paths are taken from the config file's directory."));
    return v;
  }();
  return table;
}

void check_object(const json& j, const std::string& path) {
  if (!j.is_object()) throw ConfigError(path.empty() ? "(document)" : path, "expected a JSON object, got " + show(j));
}

}  // namespace

int llama_default_d_ff(int d_model, int multiple_of) {
  const int64_t hidden = 8 * (int64_t)d_model / 3;  // int(2 * (4 d) / 3)
  return (int)(multiple_of * ((hidden + multiple_of - 1) / multiple_of));
}

alerts::AlertRules alert_rules(const TrainConfig& t) {
  alerts::AlertRules r;
  r.spike_window = t.alert_spike_window;
  r.spike_min_steps = std::min(r.spike_min_steps, t.alert_spike_window);
  r.spike_sigma = t.alert_spike_sigma;
  r.spike_factor = t.alert_spike_factor;
  r.throughput_window = t.alert_throughput_window;
  r.throughput_window_s = t.alert_throughput_window_s;
  r.alert_interval_s = t.alert_interval_s;
  r.throughput_fraction = t.alert_throughput_fraction;
  r.stall_factor = t.alert_stall_factor;
  r.stall_min_s = t.alert_stall_min_s;
  r.disk_min_free_bytes = (double)t.alert_disk_min_free_bytes;
  r.disk_min_free_fraction = t.alert_disk_min_free_fraction;
  r.connection_lost_s = t.alert_connection_lost_s;
  return r;
}

std::string resolved_precision(const TrainConfig& t) {
  if (t.precision != "auto") return t.precision;
  return t.device == "cpu" ? "fp32" : "bf16";
}

RunConfig parse_config(const json& doc) {
  check_object(doc, "");
  RunConfig c;
  std::vector<std::pair<const Field*, std::string>> family_fields;  // family-specific fields the document sets, with their paths
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() != "model" && it.key() != "train" && it.key() != "data")
      throw ConfigError(it.key(), "unknown section: allowed sections are model, train, data");
    check_object(it.value(), it.key());
    for (auto f = it.value().begin(); f != it.value().end(); ++f) {
      bool known = false;
      for (const auto& field : fields()) {
        if (field.section == it.key() && field.name == f.key()) {
          field.read(c, f.value(), it.key() + "." + f.key());
          if (!field.families.empty()) family_fields.emplace_back(&field, it.key() + "." + f.key());
          known = true;
          break;
        }
      }
      if (!known) throw ConfigError(it.key() + "." + f.key(), "unknown field (see docs/config.md for the fields of '" + it.key() + "')");
    }
  }
  // Cross-field rules.
  auto& m = c.model;
  for (const auto& [field, path] : family_fields) {
    const auto& fams = field->families;
    if (std::find(fams.begin(), fams.end(), m.family) != fams.end()) continue;
    std::string names;
    for (size_t i = 0; i < fams.size(); i++) names += (i ? (i + 1 == fams.size() ? " or \"" : ", \"") : "\"") + fams[i] + "\"";
    throw ConfigError(path, "is a field of model.family " + names + " only, and this config's family is \"" + m.family +
                                "\": remove it, or set model.family to " + names);
  }
  if (m.d_model % m.n_head != 0)
    throw ConfigError("model.d_model", "value " + std::to_string(m.d_model) + " must be a multiple of model.n_head = " + std::to_string(m.n_head));
  if (llama_block(m)) {
    if (m.n_kv_head == 0) m.n_kv_head = m.n_head;
    if (m.n_head % m.n_kv_head != 0) {
      std::string divisors;
      for (int k = 1; k <= m.n_head; ++k)
        if (m.n_head % k == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(k);
      throw ConfigError("model.n_kv_head", "value " + std::to_string(m.n_kv_head) + " must divide model.n_head = " + std::to_string(m.n_head) +
                                               " (each key/value head serves n_head / n_kv_head query heads): use one of " + divisors);
    }
    const int hs = m.d_model / m.n_head;
    if (hs % 2 != 0)
      throw ConfigError("model.d_model", "head size d_model / model.n_head = " + std::to_string(m.d_model) + " / " + std::to_string(m.n_head) +
                                             " = " + std::to_string(hs) + " is odd; rotary embeddings rotate pairs of dimensions: choose d_model and n_head with an even quotient");
    if (m.d_ff == 0) m.d_ff = llama_default_d_ff(m.d_model, m.ffn_multiple_of);
  }
  if (m.d_ff == 0) m.d_ff = 4 * m.d_model;
  if (c.train.min_lr > c.train.lr)
    throw ConfigError("train.min_lr", "value " + std::to_string(c.train.min_lr) + " must be at most train.lr = " + std::to_string(c.train.lr));
  {
    const std::string& d = c.train.device;
    const bool ordinal = d.size() > 5 && d.size() <= 8 && d.rfind("cuda:", 0) == 0 && d.find_first_not_of("0123456789", 5) == std::string::npos;
    if (d != "cpu" && d != "cuda" && !ordinal)
      throw ConfigError("train.device", "value \"" + d + "\" is not a device: use \"cpu\", \"cuda\" or \"cuda:N\" (N = 0, 1, ...)");
  }
  if (c.train.precision == "bf16" && c.train.device == "cpu")
    throw ConfigError("train.precision", "value \"bf16\" needs a CUDA device; the CPU backend computes in \"fp32\"");
  if (c.data.path.empty()) throw ConfigError("data.path", "missing: set it to a dataset directory made by `traindeck-engine prepare`");
  return c;
}

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail_errno("cannot open config", path);
  try {
    return json::parse(in);
  } catch (const json::exception& e) {  // parse errors, and numbers out of range (1e999)
    throw Error("config '" + path + "' is not valid JSON: " + e.what());
  }
}

void apply_override(json& doc, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(assignment, "an override is written section.field=value, e.g. train.lr=3e-4");
  std::string path = assignment.substr(0, eq);
  std::string value = assignment.substr(eq + 1);
  auto dot = path.find('.');
  if (dot == std::string::npos)
    throw ConfigError(path, "an override names section.field, e.g. train.lr");
  std::string sec = path.substr(0, dot), name = path.substr(dot + 1);
  bool known = false;
  for (const auto& f : fields()) known |= (f.section == sec && f.name == name);
  if (!known) throw ConfigError(path, "unknown field (see docs/config.md)");
  json v;
  try {
    v = json::parse(value);
  } catch (const json::parse_error&) {
    v = value;  // not JSON: a plain string
  } catch (const json::exception& e) {
    throw ConfigError(path, "value " + value + " is not a usable number (" + e.what() + ")");
  }
  if (!doc.is_object()) doc = json::object();
  if (!doc[sec].is_object()) doc[sec] = json::object();
  doc[sec][name] = v;
}

json to_json(const RunConfig& c) {
  json j = {{"model", json::object()}, {"train", json::object()}, {"data", json::object()}};
  for (const auto& f : fields())
    if (f.families.empty() || std::find(f.families.begin(), f.families.end(), c.model.family) != f.families.end())
      j[f.section][f.name] = f.write(c);
  return j;
}

std::vector<FieldDoc> config_field_docs() {
  RunConfig defaults;
  std::vector<FieldDoc> out;
  for (const auto& f : fields())
    out.push_back({f.section + "." + f.name, f.write(defaults).dump(), f.range, f.meaning, f.families});
  return out;
}

}  // namespace td
