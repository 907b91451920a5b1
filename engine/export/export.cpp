// export_model(): a checkpoint -> an hf (GPT-2 or Llama) or safetensors export directory (export.h).
#include "engine/export/export.h"

#include <sentencepiece_processor.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"
#include "engine/data/manifest.h"
#include "engine/common/fileio.h"
#include "engine/model/family.h"
#include "engine/model/gpt.h"
#include "engine/model/shape.h"

namespace td {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The tokenizer of the dataset a model was trained on (its manifest.json).
struct TokenizerInfo {
  std::string kind;          // "byte" or "bpe"
  int vocab_size = 0;
  int eot_id = 0;
  int bos_id = 0;            // bpe: sentencepiece's <s> (eot_id when it has none); byte: eot_id
  int newline_id = -1;       // bpe: the byte piece <0x0A>
  std::string model_path;    // bpe: the sentencepiece model file
  std::string unk, bos, eos; // bpe: sentencepiece's piece strings of those ids
};

TokenizerInfo read_tokenizer_info(const std::string& dataset_dir, const std::string& hint) {
  const fs::path mpath = fs::path(dataset_dir) / "manifest.json";
  if (!fs::exists(mpath))
    fail("the model's tokenizer is in its dataset '" + dataset_dir + "', which has no manifest.json" + hint);
  const DatasetManifest m = read_dataset_manifest(dataset_dir);
  if (m.eot_id < 0) fail("'" + mpath.string() + "' has no tokenizer.eot_id; delete the dataset directory and prepare it again");
  TokenizerInfo t;
  t.kind = m.tokenizer_kind;
  t.vocab_size = m.vocab_size;
  t.eot_id = m.eot_id;
  t.newline_id = m.newline_id;
  t.bos_id = m.eot_id;
  if (t.kind == "bpe") t.model_path = (fs::path(dataset_dir) / m.model_file).string();
  if (t.kind == "bpe") {
    sentencepiece::SentencePieceProcessor sp;
    auto st = sp.Load(t.model_path);
    if (!st.ok()) fail("cannot read the dataset's sentencepiece model '" + t.model_path + "': " + st.ToString() + hint);
    t.unk = sp.IdToPiece(sp.unk_id());
    t.bos = sp.bos_id() >= 0 ? sp.IdToPiece(sp.bos_id()) : "";
    if (sp.bos_id() >= 0) t.bos_id = sp.bos_id();
    t.eos = sp.IdToPiece(t.eot_id);
  }
  return t;
}

// The marker every export holds: {"format": "traindeck-export-marker", "export_format",
// "created_by", "files": [the other file names, sorted]}. --force replaces only a folder whose
// marker lists exactly the files in it (force_problem).
constexpr const char* kMarker = ".traindeck-export";

// The first n bytes of a file ("" when it cannot be read).
std::string read_file_prefix(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), (std::streamsize)n);
  s.resize(in ? n : (size_t)std::max<std::streamsize>(0, in.gcount()));
  return s;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_errno("cannot open", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes the files of an export directory (all fsynced) and remembers their names. tick() is
// one progress step (export_progress_total()): each file written by text() and each tensor of a
// safetensors file (write_safetensors' on_tensor).
class OutDir {
 public:
  OutDir(std::string dir, std::function<void()> tick) : dir_(std::move(dir)), tick_(std::move(tick)) {}
  std::string path(const std::string& name) {
    files_.push_back(name);
    return dir_ + "/" + name;
  }
  void text(const std::string& name, const std::string& content) {
    File f(path(name), File::kWriteNew);
    f.write_all(content.data(), content.size());
    f.sync();
    tick();
  }
  void tick() {
    if (tick_) tick_();
  }
  void json_file(const std::string& name, const json& j) { text(name, j.dump(2) + "\n"); }
  std::vector<std::string> files() const {
    auto f = files_;
    std::sort(f.begin(), f.end());
    return f;
  }

 private:
  std::string dir_;
  std::function<void()> tick_;
  std::vector<std::string> files_;
};

// tokenizer files for transformers (docs/export.md "Tokenizer").
void write_hf_tokenizer(OutDir& out, const TokenizerInfo& t, const ModelConfig& m) {
  if (t.kind == "byte") {
    // GPT-2's byte-level BPE with every byte a token and no merges: GPT2Tokenizer then encodes
    // text to exactly its UTF-8 bytes, the engine's byte tokenizer.
    const auto strings = gpt2_byte_strings();
    json vocab = json::object();
    for (int b = 0; b < 256; b++) vocab[strings[b]] = b;
    vocab["<|endoftext|>"] = t.eot_id;
    out.text("vocab.json", vocab.dump() + "\n");
    out.text("merges.txt", "#version: 0.2\n");
    const json special = {{"bos_token", "<|endoftext|>"}, {"eos_token", "<|endoftext|>"}, {"unk_token", "<|endoftext|>"}};
    json cfg = special;
    cfg["tokenizer_class"] = "GPT2Tokenizer";
    cfg["model_max_length"] = m.seq_len;
    cfg["add_prefix_space"] = false;
    cfg["add_bos_token"] = false;
    cfg["errors"] = "replace";
    out.json_file("tokenizer_config.json", cfg);
    out.json_file("special_tokens_map.json", special);
  } else {
    // The sentencepiece model itself; LlamaTokenizer is transformers' class for a sentencepiece
    // BPE model with byte fallback. legacy: encode with the model's own normalizer (which adds
    // no dummy prefix); no BOS/EOS added (the engine adds </s> only between documents).
    const std::string bytes = read_file_bytes(t.model_path);
    out.text("tokenizer.model", bytes);
    json special = {{"eos_token", t.eos}, {"unk_token", t.unk}};
    if (!t.bos.empty()) special["bos_token"] = t.bos;
    json cfg = special;
    cfg["tokenizer_class"] = "LlamaTokenizer";
    cfg["model_max_length"] = m.seq_len;
    cfg["add_bos_token"] = false;
    cfg["add_eos_token"] = false;
    cfg["add_prefix_space"] = false;
    cfg["legacy"] = true;
    cfg["clean_up_tokenization_spaces"] = false;
    out.json_file("tokenizer_config.json", cfg);
    out.json_file("special_tokens_map.json", special);
  }
}

void write_hf(OutDir& out, const RunConfig& cfg, const std::vector<float>& params, const TokenizerInfo& tok) {
  const ModelConfig& m = cfg.model;
  const bool llama = llama_block(m);  // llama, qwen2: transformers' names and layouts are the engine's
  const auto tensors = model_param_tensors(m);
  // GPT-2: Conv1D weights transposed, engine [out, in] row-major -> GPT-2 [in, out]. Llama: every
  // tensor as the engine stores it, under "model." + its name (hf_llama_name): nn.Linear is
  // (out, in) too, q/k/v and gate/up are separate tensors in both, and the engine's RoPE is
  // transformers' rotate_half, so q_proj and k_proj are written unpermuted.
  std::vector<std::vector<float>> transposed;
  transposed.reserve(tensors.size());
  std::vector<SafeTensor> st;
  for (const auto& t : tensors) {
    const float* p = params.data() + t.offset;
    if (llama) {
      st.push_back({hf_llama_name(t.name), t.shape, p});
    } else if (hf_gpt2_is_conv1d(t.name)) {
      const int64_t rows = t.shape[0], cols = t.shape[1];  // out, in
      std::vector<float> w((size_t)rows * cols);
      for (int64_t o = 0; o < rows; o++)
        for (int64_t i = 0; i < cols; i++) w[(size_t)i * rows + o] = p[(size_t)o * cols + i];
      transposed.push_back(std::move(w));
      st.push_back({hf_gpt2_name(t.name), {cols, rows}, transposed.back().data()});
    } else {
      st.push_back({hf_gpt2_name(t.name), t.shape, p});
    }
  }
  // transformers refuses a safetensors file whose metadata lacks format "pt".
  write_safetensors(out.path("model.safetensors"), st, {{"format", "pt"}}, [&] { out.tick(); });
  // GPT-2's bos and eos are both <|endoftext|>; Llama's bos is the tokenizer's <s> (id 1 of a
  // dataset's sentencepiece model, which the engine never inserts), eos its </s>.
  const int bos = llama ? tok.bos_id : tok.eot_id;
  out.json_file("config.json", llama ? hf_llama_config(m, bos, tok.eot_id) : hf_gpt2_config(m, bos, tok.eot_id));
  const TrainConfig& tc = cfg.train;
  json gen = {{"bos_token_id", bos}, {"eos_token_id", tok.eot_id}, {"max_length", m.seq_len}};
  if (tc.sample_temperature > 0) {
    gen["do_sample"] = true;
    gen["temperature"] = tc.sample_temperature;
    gen["top_k"] = tc.sample_top_k;
  } else {
    gen["do_sample"] = false;
  }
  out.json_file("generation_config.json", gen);
  write_hf_tokenizer(out, tok, m);
}

void write_raw(OutDir& out, const RunConfig& cfg, const TrainerState& state, const std::string& ckpt,
               const std::vector<float>& params, const TokenizerInfo& tok) {
  const bool llama = llama_block(cfg.model);
  const auto tensors = model_param_tensors(cfg.model);
  std::vector<SafeTensor> st;
  json table = json::array();
  for (const auto& t : tensors) {
    st.push_back({t.name, t.shape, params.data() + t.offset});
    table.push_back({{"name", t.name}, {"shape", t.shape}, {"dtype", "F32"}, {"offset", t.offset}, {"numel", t.numel},
                     {"weight_decay", t.decay}, {"hf_name", llama ? hf_llama_name(t.name) : hf_gpt2_name(t.name)},
                     {"hf_transposed", !llama && hf_gpt2_is_conv1d(t.name)}});
  }
  const json arch = llama ? json{{"norm", "rmsnorm"}, {"rms_norm_eps", cfg.model.rms_norm_eps}, {"activation", "swiglu (silu)"},
                                 {"rope", "rotate_half (transformers)"}, {"rope_theta", cfg.model.rope_theta},
                                 {"attention", qkv_bias(cfg.model) ? "causal, grouped-query, q/k/v biases" : "causal, grouped-query, no biases"},
                                 {"linear_layout", "[out, in] (torch.nn.Linear)"}}
                          : json{{"layer_norm_eps", kEngineLayerNormEps}, {"activation", "gelu_tanh"}, {"attention", "causal, biases"},
                                 {"linear_layout", "[out, in] (torch.nn.Linear)"}};
  write_safetensors(out.path("model.safetensors"), st, {{"format", "traindeck-gpt2"}, {"step", std::to_string(state.step)}},
                    [&] { out.tick(); });
  json tj = {{"kind", tok.kind}, {"vocab_size", tok.vocab_size}, {"eot_id", tok.eot_id}, {"model_file", nullptr}};
  if (tok.kind == "bpe") {
    out.text("tokenizer.model", read_file_bytes(tok.model_path));
    tj["model_file"] = "tokenizer.model";
    tj["newline_id"] = tok.newline_id;
  }
  json side = {{"format", "traindeck-export"},
               {"format_version", 1},
               {"created_by", std::string("traindeck-engine ") + TD_VERSION},
               {"weights", "model.safetensors"},
               {"run_id", state.run_id},
               {"step", state.step},
               {"tokens_seen", state.tokens_seen},
               {"source_checkpoint", fs::absolute(ckpt).lexically_normal().string()},
               {"model", to_json(cfg)["model"]},
               {"architecture", arch},
               {"tokenizer", tj},
               {"config", state.config},
               {"tensors", table}};
  out.json_file("traindeck_export.json", side);
}

bool dir_is_empty(const fs::path& p) {
  std::error_code ec;
  return fs::is_empty(p, ec) && !ec;
}

// True when `inner` is `outer` or lies inside it (both resolved through symlinks as far as they
// exist, so "runs/../runs/x" and a symlinked parent count too).
bool within(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path i = fs::weakly_canonical(fs::absolute(inner), ec);
  if (ec) return false;
  const fs::path o = fs::weakly_canonical(fs::absolute(outer), ec);
  if (ec) return false;
  auto ii = i.begin();
  for (auto oi = o.begin(); oi != o.end(); ++oi, ++ii) {
    if (oi->empty()) continue;  // a trailing separator
    if (ii == i.end() || *ii != *oi) return false;
  }
  return true;
}

// What `dir` holds that TrainDeck (or its user) would miss, as "a run (a/events.jsonl)": a
// store (traindeck.db, or a *.db with SQLite's header), a run (events.jsonl), a dataset
// (manifest.json) or a checkpoint (trainer.json), in that order, each the shallowest (then first
// by name) found walking at most 100000 entries without following links; "" when none is.
std::string precious_content(const fs::path& dir) {
  const char* kinds[] = {"a store", "a run", "a dataset", "a checkpoint"};
  std::string found[4];
  auto consider = [&](int kind, const std::string& rel) {
    auto depth = [](const std::string& r) { return std::count(r.begin(), r.end(), '/'); };
    std::string& f = found[kind];
    if (f.empty() || depth(rel) < depth(f) || (depth(rel) == depth(f) && rel < f)) f = rel;
  };
  std::error_code ec;
  size_t seen = 0;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator() && seen++ < 100000; it.increment(ec)) {
    std::error_code fec;
    if (!it->is_regular_file(fec) || it->is_symlink(fec)) continue;
    const std::string name = it->path().filename().string();
    const std::string rel = fs::relative(it->path(), dir, fec).string();
    const bool db_name = name.size() > 3 && name.compare(name.size() - 3, 3, ".db") == 0;
    if (name == "traindeck.db" || (db_name && read_file_prefix(it->path().string(), 16) == std::string("SQLite format 3\0", 16)))
      consider(0, rel);
    else if (name == "events.jsonl") consider(1, rel);
    else if (name == "manifest.json") consider(2, rel);
    else if (name == "trainer.json") consider(3, rel);
  }
  for (int k = 0; k < 4; k++)
    if (!found[k].empty()) return std::string(kinds[k]) + " (" + found[k] + ")";
  return {};
}

