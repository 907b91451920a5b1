// Every field of the engine's config reachable in the ModelDesigner: a document with every field
// set to a value other than the engine's default loads, shows every editor (Advanced opens),
// and comes back out of the designer equal, field for field; the Advanced fields, the device
// list and precision are edited as a user does; choosing a dataset sets vocab_size from its
// tokenizer and a vocab_size that differs from it is marked; no dataset says "prepare first".
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include "engine/plan/plan.h"
#include "gui/designer/model_designer.h"
#include "gui/plan/format.h"

using nlohmann::json;
using td::gui::DatasetChoice;
using td::gui::DeviceChoice;
using td::gui::ModelDesigner;
using td::gui::Planner;

namespace {

// One value per engine field, none of them the engine's default, valid together (cuda:1 so
// that bf16 is allowed; d_model 256 is a multiple of n_head 4; min_lr <= lr). A field the
// engine adds must be added here: everyFieldHasANonDefaultValue fails until it is.
json everyField() {
  // model.family "llama" so that its own fields (shown only for it) can be set too.
  return {{"model",
           {{"family", "llama"},
            {"vocab_size", 8000},
            {"seq_len", 512},
            {"n_layer", 3},
            {"n_head", 4},
            {"n_kv_head", 2},
            {"d_model", 256},
            {"d_ff", 1000},
            {"ffn_multiple_of", 64},
            {"rope_theta", 500000.0},
            {"rms_norm_eps", 1e-6},
            {"tie_embeddings", false}}},
          {"train",
           {{"device", "cuda:1"},
            {"precision", "bf16"},
            {"attention", "fused"},
            {"gelu_fusion", "epilogue"},
            {"threads", 3},
            {"seed", 42},
            {"steps", 1234},
            {"lr", 0.003},
            {"warmup", 17},
            {"min_lr", 0.0001},
            {"weight_decay", 0.05},
            {"beta1", 0.85},
            {"beta2", 0.99},
            {"eps", 1e-6},
            {"grad_clip", 0.5},
            {"micro_batch", 5},
            {"grad_accum", 3},
            {"eval_interval", 50},
            {"eval_batches", 4},
            {"sample_interval", 300},
            {"sample_tokens", 64},
            {"sample_temperature", 1.3},
            {"sample_top_k", 7},
            {"sample_prompt", "Once upon a time"},
            {"checkpoint_interval", 250},
            {"keep_checkpoints", 5},
            {"log_interval", 10},
            {"zero", 1},
            {"tensor_parallel", 2},
            {"dist_timeout_s", 120.5},
            {"dist_ifname", "eth1"}, {"metrics_port", 9464}, {"metrics_address", "0.0.0.0"},
            {"alert_spike_window", 40}, {"alert_spike_sigma", 5.0}, {"alert_spike_factor", 2.0},
            {"alert_throughput_window", 25}, {"alert_throughput_window_s", 30.0}, {"alert_throughput_fraction", 0.4},
            {"alert_stall_factor", 8.0}, {"alert_stall_min_s", 90.0}, {"alert_disk_min_free_bytes", 2147483648},
            {"alert_disk_min_free_fraction", 0.05}, {"alert_connection_lost_s", 240.0}, {"alert_interval_s", 300.0}}},
          {"data", {{"path", "/data/owt-bpe8000"}}}};
}

json smallDoc() {
  return {{"model", {{"vocab_size", 257}, {"seq_len", 64}, {"n_layer", 2}, {"n_head", 2}, {"d_model", 64}}},
          {"train", {{"steps", 10}}},
          {"data", {{"path", "/data/byte"}}}};
}

void writeFile(const QString& path, const QByteArray& text) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  f.write(text);
}

json readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return json();
  return json::parse(f.readAll().toStdString(), nullptr, false);
}

