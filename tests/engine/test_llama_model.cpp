// The Llama block's families of the model (engine/model/llama.cpp: llama, and qwen2 with q/k/v
// biases) on the CPU backend, against the independent float64 PyTorch Llama of
// tests/reference/llama_reference.py (written from the layout of transformers' modeling_llama
// and Qwen2's report): logits and loss, every parameter's gradient, for GQA, MHA and MQA shapes,
// tied and untied; the GradSink path; a short training run.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/model/gpt.h"
#include "engine/model/model_detail.h"
#include "engine/model/shape.h"
#include "engine/ops/cpu_ops.h"
#include "engine/optim/adamw.h"
#include "test_util.h"

using namespace td;
using json = nlohmann::json;

namespace {

// A tiny Llama (or Qwen2 with family "qwen2"): 2 layers, d_model 64, 4 heads (hs 16), kv
// key/value heads.
ModelConfig tiny_llama(int kv, bool tie, const char* family = "llama") {
  ModelConfig m;
  m.family = family;
  m.vocab_size = 29;
  m.seq_len = 8;
  m.n_layer = 2;
  m.n_head = 4;
  m.n_kv_head = kv;
  m.d_model = 64;
  m.d_ff = 96;
  m.tie_embeddings = tie;
  m.rope_theta = 10000.0;
  m.rms_norm_eps = 1e-5;
  return m;
}

void random_batch(int B, int T, int V, uint64_t seed, std::vector<int32_t>& in, std::vector<int32_t>& tg) {
  std::mt19937_64 g(seed);
  in.resize((size_t)B * T);
  tg.resize((size_t)B * T);
  for (auto& x : in) x = (int32_t)(g() % V);
  for (auto& x : tg) x = (int32_t)(g() % V);
}

// Weights further from the init than N(0, 0.02) so that every path (RoPE, the norms' weights,
// SwiGLU's gate) changes the logits visibly: each parameter += N(0, 0.1).
void perturb(GPT& model, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> nd(0.0f, 0.1f);
  for (size_t i = 0; i < model.num_params(); i++) model.params()[i] += nd(gen);
}

// A GradSink that keeps every bucket in its own buffer and checks the open/close protocol.
class BucketSink : public GradSink {
 public:
  explicit BucketSink(std::vector<std::pair<size_t, size_t>> b) : buckets(std::move(b)), bufs(buckets.size()), state(buckets.size(), 0) {
    for (size_t i = 0; i < buckets.size(); i++) bufs[i].assign(buckets[i].second - buckets[i].first, 0.0f);
  }
  float* open(int b) override {
    if (state[b] != 0) errors++;
    state[b] = 1;
    return bufs[b].data();
  }
  void close(int b) override {
    if (state[b] != 1) errors++;
    state[b] = 2;
  }
  std::vector<std::pair<size_t, size_t>> buckets;
  std::vector<std::vector<float>> bufs;
  std::vector<int> state;
  int errors = 0;
};

}  // namespace

