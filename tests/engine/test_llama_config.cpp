// The llama model family's config and plan (issue 17; engine/config.h, engine/model/shape.h,
// engine/plan/plan.h): fields, defaults and field-named errors; the Llama d_ff rule against
// Meta's published widths; parameters, FLOPs per token, activations and KV cache by hand; the
// presets against their published parameter counts; ZeRO memory; `plan` planning a llama config
// (training one: test_llama_train).
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/common/error.h"
#include "engine/config.h"
#include "engine/model/shape.h"
#include "engine/plan/cluster.h"
#include "engine/plan/plan.h"
#include "test_util.h"

using nlohmann::json;
using namespace tdtest;

namespace {

json with_model(json model) { return {{"model", std::move(model)}, {"data", {{"path", "/nonexistent-dataset"}}}}; }

// parse_config's error for `doc` as "path: message", or "" when it is accepted.
std::string error_of(const json& doc) {
  try {
    td::parse_config(doc);
  } catch (const td::ConfigError& e) {
    return e.what();
  }
  return "";
}

td::ModelConfig preset_model(const char* id) {
  QFile f(QStringLiteral(TD_SOURCE_DIR "/resources/presets/%1.json").arg(id));
  if (!f.open(QIODevice::ReadOnly)) throw td::Error(std::string("cannot read preset ") + id);
  return td::parse_config(with_model(json::parse(f.readAll().toStdString())["model"])).model;
}

}  // namespace

class TestLlamaConfig : public QObject {
  Q_OBJECT
 private slots:
  void gpt2_is_the_default_and_unchanged() {
    const td::RunConfig c = td::parse_config(with_model(json::object()));
    QCOMPARE(c.model.family, std::string("gpt2"));
    QCOMPARE(c.model.d_ff, 4 * 384);
    const json j = td::to_json(c);
    QCOMPARE(j["model"]["family"], json("gpt2"));
    // A gpt2 document never carries the llama fields (run cards and config diffs stay as they were).
    for (const char* f : {"n_kv_head", "ffn_multiple_of", "rope_theta", "rms_norm_eps"}) QVERIFY2(!j["model"].contains(f), f);
    QCOMPARE(td::to_json(td::parse_config(j)), j);
  }

  void llama_defaults() {
    const td::RunConfig c = td::parse_config(with_model({{"family", "llama"}}));
    QCOMPARE(c.model.n_kv_head, 6);  // = n_head
    // d_model 384: floor(8 * 384 / 3) = 1024, already a multiple of 256.
    QCOMPARE(c.model.d_ff, 1024);
    QCOMPARE(c.model.ffn_multiple_of, 256);
    QCOMPARE(c.model.rope_theta, 10000.0);
    QCOMPARE(c.model.rms_norm_eps, 1e-5);
    QVERIFY(c.model.tie_embeddings);
    const json j = td::to_json(c);
    QCOMPARE(j["model"]["n_kv_head"], json(6));
    QCOMPARE(j["model"]["rope_theta"], json(10000.0));
    QCOMPARE(td::to_json(td::parse_config(j)), j);
    // The docs table marks the fields of the Llama block's families (llama, qwen2).
    int llama_only = 0;
    for (const auto& d : td::config_field_docs()) llama_only += d.families == std::vector<std::string>{"llama", "qwen2"};
    QCOMPARE(llama_only, 4);
    // qwen2 takes the same fields and defaults.
    const td::RunConfig q = td::parse_config(with_model({{"family", "qwen2"}, {"n_kv_head", 2}, {"rope_theta", 1e6}}));
    QCOMPARE(q.model.n_kv_head, 2);
    QCOMPARE(q.model.d_ff, 1024);
    QCOMPARE(td::to_json(td::parse_config(td::to_json(q))), td::to_json(q));
  }

