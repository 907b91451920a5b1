// Memory per rank of ZeRO stages 0-3 at 4 CPU ranks: the planner (td::make_plan, docs/planner.md
// "Memory per rank of this engine") against what each rank's process really holds, within 5 %
// (issue 18, "plan vs measured RSS per rank").
//
// Model: GPT-2 shape L 8, C 256, 4 heads, T 64, V 257 (byte dataset), tied: N = 6 400 768
// parameters, so model state is 16 N = 97.7 MiB a rank at stage 0 and the stages differ by 15 to
// 30 MiB; micro_batch 1, 3 steps, fp32, one thread a rank, no evaluation, sampling or
// checkpoint before the last step event. Each stage takes about 2 s of 4 ranks on 2 cores.
//
// What is compared, and why. The CPU backend has no allocation counter (DeviceInfo's
// memory_allocated is the CUDA backend's), so the one figure the engine reports for a CPU rank
// is its resident set size: the step event's ranks[r].rss_bytes (/proc/self/statm after the
// optimizer step, when every buffer has been allocated and touched; the largest of the 3 steps).
// RSS also holds what the plan leaves out: the executable, libraries, OpenMP/OpenBLAS thread
// buffers, Gloo's connections, the loader, and on rank 0 the event writer. That part is measured
// the same way, per stage and per rank, with a near-empty model (1 layer, d_model 8, seq_len 8:
// its own plan is 0.06 MiB, added back) and subtracted. So:
//   1. per rank r and stage z: plan(z) vs RSS(z, r) - RSS_empty(z, r) + plan_empty(z), |error| <= 5 %
//      (plan(z) is the largest rank's; the shards of this shape are equal on all 4 ranks);
//   2. between stages, where every fixed cost cancels without a baseline: plan(z) - plan(z+1)
//      against the mean over ranks of RSS(z, r) - RSS(z+1, r), |error| <= 5 %;
//   3. the planner's figures themselves, by hand from the ZeRO paper's accounting
//      (Rajbhandari et al. 2020, arXiv:1910.02054, sections 5.1-5.3) and the engine's buckets
//      (engine/train/zero.h), below.
// No timing enters: the figures are read from the events after the run ends. Transparent huge
// pages would round RSS up by 2 MiB blocks; Debian's default ("madvise") leaves them off for
// the engine's buffers.
//
// What this test found: before trainer.cpp fixed glibc's mmap threshold, ZeRO-2/3 ranks held
// 3-4 MiB (5-8 %) more than planned and rank 0 20 MiB more (freed temporaries kept in glibc's
// heap after the dynamic threshold rose: fix_malloc_mmap_threshold in engine/train/trainer.cpp;
// ZeRO's bucket copies on the CPU backend are a memcpy without a temporary, engine/train/zero.cpp).
// Run with GLIBC_TUNABLES set (the trainer then leaves glibc's dynamic threshold on), ZeRO-1..3 fail.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <array>
#include <cmath>

#include "engine/config.h"
#include "engine/plan/plan.h"
#include "test_util.h"

using nlohmann::json;
using namespace tdtest;

namespace {

constexpr int kRanks = 4;
constexpr double kMiB = 1048576.0;

json config_of(int n_layer, int d_model, int n_head, int seq_len, const QString& data, int n_kv_head = 0) {
  json model = {{"vocab_size", 257}, {"seq_len", seq_len}, {"n_layer", n_layer}, {"n_head", n_head}, {"d_model", d_model}};
  if (n_kv_head > 0) model.update({{"family", "llama"}, {"n_kv_head", n_kv_head}});  // a Llama of the same size
  return {{"model", model},
          {"train", {{"threads", 1}, {"steps", 3}, {"micro_batch", 1}, {"warmup", 1}, {"precision", "fp32"}, {"eval_interval", 0},
                     {"eval_batches", 1}, {"sample_interval", 0}, {"checkpoint_interval", 0}}},
          {"data", {{"path", data.toStdString()}}}};
}

}  // namespace

