// traindeck-engine export and train --init-from: a tiny model trained a few steps is exported
// as a Hugging Face GPT-2 directory and read by tests/reference/hf_gpt2_check.py (an
// independent PyTorch reading of GPT-2's published layout): its logits equal the engine's to
// 1e-4, tied and untied heads. The safetensors export round-trips bit for bit; a run started
// with --init-from an hf export starts from the same loss as the source model; a shape mismatch
// names the differing fields; damaged checkpoints and a non-empty --out are refused.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"
#include "engine/data/loader.h"
#include "engine/export/export.h"
#include "engine/model/gpt.h"
#include "engine/ops/cpu_ops.h"
#include "engine/tokenizer/tokenizer.h"
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

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The weights of a checkpoint in the engine's layout.
std::vector<float> checkpoint_params(const std::string& ckpt, const ModelConfig& m) {
  SafetensorsFile f(ckpt + "/model.safetensors");
  std::vector<float> p(gpt_num_params(m));
  for (const auto& t : gpt_param_tensors(m)) f.read_f32(t.name, p.data() + t.offset, t.numel);
  return p;
}

QString qs(const std::string& s) { return QString::fromStdString(s); }

// Everything under dir: relative path -> contents (folders "<path>/" -> ""), for byte-for-byte
// comparisons; empty when dir does not exist.
std::map<std::string, std::string> tree(const std::string& dir) {
  std::map<std::string, std::string> t;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), dir).string();
    if (it->is_directory()) t[rel + "/"] = "";
    else t[rel] = slurp(it->path().string());
  }
  return t;
}

}  // namespace