  void llama_d_ff_rule_matches_meta() {
    // Llama-7B (d 4096) 11008, Llama-13B (d 5120) 13824, Llama-33B (d 6656) 17920, all with
    // multiple_of 256 (Touvron et al. 2023, table 2's widths as the reference code computes them).
    QCOMPARE(td::llama_default_d_ff(4096, 256), 11008);
    QCOMPARE(td::llama_default_d_ff(5120, 256), 13824);
    QCOMPARE(td::llama_default_d_ff(6656, 256), 17920);
    // SmolLM2-135M: floor(8 * 576 / 3) = 1536 (its intermediate_size).
    QCOMPARE(td::llama_default_d_ff(576, 256), 1536);
    // d 128, multiple_of 32: floor(341.33) = 341 -> 352.
    QCOMPARE(td::llama_default_d_ff(128, 32), 352);
    QCOMPARE(td::llama_default_d_ff(1, 1), 2);
  }

  void errors_name_the_field_and_what_to_do() {
    QCOMPARE(error_of(with_model({{"family", "llama"}, {"n_kv_head", 4}})),
             std::string("model.n_kv_head: value 4 must divide model.n_head = 6 (each key/value head serves n_head / n_kv_head query "
                         "heads): use one of 1, 2, 3, 6"));
    QCOMPARE(error_of(with_model({{"family", "llama"}, {"d_model", 390}})),
             std::string("model.d_model: head size d_model / model.n_head = 390 / 6 = 65 is odd; rotary embeddings rotate pairs of "
                         "dimensions: choose d_model and n_head with an even quotient"));
    // The same shape is a valid GPT-2 (no RoPE there).
    QCOMPARE(error_of(with_model({{"d_model", 390}})), std::string());
    QCOMPARE(error_of(with_model({{"n_kv_head", 2}})),
             std::string("model.n_kv_head: is a field of model.family \"llama\" or \"qwen2\" only, and this config's family is "
                         "\"gpt2\": remove it, or set model.family to \"llama\" or \"qwen2\""));
    QCOMPARE(error_of(with_model({{"family", "gpt2"}, {"rope_theta", 500000}})),
             std::string("model.rope_theta: is a field of model.family \"llama\" or \"qwen2\" only, and this config's family is "
                         "\"gpt2\": remove it, or set model.family to \"llama\" or \"qwen2\""));
    QCOMPARE(error_of(with_model({{"family", "mistral"}})),
             std::string("model.family: value \"mistral\" is not allowed: use \"gpt2\" or \"llama\" or \"qwen2\""));
    QCOMPARE(error_of(with_model({{"family", "llama"}, {"rope_theta", 0}})),
             std::string("model.rope_theta: value 0 is out of range: allowed number in (0, 1e+12]"));
    QCOMPARE(error_of(with_model({{"family", "llama"}, {"rms_norm_eps", -1e-6}})),
             std::string("model.rms_norm_eps: value -1e-06 is out of range: allowed number in (0, 1]"));
    QCOMPARE(error_of(with_model({{"family", "llama"}, {"ffn_multiple_of", 0}})),
             std::string("model.ffn_multiple_of: value 0 is out of range: allowed [1, 65536]"));
    // --set of a llama field on a gpt2 config: the same error at parse time.
    json doc = with_model(json::object());
    td::apply_override(doc, "model.n_kv_head=1");
    QVERIFY(error_of(doc).rfind("model.n_kv_head: is a field of model.family \"llama\" or \"qwen2\" only", 0) == 0);
    td::apply_override(doc, "model.family=llama");
    QCOMPARE(td::parse_config(doc).model.n_kv_head, 1);  // multi-query
  }

