// The GPT model on the CPU backend: loss at initialisation, overfitting one batch, a
// whole-model finite-difference check, and the PyTorch oracle (tests/reference/) for the loss,
// every gradient and one AdamW step; checkpoints read back by an independent Python reader.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/common/error.h"
#include "engine/model/gpt.h"
#include "engine/ops/cpu_ops.h"
#include "engine/optim/adamw.h"
#include "test_util.h"

using namespace td;
using json = nlohmann::json;

namespace {

ModelConfig tiny(int V = 23, bool tie = true) {
  ModelConfig m;
  m.vocab_size = V;
  m.seq_len = 8;
  m.n_layer = 2;
  m.n_head = 2;
  m.d_model = 16;
  m.d_ff = 64;
  m.tie_embeddings = tie;
  return m;
}

void random_batch(int B, int T, int V, uint64_t seed, std::vector<int32_t>& in, std::vector<int32_t>& tg) {
  std::mt19937_64 g(seed);
  in.resize((size_t)B * T);
  tg.resize((size_t)B * T);
  for (auto& x : in) x = (int32_t)(g() % V);
  for (auto& x : tg) x = (int32_t)(g() % V);
}

std::vector<float> copy(const float* p, size_t n) { return std::vector<float>(p, p + n); }

// The CPU backend under another name, as a device's memory looks to the checkpoint writer (not
// host memory it may read in place): it counts the bytes of every download.
class DeviceLikeBackend final : public Backend {
 public:
  explicit DeviceLikeBackend(Backend& inner) : be_(inner) {}
  std::string name() const override { return "device-like"; }
  bool supports(Op op, DType dtype) const override { return be_.supports(op, dtype); }
  DeviceInfo device_info() const override { return be_.device_info(); }
  void* alloc(size_t bytes) override { return be_.alloc(bytes); }
  void free(void* p) override { be_.free(p); }
  void upload(void* dst, const void* src_host, size_t bytes) override { be_.upload(dst, src_host, bytes); }
  void download(void* dst_host, const void* src, size_t bytes) override {
    largest_download = std::max(largest_download, bytes);
    downloaded += bytes;
    be_.download(dst_host, src, bytes);
  }
  void zero(void* p, size_t bytes) override { be_.zero(p, bytes); }
  void synchronize() override { be_.synchronize(); }
  void convert(bf16* dst, const float* src, size_t n) override { be_.convert(dst, src, n); }
  void adamw(float* params, const float* grads, float* m, float* v, const AdamWSpan* spans, size_t n_spans, float lr, float beta1,
             float beta2, float eps, float weight_decay, int t) override {
    be_.adamw(params, grads, m, v, spans, n_spans, lr, beta1, beta2, eps, weight_decay, t);
  }
  double grad_norm_squared(const float* g, size_t n) override { return be_.grad_norm_squared(g, n); }
  void scale(float* x, float s, size_t n) override { be_.scale(x, s, n); }
  size_t largest_download = 0, downloaded = 0;

 protected:
  ActivationOps<float>& ops_f32() override { return be_.ops<float>(); }
  ActivationOps<bf16>& ops_bf16() override { return be_.ops<bf16>(); }

 private:
  Backend& be_;
};

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

class TestModel : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { set_cpu_threads(2); }

  void loss_at_init_is_ln_vocab() {
    // Small init (std 0.02) makes the logits nearly uniform: loss ~ ln V = ln 257 = 5.549.
    ModelConfig m = tiny(257);
    m.seq_len = 32;
    auto be = make_cpu_backend();
    GPT model(m, *be, 4);
    model.init_weights(7);
    std::vector<int32_t> in, tg;
    random_batch(4, 32, 257, 1, in, tg);
    float loss = model.forward(in.data(), tg.data(), 4, 32);
    qInfo("loss at init %.4f, ln 257 = %.4f", loss, std::log(257.0));
    QVERIFY(std::abs(loss - std::log(257.0)) < 0.05);
  }

  void overfits_one_batch() {
    ModelConfig m = tiny(31);
    m.seq_len = 16;
    m.d_model = 32;
    m.d_ff = 128;
    auto be = make_cpu_backend();
    GPT model(m, *be, 4);
    model.init_weights(3);
    AdamW opt(*be, model.tensors(), model.num_params(), 0.9, 0.95, 1e-8, 0.0);
    std::vector<int32_t> in, tg;
    random_batch(4, 16, 31, 2, in, tg);
    float first = 0, loss = 0;
    for (int step = 1; step <= 300; step++) {
      model.zero_grad();
      loss = model.forward(in.data(), tg.data(), 4, 16);
      if (step == 1) first = loss;
      model.backward(1.0f / 64);
      clip_grad_norm(*be, model.grads(), model.num_params(), 1.0);
      opt.step(model.params(), model.grads(), 3e-3, step);
    }
    qInfo("one batch: loss %.4f -> %.4f after 300 steps", first, loss);
    QVERIFY(loss < 0.1);
  }

