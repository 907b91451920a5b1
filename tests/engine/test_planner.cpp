// The infrastructure planner (engine/plan/cluster.h, devices.h; docs/planner.md): ZeRO 0-3
// memory, time, collective bytes, bandwidths, devices needed and cost for GPT-2 124M, each
// against a value computed by hand in the comments; the device catalogue with a user override;
// errors; and the `plan` subcommand's options.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "engine/common/error.h"
#include "engine/config.h"
#include "engine/metrics/calibrate.h"
#include "engine/metrics/sysinfo.h"
#include "engine/model/gpt.h"
#include "engine/model/tensor_parallel.h"
#include "engine/plan/cluster.h"
#include "test_util.h"

using nlohmann::json;
using namespace tdtest;

namespace {

// GPT-2 small: V = 50257, T = 1024, L = 12, C = 768, F = 4C, tied embeddings.
// Ψ = V C + T C + L (12 C^2 + 13 C) + 2 C = 38597376 + 786432 + 12 * 7087872 + 1536 = 124439808.
// FLOPs per token = 6 (Ψ - T C) + 12 L C T = 6 * 123653376 + 113246208 = 855166464.
constexpr uint64_t kPsi = 124439808;
constexpr double kFlopsPerToken = 855166464.0;

json gpt2_124m(int micro_batch, int grad_accum) {
  return {{"model", {{"vocab_size", 50257}, {"seq_len", 1024}, {"n_layer", 12}, {"n_head", 12}, {"d_model", 768},
                     {"d_ff", 0}, {"tie_embeddings", true}}},
          {"train", {{"micro_batch", micro_batch}, {"grad_accum", grad_accum}, {"steps", 100}}},
          {"data", {{"path", QDir::tempPath().toStdString()}}}};
}

bool near(double a, double b, double rel = 1e-9) { return std::fabs(a - b) <= rel * std::fabs(b); }

}  // namespace

