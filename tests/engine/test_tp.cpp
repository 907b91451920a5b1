// Tensor parallelism in the model (engine/model/gpt.h TensorParallel; Megatron-LM, Shoeybi et al.
// 2019, arXiv:1909.08053, sec. 3): tp shards of a GPT-2 model, each a GPT instance in its own
// thread with its own CPU backend, joined by an in-process group, against the unsplit model with
// the same seed and batch. The group's loss, logits (gathered) and gradients (each rank's pieces
// placed into the full layout, engine/model/tensor_parallel.h tp_place) must equal the unsplit
// model's to fp32 rounding, and the replicated tensors' gradients must be bit-identical on every
// rank (the gradient norm and the optimizer rely on it).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "engine/common/error.h"
#include "engine/model/gpt.h"
#include "engine/model/shape.h"
#include "engine/model/tensor_parallel.h"
#include "engine/ops/cpu_ops.h"

using namespace td;

namespace {

// The group's shared state: one host slot per rank and a reusable barrier.
struct ThreadGroup {
  explicit ThreadGroup(int n) : size(n), bufs((size_t)n) {}
  void barrier() {
    std::unique_lock<std::mutex> lk(mu);
    const uint64_t gen = generation;
    if (++arrived == size) {
      arrived = 0;
      generation++;
      cv.notify_all();
      return;
    }
    cv.wait(lk, [&] { return generation != gen; });
  }
  int size;
  std::vector<std::vector<float>> bufs;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
};

// TensorParallel over a ThreadGroup: sums in rank order, so every rank gets the same bits.
class ThreadTp : public TensorParallel {
 public:
  ThreadTp(ThreadGroup& g, int rank, Backend& be) : g_(g), rank_(rank), be_(be) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.size; }
  void all_reduce_sum(float* x, size_t n) override {
    calls++;
    g_.bufs[(size_t)rank_].assign(n, 0.0f);
    be_.download(g_.bufs[(size_t)rank_].data(), x, n * sizeof(float));
    g_.barrier();
    std::vector<float> sum(n, 0.0f);
    for (int r = 0; r < g_.size; r++)
      for (size_t i = 0; i < n; i++) sum[i] += g_.bufs[(size_t)r][i];
    g_.barrier();
    be_.upload(x, sum.data(), n * sizeof(float));
  }
  void all_gather(float* x, size_t n) override {
    g_.bufs[(size_t)rank_].assign(n, 0.0f);
    be_.download(g_.bufs[(size_t)rank_].data(), x + (size_t)rank_ * n, n * sizeof(float));
    g_.barrier();
    for (int r = 0; r < g_.size; r++) be_.upload(x + (size_t)r * n, g_.bufs[(size_t)r].data(), n * sizeof(float));
    g_.barrier();
  }
  int calls = 0;  // all-reduces made

 private:
  ThreadGroup& g_;
  int rank_;
  Backend& be_;
};

// kv > 0: the Llama family (qwen2 with qkv_bias: q/k/v biases) with kv key/value heads (GQA
// when kv < n_head).
ModelConfig tiny(bool tie, int kv = 0, bool qkv_bias = false) {
  ModelConfig m;
  if (kv > 0) {
    m.family = qkv_bias ? "qwen2" : "llama";
    m.n_kv_head = kv;
  }
  m.vocab_size = 37;  // splits unevenly over 2 and 4 ranks
  m.seq_len = 8;
  m.n_layer = 2;
  m.n_head = 4;
  m.d_model = 16;
  m.d_ff = 32;
  m.tie_embeddings = tie;
  return m;
}

struct Result {
  float loss = 0;
  std::vector<float> logits;  // (B T, V)
  std::vector<float> grads;   // the full layout
};