class TestZeroMemory : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_, big_cfg_, empty_cfg_;
  td::RunConfig big_, empty_;
  // Largest step rss_bytes of each rank, by stage: of the model and of the near-empty model.
  std::array<std::array<double, kRanks>, 4> rss_{}, rss_empty_{};

  // Launches 4 ranks of `cfg` at ZeRO stage `zero`; each rank's largest rss_bytes over the step
  // events (all zero on failure).
  std::array<double, kRanks> peak_rss(const QString& cfg, int zero, const QString& name) {
    std::array<double, kRanks> peak{};
    const QString out = dir_.filePath(name);
    auto r = engine({"launch", "--quiet", "--nproc", QString::number(kRanks), "--", "train", "--config", cfg, "--out", out,
                     "--no-events-stdout", "--quiet", "--peak-flops", "1e10", "--set", QString("train.zero=%1").arg(zero)},
                    300000);
    if (r.exit_code != 0) {
      qWarning("%s: %s", qPrintable(name), qPrintable(r.err));
      return peak;
    }
    for (const auto& e : events_of_type(read_events(out + "/events.jsonl"), "step"))
      for (const auto& rk : e["ranks"]) {
        const int k = rk["rank"].get<int>();
        if (k >= 0 && k < kRanks) peak[k] = std::max(peak[k], rk["rss_bytes"].get<double>());
      }
    return peak;
  }

  double plan_bytes(const td::RunConfig& base, int zero) const {
    td::RunConfig c = base;
    c.train.zero = zero;
    return (double)td::make_plan(c, kRanks).total_bytes;
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    qputenv("XDG_CACHE_HOME", dir_.filePath("cache").toUtf8());
    qputenv("XDG_CONFIG_HOME", dir_.filePath("config").toUtf8());
    write_file(dir_.filePath("corpus.txt"), generated_text(3000));
    data_ = dir_.filePath("data");
    auto r = engine({"prepare", "--input", dir_.filePath("corpus.txt"), "--out", data_, "--tokenizer", "byte", "--quiet"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const json big = config_of(8, 256, 4, 64, data_), empty = config_of(1, 8, 1, 8, data_);
    big_cfg_ = dir_.filePath("big.json");
    empty_cfg_ = dir_.filePath("empty.json");
    write_file(big_cfg_, QByteArray::fromStdString(big.dump()));
    write_file(empty_cfg_, QByteArray::fromStdString(empty.dump()));
    big_ = td::parse_config(big);
    empty_ = td::parse_config(empty);
    for (int z = 0; z < 4; z++) {
      rss_empty_[z] = peak_rss(empty_cfg_, z, QString("empty_%1").arg(z));
      rss_[z] = peak_rss(big_cfg_, z, QString("big_%1").arg(z));
      for (int k = 0; k < kRanks; k++) {
        QVERIFY2(rss_empty_[z][k] > 0, qPrintable(QString("near-empty model, ZeRO-%1, rank %2: no rss_bytes").arg(z).arg(k)));
        QVERIFY2(rss_[z][k] > 0, qPrintable(QString("ZeRO-%1, rank %2: no rss_bytes").arg(z).arg(k)));
      }
    }
  }

  // The planner's model state by hand. Buckets (gpt_grad_buckets): bucket 0 = wte + wpe =
  // 257 x 256 + 64 x 256 = 82 176; each block 4 C^2 + 2 C F + 9 C + F = 262 144 + 524 288 +
  // 2 304 + 1 024 = 789 760 (F = 4C); the last, ln_f, 2 C = 512 (tied: no lm_head). N = 82 176 +
  // 8 x 789 760 + 512 = 6 400 768. Every bucket divides by 4, so each rank's share is N / 4 =
  // 1 600 192 (20 544 + 8 x 197 440 + 128).
  void planner_model_state_by_hand() {
    const uint64_t N = 6400768, share = 1600192, b0 = 82176, block = 789760, last = 512;
    auto plan = [&](int z) {
      td::RunConfig c = big_;
      c.train.zero = z;
      return td::make_plan(c, kRanks);
    };
    QCOMPARE(plan(0).n_params, N);
    // Stage 0: weights, gradients 4N each, AdamW m and v 8N.
    QCOMPARE(plan(0).weights_bytes + plan(0).grads_bytes + plan(0).optimizer_bytes, 16 * N);
    // Stage 1 (P_os): moments of the shard, 8 N/4; gradients 4N + Gloo's reduce-scatter receive
    // buffer of one shard, 4 N/4.
    QCOMPARE(plan(1).optimizer_bytes, 8 * share);
    QCOMPARE(plan(1).grads_bytes, 4 * N + 4 * share);
    QCOMPARE(plan(1).weights_bytes, 4 * N);
    // Stage 2 (P_os+g): gradients = the share + the bucket buffers open at once (bucket 0, the
    // last, one block) + Gloo's receive buffer of the largest bucket's shard (789 760 / 4).
    const uint64_t grads2 = 4 * (share + b0 + last + block + block / 4);
    QCOMPARE(plan(2).grads_bytes, grads2);
    QCOMPARE(plan(2).optimizer_bytes, 8 * share);
    QCOMPARE(plan(2).weights_bytes, 4 * N);
    // Stage 3 (P_os+g+p): the parameters like the gradients, without a Gloo buffer (the
    // all-gather is in place): the share + three gathered buckets.
    QCOMPARE(plan(3).weights_bytes, 4 * (share + b0 + last + block));
    QCOMPARE(plan(3).grads_bytes, grads2);
    QCOMPARE(plan(3).optimizer_bytes, 8 * share);
    // The activations do not depend on the stage.
    for (int z = 1; z < 4; z++) QCOMPARE(plan(z).activations_bytes, plan(0).activations_bytes);
  }

  void plan_vs_measured_per_rank_data() {
    QTest::addColumn<int>("zero");
    for (int z = 0; z < 4; z++) QTest::newRow(qPrintable(QString("ZeRO-%1").arg(z))) << z;
  }
  void plan_vs_measured_per_rank() {
    QFETCH(int, zero);
    const double planned = plan_bytes(big_, zero);
    const double empty_plan = plan_bytes(empty_, zero);
    QString said;
    bool ok = true;
    for (int k = 0; k < kRanks; k++) {
      const double measured = rss_[zero][k] - rss_empty_[zero][k] + empty_plan;
      const double err = (planned - measured) / measured;
      said += QString("rank %1: planned %2 MiB, measured %3 MiB (RSS %4 - process %5 + %6), error %7 %\n")
                  .arg(k)
                  .arg(planned / kMiB, 0, 'f', 2)
                  .arg(measured / kMiB, 0, 'f', 2)
                  .arg(rss_[zero][k] / kMiB, 0, 'f', 2)
                  .arg(rss_empty_[zero][k] / kMiB, 0, 'f', 2)
                  .arg(empty_plan / kMiB, 0, 'f', 2)
                  .arg(100 * err, 0, 'f', 2);
      ok = ok && std::fabs(err) <= 0.05;
    }
    qInfo("ZeRO-%d at %d ranks:\n%s", zero, kRanks, qPrintable(said));
    QVERIFY2(ok, qPrintable(said));
  }

  // The Llama family at ZeRO-2 and 3 (its buckets: model_grad_buckets, engine/model/shape.h),
  // the same model size with GQA 4/2, against a near-empty llama's process memory.
  void llama_plan_vs_measured_data() {
    QTest::addColumn<int>("zero");
    for (int z : {2, 3}) QTest::newRow(qPrintable(QString("llama ZeRO-%1").arg(z))) << z;
  }
  void llama_plan_vs_measured() {
    QFETCH(int, zero);
    const json big = config_of(8, 256, 4, 64, data_, 2), empty = config_of(1, 8, 2, 8, data_, 1);
    const QString big_cfg = dir_.filePath("llama_big.json"), empty_cfg = dir_.filePath("llama_empty.json");
    write_file(big_cfg, QByteArray::fromStdString(big.dump()));
    write_file(empty_cfg, QByteArray::fromStdString(empty.dump()));
    const double planned = plan_bytes(td::parse_config(big), zero), empty_plan = plan_bytes(td::parse_config(empty), zero);
    const auto rss = peak_rss(big_cfg, zero, QString("llama_big_%1").arg(zero));
    const auto rss_empty = peak_rss(empty_cfg, zero, QString("llama_empty_%1").arg(zero));
    QString said;
    bool ok = true;
    for (int k = 0; k < kRanks; k++) {
      QVERIFY2(rss[k] > 0 && rss_empty[k] > 0, qPrintable(QString("llama ZeRO-%1, rank %2: no rss_bytes").arg(zero).arg(k)));
      const double measured = rss[k] - rss_empty[k] + empty_plan;
      const double err = (planned - measured) / measured;
      said += QString("rank %1: planned %2 MiB, measured %3 MiB, error %4 %\n")
                  .arg(k)
                  .arg(planned / kMiB, 0, 'f', 2)
                  .arg(measured / kMiB, 0, 'f', 2)
                  .arg(100 * err, 0, 'f', 2);
      ok = ok && std::fabs(err) <= 0.05;
    }
    qInfo("llama ZeRO-%d at %d ranks:\n%s", zero, kRanks, qPrintable(said));
    QVERIFY2(ok, qPrintable(said));
  }

  void plan_vs_measured_between_stages_data() {
    QTest::addColumn<int>("zero");
    for (int z = 0; z < 3; z++) QTest::newRow(qPrintable(QString("ZeRO-%1 - ZeRO-%2").arg(z).arg(z + 1))) << z;
  }
  void plan_vs_measured_between_stages() {
    QFETCH(int, zero);
    const double planned = plan_bytes(big_, zero) - plan_bytes(big_, zero + 1);
    double measured = 0;
    for (int k = 0; k < kRanks; k++) measured += (rss_[zero][k] - rss_[zero + 1][k]) / kRanks;
    const double err = (planned - measured) / measured;
    const QString said = QString("ZeRO-%1 - ZeRO-%2: planned %3 MiB, measured %4 MiB (mean over ranks), error %5 %")
                             .arg(zero)
                             .arg(zero + 1)
                             .arg(planned / kMiB, 0, 'f', 2)
                             .arg(measured / kMiB, 0, 'f', 2)
                             .arg(100 * err, 0, 'f', 2);
    qInfo("%s", qPrintable(said));
    QVERIFY(planned > 10 * kMiB);  // the stages differ clearly
    QVERIFY2(std::fabs(err) <= 0.05, qPrintable(said));
  }
};

QTEST_GUILESS_MAIN(TestZeroMemory)
#include "test_zero_memory.moc"