// Why --force must not replace `out` ("" when it may): replacing deletes the folder, so it must
// be an earlier export and nothing else: its marker (kMarker) lists exactly the files in it.
// Said first when it holds the checkpoint being exported, its dataset, the working directory or
// $HOME; then what it holds (a run, a store, a dataset, checkpoints: precious_content()).
std::string force_problem(const fs::path& out, const std::string& ckpt, const std::string& data_dir) {
  if (out == out.root_path()) return "it is the root of the file system";
  if (within(ckpt, out)) return "it holds the checkpoint being exported (" + ckpt + ")";
  if (!data_dir.empty() && within(data_dir, out)) return "it holds the model's dataset (" + data_dir + ")";
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (!ec && within(cwd, out)) return "it holds the current directory (" + cwd.string() + ")";
  if (const char* home = getenv("HOME"); home && *home && within(home, out))
    return std::string("it holds the home directory (") + home + ")";
  if (const std::string what = precious_content(out); !what.empty()) return "it holds " + what + ", not an export";
  // An earlier export: the marker parses and names every entry (regular files only, no folders).
  std::set<std::string> listed;
  const bool marker_ok = !fs::is_symlink(out / kMarker, ec);
  const json marker = json::parse(marker_ok ? read_file_prefix((out / kMarker).string(), 1 << 20) : std::string(), nullptr, false);
  if (marker.is_object() && marker.value("format", "") == "traindeck-export-marker" && marker.contains("files") &&
      marker["files"].is_array())
    for (const auto& f : marker["files"])
      if (f.is_string()) listed.insert(f.get<std::string>());
  std::vector<std::string> others;
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(out, ec)) {
    const std::string name = e.path().filename().string();
    entries++;
    if ((name == kMarker || listed.count(name)) && e.is_regular_file(ec) && !e.is_symlink(ec)) continue;
    if (others.size() < 3) others.push_back("'" + name + "'");
  }
  if (ec) return "it cannot be read (" + ec.message() + ")";
  std::string some;
  for (const auto& o : others) some += (some.empty() ? "" : ", ") + o;
  if (listed.empty())
    return "it is not an export that TrainDeck wrote (no " + std::string(kMarker) + " file) and holds " + std::to_string(entries) +
           " entries (" + some + (entries > others.size() ? ", ..." : "") + ")";
  if (!others.empty()) return "it is an earlier export, but also holds what the export did not write (" + some + ")";
  return {};
}

}  // namespace