void batch(int B, int T, int V, std::vector<int32_t>& in, std::vector<int32_t>& tg) {
  std::mt19937 g(11);
  in.resize((size_t)B * T);
  tg.resize((size_t)B * T);
  for (auto& x : in) x = (int32_t)(g() % V);
  for (auto& x : tg) x = (int32_t)(g() % V);
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float d = 0;
  for (size_t i = 0; i < a.size(); i++) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

// The full model's weights: the seed-5 initialisation, and for qwen2 q/k/v biases drawn from
// N(0, 0.1) instead of zeros (so that a wrong slice of a bias shows in the logits).
std::vector<float> full_weights(const ModelConfig& m) {
  std::vector<float> w = GPT::initial_params(m, 5);
  if (m.family != "qwen2") return w;
  std::mt19937 g(23);
  std::normal_distribution<float> nd(0.0f, 0.1f);
  for (const ParamTensor& t : model_param_tensors(m))
    if (t.name.size() > 5 && t.name.compare(t.name.size() - 5, 5, ".bias") == 0)
      for (size_t i = 0; i < t.numel; i++) w[t.offset + i] = nd(g);
  return w;
}

Result unsplit(const ModelConfig& m, int B, int T, DType act = DType::kF32) {
  std::vector<int32_t> in, tg;
  batch(B, T, m.vocab_size, in, tg);
  auto be = make_cpu_backend();
  GPT model(m, *be, B, act);
  const std::vector<float> w = full_weights(m);
  be->upload(model.params(), w.data(), w.size() * sizeof(float));
  model.zero_grad();
  Result r;
  r.loss = model.forward(in.data(), tg.data(), B, T);
  r.logits.resize((size_t)B * T * m.vocab_size);
  model.download_logits(r.logits.data(), 0, (size_t)B * T);
  model.backward(1.0f / (B * T));
  r.grads.assign(model.grads(), model.grads() + model.num_params());
  return r;
}

// The model split over tp ranks, one thread and CPU backend each, on unsplit()'s batch: each
// rank's loss and gathered logits, its gradients in its own layout, and its all-reduce count.
struct Split {
  std::vector<Result> got;
  std::vector<std::vector<float>> local;
  std::vector<int> reduces;
  std::vector<std::string> errors;
};

Split split(const ModelConfig& m, int tp, int B, int T, DType act) {
  std::vector<int32_t> in, tg;
  batch(B, T, m.vocab_size, in, tg);
  ThreadGroup group(tp);
  Split s;
  s.got.resize((size_t)tp);
  s.local.resize((size_t)tp);
  s.reduces.resize((size_t)tp);
  s.errors.resize((size_t)tp);
  std::vector<std::thread> threads;
  for (int r = 0; r < tp; r++)
    threads.emplace_back([&, r] {
      try {
        auto be = make_cpu_backend();
        ThreadTp tpg(group, r, *be);
        GPT model(m, *be, B, act, &tpg);
        std::vector<float> w(model.num_params());
        tp_slice(m, r, tp, full_weights(m).data(), w.data());
        be->upload(model.params(), w.data(), w.size() * sizeof(float));
        model.zero_grad();
        s.got[(size_t)r].loss = model.forward(in.data(), tg.data(), B, T);
        s.got[(size_t)r].logits.resize((size_t)B * T * m.vocab_size);
        model.download_logits(s.got[(size_t)r].logits.data(), 0, (size_t)B * T);
        model.backward(1.0f / (B * T));
        s.local[(size_t)r].assign(model.grads(), model.grads() + model.num_params());
        s.reduces[(size_t)r] = tpg.calls;
      } catch (const std::exception& e) {
        s.errors[(size_t)r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return s;
}

}  // namespace

class TestTp : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { set_cpu_threads(1); }

  void shards_equal_unsplit_model_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<bool>("tie");
    QTest::addColumn<int>("kv");  // 0: GPT-2; > 0 Llama with kv key/value heads; < 0 qwen2 with -kv
    QTest::newRow("gpt2 tp2 tied") << 2 << true << 0;
    QTest::newRow("gpt2 tp4 tied") << 4 << true << 0;
    QTest::newRow("gpt2 tp2 untied") << 2 << false << 0;
    QTest::newRow("gpt2 tp1") << 1 << true << 0;
    QTest::newRow("llama gqa tp2") << 2 << false << 2;
    QTest::newRow("llama mha tp4 tied") << 4 << true << 4;
    QTest::newRow("qwen2 gqa tp2") << 2 << false << -2;  // kv < 0: qwen2 with -kv key/value heads
  }

  // Mixed precision (bf16 activations; the activations' all-reduces sum in fp32 and round once,
  // GPT::tp_reduce): the shards are as accurate as the unsplit model in bf16. Both are measured
  // against the unsplit fp32 model; the split run's error may be at most twice the unsplit bf16
  // run's (the partial sums round to bf16 before they are added), and the replicated tensors'
  // gradients stay bit-identical on every rank.
  void bf16_shards_as_accurate_as_unsplit_bf16_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("kv");
    QTest::newRow("gpt2 tp2") << 2 << 0;
    QTest::newRow("gpt2 tp4") << 4 << 0;
    QTest::newRow("llama gqa tp2") << 2 << 2;
    QTest::newRow("qwen2 gqa tp2") << 2 << -2;
  }
  void bf16_shards_as_accurate_as_unsplit_bf16() {
    QFETCH(int, tp);
    QFETCH(int, kv);
    const ModelConfig m = tiny(kv == 0, std::abs(kv), kv < 0);
    const int B = 2, T = 8;
    const Result ref = unsplit(m, B, T), ref16 = unsplit(m, B, T, DType::kBF16);
    const Split sp = split(m, tp, B, T, DType::kBF16);
    const auto& got = sp.got;
    const auto& local = sp.local;
    for (int r = 0; r < tp; r++) QVERIFY2(sp.errors[(size_t)r].empty(), sp.errors[(size_t)r].c_str());
    std::vector<float> placed(ref.grads.size(), std::nanf(""));
    for (int r = 0; r < tp; r++) tp_place(m, r, tp, local[(size_t)r].data(), placed.data());
    for (float g : placed) QVERIFY(std::isfinite(g));
    const float e16 = max_abs_diff(ref16.grads, ref.grads), etp = max_abs_diff(placed, ref.grads);
    const float l16 = max_abs_diff(ref16.logits, ref.logits), ltp = max_abs_diff(got[0].logits, ref.logits);
    const float d16 = std::fabs(ref16.loss - ref.loss), dtp = std::fabs(got[0].loss - ref.loss);
    qInfo("%s tp %d bf16 vs fp32: gradients %.3g (unsplit bf16 %.3g), logits %.3g (%.3g), loss %.3g (%.3g)", m.family.c_str(), tp, etp,
          e16, ltp, l16, dtp, d16);
    QVERIFY(e16 > 0);  // bf16 rounds: the reference error is real
    QVERIFY2(etp <= 2 * e16, qPrintable(QString("gradients: split %1, unsplit bf16 %2").arg(etp).arg(e16)));
    QVERIFY2(ltp <= 2 * l16, qPrintable(QString("logits: split %1, unsplit bf16 %2").arg(ltp).arg(l16)));
    QVERIFY2(dtp <= 2 * d16 + 1e-6f * ref.loss, qPrintable(QString("loss: split %1, unsplit bf16 %2").arg(dtp).arg(d16)));
    for (int r = 1; r < tp; r++) {
      QCOMPARE(got[(size_t)r].loss, got[0].loss);
      const std::vector<TpSplit> splits = tp_splits(m);
      const std::vector<ParamTensor> t0 = tp_param_tensors(m, 0, tp), tr = tp_param_tensors(m, r, tp);
      for (size_t i = 0; i < tr.size(); i++)
        if (splits[i].dim == -1)
          QVERIFY2(std::equal(local[(size_t)r].begin() + tr[i].offset, local[(size_t)r].begin() + tr[i].offset + tr[i].numel,
                              local[0].begin() + t0[i].offset),
                   qPrintable(QString("rank %1's gradient of %2 differs from rank 0's").arg(r).arg(tr[i].name.c_str())));
    }
  }
  void shards_equal_unsplit_model() {
    QFETCH(int, tp);
    QFETCH(bool, tie);
    QFETCH(int, kv);
    const ModelConfig m = tiny(tie, std::abs(kv), kv < 0);
    const int B = 2, T = 8;
    const Result ref = unsplit(m, B, T);
    const Split sp = split(m, tp, B, T, DType::kF32);
    const auto& got = sp.got;
    const auto& local = sp.local;
    const auto& reduces = sp.reduces;
    for (int r = 0; r < tp; r++) QVERIFY2(sp.errors[(size_t)r].empty(), sp.errors[(size_t)r].c_str());

    float max_grad = 0;
    for (float g : ref.grads) max_grad = std::max(max_grad, std::fabs(g));
    std::vector<float> placed(ref.grads.size(), std::nanf(""));
    for (int r = 0; r < tp; r++) {
      QCOMPARE(local[(size_t)r].size(), tp_param_tensors(m, r, tp).back().offset + tp_param_tensors(m, r, tp).back().numel);
      // Every rank's loss is the full model's (the cross-entropy combines the vocabulary shards).
      QVERIFY2(std::fabs(got[(size_t)r].loss - ref.loss) <= 1e-6f * std::fabs(ref.loss),
               qPrintable(QString("rank %1 loss %2 vs unsplit %3").arg(r).arg(got[(size_t)r].loss, 0, 'g', 9).arg(ref.loss, 0, 'g', 9)));
      const float dl = max_abs_diff(got[(size_t)r].logits, ref.logits);
      QVERIFY2(dl <= 1e-5f, qPrintable(QString("rank %1 logits differ by %2").arg(r).arg(dl)));
      // all-reduces per forward + backward: 1 + 2 L (embedding, two row-parallel outputs per
      // block) in forward and 1 + 2 L (head, c_fc, c_attn input gradients) in backward.
      if (tp > 1) QCOMPARE(reduces[(size_t)r], 2 * (1 + 2 * m.n_layer));
      tp_place(m, r, tp, local[(size_t)r].data(), placed.data());
    }
    for (float g : placed) QVERIFY(std::isfinite(g));  // every element of the full layout was placed
    const float dg = max_abs_diff(placed, ref.grads);
    qInfo("%s tp %d %s: loss %.7f, max gradient diff %.3g (largest gradient %.3g)", m.family.c_str(), tp, tie ? "tied" : "untied", ref.loss, dg, max_grad);
    QVERIFY2(dg <= 1e-6f + 1e-5f * max_grad, qPrintable(QString("gradients differ by %1").arg(dg)));
    // Replicated gradients (position embedding, LayerNorms, row-parallel biases): the same bits on
    // every rank, tensor by tensor (offsets differ between ranks: the vocabulary splits unevenly).
    const std::vector<TpSplit> splits = tp_splits(m);
    const std::vector<ParamTensor> t0 = tp_param_tensors(m, 0, tp);
    for (int r = 1; r < tp; r++) {
      const std::vector<ParamTensor> tr = tp_param_tensors(m, r, tp);
      for (size_t i = 0; i < tr.size(); i++) {
        if (splits[i].dim != -1) continue;
        QVERIFY2(std::equal(local[(size_t)r].begin() + tr[i].offset, local[(size_t)r].begin() + tr[i].offset + tr[i].numel,
                            local[0].begin() + t0[i].offset),
                 qPrintable(QString("rank %1's gradient of %2 differs from rank 0's").arg(r).arg(tr[i].name.c_str())));
      }
    }
  }

  void refuses_what_it_cannot_split() {
    ModelConfig m = tiny(true);
    m.n_head = 2;  // 2 heads over 4 ranks
    auto be = make_cpu_backend();
    ThreadGroup group(4);
    ThreadTp tpg(group, 0, *be);
    try {
      GPT model(m, *be, 2, DType::kF32, &tpg);
      QFAIL("a model with 2 heads was split over 4 ranks");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("n_head"), e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestTp)
#include "test_tp.moc"