class TestPlanner : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  void write(const QString& path, const QByteArray& data) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(data);
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    // No user catalogue or calibration of this machine leaks in.
    qputenv("XDG_CONFIG_HOME", dir_.filePath("config").toUtf8());
    qputenv("XDG_CACHE_HOME", dir_.filePath("cache").toUtf8());
  }

  void zero_stages_bytes_per_device_by_hand() {
    td::RunConfig c = td::parse_config(gpt2_124m(16, 1));
    QCOMPARE(uint64_t(td::gpt_num_params(c.model)), kPsi);
    QCOMPARE(td::flops_per_token(c.model), kFlopsPerToken);
    // Mixed precision, n = 8 (Rajbhandari et al. 2020): params 2Ψ = 248879616, grads 2Ψ,
    // optimizer 12Ψ = 1493277696; shards /8: 2Ψ/8 = 31109952, 12Ψ/8 = 186659712.
    //   stage 0: 2Ψ + 2Ψ + 12Ψ        = 1991036928
    //   stage 1: 2Ψ + 2Ψ + 12Ψ/8      = 684418944
    //   stage 2: 2Ψ + 2Ψ/8 + 12Ψ/8    = 466649280
    //   stage 3: (2Ψ + 2Ψ + 12Ψ) / 8  = 248879616
    const uint64_t mixed[4] = {1991036928, 684418944, 466649280, 248879616};
    // fp32 (the CPU engine), n = 8: 4Ψ + 4Ψ + 8Ψ = 16Ψ; stage 1: 8Ψ + Ψ = 1119958272;
    // stage 2: 4Ψ + Ψ/2 + Ψ = 684418944; stage 3: 2Ψ = 248879616.
    const uint64_t fp32[4] = {1991036928, 1119958272, 684418944, 248879616};
    const uint64_t act = td::gpt_activation_floats(c.model, 16, 1024);
    for (int s = 0; s < 4; ++s) {
      auto m = td::zero_memory(kPsi, act, td::Precision::mixed, s, 8);
      QCOMPARE(m.params_bytes + m.grads_bytes + m.optimizer_bytes, mixed[s]);
      QCOMPARE(m.activations_bytes, 2 * act);  // bf16 activations
      QCOMPARE(m.total_bytes, mixed[s] + 2 * act);
      auto f = td::zero_memory(kPsi, act, td::Precision::fp32, s, 8);
      QCOMPARE(f.params_bytes + f.grads_bytes + f.optimizer_bytes, fp32[s]);
      QCOMPARE(f.activations_bytes, 4 * act);
    }
    // World size 1: every stage is the unsharded 16Ψ.
    QCOMPARE(td::zero_memory(kPsi, 0, td::Precision::mixed, 3, 1).total_bytes, 16 * kPsi);
    // The CPU engine's existing plan agrees with the fp32 stage 0 accounting.
    td::Plan p = td::make_plan(c, 1);
    QCOMPARE(p.weights_bytes + p.grads_bytes + p.optimizer_bytes, fp32[0]);
  }

  void bf16_activation_bytes_by_hand() {
    // L=1, T=64, C=64, NH=2, F=256, V=128, B=1 (every buffer a multiple of 64 bytes): BT = 64.
    // Act buffers: encoded 4096; block: ln1, atty, attproj, res2, ln2, fcproj, res3 7 x 4096,
    // qkv 12288, att NH T T = 8192, fch + fch_gelu 2 x 16384 -> 81920; lnf 4096; logits 8192:
    // 98304 elements. Backward scratch: dres, dc 2 x 4096, dqkv 12288, df1, df2 2 x 16384 ->
    // 53248. fp32 always: 3 LayerNorms x (mean, rstd) + losses = 7 x 64 floats = 1792 bytes.
    td::ModelConfig m;
    m.vocab_size = 128, m.seq_len = 64, m.n_layer = 1, m.n_head = 2, m.d_model = 64, m.d_ff = 256;
    QCOMPARE(td::gpt_activation_bytes(m, 1, 64, td::DType::kBF16), size_t(2 * (98304 + 53248) + 1792));
    QCOMPARE(td::gpt_activation_bytes(m, 1, 64, td::DType::kF32), size_t(4 * (98304 + 53248) + 1792));
    QCOMPARE(td::gpt_activation_floats(m, 1, 64), size_t(98304 + 53248 + 448));
    // A CUDA config trains in bf16 unless told otherwise; the plan adds the bf16 weight copy (2 bytes
    // per parameter beside the 4 of the master) and counts bf16 activations.
    nlohmann::json doc = gpt2_124m(16, 1);
    doc["train"]["device"] = "cuda";
    td::RunConfig c = td::parse_config(doc);
    QCOMPARE(td::resolved_precision(c.train), std::string("bf16"));
    td::Plan p = td::make_plan(c, 1);
    QCOMPARE(p.weights_bytes, 6 * kPsi);
    QCOMPARE(p.activations_bytes, uint64_t(td::gpt_activation_bytes(c.model, 16, 1024, td::DType::kBF16)));
    // Fused attention (train.attention = "fused") keeps, per layer, the rows' log-sum-exp (B NH T
    // fp32 = 16 x 12 x 1024 x 4 = 786 432 bytes) instead of the probabilities (B NH T^2 bf16 =
    // 402 653 184 bytes): 12 x 401 866 752 = 4 822 401 024 bytes fewer at B 16, T 1024.
    doc["train"]["attention"] = "fused";
    td::Plan pf = td::make_plan(td::parse_config(doc), 1);
    QCOMPARE(p.activations_bytes - pf.activations_bytes, uint64_t(4822401024));
    QCOMPARE(pf.activations_bytes, uint64_t(td::gpt_activation_bytes(c.model, 16, 1024, td::DType::kBF16, td::AttentionKernel::kFused)));
    // On the CPU the backend's (B NH T T) fp32 score-gradient scratch goes too.
    doc["train"]["device"] = "cpu";
    QCOMPARE(td::cpu_backend_scratch_bytes(c.model, 16, 1, td::AttentionKernel::kFused), uint64_t(0));
    QCOMPARE(td::cpu_backend_scratch_bytes(c.model, 16), uint64_t(4) * 16 * 12 * 1024 * 1024);
    doc["train"]["attention"] = "flash";
    QVERIFY_THROWS_EXCEPTION(td::ConfigError, td::parse_config(doc));
    doc["train"].erase("attention");
    doc["train"]["device"] = "cuda";
    doc["train"]["precision"] = "fp32";
    QCOMPARE(td::resolved_precision(td::parse_config(doc).train), std::string("fp32"));
    doc["train"]["device"] = "cpu";
    doc["train"]["precision"] = "auto";
    QCOMPARE(td::resolved_precision(td::parse_config(doc).train), std::string("fp32"));
    doc["train"]["device"] = "cuda:x";
    QVERIFY_THROWS_EXCEPTION(td::ConfigError, td::parse_config(doc));
  }

  void cuda_device_names_map_to_the_catalogue() {
    const td::DeviceCatalogue cat = td::load_device_catalogue();
    const uint64_t GiB = uint64_t(1) << 30;
    auto peak = [&](const char* name, uint64_t mem) -> double {
      const td::Device* d = td::find_cuda_device(cat, name, mem);
      return d ? d->peak(td::Precision::mixed).value_or(-1) : 0;
    };
    // Dense bf16 peaks from the datasheets (resources/devices.json): H200 and H100 SXM 989 TF, A100 312 TF.
    QCOMPARE(peak("NVIDIA H200", 141 * GiB), 989e12);
    QCOMPARE(peak("NVIDIA H100 80GB HBM3", 80 * GiB), 989e12);
    QCOMPARE(peak("NVIDIA A100-SXM4-80GB", 80 * GiB), 312e12);
    QCOMPARE(td::find_cuda_device(cat, "NVIDIA A100-PCIE-40GB", 40 * GiB)->name, std::string("A100-40GB"));
    // Other clocks than the catalogue's, or unknown: no entry (MFU null, never a guess).
    QCOMPARE(peak("NVIDIA H100 PCIe", 80 * GiB), 0.0);
    QCOMPARE(peak("NVIDIA H200 NVL", 141 * GiB), 0.0);
    QCOMPARE(peak("NVIDIA GeForce RTX 4090", 24 * GiB), 0.0);
  }

  void collective_bytes_by_hand() {
    // Ring all-reduce of the bf16 gradients, n = 8: 2 (7/8) 2Ψ = 3.5Ψ = 435539328 bytes.
    QCOMPARE(td::collective_bytes_per_step(kPsi, td::Precision::mixed, 0, 8, 1), 435539328.0);
    // ZeRO-1: reduce-scatter 2Ψ + all-gather 2Ψ, (7/8) 4Ψ = the same 3.5Ψ.
    QCOMPARE(td::collective_bytes_per_step(kPsi, td::Precision::mixed, 1, 8, 1), 435539328.0);
    // ZeRO-2 with 4 micro-batches: (7/8)(4 * 2Ψ + 2Ψ) = 8.75Ψ = 1088848320.
    QCOMPARE(td::collective_bytes_per_step(kPsi, td::Precision::mixed, 2, 8, 4), 1088848320.0);
    // ZeRO-3: (7/8)(2Ψ + 2Ψ + 2Ψ) = 5.25Ψ = 653308992 (1.5x data parallel, as the paper says).
    QCOMPARE(td::collective_bytes_per_step(kPsi, td::Precision::mixed, 3, 8, 1), 653308992.0);
    // ... by kind: reduce-scatter (7/8) 2Ψ = 1.75Ψ = 217769664, all-gather (7/8) 2 x 2Ψ = 3.5Ψ.
    const td::CollectiveBytes k3 = td::collective_bytes_by_kind(kPsi, td::Precision::mixed, 3, 8, 1);
    QCOMPARE(k3.reduce_scatter, 217769664.0);
    QCOMPARE(k3.all_gather, 435539328.0);
    QCOMPARE(k3.all_reduce, 0.0);
    // ZeRO-2, 4 micro-batches: reduce-scatter 4 x 1.75Ψ, all-gather 1.75Ψ; data parallel: all-reduce only.
    const td::CollectiveBytes k2 = td::collective_bytes_by_kind(kPsi, td::Precision::mixed, 2, 8, 4);
    QCOMPARE(k2.reduce_scatter, 4 * 217769664.0);
    QCOMPARE(k2.all_gather, 217769664.0);
    QCOMPARE(td::collective_bytes_by_kind(kPsi, td::Precision::mixed, 0, 8, 4).all_reduce, 435539328.0);
    // fp32 all-reduce, n = 2: 2 (1/2) 4Ψ = 4Ψ; one device sends nothing.
    QCOMPARE(td::collective_bytes_per_step(kPsi, td::Precision::fp32, 0, 2, 1), 4.0 * kPsi);
    QCOMPARE(td::collective_bytes_per_step(kPsi, td::Precision::fp32, 0, 1, 1), 0.0);
  }

  // Tensor parallelism (Megatron-LM): GPT-2 small over TP 2 x DP 4 on 8 H100, micro batch 16.
  // A TP 2 rank's shard: each block's split matrices halve (c_attn's q|k|v by heads, c_fc by
  // rows, both c_proj by columns) and its replicated c_proj biases and LayerNorms (4608) stay:
  // (7087872 - 4608) / 2 + 4608 = 3546240 a block; wte's 50257 rows split 25128 | 25129 (rank 1
  // the larger: 25129 x 768 = 19299072); wpe (786432) and ln_f (1536) replicated:
  // 19299072 + 786432 + 12 x 3546240 + 1536 = 62641920.
  void checkpoint_staging_by_layout_by_hand() {
    // Rank 0's host memory while it writes a checkpoint (the writer streams tensor by tensor):
    // on a GPU one download buffer of the largest tensor, wte 50257 x 768 = 38597376 floats,
    // 154389504 bytes; on the CPU nothing without ZeRO (written in place), the gathered m and v
    // (8 Ψ) with ZeRO-1/2 on 2 ranks, and ZeRO-3's gathered weights on top (12 Ψ); ZeRO on one
    // rank shards nothing; tensor parallelism gathers the unsplit state (12 Ψ).
    td::RunConfig c = td::parse_config(gpt2_124m(16, 1));
    c.train.device = "cuda";
    QCOMPARE(td::make_plan(c, 1).checkpoint_host_bytes, uint64_t(154389504));
    c.train.zero = 3;
    QCOMPARE(td::make_plan(c, 8).checkpoint_host_bytes, uint64_t(154389504));
    c.train.device = "cpu";
    const uint64_t by_zero[4][2] = {{0, 0}, {0, 8 * kPsi}, {0, 8 * kPsi}, {0, 12 * kPsi}};  // [zero][1 rank, 2 ranks]
    for (int z = 0; z <= 3; z++) {
      c.train.zero = z;
      QCOMPARE(td::make_plan(c, 1).checkpoint_host_bytes, by_zero[z][0]);
      QCOMPARE(td::make_plan(c, 2).checkpoint_host_bytes, by_zero[z][1]);
    }
  }

  void tensor_parallel_by_hand() {
    td::RunConfig c = td::parse_config(gpt2_124m(16, 1));
    c.train.tensor_parallel = 2;
    const td::Plan p = td::make_plan(c, 8);
    QCOMPARE(p.tensor_parallel, 2);
    QCOMPARE(p.n_params, kPsi);
    QCOMPARE(p.n_params_per_rank, uint64_t(62641920));
    QCOMPARE((uint64_t)td::tp_num_params(c.model, 0, 2), uint64_t(62641920 - 768));
    QCOMPARE(p.tokens_per_step, uint64_t(16 * 4 * 1024));  // 4 replicas
    // Rank 0's checkpoint staging, tensor by tensor (TpTensorGather): the assembled wte
    // (E = 50257 x 768 = 38597376 floats) and TP rank 0's piece of it (P = 25129 x 768 =
    // 19299072), on the CPU the piece in flight too: 4 (E + 2 P) = 308782080; with ZeRO-3 over
    // the 4 replicas plus rank 0's gathered m, v and weights, 12 x 62641152 = 751693824; on a
    // GPU 4 (E + P) = 231585792. (Before streaming: 12 Ψ = 1493277696.)
    QCOMPARE(p.checkpoint_host_bytes, uint64_t(308782080));
    {
      td::RunConfig z = c;
      z.train.zero = 3;
      QCOMPARE(td::make_plan(z, 8).checkpoint_host_bytes, uint64_t(308782080 + 751693824));
      z.train.device = "cuda";
      QCOMPARE(td::make_plan(z, 8).checkpoint_host_bytes, uint64_t(231585792));
    }
    // A world the degree does not divide plans without TP.
    QCOMPARE(td::make_plan(c, 3).tensor_parallel, 1);
    // The TP group's bytes per step: 2 (1 + 2 x 12) = 50 all-reduces of b T C = 16 x 1024 x 768
    // activations, summed in fp32 in both precisions (S = 50331648 bytes), each 2 (1/2) S = S:
    // 2516582400; the cross-entropy's all-gather 8 (2-1) b T = 131072.
    const td::CollectiveBytes t = td::tp_collective_bytes(c.model, 16, 1, 2, td::Precision::mixed);
    QCOMPARE(t.all_reduce, 2516582400.0);
    QCOMPARE(td::tp_collective_bytes(c.model, 16, 1, 2, td::Precision::fp32).all_reduce, 2516582400.0);
    QCOMPARE(t.all_gather, 131072.0);
    QCOMPARE(t.reduce_scatter, 0.0);
    QCOMPARE(td::tp_collective_bytes(c.model, 16, 1, 1, td::Precision::mixed).total(), 0.0);
    // The cluster: ZeRO-1 over the 4 replicas of the shard Ψ' = 62641920, mixed precision.
    td::ClusterOptions o;
    o.device = "H100";
    o.world_size = 8;
    o.tensor_parallel = 2;
    o.zero = 1;
    const td::ClusterPlan cp = td::make_cluster_plan(c, td::load_device_catalogue(""), o);
    const uint64_t sh = 62641920;
    QCOMPARE(cp.memory[1].params_bytes, 2 * sh);
    QCOMPARE(cp.memory[1].grads_bytes, 2 * sh);
    QCOMPARE(cp.memory[1].optimizer_bytes, 12 * sh / 4);
    QCOMPARE(cp.memory[3].params_bytes, 2 * sh / 4);
    // ZeRO-1 over dp = 4: reduce-scatter and all-gather (3/4) 2Ψ' = 93962880 each; plus TP's.
    QCOMPARE(cp.collective_bytes_by_kind.reduce_scatter, 93962880.0);
    QCOMPARE(cp.collective_bytes_by_kind.all_gather, 93962880.0 + 131072.0);
    QCOMPARE(cp.collective_bytes_by_kind.all_reduce, 2516582400.0);
    QCOMPARE(cp.collective_bytes_per_step, 93962880.0 * 2 + 131072.0 + 2516582400.0);
    // A replica's 16 x 1024 tokens a step are computed by its 2 devices together.
    QVERIFY(near(cp.step_seconds, 8192.0 * kFlopsPerToken / (989e12 * 0.4)));
    // Devices needed come in whole TP groups.
    for (const auto& n : cp.needs)
      for (int f : n.n_fit) QVERIFY2(f % 2 == 0, n.device.c_str());
    const json j = td::cluster_json(cp);
    QCOMPARE(j["tensor_parallel"].get<int>(), 2);
    QCOMPARE(j["tp_collective_bytes"]["all_reduce"].get<double>(), 2516582400.0);
    QVERIFY(td::cluster_table(cp).find("tensor parallel 2 x data parallel 4") != std::string::npos);
    // Errors say what to do.
    o.world_size = 3;
    try {
      td::make_cluster_plan(c, td::load_device_catalogue(""), o);
      QFAIL("a world size the degree does not divide was accepted");
    } catch (const td::Error& e) {
      QVERIFY2(QString(e.what()).contains("--world-size 3 is not a multiple of the tensor-parallel degree 2"), e.what());
    }
    o.world_size = 10;
    o.tensor_parallel = 5;
    try {
      td::make_cluster_plan(c, td::load_device_catalogue(""), o);
      QFAIL("a degree the heads do not divide by was accepted");
    } catch (const td::Error& e) {
      QVERIFY2(QString(e.what()).contains("model.n_head (12) is not a multiple of train.tensor_parallel (5)"), e.what());
    }
  }

  void time_bandwidth_devices_and_cost_on_8_h100() {
    td::RunConfig c = td::parse_config(gpt2_124m(16, 1));
    td::DeviceCatalogue cat = td::load_device_catalogue();
    QVERIFY(!cat.user_loaded);
    td::ClusterOptions o;
    o.device = "h100";  // case-insensitive
    o.world_size = 8;
    o.tokens = 1e9;
    o.mfu = 0.4;
    o.deadline_hours = 0.1;
    o.price_per_hour = 2.5;
    td::ClusterPlan p = td::make_cluster_plan(c, cat, o);
    QCOMPARE(p.device.name, std::string("H100"));
    QCOMPARE(p.device.memory_bytes, uint64_t(80) << 30);
    QVERIFY(p.precision == td::Precision::mixed);
    QCOMPARE(*p.peak_flops, 989e12);
    // 1e9 tokens x 855166464 FLOP / (8 x 989e12 x 0.4 FLOP/s) = 8.55166464e17 / 3.1648e15 = 270.2119 s.
    QVERIFY2(near(p.train_seconds, 270.2118503538928), qPrintable(QString::number(p.train_seconds, 'g', 12)));
    QVERIFY(near(p.total_flops, 8.55166464e17));
    // Cluster throughput 3.1648e15 / 855166464 = 3700800 tokens/s; x 2 bytes (vocab <= 65536) = 7.4016 MB/s.
    QCOMPARE(p.token_bytes, 2);
    QVERIFY(near(p.tokens_per_s, 3.1648e15 / kFlopsPerToken));
    QVERIFY(near(p.storage_bytes_per_s, 7401599.883131058));
    // One step = 16 x 1024 tokens per device: 16384 x 855166464 / 3.956e14 = 0.0354172 s; the
    // all-reduce's 435539328 bytes in that time need 12.297 GB/s of bus bandwidth per device.
    QVERIFY(near(p.step_seconds, 0.03541720764958544));
    QCOMPARE(p.collective_bytes_per_step, 435539328.0);
    QVERIFY(near(p.network_bytes_per_s, 12297393185.515516));
    // Cost: 8 devices x 270.21 s = 0.60047 device-hours x 2.5 = 1.50118.
    QVERIFY(near(*p.cost, 1.5011769464105158));
    QVERIFY(p.fits);
    // Devices needed by 0.1 h: H100 2161.69 device-seconds / 360 s -> ceil(6.005) = 7;
    // V100 (fp16 125 TF): 8.55166464e17 / 5e13 = 17103.3 s / 360 -> ceil(47.5) = 48;
    // TPU v5e (197 TF): 8.55166464e17 / 7.88e13 = 10852.4 s / 360 -> ceil(30.1) = 31.
    auto need = [&](const std::string& name) {
      for (const auto& n : p.needs)
        if (n.device == name) return n;
      return td::DeviceNeed{};
    };
    QCOMPARE(need("H100").n_deadline, 7);
    QCOMPARE(need("H100").n_needed, 7);
    QCOMPARE(need("H100").n_fit[0], 1);
    QVERIFY(near(need("H100").device_hours, 0.6004707785642063));
    QVERIFY(near(*need("H100").cost, 1.5011769464105158));  // --price applies to the chosen device
    QVERIFY(!need("H200").cost);                             // no catalogue price
    QCOMPARE(need("V100-16GB").n_deadline, 48);
    QVERIFY(need("V100-16GB").precision == td::Precision::mixed);
    QCOMPARE(need("TPUv5e").n_deadline, 31);
    QCOMPARE(int(p.needs.size()), int(cat.devices.size()));
  }

  void devices_to_fit_in_a_user_device() {
    // A 1.5 GiB device (1610612736 bytes) from the user's catalogue; micro_batch 1 so that the
    // bf16 activations A = 2 x gpt_activation_floats(1, 1024) stay below it.
    write(dir_.filePath("config/traindeck/devices.json"),
          R"({"devices": [{"name": "Small", "memory_gib": 1.5, "peak_tflops": {"bf16": 100}}]})");
    td::DeviceCatalogue cat = td::load_device_catalogue();
    QFile::remove(dir_.filePath("config/traindeck/devices.json"));
    QVERIFY(cat.user_loaded);
    td::RunConfig c = td::parse_config(gpt2_124m(1, 1));
    const double A = 2.0 * td::gpt_activation_floats(c.model, 1, 1024);
    const double M = 1610612736.0;
    // Stage 0: 16Ψ + A > M for any n -> 0 ("never"). Stage s: fixed + sharded / n <= M, so
    // n = ceil(sharded / (M - fixed)):
    //   stage 1: fixed 4Ψ + A, sharded 12Ψ; stage 2: fixed 2Ψ + A, sharded 14Ψ; stage 3: fixed A, 16Ψ.
    // (With the engine's A = 768352256 bytes: ceil(4.33) = 5, ceil(2.94) = 3, ceil(2.36) = 3.)
    const double psi = kPsi;
    QVERIFY(16 * psi + A > M);
    const int expect[4] = {0, (int)std::ceil(12 * psi / (M - 4 * psi - A)), (int)std::ceil(14 * psi / (M - 2 * psi - A)),
                           (int)std::ceil(16 * psi / (M - A))};
    td::ClusterOptions o;
    o.device = "Small";
    o.world_size = 8;
    o.zero = 1;
    o.tokens = 1e9;
    o.deadline_hours = 1;
    td::ClusterPlan p = td::make_cluster_plan(c, cat, o);
    const td::DeviceNeed& n = p.needs.back();
    QCOMPARE(n.device, std::string("Small"));
    for (int s = 0; s < 4; ++s) QCOMPARE(n.n_fit[s], expect[s]);
    // Deadline 1 h at 40% of 100 TF: 8.55166464e17 / 4e13 = 21379.2 s -> ceil(5.94) = 6 > fit 5.
    QCOMPARE(n.n_deadline, 6);
    QCOMPARE(n.n_needed, std::max(expect[1], 6));
    // At 8 devices ZeRO-1 fits (4Ψ + 12Ψ/8 + A = 684418944 + A) and ZeRO-0 does not.
    QVERIFY(p.fits);
    QCOMPARE(p.memory[1].total_bytes, uint64_t(684418944) + uint64_t(A));
    QVERIFY(p.memory[0].total_bytes > p.device.memory_bytes);
  }

  void user_catalogue_overrides_and_extends() {
    const QString path = dir_.filePath("user_devices.json");
    write(path, R"({"devices": [
      {"name": "h100", "price_per_hour": 2.5, "peak_tflops": {"fp32": 60}},
      {"name": "MyGPU", "kind": "gpu", "memory_gib": 24, "peak_tflops": {"bf16": 165}, "memory_bandwidth_gbps": 1008}]})");
    td::DeviceCatalogue base = td::load_device_catalogue("");
    td::DeviceCatalogue cat = td::load_device_catalogue(path.toStdString());
    QVERIFY(cat.user_loaded);
    QCOMPARE(cat.devices.size(), base.devices.size() + 1);
    const td::Device& h = cat.find("H100");
    QCOMPARE(h.name, std::string("H100"));           // the built-in spelling is kept
    QCOMPARE(*h.price_per_hour, 2.5);                 // overridden
    QCOMPARE(*h.peak_fp32, 60e12);                    // overridden precision
    QCOMPARE(*h.peak_bf16, 989e12);                   // the others kept
    QCOMPARE(h.memory_bytes, uint64_t(80) << 30);     // kept
    QCOMPARE(*h.memory_bytes_per_s, 3350e9);
    const td::Device& g = cat.devices.back();
    QCOMPARE(g.name, std::string("MyGPU"));
    QCOMPARE(g.memory_bytes, uint64_t(24) << 30);
    QCOMPARE(*g.peak_bf16, 165e12);
    QVERIFY(!g.peak_fp32);
    // The catalogue price gives the cost: 0.60047 device-hours on H100 x 2.5.
    td::ClusterOptions o;
    o.device = "H100";
    o.world_size = 8;
    o.tokens = 1e9;
    td::ClusterPlan p = td::make_cluster_plan(td::parse_config(gpt2_124m(16, 1)), cat, o);
    QVERIFY(near(*p.cost, 1.5011769464105158));
    // The datasheet figures of the built-ins (docs/planner.md).
    QCOMPARE(*base.find("A100-40GB").peak_bf16, 312e12);
    QCOMPARE(*base.find("H200").peak_bf16, 989e12);
    QCOMPARE(base.find("H200").memory_bytes, uint64_t(141) << 30);
    QCOMPARE(*base.find("V100-32GB").peak_fp16, 125e12);
    QVERIFY(!base.find("V100-32GB").peak_bf16);
    QCOMPARE(*base.find("TPUv4").peak_bf16, 275e12);
    QCOMPARE(*base.find("TPUv5e").peak_bf16, 197e12);
    QVERIFY(base.find("TPUv5e").planning_only);
  }

  void this_machines_cpu_from_meminfo_and_calibration() {
    // The calibration cache (XDG_CACHE_HOME is the test's) gives the fp32 peak at all cores.
    QVERIFY(!td::load_device_catalogue("").find("cpu").peak_fp32);
    td::store_peak_flops(td::cpu_cores(), 1.25e11);
    const td::Device& cpu = td::load_device_catalogue("").find("cpu");
    QCOMPARE(*cpu.peak_fp32, 1.25e11);
    QVERIFY(cpu.default_precision() == td::Precision::fp32);
    QVERIFY(cpu.this_machine);
    // MemTotal from /proc/meminfo, read here independently.
    QFile f("/proc/meminfo");
    QVERIFY(f.open(QIODevice::ReadOnly));
    uint64_t kb = 0;
    for (const QByteArray& line : f.readAll().split('\n'))
      if (line.startsWith("MemTotal:")) kb = line.mid(9).trimmed().split(' ').first().toULongLong();
    QVERIFY(kb > 0);
    QCOMPARE(cpu.memory_bytes, kb * 1024);
  }

  void errors_name_what_to_do() {
    td::DeviceCatalogue cat = td::load_device_catalogue("");
    td::RunConfig c = td::parse_config(gpt2_124m(16, 1));
    td::ClusterOptions o;
    o.device = "H300";
    try {
      td::make_cluster_plan(c, cat, o);
      QFAIL("an unknown device was accepted");
    } catch (const td::Error& e) {
      QString m = e.what();
      QVERIFY2(m.contains("unknown device 'H300'") && m.contains("V100-16GB, V100-32GB, A100-40GB, A100-80GB, H100, H200, "
                                                                 "TPUv4, TPUv5e, cpu"), qPrintable(m));
    }
    o.device = "TPUv4";
    o.precision = td::Precision::fp32;
    QVERIFY_THROWS_EXCEPTION(td::Error, td::make_cluster_plan(c, cat, o));  // no fp32 peak
    o.precision.reset();
    o.zero = 4;
    QVERIFY_THROWS_EXCEPTION(td::Error, td::make_cluster_plan(c, cat, o));
    const QString bad = dir_.filePath("bad.json");
    write(bad, R"({"devices": [{"name": "X", "memory_gib": -1}]})");
    try {
      td::load_device_catalogue(bad.toStdString());
      QFAIL("a negative memory was accepted");
    } catch (const td::Error& e) {
      QVERIFY2(QString(e.what()).contains("device 'X'.memory_gib"), e.what());
    }
    // Issue 35: 1e300 GiB overflowed the byte count and read as "missing"; now it is out of range.
    write(bad, R"({"devices": [{"name": "X", "memory_gib": 1e300}]})");
    try {
      td::load_device_catalogue(bad.toStdString());
      QFAIL("1e300 GiB was accepted");
    } catch (const td::Error& e) {
      QVERIFY2(QString(e.what()).contains("device 'X'.memory_gib: expected a number in [0, 1e+07] or null, got 1e+300"), e.what());
    }
    // A device whose peak is 0 (unknown): the figures that follow from it are null, not 0.
    write(bad, R"({"devices": [{"name": "Zero", "memory_gib": 80, "peak_tflops": {"bf16": 0}}]})");
    {
      const td::DeviceCatalogue zcat = td::load_device_catalogue(bad.toStdString());
      td::ClusterOptions zo;
      zo.device = "Zero";
      const td::ClusterPlan zp = td::make_cluster_plan(c, zcat, zo);
      QVERIFY(!zp.peak_flops);
      const json zj = td::cluster_json(zp);
      for (const char* k : {"tokens_per_s", "train_seconds", "step_seconds", "network_bytes_per_s", "storage_bytes_per_s", "peak_flops"})
        QVERIFY2(zj[k].is_null(), (std::string(k) + " = " + zj[k].dump()).c_str());
      QVERIFY(zj["memory_per_device"].is_array());  // memory needs no peak
    }
    write(bad, "{ not json");
    try {
      td::load_device_catalogue(bad.toStdString());
      QFAIL("broken JSON was accepted");
    } catch (const td::Error& e) {
      QVERIFY2(QString(e.what()).contains("is not valid JSON"), e.what());
    }
  }

  void plan_subcommand_options() {
    const QString cfg = dir_.filePath("gpt2.json");
    write(cfg, QByteArray::fromStdString(gpt2_124m(16, 1).dump()));
    // Without the new options: the existing plan, no cluster section.
    auto r = engine({"plan", "--config", cfg, "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    json j = json::parse(r.out.toStdString());
    QCOMPARE(j["n_params"].get<uint64_t>(), kPsi);
    QVERIFY(!j.contains("cluster"));
    r = engine({"plan", "--config", cfg, "--json", "--world-size", "8", "--device", "H100", "--tokens", "1e9", "--mfu", "0.4",
                "--zero", "1", "--deadline-hours", "0.1", "--price", "2.5"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    j = json::parse(r.out.toStdString());
    QCOMPARE(j["tokens_per_step"].get<uint64_t>(), uint64_t(8 * 16 * 1024));
    const json& cl = j["cluster"];
    QVERIFY(near(cl["train_seconds"].get<double>(), 270.2118503538928));
    QCOMPARE(cl["memory_per_device"][1]["params_bytes"].get<uint64_t>() + cl["memory_per_device"][1]["grads_bytes"].get<uint64_t>() +
                 cl["memory_per_device"][1]["optimizer_bytes"].get<uint64_t>(),
             uint64_t(684418944));
    QCOMPARE(cl["collective_bytes_per_step"].get<double>(), 435539328.0);
    // ZeRO-1 by kind: reduce-scatter (7/8) 2Ψ and all-gather (7/8) 2Ψ, 1.75Ψ = 217769664 each.
    QCOMPARE(cl["collective_bytes_by_kind"]["reduce_scatter"].get<double>(), 217769664.0);
    QCOMPARE(cl["collective_bytes_by_kind"]["all_gather"].get<double>(), 217769664.0);
    QCOMPARE(cl["collective_bytes_by_kind"]["all_reduce"].get<double>(), 0.0);
    QVERIFY(near(cl["cost"].get<double>(), 1.5011769464105158));
    // The table names the stages and the unknown device error lists the catalogue.
    r = engine({"plan", "--config", cfg, "--device", "A100-80GB", "--zero", "3"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("memory per device by ZeRO stage") && r.out.contains("devices needed per type"), qPrintable(r.out));
    r = engine({"plan", "--config", cfg, "--device", "H300"});
    QVERIFY(r.exit_code != 0);
    QVERIFY2(r.err.contains("unknown device 'H300': known devices are V100-16GB"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestPlanner)
#include "test_planner.moc"