class TestLlamaModel : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { set_cpu_threads(2); }

  void pytorch_reference_data() {
    QTest::addColumn<int>("kv");
    QTest::addColumn<bool>("tie");
    QTest::addColumn<bool>("fused");  // train.attention = "fused" (the FlashAttention-2 ops)
    QTest::addColumn<QString>("family");
    QTest::newRow("GQA 4 heads 2 kv, untied") << 2 << false << false << "llama";
    QTest::newRow("GQA 4 heads 2 kv, tied") << 2 << true << false << "llama";
    QTest::newRow("MHA 4 kv, untied") << 4 << false << false << "llama";
    QTest::newRow("MQA 1 kv, tied") << 1 << true << false << "llama";
    QTest::newRow("MQA 1 kv, untied") << 1 << false << false << "llama";
    QTest::newRow("GQA 4 heads 2 kv, untied, fused attention") << 2 << false << true << "llama";
    QTest::newRow("MQA 1 kv, tied, fused attention") << 1 << true << true << "llama";
    // qwen2: q/k/v biases (perturbed away from their zero init, so each gradient is checked).
    QTest::newRow("qwen2 GQA 4 heads 2 kv, untied") << 2 << false << false << "qwen2";
    QTest::newRow("qwen2 MQA 1 kv, tied, fused attention") << 1 << true << true << "qwen2";
  }
  void pytorch_reference() {
    // The engine in fp32 against tests/reference/llama_reference.py in float64 on the same
    // weights (the engine's checkpoint file) and batch.
    QFETCH(int, kv);
    QFETCH(bool, tie);
    QFETCH(bool, fused);
    QFETCH(QString, family);
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    const ModelConfig m = tiny_llama(kv, tie, family == "qwen2" ? "qwen2" : "llama");
    const int B = 2, T = 8, V = m.vocab_size;
    auto be = make_cpu_backend();
    GPT model(m, *be, B, DType::kF32, nullptr, fused ? AttentionKernel::kFused : AttentionKernel::kSimple);
    model.init_weights(42);
    perturb(model, 9 + kv);
    QCOMPARE(model.num_params(), llama_num_params(m));
    std::vector<int32_t> in, tg;
    random_batch(B, T, V, 13, in, tg);

    TrainerState st;
    st.run_id = "llama-oracle";
    st.config = json::object();
    auto info = save_checkpoint(d + "/ck", model, nullptr, st);
    QVERIFY(QFile::copy(QString::fromStdString(info.path + "/model.safetensors"), dir.filePath("model.safetensors")));
    json jm = {{"family", m.family}, {"vocab_size", V}, {"seq_len", m.seq_len}, {"n_layer", m.n_layer}, {"n_head", m.n_head},
               {"n_kv_head", m.n_kv_head}, {"d_model", m.d_model}, {"d_ff", m.d_ff}, {"tie_embeddings", m.tie_embeddings},
               {"rope_theta", m.rope_theta}, {"rms_norm_eps", m.rms_norm_eps}};
    std::ofstream(d + "/case.json") << json{{"model", jm}}.dump();
    json batch = {{"inputs", json::array()}, {"targets", json::array()}};
    for (int b = 0; b < B; b++) {
      batch["inputs"].push_back(std::vector<int32_t>(in.begin() + b * T, in.begin() + (b + 1) * T));
      batch["targets"].push_back(std::vector<int32_t>(tg.begin() + b * T, tg.begin() + (b + 1) * T));
    }
    std::ofstream(d + "/batch.json") << batch.dump();
    auto r = tdtest::run(TD_SYSTEM_PYTHON, {TD_SOURCE_DIR "/tests/reference/llama_reference.py", dir.path()}, 120000);
    if (r.exit_code == 77) QSKIP(qPrintable("the PyTorch reference skipped: " + r.out.trimmed()));
    QVERIFY2(r.exit_code == 0, qPrintable("the PyTorch reference failed (Debian's python3-torch is needed):\n" + r.err));
    SafetensorsFile ref(d + "/reference.safetensors");

    model.zero_grad();
    const float loss = model.forward(in.data(), tg.data(), B, T);
    // Logits: max |engine - reference| within 1e-4 of the largest reference logit.
    std::vector<float> got((size_t)B * T * V), want(got.size());
    model.download_logits(got.data(), 0, (size_t)B * T);
    ref.read_f32("logits", want.data(), want.size());
    double worst_abs = 0, largest = 0;
    for (size_t i = 0; i < got.size(); i++) {
      worst_abs = std::max(worst_abs, (double)std::abs(got[i] - want[i]));
      largest = std::max(largest, (double)std::abs(want[i]));
    }
    float ref_loss = 0;
    ref.read_f32("loss", &ref_loss, 1);
    qInfo("loss: engine %.7f, PyTorch %.7f; logits: max |diff| %.2e, max |logit| %.3f", loss, ref_loss, worst_abs, largest);
    QVERIFY2(largest > 1.0, "the logits are too small to test anything: the weights are too close to zero");
    QVERIFY(worst_abs <= 1e-4 * largest);
    QVERIFY(std::abs(loss - ref_loss) / ref_loss < 1e-5);

    // Every gradient (norm-relative error per tensor, as test_model's GPT-2 oracle).
    model.backward(1.0f / (B * T));
    double worst = 0;
    for (const auto& t : model.tensors()) {
      std::vector<float> w(t.numel);
      ref.read_f32("grad." + t.name, w.data(), t.numel);
      double num = 0, den = 0;
      for (size_t i = 0; i < t.numel; i++) {
        const double dlt = model.grads()[t.offset + i] - w[i];
        num += dlt * dlt;
        den += (double)w[i] * w[i];
      }
      QVERIFY2(den > 0, qPrintable(QString("the reference gradient of %1 is zero").arg(t.name.c_str())));
      const double rel = std::sqrt(num / den);
      worst = std::max(worst, rel);
      QVERIFY2(rel <= 1e-4, qPrintable(QString("gradient of %1: relative error %2").arg(t.name.c_str()).arg(rel)));
    }
    qInfo("gradients: worst relative error %.2e over %zu tensors", worst, model.tensors().size());
  }

  void layout_matches_the_planner() {
    // The tensors are shape.h's table; the buckets partition it (embedding, one per layer, norm
    // and lm_head); the activation memory the model allocates is what the planner plans (gate|up
    // is one buffer here and two in the plan: equal when B T F bytes is a multiple of 64).
    for (const char* family : {"llama", "qwen2"}) {
      const ModelConfig m = tiny_llama(2, false, family);
      const bool bias = m.family == "qwen2";
      auto be = make_cpu_backend();
      GPT model(m, *be, 2);
      const auto t = llama_param_tensors(m);
      QCOMPARE(t.size(), (size_t)1 + (size_t)m.n_layer * (bias ? 12 : 9) + 2);
      QCOMPARE(model.tensors().size(), t.size());
      for (size_t i = 0; i < t.size(); i++) QCOMPARE(model.tensors()[i].name, t[i].name);
      const auto b = model.grad_buckets();
      QCOMPARE((int)b.size(), m.n_layer + 2);
      QCOMPARE(b.front().first, (size_t)0);
      QCOMPARE(b.front().second, (size_t)m.vocab_size * m.d_model);
      const size_t C = m.d_model, kvhs = (size_t)m.n_kv_head * (C / m.n_head);
      for (int l = 0; l < m.n_layer; l++)  // 2 norms, q and o, k and v, gate up down; qwen2: q, k, v biases
        QCOMPARE(b[1 + l].second - b[1 + l].first, 2 * C + 2 * C * C + 2 * C * kvhs + 3 * C * (size_t)m.d_ff + (bias ? C + 2 * kvhs : 0));
      if (bias) {  // the three biases adjacent (q|k|v's bias read as one vector), after the layer's weights
        const auto& q = t[1 + 9];
        QCOMPARE(q.name, std::string("layers.0.self_attn.q_proj.bias"));
        QCOMPARE(t[1 + 10].offset, q.offset + C);
        QCOMPARE(t[1 + 11].name, std::string("layers.0.self_attn.v_proj.bias"));
        QCOMPARE(t[1 + 11].offset + t[1 + 11].numel, b[1].second);
        QVERIFY(!q.decay);
      }
      for (size_t i = 1; i < b.size(); i++) QCOMPARE(b[i].first, b[i - 1].second);
      QCOMPARE(b.back().second, model.num_params());
      QCOMPARE(b.back().second - b.back().first, (size_t)m.d_model + (size_t)m.vocab_size * m.d_model);  // norm + lm_head
      for (DType act : {DType::kF32, DType::kBF16})
        for (AttentionKernel attn : {AttentionKernel::kSimple, AttentionKernel::kFused}) {
          const size_t allocated = model_detail::llama_acts_bytes(m, 2, m.seq_len, act, nullptr, attn) +
                                   model_detail::llama_dacts_bytes(m, 2, m.seq_len, act);
          const size_t planned = llama_activation_bytes(m, 2, m.seq_len, act, attn);
          qInfo("%s, attention %s: activations %zu bytes, planned %zu", dtype_name(act), attention_kernel_name(attn),
                allocated, planned);
          QCOMPARE(allocated, planned);
        }
      // Fused attention keeps (B,NH,T) fp32 log-sum-exps per layer instead of (B,NH,T,T) Act
      // probabilities (each buffer rounded up to 64 bytes).
      auto up64 = [](size_t x) { return (x + 63) / 64 * 64; };
      const size_t bnt = (size_t)2 * m.n_head * m.seq_len;
      QCOMPARE(llama_activation_bytes(m, 2, m.seq_len, DType::kF32) - llama_activation_bytes(m, 2, m.seq_len, DType::kF32, AttentionKernel::kFused),
               (size_t)m.n_layer * (up64(bnt * m.seq_len * 4) - up64(bnt * 4)));
    }
  }

  void grad_sink_receives_the_same_gradients() {
    // ZeRO-2's path (gpt.h GradSink): bucket by bucket, the same numbers as grads().
    for (bool tie : {true, false}) for (const char* family : {"llama", "qwen2"}) {
      const ModelConfig m = tiny_llama(2, tie, family);
      auto be = make_cpu_backend();
      GPT model(m, *be, 2);
      model.init_weights(5);
      perturb(model, 6);
      std::vector<int32_t> in, tg;
      random_batch(2, 8, m.vocab_size, 3, in, tg);
      model.zero_grad();
      model.forward(in.data(), tg.data(), 2, 8);
      model.backward(1.0f / 16);
      std::vector<float> full(model.grads(), model.grads() + model.num_params());
      BucketSink sink(model.grad_buckets());
      model.set_grad_sink(&sink);
      model.forward(in.data(), tg.data(), 2, 8);
      model.backward(1.0f / 16);
      model.set_grad_sink(nullptr);
      QCOMPARE(sink.errors, 0);
      for (size_t i = 0; i < sink.buckets.size(); i++) {
        QCOMPARE(sink.state[i], 2);
        for (size_t j = 0; j < sink.bufs[i].size(); j++)
          QVERIFY2(sink.bufs[i][j] == full[sink.buckets[i].first + j], qPrintable(QString("bucket %1 element %2").arg(i).arg(j)));
      }
    }
  }

  void bf16_follows_fp32() {
    // Mixed precision (bf16 activations and weight copy, fp32 gradients) on the CPU backend's
    // bf16 emulation: the same loss and gradients as fp32 within bf16's ~3 significant digits.
    const ModelConfig m = tiny_llama(2, false);
    auto be = make_cpu_backend();
    GPT f32(m, *be, 2), b16(m, *be, 2, DType::kBF16);
    f32.init_weights(8);
    perturb(f32, 4);
    std::memcpy(b16.params(), f32.params(), f32.num_params() * sizeof(float));
    std::vector<int32_t> in, tg;
    random_batch(2, 8, m.vocab_size, 21, in, tg);
    f32.zero_grad();
    b16.zero_grad();
    const float l32 = f32.forward(in.data(), tg.data(), 2, 8), l16 = b16.forward(in.data(), tg.data(), 2, 8);
    f32.backward(1.0f / 16);
    b16.backward(1.0f / 16);
    double num = 0, den = 0;
    for (size_t i = 0; i < f32.num_params(); i++) {
      num += std::pow((double)b16.grads()[i] - f32.grads()[i], 2);
      den += std::pow((double)f32.grads()[i], 2);
    }
    const double rel = std::sqrt(num / den);
    qInfo("bf16 vs fp32: loss %.5f vs %.5f, gradient relative error %.2e", l16, l32, rel);
    QVERIFY(std::abs(l16 - l32) / l32 < 1e-2);
    QVERIFY(rel < 5e-2);
  }

  void training_reduces_the_loss() {
    // A repeating sequence 0, 1, ..., 6, 0, 1, ... : the next token is a function of the
    // current one, so a few AdamW steps must bring the loss far below ln V (3.37).
    ModelConfig m = tiny_llama(2, true);
    m.seq_len = 16;
    auto be = make_cpu_backend();
    GPT model(m, *be, 2);
    model.init_weights(1);
    AdamW opt(*be, model.tensors(), model.num_params(), 0.9, 0.95, 1e-8, 0.0);
    std::vector<int32_t> in(32), tg(32);
    for (int i = 0; i < 32; i++) {
      in[i] = (i + 3 * (i / 16)) % 7;
      tg[i] = (in[i] + 1) % 7;
    }
    float first = 0, loss = 0;
    for (int step = 1; step <= 40; step++) {
      model.zero_grad();
      loss = model.forward(in.data(), tg.data(), 2, 16);
      if (step == 1) first = loss;
      model.backward(1.0f / 32);
      opt.step(model.params(), model.grads(), 3e-3, step);
    }
    qInfo("repeating sequence: loss %.4f -> %.4f after 40 AdamW steps (ln V = %.4f)", first, loss, std::log((double)m.vocab_size));
    QVERIFY(std::abs(first - std::log((double)m.vocab_size)) < 0.1);
    QVERIFY(loss < 0.1 * first);
  }
};

QTEST_APPLESS_MAIN(TestLlamaModel)
#include "test_llama_model.moc"
