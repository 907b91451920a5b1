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
//      plus the RSS noise measured between two identical baseline runs (compare_ranks says why);
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
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <array>
#include <cmath>
#include <optional>

#include <unistd.h>

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


// A memory cgroup of this process's own (cgroup v1's memory hierarchy, or v2 where the memory
// controller is enabled for children), under which the budget test makes one child per rank.
// Empty, with *why set, where none can be made (no root, a read-only /sys/fs/cgroup, ...).
struct MemoryCgroups {
  QString parent;  // the directory children are made in
  bool v2 = false;
  QString limit_file() const { return v2 ? "memory.max" : "memory.limit_in_bytes"; }
  QString peak_file() const { return v2 ? "memory.peak" : "memory.max_usage_in_bytes"; }
};

bool write_text(const QString& path, const QByteArray& text) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly) && f.write(text) == text.size();
}

std::optional<MemoryCgroups> find_memory_cgroups(QString* why) {
  QFile self("/proc/self/cgroup");
  if (!self.open(QIODevice::ReadOnly)) {
    *why = "cannot read /proc/self/cgroup";
    return std::nullopt;
  }
  QString v1, v2;
  for (const QByteArray& line : self.readAll().split('\n')) {
    const QList<QByteArray> f = line.split(':');
    if (f.size() < 3) continue;
    if (f[1] == "memory") v1 = QString::fromUtf8(f[2]);
    if (f[0] == "0" && f[1].isEmpty()) v2 = QString::fromUtf8(f[2]);
  }
  const QString probe = QString("td-budget-probe-%1").arg(::getpid());
  auto works = [&](const MemoryCgroups& c) {
    const QString d = c.parent + "/" + probe;
    const bool ok = QDir().mkdir(d) && QFile::exists(d + "/" + c.limit_file()) && write_text(d + "/" + c.limit_file(), "104857600");
    QDir().rmdir(d);
    return ok;
  };
  if (!v1.isEmpty()) {
    MemoryCgroups c{"/sys/fs/cgroup/memory" + v1, false};
    if (works(c)) return c;
  }
  if (!v2.isEmpty() && QFile::exists("/sys/fs/cgroup/cgroup.controllers")) {
    MemoryCgroups c{"/sys/fs/cgroup" + v2, true};
    if (works(c)) return c;
  }
  *why = "no memory cgroup can be made here (needs root and a writable cgroup v1 memory hierarchy, or cgroup v2 with the memory "
         "controller delegated to this process's cgroup)";
  return std::nullopt;
}

}  // namespace

// A process baseline: the mean of two near-empty runs' RSS per rank, and their spread |a - b|.
struct Baseline {
  std::array<double, kRanks> rss{}, spread{};
};