  void parameters_by_hand() {
    // L 2, C 64, NH 4 (hs 16), KV 2, F 160, V 100, untied:
    // V C 2 + L (2 C + 2 C^2 + 2 C KV hs + 3 C F) + C
    //   = 12800 + 2 (128 + 8192 + 4096 + 30720) + 64 = 12800 + 86272 + 64 = 99136.
    td::ModelConfig m = td::parse_config(with_model({{"family", "llama"}, {"vocab_size", 100}, {"seq_len", 32}, {"n_layer", 2},
                                                     {"n_head", 4}, {"n_kv_head", 2}, {"d_model", 64}, {"d_ff", 160},
                                                     {"tie_embeddings", false}}))
                            .model;
    QCOMPARE(td::llama_num_params(m), size_t(99136));
    const auto t = td::llama_param_tensors(m);
    QCOMPARE(t.size(), size_t(1 + 2 * 9 + 1 + 1));
    QCOMPARE(t.back().offset + t.back().numel, size_t(99136));
    QCOMPARE(t[0].name, std::string("embed_tokens.weight"));
    QCOMPARE(t[3].name, std::string("layers.0.self_attn.k_proj.weight"));
    QCOMPARE(t[3].shape, (std::vector<int64_t>{32, 64}));  // KV hs = 2 x 16
    QCOMPARE(t[7].name, std::string("layers.0.mlp.gate_proj.weight"));
    QCOMPARE(t.back().name, std::string("lm_head.weight"));
    QVERIFY(t.back().decay && !t[0].decay && !t[1].decay);
    QCOMPARE(td::model_embedding_params(m), size_t(12800));
    const td::Plan p = td::make_plan(td::parse_config(with_model(td::to_json(td::RunConfig{m, {}, {}})["model"])));
    QCOMPARE(p.n_params, uint64_t(99136));
    QCOMPARE(p.n_params_non_embedding, uint64_t(99136 - 12800));
    // FLOPs: the untied embedding is a lookup: 6 (99136 - 6400) + 12 x 2 x 64 x 32 = 556416 + 49152.
    QCOMPARE(td::flops_per_token(m), 605568.0);
    m.tie_embeddings = true;  // tied: 92736 parameters, all in matmuls: 6 x 92736 + 49152
    QCOMPARE(td::llama_num_params(m), size_t(92736));
    QCOMPARE(td::flops_per_token(m), 605568.0);
    // GQA: KV 1 instead of 2 saves 2 L C hs = 4096 parameters; KV 4 (= NH, MHA) adds 8192.
    m.n_kv_head = 1;
    QCOMPARE(td::llama_num_params(m), size_t(92736 - 4096));
    m.n_kv_head = 4;
    QCOMPARE(td::llama_num_params(m), size_t(92736 + 8192));
  }

  void presets_have_their_published_parameter_counts() {
    // SmolLM2-135M: 49152 x 576 + 30 (2 x 576 + 2 x 576^2 + 2 x 576 x 192 + 3 x 576 x 1536) + 576
    //   = 28311552 + 30 x 3540096 + 576 = 134515008 (HuggingFaceTB/SmolLM2-135M's safetensors).
    const td::ModelConfig smol = preset_model("smollm2-135m");
    QCOMPARE(td::model_num_params(smol), size_t(134515008));
    QCOMPARE(smol.rope_theta, 100000.0);
    // Llama-3.2-1B: 128256 x 2048 + 16 (2 x 2048 + 2 x 2048^2 + 2 x 2048 x 512 + 3 x 2048 x 8192) + 2048
    //   = 262668288 + 16 x 60821504 + 2048 = 1235814400 (meta-llama/Llama-3.2-1B, 1.23B).
    const td::ModelConfig l1b = preset_model("llama-3.2-1b");
    QCOMPARE(td::model_num_params(l1b), size_t(1235814400));
    QCOMPARE(l1b.rope_theta, 500000.0);
    // The tiny one: 257 x 128 + 4 (256 + 2 x 16384 + 2 x 128 x 64 + 3 x 128 x 352) + 128 = 771328.
    const td::ModelConfig tiny = preset_model("llama-tiny");
    QCOMPARE(tiny.d_ff, 352);  // the Llama rule with ffn_multiple_of 32
    QCOMPARE(td::model_num_params(tiny), size_t(771328));
    // Qwen2.5-0.5B (qwen2: Llama's count plus the q/k/v biases C + 2 KV hs per layer):
    //   151936 x 896 + 24 (2 x 896 + 2 x 896^2 + 2 x 896 x 128 + 3 x 896 x 4864 + 896 + 2 x 128) + 896
    //   = 136134656 + 24 x 14912384 + 896 = 494032768 (Qwen/Qwen2.5-0.5B, 0.49B).
    const td::ModelConfig qw = preset_model("qwen2.5-0.5b");
    QCOMPARE(qw.family, std::string("qwen2"));
    QCOMPARE(td::model_num_params(qw), size_t(494032768));
    QCOMPARE(td::llama_num_params(qw) - td::model_num_params([&] {
               td::ModelConfig l = qw;
               l.family = "llama";
               return l;
             }()),
             size_t(24 * (896 + 2 * 128)));
    // The GPT-2 presets are unchanged: 124439808 (Radford et al. 2019's 124M).
    QCOMPARE(td::model_num_params(preset_model("gpt2-124m")), size_t(124439808));
  }