  void whole_model_finite_differences() {
    // fp32 model, loss accumulated in double: central differences at the largest-gradient
    // coordinate of every tensor. h = 3e-3 balances truncation error (h^2) against fp32
    // round-off (eps/h): worst error 3e-3 here, against 1.5e-2 at h = 1e-3 and 3e-2 at 1e-2.
    ModelConfig m = tiny(23, false);
    auto be = make_cpu_backend();
    GPT model(m, *be, 2);
    model.init_weights(11);
    // Larger weights than the init so that every path carries signal.
    for (size_t i = 0; i < model.num_params(); i++) model.params()[i] *= 10.0f;
    std::vector<int32_t> in, tg;
    random_batch(2, 8, 23, 5, in, tg);
    model.zero_grad();
    model.forward(in.data(), tg.data(), 2, 8);
    model.backward(1.0f / 16);
    auto g = copy(model.grads(), model.num_params());
    double worst = 0;
    for (const auto& t : model.tensors()) {
      // The largest-|g| coordinate of every tensor.
      size_t j = t.offset;
      for (size_t k = t.offset; k < t.offset + t.numel; k++)
        if (std::abs(g[k]) > std::abs(g[j])) j = k;
      if (std::abs(g[j]) < 1e-4) continue;
      float keep = model.params()[j];
      const float h = 3e-3f;
      model.params()[j] = keep + h;
      double lp = model.forward(in.data(), tg.data(), 2, 8);
      model.params()[j] = keep - h;
      double lm = model.forward(in.data(), tg.data(), 2, 8);
      model.params()[j] = keep;
      double fd = (lp - lm) / (2.0 * h);
      double err = std::abs(fd - g[j]) / std::abs(g[j]);
      worst = std::max(worst, err);
      if (err > 1e-2) qWarning("%s[%zu]: analytic %.6g, finite difference %.6g", t.name.c_str(), j - t.offset, g[j], fd);
    }
    qInfo("whole model: worst relative error %.2e over %zu tensors", worst, model.tensors().size());
    QVERIFY(worst < 1e-2);
  }

