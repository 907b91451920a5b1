// The designer's Infrastructure panel driven with QTest: GPT-2 124M (micro_batch 16) on 8 H100,
// 1e9 tokens at 40 % MFU, a 0.1 h deadline and 2.50 per device-hour — every label against the
// figure computed by hand (docs/planner.md's worked example); inputs recompute; the memory bars
// hold the ZeRO accounting; the model designer hosts the panel and feeds it its config.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QDoubleSpinBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/metrics/sysinfo.h"
#include "gui/designer/infra_panel.h"
#include "gui/designer/memory_bars.h"
#include "gui/designer/model_designer.h"

using nlohmann::json;
using td::gui::InfraPanel;

namespace {

// Activations of GPT-2 124M at micro_batch 16 (B T = 16384, C = 768, F = 3072, V = 50257,
// NH = 12, T = 1024), floats, from the engine's layout (engine/model/gpt.cpp):
//   per block 10 BTC + 2 BTF + 4 BT + B NH T T = 125829120 + 100663296 + 65536 + 201326592
//             = 427884544; x 12 = 5134614528
//   encoded, ln_f: 2 BTC = 25165824; ln_f mean, rstd 2 BT = 32768; logits BTV = 823410688;
//   losses BT = 16384 -> 848625664
//   backward scratch 5 BTC + 2 BTF = 163577856
//   total 6146818048 floats; mixed precision: 2 bytes each = 12293636096 bytes (11.45 GiB).
constexpr uint64_t kActBytes = 12293636096ull;

json gpt2Doc() {
  return {{"model", {{"vocab_size", 50257}, {"seq_len", 1024}, {"n_layer", 12}, {"n_head", 12}, {"d_model", 768}}},
          {"train", {{"steps", 100}, {"micro_batch", 16}}},
          {"data", {{"path", "/data/fineweb"}}}};
}

QString text(QWidget& w, const char* name) {
  auto* label = w.findChild<QLabel*>(QString::fromLatin1(name));
  return label ? label->text() : QStringLiteral("<no label %1>").arg(name);
}

// The row of `device` in the needs table; -1 when absent.
int needsRow(QTableWidget* t, const QString& device) {
  for (int r = 0; r < t->rowCount(); ++r)
    if (t->item(r, 0) && t->item(r, 0)->text() == device) return r;
  return -1;
}

}  // namespace

