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

RunConfig tiny(const std::string& family, const std::string& attention, bool tie, const std::string& gelu = "none") {
  json doc = {{"model", {{"family", family}, {"vocab_size", 61}, {"seq_len", 24}, {"n_layer", 3}, {"n_head", 4},
                         {"d_model", 32}, {"tie_embeddings", tie}}},
              {"train", {{"micro_batch", 2}, {"grad_accum", 2}, {"threads", 2}, {"attention", attention}, {"gelu_fusion", gelu}, {"grad_clip", 0.0}}},
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
    QTest::addColumn<QString>("gelu");  // train.gelu_fusion
    QTest::newRow("gpt2, simple, tied") << "gpt2" << "simple" << true << "none";
    QTest::newRow("gpt2, fused, untied") << "gpt2" << "fused" << false << "none";
    QTest::newRow("gpt2, simple, tied, gelu epilogue") << "gpt2" << "simple" << true << "epilogue";
    QTest::newRow("llama, fused, untied") << "llama" << "fused" << false << "epilogue";  // ignored by SwiGLU
  }
  // L = 3 layers, 2 micro batches a step (a = 2), grad_clip 0 (no norm, no scale).
  // GPT-2 per micro batch: 1 embedding; per layer 2 LayerNorms, 4 matmuls (c_attn, c_proj, c_fc,
  // mlp c_proj), 1 attention, 1 GELU, 2 residual adds; then ln_f, the LM head matmul and the
  // softmax cross-entropy once (the fused classifier: loss and gradient in forward); each backward op
  // once per forward op; memsets: 1 before the layers (d ln_f input, the residual stream's gradient)
  // and 2 per layer in backward (the GELU and attention input gradients, which accumulate; every
  // matmul's input gradient is overwritten, beta 0), and one zero_grad a step. Llama per micro batch: RMSNorm instead of LayerNorm, RoPE and SwiGLU once per layer,
  // no GELU, 4 matmuls per layer (q|k|v, o, gate|up, down); memsets 1 + 2 per layer (SwiGLU and attention), 1 more for the
  // discarded position gradient. AdamW: one call a step, whose spans are the runs of adjacent
  // tensors with the same decay (the runs test below counts them). GPT-2 with the GELU epilogue:
  // the MLP up-projection is one matmul_gelu_forward / matmul_backward_dgelu per layer instead of
  // a matmul and a GELU each way, and its input gradient (the GELU's, overwritten) needs no memset.
  void calls_per_step_by_hand() {
    QFETCH(QString, family);
    QFETCH(QString, attention);
    QFETCH(bool, tie);
    QFETCH(QString, gelu);
    const RunConfig c = tiny(family.toStdString(), attention.toStdString(), tie, gelu.toStdString());
    const OpProfileReport r = profile_training_steps(c, 2);
    auto n = calls(r);
    const double a = 2, L = 3;
    const bool llama = family == "llama", fused = attention == "fused";
    const bool epilogue = !llama && gelu == "epilogue";
    const double ep = epilogue ? 1 : 0;
    std::map<std::string, double> want = {
        {"encoder_forward", a},           {"encoder_backward", a},
        {"matmul_forward", a * ((4 - ep) * L + 1)}, {"matmul_backward", a * ((4 - ep) * L + 1)},
        {"residual_forward", a * 2 * L},  {"softmax_cross_entropy", a},
        {fused ? "flash_attention_forward" : "attention_forward", a * L},
        {fused ? "flash_attention_backward" : "attention_backward", a * L},
        {"zero", a * (1 + (2 - ep) * L + (llama ? 1 : 0)) + 1},
        {"adamw", 1},
        {"upload", 2 * a},  // inputs and targets
    };
    if (llama) {
      for (const char* op : {"rmsnorm_forward", "rmsnorm_backward"}) want[op] = a * (2 * L + 1);
      for (const char* op : {"rope_forward", "rope_backward", "swiglu_forward", "swiglu_backward"}) want[op] = a * L;
    } else {
      for (const char* op : {"layernorm_forward", "layernorm_backward"}) want[op] = a * (2 * L + 1);
      if (epilogue)
        for (const char* op : {"matmul_gelu_forward", "matmul_backward_dgelu"}) want[op] = a * L;
      else
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
    QCOMPARE(r.gelu_fusion, std::string(epilogue ? "epilogue" : "none"));
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

  // AdamW's runs: GPT-2's tensors merge where adjacent and of the same decay: [wte wpe ln_1] then
  // per block c_attn.w | c_attn.b | c_proj.w | c_proj.b ln_2 | c_fc.w | c_fc.b | mlp.c_proj.w |
  // mlp.c_proj.b with the next ln_1 (the last with ln_f): 1 + 8 L, +1 for an untied lm_head. The
  // optimizer's spans are these runs, and its one call a step over them equals the per-tensor
  // update bit for bit (AdamW is element-wise).
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
    QCOMPARE(opt.spans().size(), runs.size());
    for (size_t i = 0; i < runs.size(); i++) {
      QCOMPARE(opt.spans()[i].offset, runs[i].offset);
      QCOMPARE(opt.spans()[i].numel, runs[i].numel);
      QCOMPARE(opt.spans()[i].decay, runs[i].decay);
    }
    // The same three steps, one backend call per tensor.
    std::vector<float> m1(N, 0.0f), v1(N, 0.0f), p_each = p;
    for (int s = 1; s <= 3; s++)
      for (const auto& pt : t) {
        const AdamWSpan one{pt.offset, pt.numel, pt.decay};
        be->adamw(p_each.data(), grad.data(), m1.data(), v1.data(), &one, 1, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, s);
      }
    QVERIFY(p_each != p);
    QVERIFY(p_runs == p_each);
  }
};

QTEST_GUILESS_MAIN(TestOpProfile)
#include "test_op_profile.moc"
