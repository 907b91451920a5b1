// `traindeck-engine profile` (engine/metrics/op_profile.h, engine/ops/profile.h): the calls of
// each op in one optimizer step against counts worked out by hand from the model's forward and
// backward (engine/model/gpt.cpp, llama.cpp), the times adding up, the CLI's JSON, and AdamW's
// runs of adjacent tensors (one adamw call each) giving the per-tensor update's bits.
#include <QTemporaryDir>
#include <QtTest>

#include <map>
#include <random>

#include "engine/common/error.h"
#include "engine/config.h"
#include "engine/metrics/op_profile.h"
#include "engine/model/gpt.h"
#include "engine/model/shape.h"
#include "engine/ops/cpu_ops.h"
#include "engine/optim/adamw.h"
#include "test_util.h"

using namespace td;
using json = nlohmann::json;

namespace {

RunConfig tiny(const std::string& family, const std::string& attention, bool tie) {
  json doc = {{"model", {{"family", family}, {"vocab_size", 61}, {"seq_len", 24}, {"n_layer", 3}, {"n_head", 4},
                         {"d_model", 32}, {"tie_embeddings", tie}}},
              {"train", {{"micro_batch", 2}, {"grad_accum", 2}, {"threads", 2}, {"attention", attention}, {"grad_clip", 0.0}}},
              {"data", {{"path", "/nonexistent/not-read"}}}};
  if (family == "llama") doc["model"]["n_kv_head"] = 2;
  return parse_config(doc);
}

std::map<std::string, double> calls(const OpProfileReport& r) {
  std::map<std::string, double> c;
  for (const auto& row : r.rows) c[row.op] = row.calls_per_step;
  return c;
}

}  // namespace

class TestOpProfile : public QObject {
  Q_OBJECT

 private slots:
  void calls_per_step_by_hand_data() {
    QTest::addColumn<QString>("family");
    QTest::addColumn<QString>("attention");
    QTest::addColumn<bool>("tie");
    QTest::newRow("gpt2, simple, tied") << "gpt2" << "simple" << true;
    QTest::newRow("gpt2, fused, untied") << "gpt2" << "fused" << false;
    QTest::newRow("llama, fused, untied") << "llama" << "fused" << false;
  }
  // L = 3 layers, 2 micro batches a step (a = 2), grad_clip 0 (no norm, no scale).
  // GPT-2 per micro batch: 1 embedding; per layer 2 LayerNorms, 4 matmuls (c_attn, c_proj, c_fc,
  // mlp c_proj), 1 attention, 1 GELU, 2 residual adds; then ln_f, the LM head matmul and the
  // softmax cross-entropy twice (the loss in forward, the gradient in backward); each backward op
  // once per forward op; memsets: 2 before the layers and 6 per layer in backward, and one zero_grad
  // a step. Llama per micro batch: RMSNorm instead of LayerNorm, RoPE and SwiGLU once per layer,
  // no GELU, 4 matmuls per layer (q|k|v, o, gate|up, down); memsets 2 + 6 per layer, 1 more for the
  // discarded position gradient. AdamW: one call per run of adjacent tensors with the same decay:
  // GPT-2 [wte wpe ln_1] then per block c_attn.w | c_attn.b | c_proj.w | c_proj.b ln_2 | c_fc.w |
  // c_fc.b | mlp.c_proj.w | mlp.c_proj.b with the next ln_1 (the last with ln_f): 1 + 8 L (+1 for
  // an untied lm_head); Llama [embed input_layernorm] then per layer q k v o | post norm |
  // gate up down | the next input norm (the last with norm): 1 + 4 L (+1).
  void calls_per_step_by_hand() {
    QFETCH(QString, family);
    QFETCH(QString, attention);
    QFETCH(bool, tie);
    const RunConfig c = tiny(family.toStdString(), attention.toStdString(), tie);
    const OpProfileReport r = profile_training_steps(c, 2);
    auto n = calls(r);
    const double a = 2, L = 3;
    const bool llama = family == "llama", fused = attention == "fused";
    std::map<std::string, double> want = {
        {"encoder_forward", a},           {"encoder_backward", a},
        {"matmul_forward", a * (4 * L + 1)}, {"matmul_backward", a * (4 * L + 1)},
        {"residual_forward", a * 2 * L},  {"softmax_cross_entropy", 2 * a},
        {fused ? "flash_attention_forward" : "attention_forward", a * L},
        {fused ? "flash_attention_backward" : "attention_backward", a * L},
        {"zero", a * (2 + 6 * L + (llama ? 1 : 0)) + 1},
        {"adamw", (llama ? 1 + 4 * L : 1 + 8 * L) + (tie ? 0 : 1)},
        {"upload", 2 * a},  // inputs and targets
    };
    if (llama) {
      for (const char* op : {"rmsnorm_forward", "rmsnorm_backward"}) want[op] = a * (2 * L + 1);
      for (const char* op : {"rope_forward", "rope_backward", "swiglu_forward", "swiglu_backward"}) want[op] = a * L;
    } else {
      for (const char* op : {"layernorm_forward", "layernorm_backward"}) want[op] = a * (2 * L + 1);
      for (const char* op : {"gelu_forward", "gelu_backward"}) want[op] = a * L;
    }
    for (const auto& [op, k] : want)
      QVERIFY2(n[op] == k, qPrintable(QString("%1: %2 calls a step, want %3").arg(op.c_str()).arg(n[op]).arg(k)));
    // Nothing else ran: no other op has a row (download: the losses, one per micro batch).
    for (const auto& row : r.rows)
      QVERIFY2(want.count(row.op) || row.op == "download", qPrintable(QString::fromStdString(row.op)));
    QCOMPARE(n["download"], a);
    // The times: every row's share of the rows' sum, which fits inside the step's wall time.
    double share = 0, ms = 0;
    for (const auto& row : r.rows) {
      QVERIFY(row.ms_per_step >= 0);
      share += row.share;
      ms += row.ms_per_step;
    }
    QVERIFY2(std::abs(share - 1.0) < 1e-9, qPrintable(QString::number(share)));
    QVERIFY(std::abs(ms - r.op_ms) < 1e-9 * std::max(1.0, ms));
    QVERIFY2(r.op_ms <= r.step_ms * 1.0001, qPrintable(QString("ops %1 ms in a %2 ms step").arg(r.op_ms).arg(r.step_ms)));
    QCOMPARE(r.attention, attention.toStdString());
    QCOMPARE(r.precision, std::string("fp32"));
  }