class TestInfraPanel : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  // Sets the worked example's inputs the way a user does.
  void enterWorkedExample(InfraPanel& p) {
    auto* device = p.findChild<QComboBox*>("infra_device");
    QVERIFY(device);
    device->setCurrentIndex(device->findData(QStringLiteral("H100")));
    p.findChild<QSpinBox*>("infra_world_size")->setValue(8);
    auto* tokens = p.findChild<QLineEdit*>("infra_tokens");
    tokens->setFocus();
    tokens->selectAll();
    QTest::keyClicks(tokens, QStringLiteral("1e9"));
    p.findChild<QDoubleSpinBox*>("infra_mfu")->setValue(40);
    p.findChild<QDoubleSpinBox*>("infra_deadline")->setValue(0.1);
    p.findChild<QDoubleSpinBox*>("infra_price")->setValue(2.5);
    p.findChild<QComboBox*>("infra_zero")->setCurrentIndex(0);
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    // No user catalogue, no calibration of this machine.
    qputenv("XDG_CONFIG_HOME", dir_.filePath("config").toUtf8());
    qputenv("XDG_CACHE_HOME", dir_.filePath("cache").toUtf8());
  }

  void parsesTokenCounts() {
    QCOMPARE(*td::gui::parseTokenCount("1e9"), 1e9);
    QCOMPARE(*td::gui::parseTokenCount(" 2.5G "), 2.5e9);
    QCOMPARE(*td::gui::parseTokenCount("300M"), 3e8);
    QCOMPARE(*td::gui::parseTokenCount("1,000,000"), 1e6);
    QCOMPARE(*td::gui::parseTokenCount("10k"), 1e4);
    QCOMPARE(*td::gui::parseTokenCount(""), 0.0);
    QVERIFY(!td::gui::parseTokenCount("ten"));
    QVERIFY(!td::gui::parseTokenCount("-5"));
    QVERIFY(!td::gui::parseTokenCount("5B"));
  }

  void gpt2On8H100ByHand() {
    td::gui::Planner planner;
    InfraPanel p(&planner);
    p.show();
    p.showCheck(planner.check(gpt2Doc()));
    enterWorkedExample(p);
    QVERIFY(p.plan().has_value());
    const td::ClusterOptions o = p.options();
    QCOMPARE(o.device, std::string("H100"));
    QCOMPARE(o.world_size, 8);
    QCOMPARE(o.tokens, 1e9);
    QCOMPARE(*o.price_per_hour, 2.5);

    // Memory per device, mixed precision, n = 8 (ZeRO paper): model states 16Ψ = 1991036928,
    // 4Ψ + 12Ψ/8 = 684418944, 2Ψ + 14Ψ/8 = 466649280, 16Ψ/8 = 248879616 bytes; + activations.
    //   stage 0: 14284673024 B = 13.30 GiB; stage 1: 12978055040 = 12.09 GiB;
    //   stage 2: 12760285376 = 11.88 GiB; stage 3: 12542515712 = 11.68 GiB.
    QCOMPARE(text(p, "infra_memory_0"), QStringLiteral("13.30 GiB"));
    QCOMPARE(text(p, "infra_memory_1"), QStringLiteral("12.09 GiB"));
    QCOMPARE(text(p, "infra_memory_2"), QStringLiteral("11.88 GiB"));
    QCOMPARE(text(p, "infra_memory_3"), QStringLiteral("11.68 GiB"));
    const auto& bars = p.memoryBars()->bars();
    QCOMPARE(bars[0].total(), 1991036928ull + kActBytes);
    QCOMPARE(bars[3].params, 31109952ull);  // 2Ψ / 8
    QCOMPARE(bars[1].optimizer, 186659712ull);  // 12Ψ / 8
    QCOMPARE(bars[2].activations, kActBytes);
    QCOMPARE(p.memoryBars()->limitBytes(), 80ull << 30);
    // 1e9 tokens x 855166464 FLOP = 8.55166464e17 = 855.2 PFLOP; / (8 x 989e12 x 0.4) = 270.2 s.
    QCOMPARE(text(p, "infra_budget"), QStringLiteral("1.00 G tokens"));
    QCOMPARE(text(p, "infra_flops"), QStringLiteral("855.2 PFLOP"));
    QCOMPARE(text(p, "infra_time"), QStringLiteral("4 min 30 s"));
    // 3.1648e15 FLOP/s / 855166464 = 3700800 tokens/s; x 2 bytes = 7.40 MB/s of storage.
    QCOMPARE(text(p, "infra_tokens_per_s"), QStringLiteral("3.70 M tokens/s"));
    QCOMPARE(text(p, "infra_storage"), QStringLiteral("7.40 MB/s"));
    // A step: 16384 tokens x 855166464 / 3.956e14 = 35.4 ms; ring all-reduce of bf16 gradients
    // 2 (7/8) 2Ψ = 435539328 B, hidden at 435539328 / 0.0354172 = 12.3 GB/s.
    QCOMPARE(text(p, "infra_step_time"), QStringLiteral("35.4 ms"));
    QCOMPARE(text(p, "infra_collective"), QStringLiteral("435.5 MB"));
    QCOMPARE(text(p, "infra_network"), QStringLiteral("12.3 GB/s"));
    // 8 x 270.2 s = 0.6005 device-hours x 2.50 = 1.50.
    QCOMPARE(text(p, "infra_cost"), QStringLiteral("1.50 (2.50 per device-hour)"));
    // Devices needed by 0.1 h: H100 ceil(2161.7 s / 360 s) = 7; V100 (fp16 125 TF):
    // 8.55166464e17 / 5e13 = 17103 s / 360 -> 48; TPU v5e (197 TF) -> 31.
    auto* needs = p.findChild<QTableWidget*>("infra_needs");
    QVERIFY(needs);
    const int h100 = needsRow(needs, "H100");
    QVERIFY(h100 >= 0);
    QCOMPARE(needs->item(h100, 2)->text(), QStringLiteral("1"));  // fits on one at ZeRO-0
    QCOMPARE(needs->item(h100, 3)->text(), QStringLiteral("7"));
    QCOMPARE(needs->item(h100, 4)->text(), QStringLiteral("7"));
    QCOMPARE(needs->item(h100, 6)->text(), QStringLiteral("0.6"));
    QCOMPARE(needs->item(h100, 7)->text(), QStringLiteral("1.50"));
    QCOMPARE(needs->item(needsRow(needs, "V100-16GB"), 3)->text(), QStringLiteral("48"));
    QCOMPARE(needs->item(needsRow(needs, "TPUv5e"), 3)->text(), QStringLiteral("31"));
    QCOMPARE(needs->item(needsRow(needs, "H200"), 7)->text(), QStringLiteral("–"));  // no catalogue price

    // Edits recompute: 16 devices halve the time; ZeRO-3 moves 1.5x the bytes (653.3 MB).
    QSignalSpy changed(&p, &InfraPanel::planChanged);
    p.findChild<QSpinBox*>("infra_world_size")->setValue(16);
    QVERIFY(changed.count() >= 1);
    QCOMPARE(text(p, "infra_time"), QStringLiteral("2 min 15 s"));
    p.findChild<QSpinBox*>("infra_world_size")->setValue(8);
    p.findChild<QComboBox*>("infra_zero")->setCurrentIndex(3);
    QCOMPARE(text(p, "infra_collective"), QStringLiteral("653.3 MB"));
    QCOMPARE(needs->horizontalHeaderItem(2)->text(), QStringLiteral("Fit (ZeRO-3)"));
    // ZeRO-3 trains in fp32 only: H100's mixed precision at stage 3 is an estimate, the note says.
    QCOMPARE(p.findChild<QComboBox*>("infra_zero")->itemText(3), QStringLiteral("3: + parameters sharded (fp32 only)"));
    QVERIFY(p.findChild<QComboBox*>("infra_zero")->toolTip().contains("stages 0 to 3, stage 3 in fp32 only"));
    QVERIFY(p.findChild<QLabel*>("infra_note")->text().contains("ZeRO stage 3 in fp32 only: in mixed precision stage 3 is a planning estimate"));
    // A budget that is not a number: the note says so and train.steps x tokens per step is
    // used (the global batch: 100 steps x 16 x 1024 tokens x 8 devices = 13107200 tokens).
    auto* tokens = p.findChild<QLineEdit*>("infra_tokens");
    tokens->setText(QStringLiteral("lots"));
    QVERIFY(p.findChild<QLabel*>("infra_note")->isVisibleTo(&p));
    QVERIFY(p.findChild<QLabel*>("infra_note")->text().contains("not a number"));
    QCOMPARE(text(p, "infra_budget"), QStringLiteral("13.1 M tokens"));
  }

  // Tensor parallel 2 on the worked example's 8 H100 (TP 2 x DP 4): the bars are a TP rank's
  // shard, Ψ' = 62641920 (tests/engine/test_planner.cpp derives it), ZeRO over 4 replicas; the
  // collectives add the TP group's (2516582400 + 131072 bytes, by hand there).
  void tensorParallelSplitsTheBars() {
    td::gui::Planner planner;
    InfraPanel p(&planner);
    p.show();
    p.showCheck(planner.check(gpt2Doc()));
    enterWorkedExample(p);
    auto* tp = p.findChild<QSpinBox*>("infra_tensor_parallel");
    QVERIFY(tp);
    QCOMPARE(tp->value(), 1);
    p.findChild<QComboBox*>("infra_zero")->setCurrentIndex(1);
    tp->setValue(2);
    QCOMPARE(p.options().tensor_parallel, 2);
    QVERIFY(p.plan().has_value());
    const auto& bars = p.memoryBars()->bars();
    QCOMPARE(bars[1].params, 2ull * 62641920);
    QCOMPARE(bars[1].grads, 2ull * 62641920);
    QCOMPARE(bars[1].optimizer, 12ull * 62641920 / 4);
    QCOMPARE(bars[3].params, 2ull * 62641920 / 4);
    // ZeRO-1 over dp = 4: (3/4) 2Ψ' twice (93962880 each) + the TP group's.
    QCOMPARE(p.plan()->collective_bytes_per_step, 2 * 93962880.0 + 2516582400.0 + 131072.0);
    // 7 devices cannot hold groups of 2: the note says what to do.
    p.findChild<QSpinBox*>("infra_world_size")->setValue(7);
    QVERIFY2(p.findChild<QLabel*>("infra_note")->text().contains("--world-size 7 is not a multiple of the tensor-parallel degree 2"),
             qPrintable(p.findChild<QLabel*>("infra_note")->text()));
    // Options round-trip.
    td::ClusterOptions o = p.options();
    o.world_size = 16;
    o.tensor_parallel = 4;
    p.setOptions(o);
    QCOMPARE(tp->value(), 4);
    QCOMPARE(p.plan()->options.tensor_parallel, 4);
  }

  void deviceThatIsTooSmallIsMarked() {
    // A 1.5 GiB user device: stage 0 (16Ψ + activations) does not fit; planning it says so.
    QDir().mkpath(dir_.filePath("config/traindeck"));
    QFile f(dir_.filePath("config/traindeck/devices.json"));
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(R"({"devices": [{"name": "Small", "memory_gib": 1.5, "peak_tflops": {"bf16": 100}}]})");
    f.close();
    td::gui::Planner planner;
    InfraPanel p(&planner);
    QFile::remove(dir_.filePath("config/traindeck/devices.json"));
    json doc = gpt2Doc();
    doc["train"]["micro_batch"] = 1;
    p.showCheck(planner.check(doc));
    auto* device = p.findChild<QComboBox*>("infra_device");
    const int small = device->findData(QStringLiteral("Small"));
    QVERIFY(small >= 0);
    device->setCurrentIndex(small);
    QVERIFY(text(p, "infra_memory_0").endsWith("(does not fit)"));
    QVERIFY(p.plan() && !p.plan()->fits);
    QCOMPARE(p.memoryBars()->limitBytes(), uint64_t(1610612736));
  }

  void modelDesignerFeedsThePanel() {
    td::gui::ModelDesigner d;
    d.show();
    d.setConfig(gpt2Doc());
    InfraPanel* p = d.infraPanel();
    QVERIFY(p);
    td::ClusterOptions o;
    o.device = "H100";
    o.world_size = 8;
    o.tokens = 1e9;
    o.mfu = 0.4;
    p->setOptions(o);
    QCOMPARE(text(*p, "infra_time"), QStringLiteral("4 min 30 s"));
    // micro_batch 8 halves the activations (6146818048 / 2 floats x 2 bytes) and the step time:
    // stage 0 = 1991036928 + 6146818048 = 8137854976 B = 7.58 GiB; 17.7 ms.
    auto* mb = qobject_cast<QLineEdit*>(d.fieldEditor("train.micro_batch"));
    QVERIFY(mb);
    mb->setFocus();
    mb->selectAll();
    QTest::keyClick(mb, Qt::Key_Backspace);
    QTest::keyClicks(mb, "8");
    QCOMPARE(text(*p, "infra_memory_0"), QStringLiteral("7.58 GiB"));
    QCOMPARE(text(*p, "infra_step_time"), QStringLiteral("17.7 ms"));
    // An invalid field greys the panel and keeps the last figures.
    QTest::keyClick(mb, Qt::Key_Backspace);
    QTest::keyClicks(mb, "0");
    QVERIFY(!d.isValid());
    QCOMPARE(text(*p, "infra_memory_0"), QStringLiteral("7.58 GiB"));
    QVERIFY(p->findChild<QLabel*>("infra_note")->text().contains("Fix the marked fields"));
  }

  // This machine's CPU is planned at the MFU of the designer's own estimate (here the engine's
  // calibrated share, 0.23), a catalogue GPU at 40 %, until the user sets one.
  void thisMachineTakesTheEngineMfu() {
    const int cores = td::cpu_cores();
    const std::string key = td::cpu_model() + " | threads=" + std::to_string(cores);
    QDir().mkpath(dir_.filePath("cache/traindeck"));
    QFile f(dir_.filePath("cache/traindeck/calibration.json"));
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(QByteArray::fromStdString(json{{key, 1e11}, {key + " | engine_mfu", 0.23}}.dump()));
    f.close();
    td::gui::Planner planner;
    InfraPanel p(&planner);
    p.show();
    json doc = gpt2Doc();
    const td::gui::PlanCheck check = planner.check(doc);
    QCOMPARE(check.mfu, 0.23);
    p.showCheck(check);
    auto* device = p.findChild<QComboBox*>("infra_device");
    auto* mfu = p.findChild<QDoubleSpinBox*>("infra_mfu");
    QCOMPARE(device->currentData().toString(), QStringLiteral("H100"));
    QCOMPARE(mfu->value(), 40.0);
    device->setCurrentIndex(device->findData(QStringLiteral("cpu")));
    QCOMPARE(mfu->value(), 23.0);
    QCOMPARE(p.options().mfu, 0.23);
    QVERIFY(p.plan().has_value());
    // 8 devices x 1e11 FLOP/s (the calibrated peak) x 0.23 / FLOPs per token.
    QCOMPARE(p.options().world_size, 8);
    QCOMPARE(p.plan()->tokens_per_s, 8 * 1e11 * 0.23 / p.plan()->model.flops_per_token);
    device->setCurrentIndex(device->findData(QStringLiteral("H100")));
    QCOMPARE(mfu->value(), 40.0);
    // Once the user sets it, it stays.
    mfu->setValue(30);
    device->setCurrentIndex(device->findData(QStringLiteral("cpu")));
    QCOMPARE(mfu->value(), 30.0);
    QFile::remove(dir_.filePath("cache/traindeck/calibration.json"));
  }
};

QTEST_MAIN(TestInfraPanel)
#include "test_infra_panel.moc"