  void flops_and_kv_cache_of_smollm2() {
    const td::ModelConfig m = preset_model("smollm2-135m");
    // 6 x 134515008 + 12 x 30 x 576 x 2048 = 807090048 + 424673280.
    QCOMPARE(td::flops_per_token(m), 1231763328.0);
    // KV cache, bf16: 2 x 30 x 3 x 64 x 2 = 23040 bytes per token; 2048 tokens: 47185920.
    QCOMPARE(td::kv_cache_bytes(m, 1, 2), uint64_t(23040));
    QCOMPARE(td::kv_cache_bytes(m, 2048, 2), uint64_t(47185920));
    td::RunConfig c = td::parse_config(with_model(td::to_json(td::RunConfig{m, {}, {}})["model"]));
    const td::Plan p = td::make_plan(c);
    QCOMPARE(p.kv_heads, 3);
    QCOMPARE(p.kv_cache_bytes_per_token, uint64_t(23040));
    QCOMPARE(p.kv_cache_bytes, uint64_t(47185920));
    // Multi-head attention would keep NH / KV = 3 times as much; GPT-2 124M at 1024 tokens:
    // 2 x 12 x 1024 x 12 x 64 x 2 = 37748736.
    QCOMPARE(td::kv_cache_bytes(preset_model("gpt2-124m"), 1024, 2), uint64_t(37748736));
    // Llama-3.2-1B: 2 x 16 x 8 x 64 x 2 = 32768 bytes per token.
    QCOMPARE(td::kv_cache_bytes(preset_model("llama-3.2-1b"), 1, 2), uint64_t(32768));
  }

  void activations_by_hand() {
    // L 1, C 16, NH 2 (hs 8), KV 1, F 48, V 32, B 1, T 8 (BT 8; q|k|v width 16 + 2 x 8 = 32), each
    // buffer rounded up to 64 bytes. fp32: embedding 512; the layer: 8 (B,T,C) buffers of 512
    // (the two norm outputs, attention output, probabilities 2 x 8 x 8 x 4 = 512, o_proj, residual,
    // down, block output), 2 rstd of 32 -> 64, q|k|v 1024, gate/up/swiglu 3 x 1536 = 9856;
    // final norm 512 + rstd 64 + logits 1024 + losses 64 = 1664; backward 512 + 512 + 1024 + 3 x
    // 1536 = 6656. Total 512 + 9856 + 1664 + 6656 = 18688.
    const td::ModelConfig m = td::parse_config(with_model({{"family", "llama"}, {"vocab_size", 32}, {"seq_len", 8}, {"n_layer", 1},
                                                           {"n_head", 2}, {"n_kv_head", 1}, {"d_model", 16}, {"d_ff", 48}}))
                                  .model;
    QCOMPARE(td::llama_activation_bytes(m, 1, 8, td::DType::kF32), size_t(18688));
    QCOMPARE(td::model_activation_floats(m, 1, 8), size_t(18688 / 4));
    // bf16 halves the (B,T,*) buffers; rstd and losses stay fp32 (64 each):
    // 256 + (8 x 256 + 128 + 512 + 3 x 768) + (256 + 64 + 512 + 64) + (256 + 256 + 512 + 3 x 768) = 9472.
    QCOMPARE(td::llama_activation_bytes(m, 1, 8, td::DType::kBF16), size_t(9472));
  }