  void pytorch_oracle_data() {
    QTest::addColumn<bool>("tie");
    QTest::addColumn<bool>("fused");  // train.attention = "fused" (the FlashAttention-2 ops)
    QTest::newRow("tied embeddings") << true << false;
    QTest::newRow("separate lm_head") << false << false;
    QTest::newRow("tied embeddings, fused attention") << true << true;
  }
  void pytorch_oracle() {
    QFETCH(bool, tie);
    QFETCH(bool, fused);
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    ModelConfig m = tiny(23, tie);
    const int B = 3, T = 8;
    auto be = make_cpu_backend();
    GPT model(m, *be, B, DType::kF32, nullptr, fused ? AttentionKernel::kFused : AttentionKernel::kSimple);
    model.init_weights(42);
    // Make the weights less trivial than the init (non-unit LayerNorms, non-zero biases).
    std::mt19937_64 gen(9);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    for (size_t i = 0; i < model.num_params(); i++) model.params()[i] += nd(gen);
    std::vector<int32_t> in, tg;
    random_batch(B, T, m.vocab_size, 13, in, tg);

    // The engine's weights, batch and hyper-parameters for the reference.
    TrainerState st;
    st.run_id = "oracle";
    st.config = json::object();
    auto info = save_checkpoint(d + "/ck", model, nullptr, st);
    QFile::copy(QString::fromStdString(info.path + "/model.safetensors"), dir.filePath("model.safetensors"));
    const double lr = 1e-3, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
    json jm = {{"vocab_size", m.vocab_size}, {"seq_len", m.seq_len}, {"n_layer", m.n_layer}, {"n_head", m.n_head},
               {"d_model", m.d_model}, {"d_ff", m.d_ff}, {"tie_embeddings", m.tie_embeddings}};
    std::ofstream(d + "/case.json") << json{{"model", jm}, {"B", B}, {"T", T}, {"lr", lr}, {"beta1", b1}, {"beta2", b2}, {"eps", eps}, {"weight_decay", wd}}.dump();
    json batch = {{"inputs", json::array()}, {"targets", json::array()}};
    for (int b = 0; b < B; b++) {
      batch["inputs"].push_back(std::vector<int32_t>(in.begin() + b * T, in.begin() + (b + 1) * T));
      batch["targets"].push_back(std::vector<int32_t>(tg.begin() + b * T, tg.begin() + (b + 1) * T));
    }
    std::ofstream(d + "/batch.json") << batch.dump();
    auto r = tdtest::run(TD_SYSTEM_PYTHON, {TD_SOURCE_DIR "/tests/reference/gpt_reference.py", dir.path()}, 120000);
    QVERIFY2(r.exit_code == 0, qPrintable("the PyTorch reference failed (Debian's python3-torch is needed: ./traindeck.sh test installs it):\n" + r.err));

    // The engine's step.
    model.zero_grad();
    float loss = model.forward(in.data(), tg.data(), B, T);
    model.backward(1.0f / (B * T));
    SafetensorsFile ref(d + "/reference.safetensors");
    float ref_loss = 0;
    ref.read_f32("loss", &ref_loss, 1);
    qInfo("loss: engine %.7f, PyTorch %.7f", loss, ref_loss);
    QVERIFY(std::abs(loss - ref_loss) / ref_loss < 1e-5);
    double worst = 0;
    for (const auto& t : model.tensors()) {
      std::vector<float> want(t.numel);
      ref.read_f32("grad." + t.name, want.data(), t.numel);
      double num = 0, den = 0;
      for (size_t i = 0; i < t.numel; i++) {
        double dlt = model.grads()[t.offset + i] - want[i];
        num += dlt * dlt;
        den += (double)want[i] * want[i];
      }
      double rel = std::sqrt(num / std::max(den, 1e-30));
      worst = std::max(worst, rel);
      QVERIFY2(rel <= 1e-4, qPrintable(QString("gradient of %1: relative error %2").arg(t.name.c_str()).arg(rel)));
    }
    qInfo("gradients: worst relative error %.2e over %zu tensors", worst, model.tensors().size());

    // One AdamW step on those gradients; compare the update p_new - p_old.
    auto before = copy(model.params(), model.num_params());
    AdamW opt(*be, model.tensors(), model.num_params(), b1, b2, eps, wd);
    opt.step(model.params(), model.grads(), lr, 1);
    double num = 0, den = 0;
    for (const auto& t : model.tensors()) {
      std::vector<float> want(t.numel);
      ref.read_f32("adamw." + t.name, want.data(), t.numel);
      for (size_t i = 0; i < t.numel; i++) {
        double ours = model.params()[t.offset + i] - before[t.offset + i];
        double theirs = (double)want[i] - before[t.offset + i];
        num += (ours - theirs) * (ours - theirs);
        den += theirs * theirs;
      }
    }
    double rel = std::sqrt(num / den);
    qInfo("AdamW update: relative error %.2e", rel);
    QVERIFY(rel < 1e-3);
  }

  // The fused classifier (forward with a loss_scale: loss and dlogits in one pass over the
  // logits) gives forward + backward's bits: the same loss, every gradient identical, for both
  // families; a plain forward afterwards computes the logits (and the loss) again.
  void fused_classifier_equals_forward_then_backward() {
    for (bool llama : {false, true}) {
      ModelConfig m = tiny(23, false);
      if (llama) {
        m.family = "llama";
        m.n_kv_head = 1;
      }
      const int B = 3, T = 8;
      auto be = make_cpu_backend();
      GPT a(m, *be, B), b(m, *be, B);
      a.init_weights(7);
      b.init_weights(7);
      std::vector<int32_t> in, tg;
      random_batch(B, T, m.vocab_size, 21, in, tg);
      const float s = 1.0f / (B * T);
      a.zero_grad();
      b.zero_grad();
      const float la = a.forward(in.data(), tg.data(), B, T);
      a.backward(s);
      const float lb = b.forward(in.data(), tg.data(), B, T, s);
      b.backward(s);
      QCOMPARE(lb, la);
      QVERIFY(std::isfinite(la));
      size_t differ = 0;
      for (size_t i = 0; i < a.num_params(); i++) differ += a.grads()[i] != b.grads()[i];
      QVERIFY2(differ == 0, qPrintable(QString("%1: %2 gradients differ").arg(llama ? "llama" : "gpt2").arg(differ)));
      // A plain forward afterwards (no optimizer step ran): the same loss, nothing left in place.
      QCOMPARE(b.forward(in.data(), tg.data(), B, T), la);
    }
  }