int export_progress_total(const ModelConfig& m, const std::string& format, const std::string& tokenizer_kind) {
  const int tensors = (int)model_param_tensors(m).size();
  const bool bpe = tokenizer_kind == "bpe";
  if (format == "hf") return tensors + 2 + (bpe ? 3 : 4) + 1;
  return tensors + 1 + (bpe ? 1 : 0) + 1;
}

ExportResult export_model(const ExportOptions& opt) {
  if (opt.format != "hf" && opt.format != "safetensors")
    fail("unknown export format \"" + opt.format + "\": use hf (Hugging Face GPT-2 or Llama) or safetensors (the engine's weights)");
  if (opt.run_dir.empty() == opt.checkpoint.empty()) fail("export needs exactly one of --run DIR or --checkpoint PATH");
  if (opt.out_dir.empty()) fail("export needs --out DIR");

  // The checkpoint: a given one must verify; a run's newest that verifies.
  std::string ckpt;
  std::vector<std::string> warnings;
  if (!opt.checkpoint.empty()) {
    if (!fs::is_directory(opt.checkpoint)) fail("checkpoint '" + opt.checkpoint + "' does not exist (a checkpoint is a step_NNNNNNNN directory)");
    std::string problem = checkpoint_problem(opt.checkpoint);
    if (!problem.empty()) fail("checkpoint '" + opt.checkpoint + "' cannot be exported: " + problem);
    ckpt = opt.checkpoint;
  } else {
    if (!fs::is_directory(opt.run_dir)) fail("run directory '" + opt.run_dir + "' does not exist");
    if (fs::exists(fs::path(opt.run_dir) / "trainer.json")) {  // a checkpoint given as --run
      std::string problem = checkpoint_problem(opt.run_dir);
      if (!problem.empty()) fail("checkpoint '" + opt.run_dir + "' cannot be exported: " + problem);
      ckpt = opt.run_dir;
    } else {
      std::vector<std::string> damaged;
      auto latest = latest_checkpoint(opt.run_dir + "/checkpoints", &damaged);
      if (!latest)
        fail("run '" + opt.run_dir + "' has no usable checkpoint to export" +
             (damaged.empty() ? std::string(" (no checkpoints/step_NNNNNNNN directory)") : " (damaged: " + damaged.front() + ")"));
      ckpt = *latest;
      for (const auto& d : damaged) warnings.push_back("skipped a newer checkpoint that does not verify: " + d);
    }
  }
  if (const std::string note = checkpoint_note(ckpt); !note.empty()) warnings.push_back(note);
  TrainerState state = read_trainer_state(ckpt);
  RunConfig cfg;
  try {
    cfg = parse_config(state.config);
  } catch (const Error& e) {
    throw Error("checkpoint '" + ckpt + "' holds a config this engine cannot read (" + e.what() + ")");
  }
  std::vector<float> params = read_model_weights(ckpt + "/model.safetensors", cfg.model);
  const std::string data_dir = opt.data_dir.empty() ? cfg.data.path : opt.data_dir;
  TokenizerInfo tok = read_tokenizer_info(data_dir, opt.data_dir.empty() ? ": pass --data DIR with the dataset the model was trained on" : "");
  if (tok.vocab_size > cfg.model.vocab_size || tok.eot_id >= cfg.model.vocab_size)
    fail("the tokenizer of '" + data_dir + "' has " + std::to_string(tok.vocab_size) + " tokens but the model only " +
         std::to_string(cfg.model.vocab_size) + ": pass --data DIR with the dataset the model was trained on");

  // The destination: refused before anything is written.
  fs::path out = fs::absolute(opt.out_dir).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(out, ec));
  if (exists && !fs::is_directory(out)) fail("--out '" + out.string() + "' exists and is not a directory; choose another --out");
  if (exists && !dir_is_empty(out) && !opt.force)
    fail("--out '" + out.string() + "' exists and is not empty; choose another --out, or add --force to replace it");
  if (exists && !dir_is_empty(out))
    if (const std::string why = force_problem(out, ckpt, data_dir); !why.empty())
      fail("--out '" + out.string() + "' exists and --force would delete it, but " + why +
           "; choose a new folder for the export");
  fs::create_directories(out.parent_path());
  std::string tmpl = out.string() + ".tmp-XXXXXX";
  if (!mkdtemp(tmpl.data())) fail_errno("cannot create a temporary directory beside", out.string());
  const std::string tmp = tmpl;
  ExportResult r;
  try {
    const int total = export_progress_total(cfg.model, opt.format, tok.kind);
    int done = 0;
    if (opt.on_progress) opt.on_progress(0, total);
    OutDir od(tmp, [&] {
      if (opt.on_progress) opt.on_progress(++done, total);
    });
    if (opt.format == "hf") write_hf(od, cfg, params, tok);
    else write_raw(od, cfg, state, ckpt, params, tok);
    od.json_file(kMarker, {{"format", "traindeck-export-marker"}, {"version", 1}, {"export_format", opt.format},
                           {"created_by", std::string("traindeck-engine ") + TD_VERSION}, {"files", od.files()}});
    sync_dir(tmp);
    r.files = od.files();
    for (const auto& f : r.files) r.bytes += fs::file_size(tmp + "/" + f);
    if (exists && dir_is_empty(out)) {
      fs::remove(out);
      fs::rename(tmp, out);
    } else if (exists) {  // --force: swap the new directory in, then delete the old one
      std::string old = out.string() + ".old-XXXXXX";
      if (!mkdtemp(old.data())) fail_errno("cannot create a temporary directory beside", out.string());
      fs::rename(out, fs::path(old) / "replaced");
      try {
        fs::rename(tmp, out);
      } catch (...) {
        fs::rename(fs::path(old) / "replaced", out, ec);  // put the old export back
        fs::remove_all(old, ec);
        throw;
      }
      fs::remove_all(old, ec);
    } else {
      fs::rename(tmp, out);
    }
    sync_dir(out.parent_path().string());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  r.out_dir = out.string();
  r.checkpoint = ckpt;
  r.step = state.step;
  r.warnings = std::move(warnings);
  return r;
}

}  // namespace td
