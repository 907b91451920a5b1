// `export --format hf` and `train --init-from` for the Llama block's families (model.family
// "llama", and "qwen2" exported as Qwen2ForCausalLM with its q/k/v biases):
// llama checkpoints (MHA, GQA and MQA shapes, tied and untied heads, random and briefly trained
// weights) exported as a Hugging Face LlamaForCausalLM directory and read back by
// tests/reference/hf_llama_check.py, which uses nothing but config.json's LlamaConfig fields and
// the tensors' transformers names (what LlamaForCausalLM.from_pretrained reads) and computes the
// logits in float64 with tests/reference/llama_reference.py: they equal the engine's to 1e-4.
// config.json by value; the round trip export -> read_init_source gives the checkpoint's bits and
// a run started --init-from the export starts at the source's loss; mismatches name the fields;
// hostile exports (missing tensor, wrong shape, wrong dtype, a dangling symlink, configs the
// engine cannot compute) are refused with the reason.
//
// The checkpoints are made in-process (td::GPT + save_checkpoint, and td::run_training for the
// trained ones), so this test does not depend on `traindeck-engine train` accepting llama.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"
#include "engine/data/loader.h"
#include "engine/export/export.h"
#include "engine/model/gpt.h"
#include "engine/model/shape.h"
#include "engine/ops/cpu_ops.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/train/trainer.h"
#include "test_util.h"

using namespace td;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char* kCorpus =
    "The quick brown fox jumps over the lazy dog. A stitch in time saves nine.\n"
    "All that glitters is not gold; still waters run deep, and the early bird catches the worm.\n";

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

void write_json(const std::string& path, const json& j) {
  fs::remove(path);  // export files are 0600 and may be links: write a fresh file
  std::ofstream(path) << j.dump(2);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

QString qs(const std::string& s) { return QString::fromStdString(s); }

// The weights of a checkpoint in the engine's layout.
std::vector<float> checkpoint_params(const std::string& ckpt, const ModelConfig& m) {
  SafetensorsFile f(ckpt + "/model.safetensors");
  std::vector<float> p(model_num_params(m));
  for (const auto& t : model_param_tensors(m)) f.read_f32(t.name, p.data() + t.offset, t.numel);
  return p;
}

// A tiny Llama (or Qwen2) on the byte vocabulary: 2 layers, d_model 64, 4 heads (hs 16), kv
// key/value heads, d_ff 96, seq_len 16.
json llama_model_json(int kv, bool tie, const std::string& family = "llama") {
  return {{"family", family}, {"vocab_size", 257}, {"seq_len", 16},      {"n_layer", 2},        {"n_head", 4},
          {"n_kv_head", kv},   {"d_model", 64},     {"d_ff", 96},         {"tie_embeddings", tie}, {"rope_theta", 10000.0},
          {"rms_norm_eps", 1e-5}};
}

// The message of the td::Error f throws ("" when it throws none).
template <class F>
QString error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return QString::fromStdString(e.what());
  }
  return QString();
}

// A safetensors file written byte by byte (any dtype string): tensors (name, dtype, shape, bytes).
struct RawTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
void write_raw_safetensors(const std::string& path, const std::vector<RawTensor>& ts) {
  json h = json::object();
  uint64_t off = 0;
  for (const auto& t : ts) {
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  h["__metadata__"] = {{"format", "pt"}};
  std::string hs = h.dump();
  while (hs.size() % 8) hs += ' ';
  fs::remove(path);
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = hs.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << hs;
  for (const auto& t : ts) out << t.bytes;
}

// Every tensor of an export's model.safetensors as raw F32 bytes, in file order of names.
std::vector<RawTensor> raw_tensors(const std::string& file) {
  SafetensorsFile f(file);
  std::vector<RawTensor> out;
  for (const auto& [name, e] : f.entries()) {
    size_t n = 1;
    for (auto s : e.shape) n *= (size_t)s;
    std::vector<float> v(n);
    f.read_f32(name, v.data(), n);
    out.push_back({name, "F32", e.shape, std::string(reinterpret_cast<const char*>(v.data()), n * 4)});
  }
  return out;
}

}  // namespace