  // train.gelu_fusion = "epilogue" (matmul_gelu_forward / matmul_backward_dgelu) gives the
  // separate ops' bits in fp32 on the CPU reference (the references are the composition) through
  // a few steps of plain SGD on the gradients. In bf16 the epilogue, like cuBLASLt's, takes the GELU
  // of the unrounded GEMM output and rounds d GELU once (the separate ops round both to bf16
  // first): the same loss and gradients to bf16's precision. Llama ignores the setting.
  void gelu_epilogue_equals_separate() {
    for (DType act : {DType::kF32, DType::kBF16}) {
      ModelConfig m = tiny(23, true);
      const int B = 3, T = 8;
      auto be = make_cpu_backend();
      GPT a(m, *be, B, act), b(m, *be, B, act, nullptr, AttentionKernel::kSimple, GeluFusion::kEpilogue);
      QCOMPARE(b.gelu_fusion(), GeluFusion::kEpilogue);
      a.init_weights(5);
      b.init_weights(5);
      for (int step = 0; step < 3; step++) {
        std::vector<int32_t> in, tg;
        random_batch(B, T, m.vocab_size, 40 + step, in, tg);
        a.zero_grad();
        b.zero_grad();
        const float la = a.forward(in.data(), tg.data(), B, T);
        a.backward(1.0f / (B * T));
        const float lb = b.forward(in.data(), tg.data(), B, T);
        b.backward(1.0f / (B * T));
        QVERIFY(std::isfinite(la));
        size_t differ = 0;
        double num = 0, den = 0;
        for (size_t i = 0; i < a.num_params(); i++) {
          differ += a.grads()[i] != b.grads()[i];
          const double d = (double)a.grads()[i] - b.grads()[i];
          num += d * d;
          den += (double)a.grads()[i] * a.grads()[i];
        }
        QVERIFY2(den > 0, "the gradients are all zero: the comparison would prove nothing");
        const double rel = std::sqrt(num / den);
        if (act == DType::kF32) {
          QCOMPARE(lb, la);
          QVERIFY2(differ == 0, qPrintable(QString("fp32 step %1: %2 gradients differ").arg(step).arg(differ)));
        } else {
          qInfo("bf16 step %d: loss separate %.6f, epilogue %.6f; gradients relative error %.2e", step, la, lb, rel);
          QVERIFY2(std::abs(lb - la) <= 1e-3 * std::abs(la), qPrintable(QString("bf16 step %1: loss %2 vs %3").arg(step).arg(lb).arg(la)));
          QVERIFY2(rel < 3e-2, qPrintable(QString("bf16 step %1: gradients relative error %2").arg(step).arg(rel)));
        }
        for (size_t i = 0; i < a.num_params(); i++) {
          a.params()[i] -= 0.1f * a.grads()[i];
          b.params()[i] -= 0.1f * b.grads()[i];
        }
      }
    }
    ModelConfig l = tiny(23, false);
    l.family = "llama";
    l.n_kv_head = 1;
    auto be = make_cpu_backend();
    GPT llama(l, *be, 2, DType::kF32, nullptr, AttentionKernel::kSimple, GeluFusion::kEpilogue);
    QCOMPARE(llama.gelu_fusion(), GeluFusion::kNone);
  }