  void memory_per_rank_and_zero_stage() {
    // Llama-3.2-1B at micro_batch 1 on 8 x H100, mixed: params 2Ψ = 2471628800, grads 2Ψ, the
    // optimizer 12Ψ = 14829772800 (stage 0), / 8 = 1853721600 (stages 1-3); stage 2 shards the
    // gradients (308953600), stage 3 the parameters too.
    const td::ModelConfig m = preset_model("llama-3.2-1b");
    json doc = with_model(td::to_json(td::RunConfig{m, {}, {}})["model"]);
    doc["train"] = {{"micro_batch", 1}, {"steps", 10}};
    const td::RunConfig c = td::parse_config(doc);
    td::ClusterOptions o;
    o.device = "H100";
    o.world_size = 8;
    o.zero = 1;
    const td::ClusterPlan p = td::make_cluster_plan(c, td::load_device_catalogue(), o);
    const uint64_t psi = 1235814400;
    QCOMPARE(p.model.n_params, psi);
    QCOMPARE(p.memory[0].optimizer_bytes, 12 * psi);
    QCOMPARE(p.memory[1].optimizer_bytes, uint64_t(1853721600));
    QCOMPARE(p.memory[1].grads_bytes, 2 * psi);
    QCOMPARE(p.memory[2].grads_bytes, uint64_t(308953600));
    QCOMPARE(p.memory[3].params_bytes, uint64_t(308953600));
    // Activations: the llama layout at bf16 (2 bytes per float of model_activation_floats).
    QCOMPARE(p.memory[1].activations_bytes, 2 * uint64_t(td::model_activation_floats(m, 1, 2048)));
    // The engine's own per-rank plan (fp32 on the CPU): 4Ψ + 4Ψ + 8Ψ + activations.
    const td::Plan e = td::make_plan(c);
    QCOMPARE(e.weights_bytes, 4 * psi);
    QCOMPARE(e.optimizer_bytes, 8 * psi);
    QCOMPARE(e.activations_bytes, uint64_t(td::llama_activation_bytes(m, 1, 2048, td::DType::kF32)) +
                                      td::cpu_backend_scratch_bytes(m, 1));
  }

  // Training a llama config is tests/engine/test_llama_train.cpp's; here `plan` on one.
  void plan_counts_a_gqa_llama() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString cfg = dir.filePath("run.json");
    QFile f(cfg);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(with_model({{"family", "llama"}, {"n_kv_head", 2}}).dump().c_str());
    f.close();
    const ProcResult p = engine({"plan", "--config", cfg, "--json"}, 120000);
    QCOMPARE(p.exit_code, 0);
    const json j = json::parse(p.out.toStdString());
    // Default shape with KV 2: 257 x 384 + 6 (768 + 2 x 147456 + 2 x 384 x 128 + 3 x 384 x 1024) + 384.
    QCOMPARE(j["n_params"].get<uint64_t>(), uint64_t(257 * 384 + 6 * (768 + 2 * 147456 + 2 * 384 * 128 + 3 * 384 * 1024) + 384));
    QCOMPARE(j["kv_heads"].get<int>(), 2);
  }
};

QTEST_GUILESS_MAIN(TestLlamaConfig)
#include "test_llama_config.moc"