class TestExportLlama : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  std::string root_, data_;
  bool torch_ = false;

  RunConfig run_config(int kv, bool tie, int steps, const std::string& family = "llama") {
    json cfg = {{"model", llama_model_json(kv, tie, family)},
                {"train", {{"steps", steps}, {"micro_batch", 2}, {"lr", 1e-2}, {"min_lr", 1e-3}, {"warmup", 1}, {"eval_interval", 0},
                           {"sample_interval", 0}, {"checkpoint_interval", 0}, {"threads", 2}, {"seed", 5}}},
                {"data", {{"path", data_}}}};
    return parse_config(cfg);
  }

  // A llama checkpoint: "trained" runs run_training for 12 steps (the engine's own trainer,
  // in-process); otherwise init_weights + N(0, 0.1) on every parameter (so that RoPE, the norms'
  // weights and SwiGLU's gate change the logits visibly). Returns the checkpoint directory.
  std::string make_checkpoint(const std::string& name, int kv, bool tie, bool trained, const std::string& family = "llama") {
    const std::string run = root_ + "/" + name;
    if (trained) {
      TrainOptions o;
      o.out_dir = run;
      o.quiet = true;
      o.events_to_stdout = false;
      o.peak_flops = 1e9;
      const int rc = run_training(run_config(kv, tie, 12, family), o);
      if (rc != 0) qWarning("run_training %s returned %d", name.c_str(), rc);
    } else {
      RunConfig cfg = run_config(kv, tie, 1, family);
      auto be = make_cpu_backend();
      GPT model(cfg.model, *be, 1);
      model.init_weights(42 + kv);
      std::mt19937_64 gen(9 + kv + (tie ? 100 : 0));
      std::normal_distribution<float> nd(0.0f, 0.1f);
      for (size_t i = 0; i < model.num_params(); i++) model.params()[i] += nd(gen);
      TrainerState st;
      st.run_id = name;
      st.step = 3;
      st.config = to_json(cfg);
      save_checkpoint(run + "/checkpoints", model, nullptr, st);
    }
    auto ckpt = latest_checkpoint(run + "/checkpoints");
    return ckpt ? *ckpt : std::string();
  }

  // Engine logits (3 x 16 random byte ids) vs hf_llama_check.py's on the export; the max
  // |difference| (negative when the check did not run).
  double compare_logits(const std::string& ckpt, const std::string& hf, const ModelConfig& m) {
    const int B = 3, T = 16, V = m.vocab_size;
    auto be = make_cpu_backend();
    GPT model(m, *be, B);
    load_checkpoint(ckpt, model, nullptr);
    std::mt19937_64 gen(17);
    std::vector<int32_t> in((size_t)B * T);
    for (auto& x : in) x = (int32_t)(gen() % V);
    model.forward(in.data(), nullptr, B, T);
    std::vector<float> ours((size_t)B * T * V), theirs(ours.size());
    model.download_logits(ours.data(), 0, (size_t)B * T);

    json c = {{"inputs", json::array()}};
    for (int b = 0; b < B; b++) c["inputs"].push_back(std::vector<int32_t>(in.begin() + b * T, in.begin() + (b + 1) * T));
    const std::string case_path = hf + ".case.json", out = hf + ".logits.safetensors";
    std::ofstream(case_path) << c.dump();
    auto r = tdtest::run(TD_SYSTEM_PYTHON, {TD_SOURCE_DIR "/tests/reference/hf_llama_check.py", qs(hf), qs(case_path), qs(out)});
    if (r.exit_code != 0) {
      qWarning("hf_llama_check.py failed (%d): %s", r.exit_code, qPrintable(r.err));
      return -1;
    }
    // The oracle's reading of config.json is the run's shape.
    const json rc = json::parse(r.out.toStdString())["config"];
    if (rc["n_kv_head"] != m.n_kv_head || rc["d_ff"] != m.d_ff || rc["tie_embeddings"] != m.tie_embeddings ||
        rc["rms_norm_eps"] != m.rms_norm_eps || rc["rope_theta"] != m.rope_theta) {
      qWarning("hf_llama_check.py read another shape: %s", rc.dump().c_str());
      return -1;
    }
    SafetensorsFile(out).read_f32("logits", theirs.data(), theirs.size());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < ours.size(); i++) {
      worst = std::max(worst, (double)std::abs(ours[i] - theirs[i]));
      scale = std::max(scale, (double)std::abs(theirs[i]));
    }
    qInfo("max |logit difference| engine (fp32) vs LlamaForCausalLM-layout reference (float64) = %.3g (largest |logit| %.3g)", worst,
          scale);
    if (scale <= 1.0) {
      qWarning("the logits are too small (%.3g) to test anything", scale);
      return -1;
    }
    return worst;
  }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    root_ = tmp_.path().toStdString();
    set_cpu_threads(2);
    std::string corpus;
    for (int i = 0; i < 40; i++) corpus += kCorpus;
    std::ofstream(root_ + "/corpus.txt") << corpus;
    data_ = root_ + "/data";
    auto r = tdtest::engine({"prepare", "--input", qs(root_ + "/corpus.txt"), "--out", qs(data_), "--tokenizer", "byte", "--quiet"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    torch_ = tdtest::run(TD_SYSTEM_PYTHON, {"-c", "import torch"}).exit_code == 0;
  }

  void hf_export_matches_llama_reference_data() {
    QTest::addColumn<int>("kv");
    QTest::addColumn<bool>("tie");
    QTest::addColumn<bool>("trained");
    QTest::addColumn<QString>("family");
    for (bool trained : {false, true}) {
      const char* w = trained ? "trained" : "random";
      QTest::addRow("MHA 4/4, untied, %s", w) << 4 << false << trained << "llama";
      QTest::addRow("MHA 4/4, tied, %s", w) << 4 << true << trained << "llama";
      QTest::addRow("GQA 4/2, untied, %s", w) << 2 << false << trained << "llama";
      QTest::addRow("GQA 4/2, tied, %s", w) << 2 << true << trained << "llama";
      QTest::addRow("MQA 4/1, untied, %s", w) << 1 << false << trained << "llama";
      QTest::addRow("MQA 4/1, tied, %s", w) << 1 << true << trained << "llama";
      QTest::addRow("qwen2 GQA 4/2, untied, %s", w) << 2 << false << trained << "qwen2";
      QTest::addRow("qwen2 MQA 4/1, tied, %s", w) << 1 << true << trained << "qwen2";
    }
  }
  void hf_export_matches_llama_reference() {
    QFETCH(int, kv);
    QFETCH(bool, tie);
    QFETCH(bool, trained);
    QFETCH(QString, family);
    const std::string fam = family.toStdString();
    const bool qwen2 = fam == "qwen2";
    const std::string name =
        (qwen2 ? "qwen2-" : "") + std::string(trained ? "trained" : "random") + "-kv" + std::to_string(kv) + (tie ? "-tied" : "-untied");
    const std::string ckpt = make_checkpoint(name, kv, tie, trained, fam);
    QVERIFY2(!ckpt.empty(), "no checkpoint was written");
    const ModelConfig m = parse_config(read_trainer_state(ckpt).config).model;
    QCOMPARE(m.family, fam);
    const std::string hf = root_ + "/" + name + "-hf";
    auto r = tdtest::engine({"export", "--checkpoint", qs(ckpt), "--format", "hf", "--out", qs(hf)});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));

    // config.json: LlamaConfig's (Qwen2Config's) names, by value.
    const json c = read_json(hf + "/config.json");
    QCOMPARE(c["architectures"], json::array({qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}));
    QCOMPARE(c["model_type"].get<std::string>(), fam);
    QCOMPARE(c["vocab_size"].get<int>(), 257);
    QCOMPARE(c["hidden_size"].get<int>(), 64);
    QCOMPARE(c["intermediate_size"].get<int>(), 96);
    QCOMPARE(c["num_hidden_layers"].get<int>(), 2);
    QCOMPARE(c["num_attention_heads"].get<int>(), 4);
    QCOMPARE(c["num_key_value_heads"].get<int>(), kv);
    QCOMPARE(c["head_dim"].get<int>(), 16);
    QCOMPARE(c["max_position_embeddings"].get<int>(), 16);
    QCOMPARE(c["rms_norm_eps"].get<double>(), 1e-5);
    QCOMPARE(c["rope_theta"].get<double>(), 10000.0);
    QVERIFY(c.contains("rope_scaling") && c["rope_scaling"].is_null());
    QCOMPARE(c["hidden_act"].get<std::string>(), std::string("silu"));
    if (qwen2) {  // Qwen2Config has no bias switch (q/k/v always biased); full attention everywhere
      QVERIFY(!c.contains("attention_bias") && !c.contains("mlp_bias"));
      QCOMPARE(c["use_sliding_window"].get<bool>(), false);
    } else {
      QCOMPARE(c["attention_bias"].get<bool>(), false);
      QCOMPARE(c["mlp_bias"].get<bool>(), false);
    }
    QCOMPARE(c["tie_word_embeddings"].get<bool>(), tie);
    QCOMPARE(c["bos_token_id"].get<int>(), 256);  // the byte tokenizer's end-of-text
    QCOMPARE(c["eos_token_id"].get<int>(), 256);
    QCOMPARE(c["torch_dtype"].get<std::string>(), std::string("float32"));
    QCOMPARE(c["initializer_range"].get<double>(), 0.02);
    const json g = read_json(hf + "/generation_config.json");
    QCOMPARE(g["bos_token_id"].get<int>(), 256);
    QCOMPARE(g["eos_token_id"].get<int>(), 256);
    const json tc = read_json(hf + "/tokenizer_config.json");
    QCOMPARE(tc["tokenizer_class"].get<std::string>(), std::string("GPT2Tokenizer"));  // the byte tokenizer, as for gpt2
    QCOMPARE(read_json(hf + "/.traindeck-export")["files"],
             json::array({"config.json", "generation_config.json", "merges.txt", "model.safetensors", "special_tokens_map.json",
                          "tokenizer_config.json", "vocab.json"}));

    // model.safetensors: "model." + the engine's names, lm_head only untied, every tensor the
    // checkpoint's bytes (no transpose, no q/k permutation), metadata format "pt".
    SafetensorsFile hfw(hf + "/model.safetensors");
    QCOMPARE(hfw.metadata().at("format"), std::string("pt"));
    const auto tensors = model_param_tensors(m);
    QCOMPARE(hfw.entries().size(), tensors.size());
    QCOMPARE(hfw.has("lm_head.weight"), !tie);
    QCOMPARE(hfw.entries().at("model.layers.1.self_attn.k_proj.weight").shape, (std::vector<int64_t>{16 * kv, 64}));
    QCOMPARE(hfw.entries().at("model.layers.0.mlp.down_proj.weight").shape, (std::vector<int64_t>{64, 96}));
    QCOMPARE(hfw.has("model.layers.1.self_attn.q_proj.bias"), qwen2);
    if (qwen2) {
      QCOMPARE(hfw.entries().at("model.layers.1.self_attn.q_proj.bias").shape, (std::vector<int64_t>{64}));
      QCOMPARE(hfw.entries().at("model.layers.1.self_attn.v_proj.bias").shape, (std::vector<int64_t>{16 * kv}));
      QVERIFY(!hfw.has("model.layers.1.self_attn.o_proj.bias"));
    }
    const auto want = checkpoint_params(ckpt, m);
    for (const auto& t : tensors) {
      const std::string n = t.name == "lm_head.weight" ? t.name : "model." + t.name;
      QVERIFY2(hfw.has(n), n.c_str());
      QCOMPARE(hfw.entries().at(n).shape, t.shape);
      std::vector<float> v(t.numel);
      hfw.read_f32(n, v.data(), t.numel);
      QVERIFY2(std::memcmp(v.data(), want.data() + t.offset, t.numel * 4) == 0, n.c_str());
    }

    // Back in: the checkpoint's bits and shape.
    InitSource s = read_init_source(hf);
    QCOMPARE(s.kind, std::string("hf"));
    QCOMPARE(init_mismatch(s.model, m), std::string());
    QCOMPARE(s.model.n_kv_head, kv);
    QCOMPARE(s.model.family, fam);
    QVERIFY(s.params == want);

    if (!torch_) QSKIP("python3-torch is missing (apt-get install python3-torch): the PyTorch check of the llama hf export is skipped");
    const double worst = compare_logits(ckpt, hf, m);
    QVERIFY2(worst >= 0, "the reference check did not run (see the warning above)");
    QVERIFY2(worst <= 1e-4, qPrintable(QString("max logit difference %1").arg(worst)));
  }

  void init_from_hf_starts_at_the_source_loss() {
    // A run started --init-from the trained GQA untied export: its first loss is the source
    // model's on the same batch (the first batch the new run's loader reads).
    const std::string src = root_ + "/trained-kv2-untied", hf = src + "-hf";
    auto ckpt = latest_checkpoint(src + "/checkpoints");
    QVERIFY(ckpt.has_value());
    RunConfig cfg = parse_config(read_trainer_state(*ckpt).config);
    LoaderOptions lo;
    lo.dataset_dir = data_;
    lo.seq_len = cfg.model.seq_len;
    lo.micro_batch = cfg.train.micro_batch;
    lo.seed = cfg.train.seed;
    DataLoader loader(lo);
    std::vector<int32_t> in, tg;
    loader.next_batch(in, tg);
    auto be = make_cpu_backend();
    GPT model(cfg.model, *be, cfg.train.micro_batch);
    load_checkpoint(*ckpt, model, nullptr);
    const float source_loss = model.forward(in.data(), tg.data(), cfg.train.micro_batch, cfg.model.seq_len);

    // apply_init_source into a model initialised otherwise: the same loss, bit for bit.
    GPT fresh(cfg.model, *be, cfg.train.micro_batch);
    fresh.init_weights(1234);
    apply_init_source(read_init_source(hf), fresh);
    QCOMPARE(fresh.forward(in.data(), tg.data(), cfg.train.micro_batch, cfg.model.seq_len), source_loss);

    // The trainer (in-process: `train` itself refuses llama until its guard is lifted).
    const std::string run = root_ + "/from-hf";
    TrainOptions o;
    o.out_dir = run;
    o.quiet = true;
    o.events_to_stdout = false;
    o.peak_flops = 1e9;
    o.init_from = hf;
    QCOMPARE(run_training(run_config(2, false, 2), o), 0);
    auto ev = tdtest::read_events(qs(run + "/events.jsonl"));
    auto steps = tdtest::events_of_type(ev, "step");
    QCOMPARE((int)steps.size(), 2);
    const double first = steps[0]["loss"].get<double>();
    qInfo("first-step loss of the --init-from run %.6f, source model on that batch %.6f (fresh init: ~ln 257 = %.3f)", first, source_loss,
          std::log(257.0));
    QVERIFY(std::abs(first - source_loss) <= 1e-5 * source_loss);
    QVERIFY(source_loss < std::log(257.0) - 1.0);  // the source learned something: a fresh init would not match
    QCOMPARE(read_trainer_state(*latest_checkpoint(run + "/checkpoints")).adam_t, 2);

    // And through the command line, once `train` accepts llama configs (issue 17's guard).
    std::ofstream(root_ + "/gqa.json") << to_json(run_config(2, false, 2)).dump();
    auto r = tdtest::engine({"train", "--config", qs(root_ + "/gqa.json"), "--out", qs(root_ + "/from-hf-cli"), "--quiet",
                             "--no-events-stdout", "--peak-flops", "1e9", "--init-from", qs(hf)});
    if (r.exit_code != 0 && r.err.contains("not yet trainable")) {
      qInfo("the command-line check of train --init-from waits for `train` to accept llama: %s", qPrintable(r.err.trimmed()));
      return;
    }
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    steps = tdtest::events_of_type(tdtest::read_events(qs(root_ + "/from-hf-cli/events.jsonl")), "step");
    QVERIFY(!steps.empty());
    QVERIFY(std::abs(steps[0]["loss"].get<double>() - source_loss) <= 1e-5 * source_loss);
  }

  void safetensors_export_round_trips() {
    const std::string ckpt = *latest_checkpoint(root_ + "/trained-kv1-tied/checkpoints");
    const std::string out = root_ + "/raw-mqa";
    auto r = tdtest::engine({"export", "--checkpoint", qs(ckpt), "--format", "safetensors", "--out", qs(out)});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const json side = read_json(out + "/traindeck_export.json");
    QCOMPARE(side["model"]["family"].get<std::string>(), std::string("llama"));
    QCOMPARE(side["model"]["n_kv_head"].get<int>(), 1);
    QCOMPARE(side["architecture"]["norm"].get<std::string>(), std::string("rmsnorm"));
    const ModelConfig m = parse_config(side["config"]).model;
    const auto tensors = model_param_tensors(m);
    QCOMPARE(side["tensors"].size(), tensors.size());
    QCOMPARE(side["tensors"][1]["name"].get<std::string>(), std::string("layers.0.input_layernorm.weight"));
    QCOMPARE(side["tensors"][1]["hf_name"].get<std::string>(), std::string("model.layers.0.input_layernorm.weight"));
    for (const auto& t : side["tensors"]) QCOMPARE(t["hf_transposed"].get<bool>(), false);
    InitSource s = read_init_source(out);
    QCOMPARE(s.kind, std::string("safetensors"));
    QCOMPARE(s.step, 12);
    QCOMPARE(init_mismatch(s.model, m), std::string());
    QVERIFY(s.params == checkpoint_params(ckpt, m));
  }

  void init_from_mismatch_names_the_fields() {
    const InitSource s = read_init_source(root_ + "/random-kv2-tied-hf");
    ModelConfig m = s.model;
    QCOMPARE(init_mismatch(s.model, m), std::string());
    m.n_kv_head = 4;
    m.rope_theta = 500000.0;
    m.rms_norm_eps = 1e-6;
    m.seq_len = 64;  // llama has no position table: a longer context is allowed
    QCOMPARE(init_mismatch(s.model, m), std::string("n_kv_head: source 2, config 4; rope_theta: source 10000, config 500000; "
                                                     "rms_norm_eps: source 1e-05, config 1e-06"));
    m = s.model;
    m.tie_embeddings = false;
    m.d_ff = 128;
    QCOMPARE(init_mismatch(s.model, m), std::string("d_ff: source 96, config 128; tie_embeddings: source true, config false"));
    // A gpt2 config of the same sizes is another family.
    ModelConfig g = parse_config(json{{"model", {{"vocab_size", 257}, {"seq_len", 16}, {"n_layer", 2}, {"n_head", 4}, {"d_model", 64},
                                                 {"d_ff", 96}}},
                                      {"data", {{"path", data_}}}})
                        .model;
    QCOMPARE(init_mismatch(s.model, g), std::string("family: source llama, config gpt2"));
    // apply_init_source refuses with the same text, naming the source.
    ModelConfig kv4 = s.model;
    kv4.n_kv_head = 4;
    auto be = make_cpu_backend();
    GPT model(kv4, *be, 1);
    const QString e = error_of([&] { apply_init_source(s, model); });
    QVERIFY2(e.contains("random-kv2-tied-hf") && e.contains("n_kv_head: source 2, config 4"), qPrintable(e));
    // The trainer refuses before it writes the run directory.
    TrainOptions o;
    o.out_dir = root_ + "/mismatch";
    o.quiet = true;
    o.events_to_stdout = false;
    o.peak_flops = 1e9;
    o.init_from = root_ + "/random-kv2-tied-hf";
    const QString te = error_of([&] { run_training(run_config(1, true, 1), o); });
    QVERIFY2(te.contains("n_kv_head: source 2, config 1"), qPrintable(te));
    QVERIFY(!fs::exists(o.out_dir));
  }

  void hostile_exports_are_refused() {
    const std::string good = root_ + "/random-kv2-untied-hf";
    const InitSource ref = read_init_source(good);
    int n = 0;
    // A copy of the good export with one change; returns read_init_source's error ("" when none).
    auto attempt = [&](const std::function<void(const std::string&)>& change) {
      const std::string d = root_ + "/hostile-" + std::to_string(n++);
      fs::copy(good, d);
      for (const auto& e : fs::directory_iterator(d)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
      change(d);
      return error_of([&] { read_init_source(d); });
    };
    auto edit_config = [&](const std::function<void(json&)>& f) {
      return attempt([&](const std::string& d) {
        json c = read_json(d + "/config.json");
        f(c);
        write_json(d + "/config.json", c);
      });
    };
    QString e;
    // A missing tensor.
    e = attempt([](const std::string& d) {
      auto ts = raw_tensors(d + "/model.safetensors");
      ts.erase(std::remove_if(ts.begin(), ts.end(), [](const RawTensor& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; }),
               ts.end());
      write_raw_safetensors(d + "/model.safetensors", ts);
    });
    QVERIFY2(e.contains("has no tensor \"model.layers.1.mlp.up_proj.weight\""), qPrintable(e));
    // lm_head missing while config.json says untied.
    e = attempt([](const std::string& d) {
      auto ts = raw_tensors(d + "/model.safetensors");
      ts.erase(std::remove_if(ts.begin(), ts.end(), [](const RawTensor& t) { return t.name == "lm_head.weight"; }), ts.end());
      write_raw_safetensors(d + "/model.safetensors", ts);
    });
    QVERIFY2(e.contains("has no tensor \"lm_head.weight\""), qPrintable(e));
    // A tensor of another shape than config.json says (intermediate_size 128 for 96-wide weights).
    e = edit_config([](json& c) { c["intermediate_size"] = 128; });
    QVERIFY2(e.contains("\"model.layers.0.mlp.gate_proj.weight\" has shape [96, 64], the model's config says [128, 64]"), qPrintable(e));
    e = edit_config([](json& c) { c["num_key_value_heads"] = 1; });
    QVERIFY2(e.contains("\"model.layers.0.self_attn.k_proj.weight\" has shape [32, 64], the model's config says [16, 64]"), qPrintable(e));
    // bfloat16 weights (as many Hub models are stored).
    e = attempt([](const std::string& d) {
      auto ts = raw_tensors(d + "/model.safetensors");
      for (auto& t : ts)
        if (t.name == "model.norm.weight") {
          t.dtype = "BF16";
          t.bytes.resize(t.bytes.size() / 2);
        }
      write_raw_safetensors(d + "/model.safetensors", ts);
    });
    QVERIFY2(e.contains("\"model.norm.weight\" is BF16") && e.contains("float32"), qPrintable(e));
    // A truncated weights file.
    e = attempt([](const std::string& d) { fs::resize_file(d + "/model.safetensors", fs::file_size(d + "/model.safetensors") - 64); });
    QVERIFY2(e.contains("is not a safetensors file"), qPrintable(e));
    // Links: a Hugging Face cache snapshot holds symlinks to blobs, which are followed (the gpt2
    // path does the same); a dangling link is an error naming the file.
    e = attempt([&](const std::string& d) {
      fs::rename(d + "/model.safetensors", root_ + "/blob-weights");
      fs::create_symlink(root_ + "/blob-weights", d + "/model.safetensors");
    });
    QVERIFY2(e.isEmpty(), qPrintable(e));
    QVERIFY(read_init_source(root_ + "/hostile-" + std::to_string(n - 1)).params == ref.params);
    e = attempt([&](const std::string& d) {
      fs::remove(d + "/model.safetensors");
      fs::create_symlink(root_ + "/no-such-blob", d + "/model.safetensors");
    });
    QVERIFY2(e.contains("model.safetensors' is a symbolic link to") && e.contains("no-such-blob") && e.contains("does not exist"),
             qPrintable(e));
    e = attempt([&](const std::string& d) {
      fs::remove(d + "/config.json");
      fs::create_symlink(root_ + "/no-such-config", d + "/config.json");
    });
    QVERIFY2(e.contains("config.json' is a symbolic link to") && e.contains("does not exist"), qPrintable(e));
    // Configs the engine does not compute, each named.
    e = edit_config([](json& c) { c["hidden_act"] = "gelu"; });
    QVERIFY2(e.contains("hidden_act \"gelu\""), qPrintable(e));
    e = edit_config([](json& c) { c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}}; });
    QVERIFY2(e.contains("rope_scaling") && e.contains("llama3"), qPrintable(e));
    e = edit_config([](json& c) { c["attention_bias"] = true; });
    QVERIFY2(e.contains("attention_bias / mlp_bias"), qPrintable(e));
    e = edit_config([](json& c) { c["head_dim"] = 32; });
    QVERIFY2(e.contains("head_dim 32"), qPrintable(e));
    e = edit_config([](json& c) { c["num_key_value_heads"] = 3; });
    QVERIFY2(e.contains("multiple of num_key_value_heads"), qPrintable(e));
    e = edit_config([](json& c) { c.erase("hidden_size"); });
    QVERIFY2(e.contains("lacks a Llama field") && e.contains("hidden_size"), qPrintable(e));
    e = edit_config([](json& c) { c["model_type"] = "mistral"; });
    QVERIFY2(e.contains("model_type \"mistral\""), qPrintable(e));
    // A tied config with an lm_head that is not the embedding.
    e = attempt([](const std::string& d) {
      json c = read_json(d + "/config.json");
      c["tie_word_embeddings"] = true;
      write_json(d + "/config.json", c);
    });
    QVERIFY2(e.contains("tie_word_embeddings true") && e.contains("differs from the embedding"), qPrintable(e));
    // LlamaConfig's defaults for fields left out: rms_norm_eps 1e-6 (then a mismatch with the
    // engine's 1e-5 run config, named), num_key_value_heads = heads.
    e = edit_config([](json& c) { c.erase("rms_norm_eps"); });
    QVERIFY2(e.isEmpty(), qPrintable(e));
    InitSource d = read_init_source(root_ + "/hostile-" + std::to_string(n - 1));
    QCOMPARE(d.model.rms_norm_eps, 1e-6);
    QCOMPARE(init_mismatch(d.model, ref.model), std::string("rms_norm_eps: source 1e-06, config 1e-05"));
  }

  void bpe_tokenizer_is_llamas() {
    // A bpe dataset: tokenizer.model byte for byte, LlamaTokenizer with sentencepiece's
    // <unk> 0, <s> 1, </s> 2 (engine/data/prepare.cpp), and bos_token_id 1, eos_token_id 2.
    const std::string data = root_ + "/bpe-data";
    auto r = tdtest::engine({"prepare", "--input", qs(root_ + "/corpus.txt"), "--out", qs(data), "--tokenizer", "bpe", "--vocab-size", "300",
                             "--quiet"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    auto tok = Tokenizer::load(data);
    json mj = llama_model_json(2, true);
    mj["vocab_size"] = tok->vocab_size();
    RunConfig cfg = parse_config(json{{"model", mj}, {"data", {{"path", data}}}});
    auto be = make_cpu_backend();
    GPT model(cfg.model, *be, 1);
    model.init_weights(3);
    TrainerState st;
    st.run_id = "bpe-llama";
    st.step = 7;
    st.config = to_json(cfg);
    auto info = save_checkpoint(root_ + "/bpe-llama/checkpoints", model, nullptr, st);
    ExportOptions xo;
    xo.checkpoint = info.path;
    xo.out_dir = root_ + "/bpe-llama-hf";
    int last_done = -1, total = -1;
    xo.on_progress = [&](int done, int t) {
      last_done = done;
      total = t;
    };
    ExportResult res = export_model(xo);
    QCOMPARE(res.step, 7);
    QCOMPARE(total, export_progress_total(cfg.model, "hf", "bpe"));
    QCOMPARE(last_done, total);
    // One step per tensor, then per other file (res.files lists model.safetensors and the marker).
    QCOMPARE(total, (int)llama_param_tensors(cfg.model).size() + (int)res.files.size() - 1);
    QCOMPARE(slurp(xo.out_dir + "/tokenizer.model"), slurp(data + "/tokenizer.model"));
    const json tc = read_json(xo.out_dir + "/tokenizer_config.json");
    QCOMPARE(tc["tokenizer_class"].get<std::string>(), std::string("LlamaTokenizer"));
    QCOMPARE(tc["bos_token"].get<std::string>(), std::string("<s>"));
    QCOMPARE(tc["eos_token"].get<std::string>(), std::string("</s>"));
    QCOMPARE(tc["unk_token"].get<std::string>(), std::string("<unk>"));
    QCOMPARE(tc["add_bos_token"].get<bool>(), false);
    QCOMPARE(tc["add_eos_token"].get<bool>(), false);
    const json sm = read_json(xo.out_dir + "/special_tokens_map.json");
    QCOMPARE(sm["bos_token"].get<std::string>(), std::string("<s>"));
    const json c = read_json(xo.out_dir + "/config.json");
    QCOMPARE(c["bos_token_id"].get<int>(), 1);
    QCOMPARE(c["eos_token_id"].get<int>(), 2);
    QCOMPARE(tok->eot_id(), 2);
    QCOMPARE(c["vocab_size"].get<int>(), tok->vocab_size());
    const json g = read_json(xo.out_dir + "/generation_config.json");
    QCOMPARE(g["bos_token_id"].get<int>(), 1);
    QCOMPARE(g["eos_token_id"].get<int>(), 2);
    QVERIFY(!fs::exists(xo.out_dir + "/vocab.json"));
  }
};

QTEST_APPLESS_MAIN(TestExportLlama)
#include "test_export_llama.moc"