class TestZeroMemory : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_, big_cfg_, empty_cfg_;
  td::RunConfig big_, empty_;
  // Largest step rss_bytes of each rank, by stage: of the model and of the near-empty model.
  std::array<std::array<double, kRanks>, 4> rss_{};
  std::array<Baseline, 4> rss_empty_{};

  // Launches 4 ranks of `cfg` at ZeRO stage `zero`; each rank's largest rss_bytes over the step
  // events (all zero on failure).
  std::array<double, kRanks> peak_rss(const QString& cfg, int zero, const QString& name, const QStringList& extra = {}) {
    std::array<double, kRanks> peak{};
    const QString out = dir_.filePath(name);
    auto r = engine(QStringList{"launch", "--quiet", "--nproc", QString::number(kRanks), "--", "train", "--config", cfg, "--out", out,
                     "--no-events-stdout", "--quiet", "--peak-flops", "1e10", "--set", QString("train.zero=%1").arg(zero)} + extra,
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

  double plan_bytes(const td::RunConfig& base, int zero, int tp = 1) const {
    td::RunConfig c = base;
    c.train.zero = zero;
    c.train.tensor_parallel = tp;
    return (double)td::make_plan(c, kRanks).total_bytes;
  }

  // The process baseline of a stage, measured twice (Baseline).
  Baseline baseline(const QString& cfg, int zero, const QString& name, const QStringList& extra = {}) {
    const auto a = peak_rss(cfg, zero, name + "_a", extra), b = peak_rss(cfg, zero, name + "_b", extra);
    Baseline out;
    for (int k = 0; k < kRanks; k++) {
      out.rss[k] = a[k] > 0 && b[k] > 0 ? 0.5 * (a[k] + b[k]) : 0;
      out.spread[k] = std::fabs(a[k] - b[k]);
    }
    return out;
  }

  // Per rank: plan vs RSS - RSS of the near-empty model + its plan, within 5 % plus the noise.
  // Why a noise term: RSS is not deterministic. Two identical near-empty processes differ by
  // 0.05-0.3 MiB (glibc arenas and thread stacks touched as the threads happen to run), more on
  // a busy machine; the measured figure is a difference of two such readings (the model's run and
  // the baseline), so it carries about twice that. Once, under load, a rank came out 5.13 % over
  // its plan (ZeRO-3, a 42 MiB plan: 0.05 MiB past the 5 %). So the bound is 5 % of the measured
  // figure (the planner's claim) + 3 x the spread measured here and now between two identical
  // baselines (the machine's own noise, not a constant guessed for it); on a quiet machine that
  // adds 0.2-1 MiB, and the report prints it.
  static bool compare_ranks(double planned, double empty_plan, const std::array<double, kRanks>& rss, const Baseline& base,
                            QString* said) {
    bool ok = true;
    for (int k = 0; k < kRanks; k++) {
      const double measured = rss[k] - base.rss[k] + empty_plan;
      const double err = (planned - measured) / measured;
      const double bound = 0.05 + 3 * base.spread[k] / measured;
      *said += QString("rank %1: planned %2 MiB, measured %3 MiB (RSS %4 - process %5 + %6), error %7 % (bound 5 % + noise %8 %)\n")
                   .arg(k)
                   .arg(planned / kMiB, 0, 'f', 2)
                   .arg(measured / kMiB, 0, 'f', 2)
                   .arg(rss[k] / kMiB, 0, 'f', 2)
                   .arg(base.rss[k] / kMiB, 0, 'f', 2)
                   .arg(empty_plan / kMiB, 0, 'f', 2)
                   .arg(100 * err, 0, 'f', 2)
                   .arg(100 * (bound - 0.05), 0, 'f', 2);
      ok = ok && rss[k] > 0 && base.rss[k] > 0 && std::fabs(err) <= bound;
    }
    return ok;
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
      rss_empty_[z] = baseline(empty_cfg_, z, QString("empty_%1").arg(z));
      rss_[z] = peak_rss(big_cfg_, z, QString("big_%1").arg(z));
      for (int k = 0; k < kRanks; k++) {
        QVERIFY2(rss_empty_[z].rss[k] > 0, qPrintable(QString("near-empty model, ZeRO-%1, rank %2: no rss_bytes").arg(z).arg(k)));
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
    const bool ok = compare_ranks(planned, empty_plan, rss_[zero], rss_empty_[zero], &said);
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
    const Baseline rss_empty = baseline(empty_cfg, zero, QString("llama_empty_%1").arg(zero));
    QString said;
    const bool ok = compare_ranks(planned, empty_plan, rss, rss_empty, &said);
    qInfo("llama ZeRO-%d at %d ranks:\n%s", zero, kRanks, qPrintable(said));
    QVERIFY2(ok, qPrintable(said));
  }

  // Tensor parallelism (make_plan with train.tensor_parallel): each rank holds its shard
  // (tp_num_params), ZeRO over the DP replicas shards it again, and the activations are at
  // the rank's widths plus TP's buffers. The baseline is a near-empty model split the same way
  // (4 heads of width 2, d_ff 32), so its process memory includes the TP and DP groups'
  // communicators. The plan is the largest TP rank's; the ranks differ by one vocabulary row and
  // GPT-2's zero position table (64 KiB), within the tolerance.
  void tensor_parallel_plan_vs_measured_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("zero");
    QTest::addColumn<QString>("family");
    QTest::newRow("TP 2 x DP 2, ZeRO-0") << 2 << 0 << "gpt2";
    QTest::newRow("TP 2 x DP 2, ZeRO-1") << 2 << 1 << "gpt2";
    QTest::newRow("TP 2 x DP 2, ZeRO-3") << 2 << 3 << "gpt2";
    QTest::newRow("TP 4, ZeRO-0") << 4 << 0 << "gpt2";
    QTest::newRow("TP 2 x DP 2, ZeRO-2, llama") << 2 << 2 << "llama";
  }
  void tensor_parallel_plan_vs_measured() {
    QFETCH(int, tp);
    QFETCH(int, zero);
    QFETCH(QString, family);
    const bool llama = family == "llama";
    const json big = config_of(8, 256, 4, 64, data_, llama ? 2 : 0), empty = config_of(1, 8, 4, 8, data_, llama ? 2 : 0);
    const QString big_cfg = dir_.filePath("tp_big_" + family + ".json"), empty_cfg = dir_.filePath("tp_empty_" + family + ".json");
    write_file(big_cfg, QByteArray::fromStdString(big.dump()));
    write_file(empty_cfg, QByteArray::fromStdString(empty.dump()));
    const QStringList with_tp{"--set", QString("train.tensor_parallel=%1").arg(tp)};
    const td::RunConfig bc = td::parse_config(big), ec = td::parse_config(empty);
    const double planned = plan_bytes(bc, zero, tp), empty_plan = plan_bytes(ec, zero, tp);
    // The plan is a split one: a shard's parameters, not the model's.
    td::RunConfig c = bc;
    c.train.tensor_parallel = tp;
    QCOMPARE(td::make_plan(c, kRanks).tensor_parallel, tp);
    QVERIFY(td::make_plan(c, kRanks).n_params_per_rank < td::make_plan(c, kRanks).n_params / tp + 70000);
    const QString tag = QString("tp%1_z%2_%3").arg(tp).arg(zero).arg(family);
    const auto rss = peak_rss(big_cfg, zero, "big_" + tag, with_tp);
    const Baseline rss_empty = baseline(empty_cfg, zero, "empty_" + tag, with_tp);
    QString said;
    const bool ok = compare_ranks(planned, empty_plan, rss, rss_empty, &said);
    qInfo("tensor parallel %d, ZeRO-%d, %s at %d ranks:\n%s", tp, zero, qPrintable(family), kRanks, qPrintable(said));
    QVERIFY2(ok, qPrintable(said));
  }


  // Issue 18's "done when": a model whose training state does not fit one rank's memory budget
  // trains split across ranks, equals the single-rank run (where that one has the memory), and
  // the planner's memory matches what was measured. The budget is a real one: each process runs
  // in a memory cgroup of its own with a limit (memory.limit_in_bytes or memory.max; no swap),
  // so going over it is an OOM kill. The budget is the split run's process baseline (the
  // near-empty model's RSS, measured split the same way) + 72 MiB: the plan of one rank of
  // TP 2 x DP 2 with ZeRO-3 is 35.7 MiB (with the initialisation's and the checkpoint gathers'
  // transients, the cgroups' peaks were 63-75 MiB with the baseline's 16), the weights,
  // gradients and AdamW moments of one unsplit rank alone 16 N = 97.7 MiB. Rank 0 alone gets
  // more: what it gathers to write the consolidated checkpoint (plan checkpoint_host_bytes: its
  // own layout's weights, m and v, 12 x its 3.2 M-parameter shard, and the tensor-sized buffers
  // of the streaming writer, 37 MiB; before the writer streamed, the whole state, 12 N = 73 MiB).
  void a_model_over_one_ranks_budget_trains_split() {
    QString why;
    const auto cg = find_memory_cgroups(&why);
    if (!cg) QSKIP(qPrintable(why));
    const json empty = config_of(1, 8, 4, 8, data_);
    const QString empty_cfg = dir_.filePath("budget_empty.json");
    write_file(empty_cfg, QByteArray::fromStdString(empty.dump()));
    const QStringList split{"--set", "train.tensor_parallel=2", "--set", "train.zero=3"};
    const auto base = peak_rss(empty_cfg, 3, "budget_empty", split);
    double base_max = 0;
    for (double b : base) base_max = std::max(base_max, b);
    QVERIFY2(base_max > 0, "the near-empty split run gave no rss_bytes");
    const double budget = base_max + 72 * kMiB;
    td::RunConfig one = big_, parts = big_;
    one.train.micro_batch = 2;  // the same global batch as 2 replicas of micro batch 1
    parts.train.tensor_parallel = 2;
    parts.train.zero = 3;
    const td::Plan plan_one = td::make_plan(one, 1), plan_parts = td::make_plan(parts, kRanks);
    const double rank0_budget = budget + (double)plan_parts.checkpoint_host_bytes;
    qInfo("budget %.1f MiB a process (baseline %.1f + 72; rank 0 of the split run %.1f with the checkpoint's staging); plan: one rank "
          "%.1f MiB (state %.1f), TP 2 x DP 2 ZeRO-3 %.1f MiB a rank",
          budget / kMiB, base_max / kMiB, rank0_budget / kMiB, plan_one.total_bytes / kMiB,
          (plan_one.weights_bytes + plan_one.grads_bytes + plan_one.optimizer_bytes) / kMiB, plan_parts.total_bytes / kMiB);
    QVERIFY(plan_one.weights_bytes + plan_one.grads_bytes + plan_one.optimizer_bytes > budget - base_max);  // the state alone does not fit
    QVERIFY(plan_parts.total_bytes < budget - base_max);

    // One process per cgroup: sh writes its pid into the group, then becomes the engine.
    std::vector<QString> groups;
    auto group = [&](const QString& name, double limit) {
      const QString d = cg->parent + "/" + QString("td-budget-%1-%2").arg(::getpid()).arg(name);
      QDir().mkdir(d);
      const QByteArray lim = QByteArray::number((qint64)limit);
      write_text(d + "/" + cg->limit_file(), lim);
      if (cg->v2) write_text(d + "/memory.swap.max", "0");
      else if (QFile::exists(d + "/memory.memsw.limit_in_bytes")) write_text(d + "/memory.memsw.limit_in_bytes", lim);
      groups.push_back(d);
      return d;
    };
    auto cleanup = qScopeGuard([&] {
      for (const QString& d : groups) QDir().rmdir(d);
    });
    auto start = [&](const QString& cgdir, const QStringList& args, const QProcessEnvironment& env) {
      auto* p = new QProcess(this);
      p->setProcessEnvironment(env);
      p->start("sh", QStringList{"-c", "echo $$ > \"$0/cgroup.procs\" && exec \"$@\"", cgdir, TD_ENGINE_EXE} + args);
      return p;
    };
    // Rank r of kRanks on this machine, as `traindeck-engine launch` starts it.
    auto rank_env = [](int r, int port) {
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert("TRAINDECK_RANK", QString::number(r));
      env.insert("TRAINDECK_WORLD_SIZE", QString::number(kRanks));
      env.insert("TRAINDECK_LOCAL_RANK", QString::number(r));
      env.insert("TRAINDECK_LOCAL_WORLD_SIZE", QString::number(kRanks));
      env.insert("TRAINDECK_MASTER_ADDR", "127.0.0.1");
      env.insert("TRAINDECK_MASTER_PORT", QString::number(port));
      return env;
    };
    auto train_args = [&](const QString& out) {
      return QStringList{"train", "--config", big_cfg_, "--out", out, "--no-events-stdout", "--quiet", "--peak-flops", "1e10"};
    };
    // 1. One rank under the budget: killed for memory before it trains a step.
    const QString lone = dir_.filePath("budget_one");
    QProcess* p1 = start(group("one", budget), train_args(lone) + QStringList{"--set", "train.micro_batch=2"}, QProcessEnvironment::systemEnvironment());
    QVERIFY2(p1->waitForFinished(300000), "awaited the single-rank run under the budget");
    QVERIFY2(p1->exitStatus() == QProcess::CrashExit, qPrintable("the single rank was not killed: " + QString::fromUtf8(p1->readAllStandardError())));
    QVERIFY(step_losses(lone).empty());
    // 2. The same model split over 4 ranks (TP 2 x DP 2, ZeRO-3), each rank under the budget.
    const int port = free_tcp_port();
    const QString out = dir_.filePath("budget_split");
    std::vector<QProcess*> ranks;
    for (int r = 0; r < kRanks; r++) {
      ranks.push_back(start(group(QString("rank%1").arg(r), r == 0 ? rank0_budget : budget), train_args(out) + split, rank_env(r, port)));
    }
    QString said;
    for (int r = 0; r < kRanks; r++) {
      QVERIFY2(ranks[r]->waitForFinished(300000), qPrintable(QString("awaited rank %1 of the split run").arg(r)));
      QVERIFY2(ranks[r]->exitStatus() == QProcess::NormalExit && ranks[r]->exitCode() == 0,
               qPrintable(QString("rank %1: %2").arg(r).arg(QString::fromUtf8(ranks[r]->readAllStandardError()))));
      QFile peak(groups[1 + r] + "/" + cg->peak_file());
      if (peak.open(QIODevice::ReadOnly)) said += QString("rank %1: cgroup peak %2 MiB; ").arg(r).arg(peak.readAll().trimmed().toDouble() / kMiB, 0, 'f', 1);
    }
    qInfo("split run under the budget: %s", qPrintable(said));
    // 3. Where both fit (no budget), the split run equals one process.
    const QString free_one = dir_.filePath("budget_one_free");
    auto r1 = engine(train_args(free_one) + QStringList{"--set", "train.micro_batch=2"});
    QVERIFY2(r1.exit_code == 0, qPrintable(r1.err));
    const auto ls = step_losses(free_one), ld = step_losses(out);
    QCOMPARE(ld.size(), size_t(3));
    const double dl = max_rel_loss_diff(ls, ld), dpar = max_param_diff(free_one, out);
    qInfo("split vs one process: max relative loss difference %.3g, max parameter difference %.3g", dl, dpar);
    // (6.4 M parameters: AdamW's first steps divide by sqrt(v) + eps, so gradients summed in
    // another order move a weight by up to ~2e-5 here; the losses agree to 5e-8.)
    QVERIFY2(dl < 2e-6 && dpar < 1e-4, qPrintable(QString("%1 %2").arg(dl).arg(dpar)));
    // 4. The planner's memory per rank matches the split ranks' RSS (against the baseline).
    std::array<double, kRanks> rss{};
    for (const auto& e : events_of_type(read_events(out + "/events.jsonl"), "step"))
      for (const auto& rk : e["ranks"]) rss[rk["rank"].get<int>()] = std::max(rss[rk["rank"].get<int>()], rk["rss_bytes"].get<double>());
    td::RunConfig ec = td::parse_config(empty);
    ec.train.tensor_parallel = 2;
    ec.train.zero = 3;
    QString cmp;
    const bool ok = compare_ranks((double)plan_parts.total_bytes, (double)td::make_plan(ec, kRanks).total_bytes, rss, Baseline{base, {}}, &cmp);
    qInfo("plan vs measured, split under the budget:\n%s", qPrintable(cmp));
    QVERIFY2(ok, qPrintable(cmp));
    // 5. The split run resumes under the same limits (rank 0 reads the checkpoint one tensor at
    // a time and hands each rank its pieces: CheckpointTensorReader, tp_scatter_tensors) and
    // trains a fourth step.
    const int port2 = free_tcp_port();
    std::vector<QProcess*> resumed;
    for (int r = 0; r < kRanks; r++) {
      resumed.push_back(start(groups[1 + r], train_args(out) + split + QStringList{"--resume", "--set", "train.steps=4"}, rank_env(r, port2)));
    }
    for (int r = 0; r < kRanks; r++) {
      QVERIFY2(resumed[r]->waitForFinished(300000), qPrintable(QString("awaited rank %1 of the resumed split run").arg(r)));
      QVERIFY2(resumed[r]->exitStatus() == QProcess::NormalExit && resumed[r]->exitCode() == 0,
               qPrintable(QString("resumed rank %1: %2").arg(r).arg(QString::fromUtf8(resumed[r]->readAllStandardError()))));
    }
    const auto after = step_losses(out);
    QCOMPARE(after.size(), size_t(4));
    for (size_t k = 0; k < 3; k++) QCOMPARE(after[k], ld[k]);  // the first attempt's steps, kept
    QVERIFY(std::isfinite(after[3]));
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