class TestExport : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  std::string root_, data_;
  bool torch_ = false;

  // Trains a tiny model (2 layers, d_model 32, seq_len 16, byte vocab 257) for `steps` steps.
  // Returns the run directory.
  std::string train_run(const std::string& name, bool tie, int steps = 10, const QStringList& extra = {}) {
    const std::string run = root_ + "/" + name;
    json cfg = {{"model", {{"vocab_size", 257}, {"seq_len", 16}, {"n_layer", 2}, {"n_head", 2}, {"d_model", 32}, {"d_ff", 64},
                           {"tie_embeddings", tie}}},
                {"train", {{"steps", steps}, {"micro_batch", 2}, {"lr", 1e-2}, {"min_lr", 1e-3}, {"warmup", 1}, {"eval_interval", 0},
                           {"sample_interval", 0}, {"checkpoint_interval", 0}, {"threads", 2}, {"seed", 5}}},
                {"data", {{"path", data_}}}};
    std::ofstream(run + ".json") << cfg.dump();
    QStringList args = {"train", "--config", qs(run + ".json"), "--out", qs(run), "--quiet", "--no-events-stdout", "--peak-flops", "1e9"};
    auto r = tdtest::engine(args + extra);
    if (r.exit_code != 0) qWarning("train %s failed: %s", name.c_str(), qPrintable(r.err));
    return run;
  }

  // Runs hf_gpt2_check.py on an export; returns its JSON report and fills logits (B, T, V).
  json python_check(const std::string& export_dir, const std::vector<int32_t>& in, int B, int T, const std::string& text,
                    std::vector<float>& logits, int V) {
    json c = {{"inputs", json::array()}, {"text", text}};
    for (int b = 0; b < B; b++) c["inputs"].push_back(std::vector<int32_t>(in.begin() + b * T, in.begin() + (b + 1) * T));
    const std::string case_path = export_dir + ".case.json", out = export_dir + ".logits.safetensors";
    std::ofstream(case_path) << c.dump();
    auto r = tdtest::run(TD_SYSTEM_PYTHON, {TD_SOURCE_DIR "/tests/reference/hf_gpt2_check.py", qs(export_dir), qs(case_path), qs(out)});
    if (r.exit_code != 0) {
      qWarning("hf_gpt2_check.py failed: %s", qPrintable(r.err));
      return json();
    }
    SafetensorsFile f(out);
    logits.resize((size_t)B * T * V);
    f.read_f32("logits", logits.data(), logits.size());
    return json::parse(r.out.toStdString());
  }

  // Engine logits vs hf_gpt2_check.py's on a random batch (3 x 16) of the checkpoint / export;
  // the byte vocabulary's ids vs the byte tokenizer's. Failures are QVERIFY failures of the caller.
  void compare_logits(const std::string& ckpt, const std::string& hf, const ModelConfig& m, const char* what) {
    const int B = 3, T = 16;
    auto be = make_cpu_backend();
    GPT model(m, *be, B);
    load_checkpoint(ckpt, model, nullptr);
    std::mt19937_64 gen(17);
    std::vector<int32_t> in((size_t)B * T);
    for (auto& x : in) x = (int32_t)(gen() % 257);
    model.forward(in.data(), nullptr, B, T);
    std::vector<float> ours((size_t)B * T * m.vocab_size);
    be->download(ours.data(), model.logits(), ours.size() * sizeof(float));

    const std::string text = "Hello, w\xc3\xb6rld!\n\t\xe2\x82\xac \x7f";
    std::vector<float> theirs;
    json rep = python_check(hf, in, B, T, text, theirs, m.vocab_size);
    QVERIFY(!rep.is_null());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < ours.size(); i++) {
      worst = std::max(worst, (double)std::abs(ours[i] - theirs[i]));
      scale = std::max(scale, (double)std::abs(theirs[i]));
    }
    qInfo("%s: max |logit difference| engine vs independent GPT-2 (float64) = %.3g (largest |logit| %.3g)", what, worst, scale);
    QVERIFY(scale > 1.0);  // not near-zero logits
    QVERIFY2(worst <= 1e-4, qPrintable(QString("max logit difference %1").arg(worst)));

    // The byte vocabulary read as GPT-2's byte-level BPE encodes text to the engine's ids.
    auto want = Tokenizer::byte()->encode(text);
    QCOMPARE(rep["ids"].get<std::vector<uint32_t>>(), want);
    QCOMPARE(rep["eot"].get<int>(), Tokenizer::byte()->eot_id());
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

  void hf_export_matches_independent_gpt2_data() {
    QTest::addColumn<bool>("tie");
    QTest::newRow("tied head") << true;
    QTest::newRow("separate lm_head") << false;
  }
  void hf_export_matches_independent_gpt2() {
    QFETCH(bool, tie);
    const std::string run = train_run(tie ? "tied" : "untied", tie);
    const std::string hf = run + "-hf";
    auto r = tdtest::engine({"export", "--run", qs(run), "--format", "hf", "--out", qs(hf)});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("exported step 10"), qPrintable(r.out));

    // config.json: GPT2Config's names and the engine's shape and numerics.
    json c = read_json(hf + "/config.json");
    QCOMPARE(c["model_type"].get<std::string>(), std::string("gpt2"));
    QCOMPARE(c["architectures"], json::array({"GPT2LMHeadModel"}));
    QCOMPARE(c["n_embd"].get<int>(), 32);
    QCOMPARE(c["n_layer"].get<int>(), 2);
    QCOMPARE(c["n_head"].get<int>(), 2);
    QCOMPARE(c["n_inner"].get<int>(), 64);
    QCOMPARE(c["n_positions"].get<int>(), 16);
    QCOMPARE(c["n_ctx"].get<int>(), 16);
    QCOMPARE(c["vocab_size"].get<int>(), 257);
    QCOMPARE(c["activation_function"].get<std::string>(), std::string("gelu_new"));
    QCOMPARE(c["layer_norm_epsilon"].get<double>(), 1e-5);
    QCOMPARE(c["tie_word_embeddings"].get<bool>(), tie);
    QCOMPARE(c["bos_token_id"].get<int>(), 256);
    QCOMPARE(c["eos_token_id"].get<int>(), 256);
    QCOMPARE(c["torch_dtype"].get<std::string>(), std::string("float32"));
    QCOMPARE(c["resid_pdrop"].get<double>(), 0.0);
    json g = read_json(hf + "/generation_config.json");
    QCOMPARE(g["eos_token_id"].get<int>(), 256);
    json tc = read_json(hf + "/tokenizer_config.json");
    QCOMPARE(tc["tokenizer_class"].get<std::string>(), std::string("GPT2Tokenizer"));
    QCOMPARE(tc["eos_token"].get<std::string>(), std::string("<|endoftext|>"));
    QVERIFY(!QDir(qs(root_)).entryList({(tie ? "tied-hf.tmp-*" : "untied-hf.tmp-*")}, QDir::AllEntries | QDir::Hidden).size());

    // model.safetensors: GPT-2's names, Conv1D weights transposed, lm_head only when untied.
    auto ckpt = latest_checkpoint(run + "/checkpoints");
    QVERIFY(ckpt.has_value());
    RunConfig cfg = parse_config(read_trainer_state(*ckpt).config);
    const ModelConfig& m = cfg.model;
    SafetensorsFile hfw(hf + "/model.safetensors");
    QCOMPARE(hfw.metadata().at("format"), std::string("pt"));
    QCOMPARE(hfw.entries().at("transformer.h.1.attn.c_attn.weight").shape, (std::vector<int64_t>{32, 96}));
    QCOMPARE(hfw.entries().at("transformer.h.0.mlp.c_proj.weight").shape, (std::vector<int64_t>{64, 32}));
    QCOMPARE(hfw.has("lm_head.weight"), !tie);
    QCOMPARE((int)hfw.entries().size(), (int)gpt_param_tensors(m).size());
    {
      // One element by hand: engine c_fc.weight[o=5][i=7] is GPT-2's [i=7][o=5].
      std::vector<float> eng(64 * 32), theirs(32 * 64);
      SafetensorsFile(*ckpt + "/model.safetensors").read_f32("h.0.mlp.c_fc.weight", eng.data(), eng.size());
      hfw.read_f32("transformer.h.0.mlp.c_fc.weight", theirs.data(), theirs.size());
      QCOMPARE(theirs[7 * 64 + 5], eng[5 * 32 + 7]);
    }

    if (!torch_) QSKIP("python3-torch is missing (apt-get install python3-torch): the PyTorch check of the hf export is skipped");
    compare_logits(*ckpt, hf, m, tie ? "trained, tied" : "trained, untied");
    if (QTest::currentTestFailed()) return;

    // The same model with larger weights and non-trivial LayerNorms and biases (as the PyTorch
    // oracle of test_model): activations reach the range where the GELU variant, the attention
    // scaling and the LayerNorm eps change the logits by far more than the tolerance.
    auto be = make_cpu_backend();
    GPT big(m, *be, 1);
    load_checkpoint(*ckpt, big, nullptr);
    std::mt19937_64 gen(9);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    for (const auto& t : big.tensors()) {
      // Every weight x3 and the MLP input x4 (GELU inputs of a few units, where tanh and erf GELU
      // differ most: erf GELU in the oracle instead moves the tied logits by 4e-4, 40x the error).
      const float k = t.name.find("mlp.c_fc.weight") != std::string::npos ? 4.0f : 3.0f;
      for (size_t i = 0; i < t.numel; i++) big.params()[t.offset + i] = k * big.params()[t.offset + i] + nd(gen);
    }
    TrainerState st = read_trainer_state(*ckpt);
    auto info = save_checkpoint(run + "-big/checkpoints", big, nullptr, st);
    ExportOptions xo;
    xo.checkpoint = info.path;
    xo.out_dir = run + "-big-hf";
    export_model(xo);
    compare_logits(info.path, xo.out_dir, m, tie ? "larger weights, tied" : "larger weights, untied");
  }

  void bpe_tokenizer_is_exported() {
    // A bpe dataset: its sentencepiece model is copied byte for byte, with LlamaTokenizer's config.
    const std::string data = root_ + "/bpe-data";
    auto r = tdtest::engine({"prepare", "--input", qs(root_ + "/corpus.txt"), "--out", qs(data), "--tokenizer", "bpe", "--vocab-size", "300", "--quiet"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    auto tok = Tokenizer::load(data);
    RunConfig cfg;
    cfg.model.vocab_size = tok->vocab_size();
    cfg.model.seq_len = 8;
    cfg.model.n_layer = 1;
    cfg.model.n_head = 2;
    cfg.model.d_model = 16;
    cfg.model.d_ff = 32;
    cfg.data.path = data;
    auto be = make_cpu_backend();
    GPT model(cfg.model, *be, 1);
    model.init_weights(3);
    TrainerState st;
    st.run_id = "bpe";
    st.step = 7;
    st.config = to_json(cfg);
    auto info = save_checkpoint(root_ + "/bpe-run/checkpoints", model, nullptr, st);
    ExportOptions xo;
    xo.checkpoint = info.path;
    xo.out_dir = root_ + "/bpe-hf";
    ExportResult res = export_model(xo);
    QCOMPARE(res.step, 7);
    QCOMPARE(slurp(xo.out_dir + "/tokenizer.model"), slurp(data + "/tokenizer.model"));
    json tc = read_json(xo.out_dir + "/tokenizer_config.json");
    QCOMPARE(tc["tokenizer_class"].get<std::string>(), std::string("LlamaTokenizer"));
    QCOMPARE(tc["eos_token"].get<std::string>(), std::string("</s>"));
    QCOMPARE(tc["add_bos_token"].get<bool>(), false);
    json c = read_json(xo.out_dir + "/config.json");
    QCOMPARE(c["eos_token_id"].get<int>(), tok->eot_id());
    QCOMPARE(c["vocab_size"].get<int>(), tok->vocab_size());
    QVERIFY(!fs::exists(xo.out_dir + "/vocab.json"));
  }

  void safetensors_export_round_trips() {
    const std::string run = root_ + "/tied";
    auto ckpt = latest_checkpoint(run + "/checkpoints");
    QVERIFY(ckpt.has_value());
    const std::string out = root_ + "/raw";
    auto r = tdtest::engine({"export", "--checkpoint", qs(*ckpt), "--format", "safetensors", "--out", qs(out)});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    json side = read_json(out + "/traindeck_export.json");
    QCOMPARE(side["format"].get<std::string>(), std::string("traindeck-export"));
    QCOMPARE(side["step"].get<int>(), 10);
    QCOMPARE(side["tokenizer"]["kind"].get<std::string>(), std::string("byte"));
    QCOMPARE(side["tokenizer"]["eot_id"].get<int>(), 256);
    QCOMPARE(side["model"]["d_model"].get<int>(), 32);
    RunConfig cfg = parse_config(side["config"]);
    auto tensors = gpt_param_tensors(cfg.model);
    QCOMPARE(side["tensors"].size(), tensors.size());
    SafetensorsFile raw(out + "/model.safetensors");
    SafetensorsFile src(*ckpt + "/model.safetensors");
    for (size_t i = 0; i < tensors.size(); i++) {
      const auto& t = tensors[i];
      QCOMPARE(side["tensors"][i]["name"].get<std::string>(), t.name);
      QCOMPARE(side["tensors"][i]["offset"].get<size_t>(), t.offset);
      QCOMPARE(raw.entries().at(t.name).shape, t.shape);
      std::vector<float> a(t.numel), b(t.numel);
      raw.read_f32(t.name, a.data(), t.numel);
      src.read_f32(t.name, b.data(), t.numel);
      QVERIFY2(std::memcmp(a.data(), b.data(), t.numel * 4) == 0, t.name.c_str());
    }
    // And back in as init weights, bit for bit.
    InitSource s = read_init_source(out);
    QCOMPARE(s.kind, std::string("safetensors"));
    QCOMPARE(s.step, 10);
    QVERIFY(s.params == checkpoint_params(*ckpt, cfg.model));
  }

  void init_from_hf_starts_at_the_source_loss() {
    const std::string src_run = root_ + "/tied", hf = root_ + "/tied-hf";
    auto ckpt = latest_checkpoint(src_run + "/checkpoints");
    QVERIFY(ckpt.has_value());
    RunConfig cfg = parse_config(read_trainer_state(*ckpt).config);
    // Through GPT-2's layout and back: the same bits as the checkpoint (and from the run dir).
    InitSource s = read_init_source(hf);
    QCOMPARE(s.kind, std::string("hf"));
    QCOMPARE(init_mismatch(s.model, cfg.model), std::string());
    auto want = checkpoint_params(*ckpt, cfg.model);
    QVERIFY(s.params == want);
    QVERIFY(read_init_source(src_run).params == want);

    // The source model's loss on the first batch a new run with this config reads.
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

    const std::string run = train_run("from-hf", true, 2, {"--init-from", qs(hf)});
    auto ev = tdtest::read_events(qs(run + "/events.jsonl"));
    auto steps = tdtest::events_of_type(ev, "step");
    QVERIFY2(steps.size() == 2, "the --init-from run did not train");
    QVERIFY(tdtest::events_of_type(ev, "run_start")[0]["resumed_from_step"].is_null());
    QCOMPARE(steps[0]["step"].get<int>(), 1);
    const double first = steps[0]["loss"].get<double>();
    qInfo("first-step loss of the --init-from run %.6f, source model on that batch %.6f (fresh init: ~ln 257 = %.3f)", first,
          source_loss, std::log(257.0));
    QVERIFY(std::abs(first - source_loss) <= 1e-5 * source_loss);
    QVERIFY(source_loss < std::log(257.0) - 1.0);  // the source learned something: a fresh init would not match
    // A new run: its optimizer started afresh (2 updates, not 12).
    TrainerState st = read_trainer_state(*latest_checkpoint(run + "/checkpoints"));
    QCOMPARE(st.step, 2);
    QCOMPARE(st.adam_t, 2);
  }

  void init_from_mismatch_names_the_fields() {
    const std::string hf = root_ + "/tied-hf";
    const std::string run = root_ + "/mismatch";
    auto r = tdtest::engine({"train", "--config", qs(root_ + "/tied.json"), "--out", qs(run), "--quiet", "--init-from", qs(hf), "--set",
                             "model.n_layer=3", "--set", "model.d_model=48", "--set", "model.seq_len=32"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("n_layer: source 2, config 3"), qPrintable(r.err));
    QVERIFY2(r.err.contains("d_model: source 32, config 48"), qPrintable(r.err));
    QVERIFY2(r.err.contains("seq_len: config 32 is longer than the source's 16 positions"), qPrintable(r.err));
    QVERIFY2(!r.err.contains("n_head"), qPrintable(r.err));
    QVERIFY(!fs::exists(run));  // refused before the run directory was made
    r = tdtest::engine({"train", "--config", qs(root_ + "/tied.json"), "--out", qs(run), "--quiet", "--init-from", qs(root_ + "/untied-hf")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("tie_embeddings: source false, config true"), qPrintable(r.err));

    // A shorter seq_len takes the first positions of wpe.
    InitSource s = read_init_source(hf);
    ModelConfig m = s.model;
    m.seq_len = 8;
    auto be = make_cpu_backend();
    GPT model(m, *be, 1);
    apply_init_source(s, model);
    const auto& wpe = model.tensors()[1];
    QCOMPARE(wpe.name, std::string("wpe.weight"));
    QVERIFY(std::memcmp(model.params() + wpe.offset, s.params.data() + gpt_param_tensors(s.model)[1].offset, wpe.numel * 4) == 0);
    QVERIFY(std::memcmp(model.params() + model.tensors()[2].offset, s.params.data() + gpt_param_tensors(s.model)[2].offset,
                        model.tensors()[2].numel * 4) == 0);
  }

  void export_refuses_bad_input() {
    // No such run.
    auto r = tdtest::engine({"export", "--run", qs(root_ + "/nope"), "--out", qs(root_ + "/x")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("does not exist"), qPrintable(r.err));
    // A run whose only checkpoint is damaged (truncated weights).
    const std::string bad = root_ + "/damaged";
    fs::copy(root_ + "/untied", bad, fs::copy_options::recursive);
    auto ckpt = latest_checkpoint(bad + "/checkpoints");
    QVERIFY(ckpt.has_value());
    fs::resize_file(*ckpt + "/model.safetensors", fs::file_size(*ckpt + "/model.safetensors") - 100);
    r = tdtest::engine({"export", "--run", qs(bad), "--out", qs(root_ + "/x")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("no usable checkpoint") && r.err.contains("damaged"), qPrintable(r.err));
    r = tdtest::engine({"export", "--checkpoint", qs(*ckpt), "--out", qs(root_ + "/x")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("cannot be exported") && r.err.contains("safetensors"), qPrintable(r.err));
    QVERIFY(!fs::exists(root_ + "/x"));

    // A non-empty --out is kept unless --force; --force replaces only an earlier export
    // (force_replaces_only_an_earlier_export), never a folder of other files.
    const std::string out = root_ + "/occupied";
    fs::create_directories(out);
    std::ofstream(out + "/keep.txt") << "mine";
    r = tdtest::engine({"export", "--run", qs(root_ + "/tied"), "--out", qs(out)});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("not empty") && r.err.contains("--force"), qPrintable(r.err));
    QCOMPARE(slurp(out + "/keep.txt"), std::string("mine"));
    r = tdtest::engine({"export", "--run", qs(root_ + "/tied"), "--out", qs(out), "--force"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("--force would delete it") && r.err.contains("not an export") && r.err.contains("keep.txt"),
             qPrintable(r.err));
    QCOMPARE(slurp(out + "/keep.txt"), std::string("mine"));
    QVERIFY(!fs::exists(out + "/model.safetensors"));
    QCOMPARE(QDir(qs(root_)).entryList({"occupied.*"}, QDir::AllEntries | QDir::Hidden), QStringList());
    // --force never deletes the run being exported, its dataset or a folder holding them.
    const auto before = latest_checkpoint(root_ + "/tied/checkpoints");
    QVERIFY(before.has_value());
    for (const std::string& victim : {root_ + "/tied", root_ + "/tied/", data_, root_}) {
      r = tdtest::engine({"export", "--run", qs(root_ + "/tied"), "--out", qs(victim), "--force"});
      QCOMPARE(r.exit_code, 1);
      QVERIFY2(r.err.contains("--force would delete it"), qPrintable(r.err));
    }
    QVERIFY(r.err.contains("holds the checkpoint being exported"));
    r = tdtest::engine({"export", "--run", qs(root_ + "/tied"), "--out", qs(data_), "--force"});
    QVERIFY2(r.err.contains("holds the model's dataset"), qPrintable(r.err));
    QCOMPARE(latest_checkpoint(root_ + "/tied/checkpoints"), before);
    QVERIFY(fs::exists(data_ + "/manifest.json"));
    // A dataset that moved: the error says to pass --data.
    fs::rename(data_, data_ + "-moved");
    r = tdtest::engine({"export", "--run", qs(root_ + "/tied"), "--out", qs(root_ + "/y")});
    fs::rename(data_ + "-moved", data_);
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("--data"), qPrintable(r.err));
  }

  // `export --force` deleted another run's whole folder and a folder holding a traindeck.db
  // (issue 13, section 2). It replaces only a folder that is itself an earlier export (its
  // .traindeck-export marker lists exactly the files in it); anything else is refused with what
  // it holds, and left byte for byte as it was.
  void force_replaces_only_an_earlier_export() {
    const std::string tied = root_ + "/tied";
    auto refused = [&](const std::string& victim, const QStringList& needles) {
      const auto before = tree(victim);
      QVERIFY2(!before.empty(), victim.c_str());
      auto r = tdtest::engine({"export", "--run", qs(tied), "--out", qs(victim), "--force"});
      QCOMPARE(r.exit_code, 1);
      QVERIFY2(r.err.contains("--force would delete it"), qPrintable(r.err));
      for (const auto& n : needles) QVERIFY2(r.err.contains(n), qPrintable("no '" + n + "' in: " + r.err));
      QVERIFY2(tree(victim) == before, ("changed by a refused export: " + victim).c_str());
      const std::string name = fs::path(victim).filename().string();
      QCOMPARE(QDir(qs(root_)).entryList({qs(name + ".tmp-*"), qs(name + ".old-*")}, QDir::AllEntries | QDir::Hidden), QStringList());
    };
    // Another run's folder (not the one exported), and a folder holding one a few levels down.
    refused(root_ + "/untied", {"a run", "events.jsonl"});
    if (QTest::currentTestFailed()) return;
    fs::create_directories(root_ + "/projects/a");
    fs::copy(root_ + "/untied", root_ + "/projects/a/old-run", fs::copy_options::recursive);
    refused(root_ + "/projects", {"a run", "a/old-run"});
    if (QTest::currentTestFailed()) return;
    // A folder holding a store.
    fs::create_directories(root_ + "/appdata");
    std::ofstream(root_ + "/appdata/traindeck.db", std::ios::binary) << std::string("SQLite format 3\0", 16) << std::string(4080, '\1');
    refused(root_ + "/appdata", {"a store", "traindeck.db"});
    if (QTest::currentTestFailed()) return;
    // Another dataset than the model's.
    fs::copy(data_, root_ + "/data2", fs::copy_options::recursive);
    refused(root_ + "/data2", {"a dataset", "manifest.json"});
    if (QTest::currentTestFailed()) return;
    // A folder of checkpoints copied out of a run.
    fs::create_directories(root_ + "/saved");
    fs::copy(*latest_checkpoint(tied + "/checkpoints"), root_ + "/saved/best", fs::copy_options::recursive);
    refused(root_ + "/saved", {"a checkpoint", "best/trainer.json"});
    if (QTest::currentTestFailed()) return;
    // Unrelated files.
    fs::create_directories(root_ + "/docs/sub");
    std::ofstream(root_ + "/docs/notes.md") << "notes";
    std::ofstream(root_ + "/docs/sub/x.bin") << "x";
    refused(root_ + "/docs", {"not an export"});
    if (QTest::currentTestFailed()) return;

    // An earlier export is replaced, in another format too: its files are gone, the new ones there.
    const std::string out = root_ + "/again";
    auto r = tdtest::engine({"export", "--run", qs(tied), "--out", qs(out)});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    json marker = read_json(out + "/.traindeck-export");
    QCOMPARE(marker["format"].get<std::string>(), std::string("traindeck-export-marker"));
    QCOMPARE(marker["export_format"].get<std::string>(), std::string("hf"));
    QCOMPARE(marker["files"], json::array({"config.json", "generation_config.json", "merges.txt", "model.safetensors",
                                    "special_tokens_map.json", "tokenizer_config.json", "vocab.json"}));
    r = tdtest::engine({"export", "--run", qs(tied), "--out", qs(out), "--force", "--format", "safetensors"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY(!fs::exists(out + "/config.json"));
    QVERIFY(fs::exists(out + "/traindeck_export.json"));
    QCOMPARE(read_json(out + "/.traindeck-export")["files"], json::array({"model.safetensors", "traindeck_export.json"}));
    QCOMPARE(QDir(qs(root_)).entryList({"again.*"}, QDir::AllEntries | QDir::Hidden), QStringList());
    // ... but not once someone put a file of their own into it.
    std::ofstream(out + "/README.md") << "my notes on this model";
    refused(out, {"earlier export", "README.md"});
  }
};

QTEST_APPLESS_MAIN(TestExport)
#include "test_export.moc"