void retype(QWidget* editor, const QString& text) {
  auto* edit = qobject_cast<QLineEdit*>(editor);
  QVERIFY(edit);
  edit->setFocus();
  edit->selectAll();
  QTest::keyClick(edit, Qt::Key_Backspace);
  QTest::keyClicks(edit, text);
}

QString lineText(ModelDesigner& d, const char* path) {
  auto* e = qobject_cast<QLineEdit*>(d.fieldEditor(QString::fromLatin1(path)));
  return e ? e->text() : QStringLiteral("<no line edit>");
}

QStringList itemData(QComboBox* c) {
  QStringList out;
  for (int i = 0; i < c->count(); ++i) out << c->itemData(i).toString();
  return out;
}

}  // namespace

class TestDesignerFields : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    qputenv("XDG_CACHE_HOME", dir_.filePath("cache").toUtf8());
    qputenv("XDG_CONFIG_HOME", dir_.filePath("config").toUtf8());
  }

  void everyFieldHasANonDefaultValue() {
    const json doc = everyField();
    int n = 0;
    for (const td::gui::FieldInfo& f : Planner::fieldDocs()) {
      const std::string sec = f.path.section('.', 0, 0).toStdString(), name = f.path.section('.', 1).toStdString();
      QVERIFY2(doc[sec].contains(name), qPrintable(f.path + " has no value in everyField()"));
      const json def = json::parse(f.default_value.toStdString());
      QVERIFY2(doc[sec][name] != def, qPrintable(f.path + " is at its default"));
      ++n;
    }
    // 12 model fields (4 of them llama only), 45 train fields (12 of them train.alert_*), data.path:
    // the engine's table (engine/config.cpp).
    QCOMPARE(n, 58);
    QCOMPARE(doc["model"].size() + doc["train"].size() + doc["data"].size(), size_t(58));
    QVERIFY(Planner::fieldErrors(doc).isEmpty());
  }

  void everyFieldRoundTripsThroughTheDesigner() {
    const json doc = everyField();
    const QString path = dir_.filePath("every.json");
    writeFile(path, QByteArray::fromStdString(doc.dump(2)));
    ModelDesigner d;
    d.resize(1200, 800);
    d.show();
    QVERIFY(!d.advancedShown());
    QCOMPARE(d.loadFile(path), QString());
    QVERIFY2(d.isValid(), qPrintable(QStringList(d.errors().keys()).join(", ")));
    // Every engine field has an editor, and none is hidden: Advanced opened for the document.
    QStringList all;
    for (const td::gui::FieldInfo& f : Planner::fieldDocs()) all << f.path;
    QCOMPARE(d.fieldPaths(), all);
    QVERIFY(d.advancedShown());
    for (const QString& p : all) {
      QWidget* e = d.fieldEditor(p);
      QVERIFY2(e, qPrintable(p));
      QVERIFY2(e->isVisibleTo(&d), qPrintable(p + " is hidden"));
    }
    QCOMPARE(d.findChild<QToolButton*>("advanced_toggle")->text(), QStringLiteral("Advanced (29 set)"));
    // Read back out of the designer: the same document, field for field.
    const json back = d.config();
    for (const char* sec : {"model", "train", "data"})
      for (auto it = doc[sec].begin(); it != doc[sec].end(); ++it)
        QVERIFY2(back[sec].contains(it.key()) && back[sec][it.key()] == it.value(),
                 qPrintable(QStringLiteral("%1.%2: %3 became %4")
                                .arg(sec, QString::fromStdString(it.key()), QString::fromStdString(it.value().dump()),
                                     QString::fromStdString(back[sec].value(it.key(), json("<absent>")).dump()))));
    QCOMPARE(back, doc);
    // The editors show the values: the lists by their data, strings as text (not as JSON).
    QCOMPARE(qobject_cast<QComboBox*>(d.fieldEditor("train.device"))->currentData().toString(), QStringLiteral("cuda:1"));
    QCOMPARE(qobject_cast<QComboBox*>(d.fieldEditor("train.precision"))->currentData().toString(), QStringLiteral("bf16"));
    QCOMPARE(lineText(d, "train.sample_prompt"), QStringLiteral("Once upon a time"));
    QCOMPARE(lineText(d, "train.eps"), QStringLiteral("1e-06"));
    QCOMPARE(lineText(d, "train.keep_checkpoints"), QStringLiteral("5"));
    QVERIFY(!qobject_cast<QCheckBox*>(d.fieldEditor("model.tie_embeddings"))->isChecked());
    // And through a file again.
    const QString saved = dir_.filePath("every-saved.json");
    QCOMPARE(d.saveFile(saved), QString());
    QCOMPARE(readJson(saved), doc);
    ModelDesigner e;
    QCOMPARE(e.loadFile(saved), QString());
    QCOMPARE(e.config(), doc);
  }

  void advancedFieldsAreEditedAsAUserDoes() {
    ModelDesigner d;
    d.resize(1200, 800);
    d.show();
    d.setConfig(smallDoc());
    QVERIFY(d.isValid());
    QVERIFY(!d.advancedShown());  // the document sets none of them
    QWidget* keep = d.fieldEditor("train.keep_checkpoints");
    QVERIFY(!keep->isVisibleTo(&d));
    auto* toggle = d.findChild<QToolButton*>("advanced_toggle");
    QCOMPARE(toggle->text(), QStringLiteral("Advanced"));
    QTest::mouseClick(toggle, Qt::LeftButton);
    QVERIFY(d.advancedShown());
    QVERIFY(keep->isVisible());
    QCOMPARE(qobject_cast<QLineEdit*>(keep)->placeholderText(), QStringLiteral("3"));  // the engine's default
    retype(keep, "7");
    QCOMPARE(d.config()["train"]["keep_checkpoints"], json(7));
    retype(d.fieldEditor("train.log_interval"), "25");
    QCOMPARE(d.config()["train"]["log_interval"], json(25));
    QCOMPARE(toggle->text(), QStringLiteral("Advanced (2 set)"));
    // A string field stays a string even when it reads as a number.
    retype(d.fieldEditor("train.sample_prompt"), "42");
    QCOMPARE(d.config()["train"]["sample_prompt"], json("42"));
    QVERIFY(d.isValid());
    // An invalid advanced value is marked with the engine's message.
    retype(d.fieldEditor("train.beta2"), "1.5");
    QCOMPARE(d.errorFor("train.beta2"), QStringLiteral("value 1.5 is out of range: allowed number in [0, 0.999999]"));
    QVERIFY(d.fieldEditor("train.beta2")->property("invalid").toBool());
    QVERIFY(!d.isValid());

    // Closed Advanced opens by itself for an invalid field of a shown document.
    ModelDesigner e;
    e.show();
    json bad = smallDoc();
    bad["train"]["eval_batches"] = 0;
    e.setConfig(bad);
    QVERIFY(e.advancedShown());
    QCOMPARE(e.errorFor("train.eval_batches"), QStringLiteral("value 0 is out of range: allowed [1, 1048576]"));
    QVERIFY(e.findChild<QLabel*>("error_train.eval_batches")->isVisible());
  }

  // train.attention sits beside precision on the page; "fused" writes the field and the
  // activation estimate becomes the planner's figure without the (B, n_head, T, T) probabilities.
  void attentionChoiceChangesTheActivationEstimate() {
    ModelDesigner d;
    d.show();
    d.setConfig(smallDoc());
    auto* attention = qobject_cast<QComboBox*>(d.fieldEditor("train.attention"));
    QVERIFY(attention);
    QCOMPARE(itemData(attention), (QStringList{"simple", "fused"}));
    QVERIFY(!d.advancedShown());  // on the page, not under Advanced
    auto* label = d.findChild<QLabel*>("estimate_activations");
    QVERIFY(label);
    json doc = smallDoc();
    const QString simple = td::gui::formatBytes(td::make_plan(td::parse_config(doc), 1).activations_bytes);
    doc["train"]["attention"] = "fused";
    const QString fused = td::gui::formatBytes(td::make_plan(td::parse_config(doc), 1).activations_bytes);
    QVERIFY2(simple != fused, qPrintable(simple));
    QTRY_COMPARE_WITH_TIMEOUT(label->text(), simple, 30000);
    attention->setCurrentIndex(attention->findData("fused"));
    QCOMPARE(d.config()["train"]["attention"], json("fused"));
    QTRY_COMPARE_WITH_TIMEOUT(label->text(), fused, 30000);
  }

  void deviceAndPrecisionLists() {
    ModelDesigner d;
    d.show();
    d.setConfig(smallDoc());
    auto* device = qobject_cast<QComboBox*>(d.fieldEditor("train.device"));
    auto* precision = qobject_cast<QComboBox*>(d.fieldEditor("train.precision"));
    QVERIFY(device && precision);
    QCOMPARE(itemData(device), QStringList{"cpu"});
    QCOMPARE(itemData(precision), (QStringList{"auto", "fp32", "bf16"}));
    QCOMPARE(precision->currentText(), QStringLiteral("auto (default)"));
    // At the defaults and absent from the document: nothing is written.
    QVERIFY(!d.config()["train"].contains("device"));
    QVERIFY(!d.config()["train"].contains("precision"));

    // The GPUs the engine sees.
    d.setDevices({{"cuda:0", "NVIDIA H200, 139.8 GiB"}, {"cuda:1", "NVIDIA H200, 139.8 GiB"}});
    QCOMPARE(itemData(device), (QStringList{"cpu", "cuda:0", "cuda:1"}));
    QCOMPARE(device->itemText(1), QStringLiteral("cuda:0 — NVIDIA H200, 139.8 GiB"));
    QCOMPARE(device->currentData().toString(), QStringLiteral("cpu"));
    // bf16 on the CPU: the engine's message at precision.
    precision->setCurrentIndex(precision->findData("bf16"));
    QCOMPARE(d.errorFor("train.precision"), QStringLiteral("value \"bf16\" needs a CUDA device; the CPU backend computes in \"fp32\""));
    QVERIFY(!d.isValid());
    device->setCurrentIndex(device->findData("cuda:1"));
    QVERIFY(d.isValid());
    QCOMPARE(d.config()["train"]["device"], json("cuda:1"));
    QCOMPARE(d.config()["train"]["precision"], json("bf16"));
    // Back to the defaults: absent again.
    device->setCurrentIndex(0);
    precision->setCurrentIndex(0);
    QVERIFY(!d.config()["train"].contains("device"));
    QVERIFY(!d.config()["train"].contains("precision"));

    // A device the config names that this machine lacks (a node's cuda:3) stays shown and kept.
    json doc = smallDoc();
    doc["train"]["device"] = "cuda:3";
    d.setConfig(doc);
    QCOMPARE(device->currentData().toString(), QStringLiteral("cuda:3"));
    QCOMPARE(device->currentText(), QStringLiteral("cuda:3 (not seen here)"));
    QCOMPARE(d.config()["train"]["device"], json("cuda:3"));
    // An explicit "cpu" of a document is kept as written.
    doc["train"]["device"] = "cpu";
    d.setConfig(doc);
    QCOMPARE(d.config()["train"]["device"], json("cpu"));
  }

  void vocabFollowsTheDataset() {
    ModelDesigner d;
    d.show();
    d.setConfig(smallDoc());
    d.setDatasets(QList<DatasetChoice>{{"/data/byte", "byte", 257}, {"/data/owt-bpe8000", "bpe", 8000}});
    QVERIFY(d.isValid());
    auto* path = qobject_cast<QComboBox*>(d.fieldEditor("data.path"));
    QCOMPARE(path->count(), 2);
    // Choosing the BPE dataset from the list sets vocab_size from its tokenizer.
    path->setCurrentIndex(1);
    QCOMPARE(path->currentText(), QStringLiteral("/data/owt-bpe8000"));
    QCOMPARE(lineText(d, "model.vocab_size"), QStringLiteral("8000"));
    QCOMPARE(d.config()["model"]["vocab_size"], json(8000));
    QCOMPARE(d.config()["data"]["path"], json("/data/owt-bpe8000"));
    QVERIFY(d.isValid());
    // 8000 x 64 more embedding parameters than with 257 ids are in the estimate.
    QCOMPARE(d.lastCheck().config.model.vocab_size, 8000);
    // A vocab_size the dataset's tokenizer does not have is marked where it is typed.
    retype(d.fieldEditor("model.vocab_size"), "257");
    QCOMPARE(d.errorFor("model.vocab_size"),
             QStringLiteral("value 257 differs from the dataset's bpe tokenizer (8000 ids): set 8000, or choose the dataset again"));
    QVERIFY(d.fieldEditor("model.vocab_size")->property("invalid").toBool());
    QVERIFY(!d.isValid());
    // Typing the byte dataset's path sets it back.
    auto* edit = path->lineEdit();
    edit->selectAll();
    QTest::keyClick(edit, Qt::Key_Backspace);
    QTest::keyClicks(edit, "/data/byte");
    QCOMPARE(lineText(d, "model.vocab_size"), QStringLiteral("257"));
    QVERIFY(d.isValid());
    // A dataset just prepared (not in the list yet) with its vocab_size, as the Data page gives it.
    QSignalSpy changed(&d, &ModelDesigner::configChanged);
    d.useDataset("/data/new-bpe500", 500);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(d.config()["data"]["path"], json("/data/new-bpe500"));
    QCOMPARE(d.config()["model"]["vocab_size"], json(500));
    QVERIFY(d.isValid());
    // A registered one by its path alone.
    d.useDataset("/data/owt-bpe8000");
    QCOMPARE(d.config()["model"]["vocab_size"], json(8000));
    // A shown document is not changed behind the user's back: its mismatch is marked instead.
    json doc = smallDoc();
    doc["data"]["path"] = "/data/owt-bpe8000";
    d.setConfig(doc);
    QVERIFY2(d.config() == doc, d.config().dump().c_str());
    QVERIFY(d.errorFor("model.vocab_size").contains("set 8000"));
  }

  void familySelectorShowsItsFields() {
    ModelDesigner d;
    d.resize(1200, 800);
    d.show();
    d.setConfig(smallDoc());
    const QStringList llama_only = {"model.n_kv_head", "model.ffn_multiple_of", "model.rope_theta", "model.rms_norm_eps"};
    auto* family = qobject_cast<QComboBox*>(d.fieldEditor("model.family"));
    QVERIFY(family);
    QCOMPARE(itemData(family), (QStringList{"gpt2", "llama", "qwen2"}));
    QCOMPARE(family->currentData().toString(), QStringLiteral("gpt2"));
    for (const QString& p : llama_only) QVERIFY2(!d.fieldEditor(p)->isVisibleTo(&d), qPrintable(p + " is shown for gpt2"));
    QCOMPARE(qobject_cast<QLineEdit*>(d.fieldEditor("model.d_ff"))->placeholderText(), QStringLiteral("0 (4 × d_model)"));
    // The user picks llama: its fields appear, the d_ff hint names its rule.
    family->setCurrentIndex(family->findData("llama"));
    for (const QString& p : llama_only) QVERIFY2(d.fieldEditor(p)->isVisibleTo(&d), qPrintable(p + " is hidden for llama"));
    QCOMPARE(qobject_cast<QLineEdit*>(d.fieldEditor("model.d_ff"))->placeholderText(),
             QStringLiteral("0 (8/3 × d_model, rounded up to ffn_multiple_of)"));
    QCOMPARE(d.config()["model"]["family"], json("llama"));
    // d_model 64, n_head 2: 3 key/value heads do not divide 2 heads; the engine's message is shown.
    retype(d.fieldEditor("model.n_kv_head"), "3");
    QCOMPARE(d.errorFor("model.n_kv_head"),
             QStringLiteral("value 3 must divide model.n_head = 2 (each key/value head serves n_head / n_kv_head query heads): use one of 1, 2"));
    QVERIFY(!d.isValid());
    retype(d.fieldEditor("model.n_kv_head"), "1");
    retype(d.fieldEditor("model.rope_theta"), "500000");
    QVERIFY2(d.isValid(), qPrintable(QStringList(d.errors().keys()).join(", ")));
    QCOMPARE(d.config()["model"]["n_kv_head"], json(1));
    // Multi-query: 257 x 64 + 2 (128 + 2 x 4096 + 2 x 64 x 32 + 3 x 64 x 256) + 64 (d_ff: floor(512 / 3) = 170 -> 256).
    QCOMPARE(d.lastCheck().plan.n_params, uint64_t(257 * 64 + 2 * (128 + 2 * 4096 + 2 * 64 * 32 + 3 * 64 * 256) + 64));
    // Back to gpt2: the llama fields hide, keep what was typed, and are not written.
    family->setCurrentIndex(family->findData("gpt2"));
    for (const QString& p : llama_only) QVERIFY2(!d.fieldEditor(p)->isVisibleTo(&d), qPrintable(p));
    QVERIFY(!d.config()["model"].contains("n_kv_head"));
    QVERIFY(!d.config()["model"].contains("rope_theta"));
    QVERIFY(d.isValid());
    QCOMPARE(lineText(d, "model.n_kv_head"), QStringLiteral("1"));
    family->setCurrentIndex(family->findData("llama"));
    QCOMPARE(d.config()["model"]["rope_theta"], json(500000));
    // qwen2 (the Llama layout with q/k/v biases) shows the same fields and writes them.
    family->setCurrentIndex(family->findData("qwen2"));
    for (const QString& p : llama_only) QVERIFY2(d.fieldEditor(p)->isVisibleTo(&d), qPrintable(p + " is hidden for qwen2"));
    QCOMPARE(qobject_cast<QLineEdit*>(d.fieldEditor("model.d_ff"))->placeholderText(),
             QStringLiteral("0 (8/3 × d_model, rounded up to ffn_multiple_of)"));
    QCOMPARE(d.config()["model"]["family"], json("qwen2"));
    QCOMPARE(d.config()["model"]["rope_theta"], json(500000));
    QVERIFY(d.isValid());
    // Llama's count plus the biases: 2 layers x (q 64 + k 32 + v 32).
    QCOMPARE(d.lastCheck().plan.n_params, uint64_t(257 * 64 + 2 * (128 + 2 * 4096 + 2 * 64 * 32 + 3 * 64 * 256 + 128) + 64));
  }

  void noDatasetSaysPrepareFirst() {
    ModelDesigner d;
    d.show();
    json doc = smallDoc();
    doc["data"].erase("path");
    d.setConfig(doc);
    QVERIFY(!d.isValid());
    QCOMPARE(d.errorFor("data.path"), QStringLiteral("missing: prepare a dataset first (Data page), or choose one here"));
    auto* path = qobject_cast<QComboBox*>(d.fieldEditor("data.path"));
    QVERIFY(path->currentText().isEmpty());
    QCOMPARE(path->lineEdit()->placeholderText(), QStringLiteral("prepare a dataset first (Data page)"));
    QVERIFY(!d.config()["data"].contains("path"));
    QVERIFY(d.findChild<QLabel*>("error_data.path")->isVisible());
    // The estimates do not wait for a dataset.
    QVERIFY(d.lastCheck().has_plan);
  }
};

QTEST_MAIN(TestDesignerFields)
#include "test_designer_fields.moc"