  void checkpoint_read_by_independent_reader() {
    // The weights file read by tests/reference/safetensors_io.py (written from the format's
    // specification) has every tensor with the engine's name, shape and values.
    QTemporaryDir dir;
    ModelConfig m = tiny(23, false);
    auto be = make_cpu_backend();
    GPT model(m, *be, 1);
    model.init_weights(5);
    TrainerState st;
    st.run_id = "x";
    auto info = save_checkpoint(dir.path().toStdString(), model, nullptr, st);
    const char* script =
        "import sys, json; sys.path.insert(0, sys.argv[1]); import safetensors_io as s\n"
        "t, meta = s.read(sys.argv[2])\n"
        "print(json.dumps({n: [list(v.shape), float(v.double().sum()), float(v.reshape(-1)[-1])] for n, v in t.items()}))\n";
    auto r = tdtest::run(TD_SYSTEM_PYTHON, {"-c", script, TD_SOURCE_DIR "/tests/reference", QString::fromStdString(info.path + "/model.safetensors")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    json got = json::parse(r.out.toStdString());
    QCOMPARE((int)got.size(), (int)model.tensors().size());
    for (const auto& t : model.tensors()) {
      QVERIFY2(got.contains(t.name), t.name.c_str());
      QCOMPARE(got[t.name][0].get<std::vector<int64_t>>(), t.shape);
      double sum = 0;
      for (size_t i = 0; i < t.numel; i++) sum += model.params()[t.offset + i];
      QVERIFY(std::abs(got[t.name][1].get<double>() - sum) <= 1e-6 * (1 + std::abs(sum)));
      QCOMPARE(got[t.name][2].get<float>(), model.params()[t.offset + t.numel - 1]);
    }
    // And the engine reads its own file back bit for bit.
    GPT again(m, *be, 1);
    load_checkpoint(info.path, again, nullptr);
    QVERIFY(std::memcmp(again.params(), model.params(), model.num_params() * 4) == 0);
  }

  void checkpoint_streams_tensor_by_tensor() {
    // The writer reads a state in device memory one tensor at a time (one download of each
    // tensor's weights, m and v: 12 N bytes in all, none larger than the largest tensor), and its
    // files are byte for byte those of the same state written from host memory (HostCheckpoint)
    // and in place from the CPU backend.
    ModelConfig m = tiny(23, false);  // untied: the LM head (23 x 16) is a tensor of its own
    auto cpu = make_cpu_backend();
    DeviceLikeBackend dev(*cpu);
    GPT model(m, dev, 1);
    model.init_weights(9);
    const size_t n = model.num_params();
    AdamW adam(dev, model.tensors(), n, 0.9, 0.95, 1e-8, 0.1);
    std::vector<float> mv(2 * n);
    for (size_t i = 0; i < mv.size(); i++) mv[i] = 1e-3f * (float)(i % 1000) - 0.25f;
    dev.upload(adam.m(), mv.data(), n * 4);
    dev.upload(adam.v(), mv.data() + n, n * 4);
    TrainerState st;
    st.run_id = "streamed";
    st.step = 3;
    QTemporaryDir dir;
    const std::string root = dir.path().toStdString();
    dev.largest_download = dev.downloaded = 0;
    const auto streamed = save_checkpoint(root + "/device", model, &adam, st);
    QVERIFY2(streamed.problem.empty(), streamed.problem.c_str());
    size_t largest = 0;
    for (const auto& t : model.tensors()) largest = std::max(largest, t.numel);
    QCOMPARE(largest, size_t(64 * 16));  // the MLP weights (d_ff 64 x d_model 16), by hand
    QCOMPARE(dev.downloaded, 12 * n);
    QCOMPARE(dev.largest_download, 4 * largest);

    HostCheckpoint host{m, copy(model.params(), n), copy(mv.data(), n), copy(mv.data() + n, n)};
    const auto from_host = save_checkpoint(root + "/host", host, st);
    GPT on_cpu(m, *cpu, 1);
    cpu->upload(on_cpu.params(), model.params(), n * 4);
    AdamW cpu_adam(*cpu, on_cpu.tensors(), n, 0.9, 0.95, 1e-8, 0.1);
    cpu->upload(cpu_adam.m(), mv.data(), n * 4);
    cpu->upload(cpu_adam.v(), mv.data() + n, n * 4);
    const auto in_place = save_checkpoint(root + "/cpu", on_cpu, &cpu_adam, st);
    for (const char* f : {"/model.safetensors", "/optimizer.safetensors", "/SHA256SUMS"}) {
      const std::string a = read_all(streamed.path + f);
      QVERIFY2(a.size() > 100, f);
      QVERIFY2(a == read_all(from_host.path + f), f);
      QVERIFY2(a == read_all(in_place.path + f), f);
    }
    // And it loads back: m of the last tensor's last element, by hand from the fill above.
    GPT again(m, *cpu, 1);
    AdamW again_adam(*cpu, again.tensors(), n, 0.9, 0.95, 1e-8, 0.1);
    load_checkpoint(streamed.path, again, &again_adam);
    QCOMPARE(again_adam.m()[n - 1], 1e-3f * (float)((n - 1) % 1000) - 0.25f);
    QVERIFY(std::memcmp(again.params(), model.params(), n * 4) == 0);
  }

  void damaged_checkpoint_is_refused() {
    QTemporaryDir dir;
    ModelConfig m = tiny();
    auto be = make_cpu_backend();
    GPT model(m, *be, 1);
    model.init_weights(1);
    TrainerState st;
    st.run_id = "x";
    st.step = 5;
    auto info = save_checkpoint(dir.path().toStdString(), model, nullptr, st);
    QFile f(QString::fromStdString(info.path + "/model.safetensors"));
    QVERIFY(f.resize(f.size() - 100));
    try {
      load_checkpoint(info.path, model, nullptr);
      QFAIL("a truncated checkpoint loaded");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("safetensors") != std::string::npos, e.what());
    }
    QVERIFY(!latest_checkpoint(dir.path().toStdString()).has_value());
  }
};

QTEST_APPLESS_MAIN(TestModel)
#include "test_model.moc"