  void cli_json_and_refusals() {
    QTemporaryDir dir;
    const QString cfg = dir.filePath("c.json");
    tdtest::write_file(cfg, QByteArray::fromStdString(json({{"model", {{"vocab_size", 61}, {"seq_len", 16}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 16}}},
                                                             {"train", {{"micro_batch", 1}, {"threads", 1}}},
                                                             {"data", {{"path", "ds"}}}}).dump()));
    auto r = tdtest::engine({"profile", "--config", cfg, "--steps", "1", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const json j = json::parse(r.out.toStdString());
    QCOMPARE(j["steps"].get<int>(), 1);
    QCOMPARE(j["attention"].get<std::string>(), std::string("simple"));
    bool matmul = false;
    for (const auto& op : j["ops"]) matmul |= op["op"] == "matmul_forward" && op["calls_per_step"] == 5.0;  // 4 L + 1
    QVERIFY2(matmul, qPrintable(r.out));
    auto tp = tdtest::engine({"profile", "--config", cfg, "--set", "train.tensor_parallel=2"});
    QCOMPARE(tp.exit_code, 1);
    QVERIFY2(tp.err.contains("train.tensor_parallel"), qPrintable(tp.err));
    auto table = tdtest::engine({"profile", "--config", cfg, "--steps", "1", "--set", "train.attention=fused"});
    QVERIFY2(table.exit_code == 0 && table.out.contains("flash_attention_backward"), qPrintable(table.out + table.err));
  }

  // AdamW's runs: GPT-2's tensors merge where adjacent and of the same decay; the update over the
  // runs equals the per-tensor update bit for bit (AdamW is element-wise).
  void adamw_runs_update_as_per_tensor() {
    ModelConfig m = tiny("gpt2", "simple", false).model;
    const auto t = gpt_param_tensors(m);
    const auto runs = adamw_runs(t);
    QCOMPARE(runs.size(), size_t(1 + 8 * m.n_layer + 1));  // untied
    QCOMPARE(runs.front().name, std::string("wte.weight"));  // wte, wpe, h.0.ln_1.weight, .bias
    QCOMPARE(runs.front().numel, t[0].numel + t[1].numel + t[2].numel + t[3].numel);
    QVERIFY(!runs.front().decay);
    size_t total = 0;
    for (size_t i = 0; i < runs.size(); i++) {
      QCOMPARE(runs[i].offset, total);
      total += runs[i].numel;
      if (i) QVERIFY(runs[i].decay != runs[i - 1].decay);
    }
    QCOMPARE(total, gpt_num_params(m));
    auto be = make_cpu_backend();
    const size_t N = total;
    std::mt19937 g(5);
    std::normal_distribution<float> nd;
    std::vector<float> p(N), grad(N);
    for (auto& x : p) x = nd(g);
    for (auto& x : grad) x = nd(g);
    std::vector<float> p_runs = p;
    AdamW opt(*be, t, N, 0.9, 0.95, 1e-8, 0.1);
    for (int s = 1; s <= 3; s++) opt.step(p_runs.data(), grad.data(), 1e-2, s);
    // The same three steps, one backend call per tensor.
    std::vector<float> m1(N, 0.0f), v1(N, 0.0f), p_each = p;
    for (int s = 1; s <= 3; s++)
      for (const auto& pt : t)
        be->adamw(p_each.data() + pt.offset, grad.data() + pt.offset, m1.data() + pt.offset, v1.data() + pt.offset,
                  pt.numel, 1e-2f, 0.9f, 0.95f, 1e-8f, pt.decay ? 0.1f : 0.0f, s);
    QVERIFY(p_each != p);
    QVERIFY(p_runs == p_each);
  }
};

QTEST_GUILESS_MAIN(TestOpProfile)
#include "test_op_profile.moc"
