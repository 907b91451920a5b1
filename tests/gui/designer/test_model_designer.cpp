// ModelDesigner driven with QTest: typing updates the estimates to hand-computed figures, an
// invalid value is marked at its field with the engine's message and unmarked when fixed,
// presets fill the model fields, save/load round-trips, broken files leave the form alone.
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/metrics/sysinfo.h"
#include "gui/designer/model_designer.h"

using nlohmann::json;
using td::gui::ModelDesigner;

namespace {

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

// Replaces the text of a line edit the way a user does: select all, erase, type.
void retype(QWidget* editor, const QString& text) {
  auto* edit = qobject_cast<QLineEdit*>(editor);
  QVERIFY(edit);
  edit->setFocus();
  edit->selectAll();
  QTest::keyClick(edit, Qt::Key_Backspace);
  QTest::keyClicks(edit, text);
}

}  // namespace

class TestModelDesigner : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  QString text(ModelDesigner& d, const char* name) {
    auto* label = d.findChild<QLabel*>(QString::fromLatin1(name));
    return label ? label->text() : QStringLiteral("<no label %1>").arg(name);
  }
  QString editText(ModelDesigner& d, const char* path) {
    auto* edit = qobject_cast<QLineEdit*>(d.fieldEditor(QString::fromLatin1(path)));
    return edit ? edit->text() : QStringLiteral("<no editor>");
  }
  // The demo's training settings with GPT-2 small, 2 threads, a dataset.
  json gpt2Doc() {
    return {{"model", {{"vocab_size", 50257}, {"seq_len", 1024}, {"n_layer", 12}, {"n_head", 12}, {"d_model", 768}}},
            {"train", {{"steps", 1000}, {"micro_batch", 8}, {"threads", 2}, {"beta1", 0.8}}},
            {"data", {{"path", "/data/fineweb"}}}};
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    // A known calibration: this CPU at 2 threads = 1e11 FLOP/s, the engine's share of it 0.5.
    qputenv("XDG_CACHE_HOME", dir_.path().toUtf8());
    QDir().mkpath(dir_.filePath("traindeck"));
    const std::string key = td::cpu_model() + " | threads=2";
    writeFile(dir_.filePath("traindeck/calibration.json"),
              QByteArray::fromStdString(json{{key, 1e11}, {key + " | engine_mfu", 0.5}}.dump()));
  }

  void typingUpdatesTheEstimates() {
    ModelDesigner d;
    d.show();
    d.setConfig(gpt2Doc());
    QVERIFY(d.isValid());
    QCOMPARE(text(d, "estimate_params"), QStringLiteral("124,439,808 (124.4 M)"));
    // 1e11 x 0.5 / 855,166,464 FLOP per token (6 x 123,653,376 + 12 x 12 x 768 x 1024) = 58.47.
    QCOMPARE(text(d, "estimate_tokens_per_s"), QStringLiteral("≈ 58.47 tokens/s"));
    // 1000 steps x 8 x 1024 tokens / 58.468 tokens/s = 140,110 s.
    QCOMPARE(text(d, "estimate_run_time"), QStringLiteral("≈ 1 d 14 h for 1000 steps"));
    QCOMPARE(text(d, "estimate_weights"), QStringLiteral("474.7 MiB"));  // 4 x 124,439,808 bytes
    QCOMPARE(text(d, "estimate_optimizer"), QStringLiteral("949.4 MiB"));
    QSignalSpy changed(&d, &ModelDesigner::configChanged);
    retype(d.fieldEditor("model.n_layer"), "24");
    QVERIFY(changed.count() >= 2);  // one per keystroke
    // 12 more blocks of 12 C^2 + 13 C = 7,087,872 parameters each: 124,439,808 + 85,054,464.
    QCOMPARE(text(d, "estimate_params"), QStringLiteral("209,494,272 (209.5 M)"));
    QCOMPARE(d.config()["model"]["n_layer"], json(24));
    QVERIFY(d.findChild<QLabel*>("estimate_params")->isEnabled());
  }

  void invalidValueIsMarkedAtItsField() {
    ModelDesigner d;
    d.show();
    d.setConfig(gpt2Doc());
    QSignalSpy validity(&d, &ModelDesigner::validityChanged);
    QWidget* n_layer = d.fieldEditor("model.n_layer");
    auto* error = d.findChild<QLabel*>("error_model.n_layer");
    QVERIFY(error);
    QVERIFY(!n_layer->property("invalid").toBool());
    QVERIFY(error->isHidden());

    retype(n_layer, "0");
    const QString msg = QStringLiteral("value 0 is out of range: allowed [1, 1024]");
    QVERIFY(n_layer->property("invalid").toBool());
    QCOMPARE(error->text(), msg);
    QVERIFY(error->isVisible());
    QVERIFY(n_layer->toolTip().startsWith(msg));
    QCOMPARE(d.errorFor("model.n_layer"), msg);
    QVERIFY(!d.isValid());
    QCOMPARE(validity.count(), 1);
    QCOMPARE(validity.at(0).at(0).toBool(), false);
    // The estimates keep the last valid plan, greyed, and say why. The last valid one was the
    // erased field (the engine's default n_layer = 6): 124,439,808 - 6 x 7,087,872.
    QCOMPARE(text(d, "estimate_params"), QStringLiteral("81,912,576 (81.9 M)"));
    QVERIFY(!d.findChild<QLabel*>("estimate_params")->isEnabled());
    auto* note = d.findChild<QLabel*>("estimate_note");
    QVERIFY(note->isVisible());
    QVERIFY(note->text().contains("Fix the marked fields"));
    // Only that field is marked.
    QVERIFY(!d.fieldEditor("model.n_head")->property("invalid").toBool());

    retype(n_layer, "8");
    QVERIFY(!n_layer->property("invalid").toBool());
    QVERIFY(error->isHidden());
    QVERIFY(d.errorFor("model.n_layer").isEmpty());
    QVERIFY(!n_layer->toolTip().startsWith(msg));
    QVERIFY(d.isValid());
    QCOMPARE(validity.count(), 2);
    QVERIFY(d.findChild<QLabel*>("estimate_params")->isEnabled());
    QVERIFY(note->isHidden());
    // 124,439,808 - 4 x 7,087,872.
    QCOMPARE(text(d, "estimate_params"), QStringLiteral("96,088,320 (96.1 M)"));
  }

  void headsThatDoNotDivideMarkBothFields() {
    ModelDesigner d;
    d.show();
    d.setConfig(gpt2Doc());
    retype(d.fieldEditor("model.n_head"), "5");
    const QString msg = QStringLiteral("value 768 must be a multiple of model.n_head = 5");
    QCOMPARE(d.errorFor("model.n_head"), msg);
    QCOMPARE(d.errorFor("model.d_model"), msg);
    QVERIFY(d.fieldEditor("model.n_head")->property("invalid").toBool());
    QVERIFY(d.fieldEditor("model.d_model")->property("invalid").toBool());
    retype(d.fieldEditor("model.d_model"), "640");  // 5 x 128
    QVERIFY(d.isValid());
    QVERIFY(!d.fieldEditor("model.n_head")->property("invalid").toBool());
    QVERIFY(!d.fieldEditor("model.d_model")->property("invalid").toBool());
  }

  void textIsGivenToTheEngineAsTyped() {
    ModelDesigner d;
    d.setConfig(gpt2Doc());
    retype(d.fieldEditor("train.lr"), "fast");
    QCOMPARE(d.errorFor("train.lr"), QStringLiteral("expected a number in (0, 10], got \"fast\""));
    retype(d.fieldEditor("train.lr"), "3e-4");
    QVERIFY(d.isValid());
    QCOMPARE(d.config()["train"]["lr"], json(3e-4));
    // Empty means the engine's default, shown as the placeholder.
    retype(d.fieldEditor("train.lr"), "");
    QVERIFY(!d.config()["train"].contains("lr"));
    QCOMPARE(qobject_cast<QLineEdit*>(d.fieldEditor("train.lr"))->placeholderText(), QStringLiteral("0.0006"));
    QVERIFY(d.isValid());
    // Tooltips carry the engine's range.
    QVERIFY(d.fieldEditor("model.n_head")->toolTip().contains("integer in [1, 1024]"));
  }

  void datasetIsRequiredButDoesNotStopEstimates() {
    ModelDesigner d;
    d.show();
    json doc = gpt2Doc();
    doc.erase("data");
    d.setConfig(doc);
    QVERIFY(!d.isValid());
    QCOMPARE(d.errorFor("data.path"), QStringLiteral("missing: prepare a dataset first (Data page), or choose one here"));
    QVERIFY(d.fieldEditor("data.path")->property("invalid").toBool());
    QVERIFY(d.findChild<QLabel*>("estimate_params")->isEnabled());
    d.setDatasets(QList<td::gui::DatasetChoice>{{"/data/a", "byte", 0}, {"/data/b", "byte", 0}});  // vocab unknown
    auto* combo = qobject_cast<QComboBox*>(d.fieldEditor("data.path"));
    QCOMPARE(combo->count(), 2);
    QVERIFY(combo->currentText().isEmpty());
    QTest::keyClicks(combo->lineEdit(), "/data/b");
    QVERIFY(d.isValid());
    QCOMPARE(d.config()["data"]["path"], json("/data/b"));
  }

  void presetsFillTheModelFields() {
    ModelDesigner d;
    d.setConfig(gpt2Doc());
    QCOMPARE(d.presetIds(), (QStringList{"tiny", "small", "gpt2-124m", "gpt2-350m", "gpt2-774m", "llama-tiny", "smollm2-135m",
                                         "llama-3.2-1b", "qwen2.5-0.5b"}));
    QVERIFY(d.applyPreset("gpt2-350m"));
    QCOMPARE(editText(d, "model.n_layer"), QStringLiteral("24"));
    QCOMPARE(editText(d, "model.n_head"), QStringLiteral("16"));
    QCOMPARE(editText(d, "model.d_model"), QStringLiteral("1024"));
    QCOMPARE(editText(d, "model.vocab_size"), QStringLiteral("50257"));
    QCOMPARE(editText(d, "train.steps"), QStringLiteral("1000"));  // training stays
    // GPT-2 medium: 50257 x 1024 + 1024 x 1024 + 24 (12 x 1024^2 + 13 x 1024) + 2 x 1024.
    QCOMPARE(text(d, "estimate_params"), QStringLiteral("354,823,168 (354.8 M)"));
    QVERIFY(!d.applyPreset("gpt5"));
    // Through the combo, as a user picks one: the first preset after the placeholder is tiny.
    auto* combo = d.findChild<QComboBox*>("presets");
    combo->setFocus();
    QTest::keyClick(combo, Qt::Key_Down);
    QCOMPARE(editText(d, "model.n_layer"), QStringLiteral("4"));
    QCOMPARE(editText(d, "model.d_model"), QStringLiteral("128"));
    QCOMPARE(editText(d, "model.vocab_size"), QStringLiteral("257"));
    QCOMPARE(text(d, "estimate_params"), QStringLiteral("842,624 (842.6 k)"));
    QCOMPARE(combo->currentIndex(), 0);
  }

  void llamaPresetsSwitchTheFamily() {
    ModelDesigner d;
    d.resize(1200, 800);
    d.show();
    d.setConfig(gpt2Doc());
    QVERIFY(!d.fieldEditor("model.n_kv_head")->isVisibleTo(&d));
    QVERIFY(d.applyPreset("smollm2-135m"));
    QCOMPARE(qobject_cast<QComboBox*>(d.fieldEditor("model.family"))->currentData().toString(), QStringLiteral("llama"));
    QVERIFY(d.fieldEditor("model.n_kv_head")->isVisibleTo(&d));
    QCOMPARE(editText(d, "model.n_kv_head"), QStringLiteral("3"));
    QCOMPARE(editText(d, "model.rope_theta"), QStringLiteral("100000"));
    // SmolLM2-135M's published count: 49152 x 576 + 30 x 3540096 + 576.
    QCOMPARE(text(d, "estimate_params"), QStringLiteral("134,515,008 (134.5 M)"));
    // KV cache of 2048 tokens in bf16: 2 x 30 x 2048 x 3 x 64 x 2 bytes = 45.0 MiB.
    QVERIFY2(text(d, "estimate_kv_cache").startsWith(QStringLiteral("45.0")), qPrintable(text(d, "estimate_kv_cache")));
    // Llama trains like GPT-2: the note has nothing to say about the family.
    QVERIFY2(!text(d, "estimate_note").contains(QStringLiteral("Llama")), qPrintable(text(d, "estimate_note")));
    // Back to a GPT-2 preset: the llama fields are hidden and not written.
    QVERIFY(d.applyPreset("gpt2-124m"));
    QVERIFY(!d.fieldEditor("model.n_kv_head")->isVisibleTo(&d));
    QVERIFY(!d.config()["model"].contains("n_kv_head"));
    QCOMPARE(text(d, "estimate_params"), QStringLiteral("124,439,808 (124.4 M)"));
    QVERIFY(d.applyPreset("llama-3.2-1b"));
    QCOMPARE(text(d, "estimate_params"), QStringLiteral("1,235,814,400 (1.24 G)"));
    // Qwen2.5-0.5B's shape: family qwen2 (the Llama fields shown), 494,032,768 parameters.
    QVERIFY(d.applyPreset("qwen2.5-0.5b"));
    QCOMPARE(qobject_cast<QComboBox*>(d.fieldEditor("model.family"))->currentData().toString(), QStringLiteral("qwen2"));
    QVERIFY(d.fieldEditor("model.n_kv_head")->isVisibleTo(&d));
    QCOMPARE(text(d, "estimate_params"), QStringLiteral("494,032,768 (494.0 M)"));
  }

  void saveThenLoadRoundTrips() {
    ModelDesigner d;
    d.setConfig(gpt2Doc());
    retype(d.fieldEditor("train.lr"), "0.0003");
    qobject_cast<QCheckBox*>(d.fieldEditor("model.tie_embeddings"))->setChecked(false);
    const json saved = d.config();
    const QString path = dir_.filePath("run.json");
    QCOMPARE(d.saveFile(path), QString());
    QCOMPARE(readJson(path), saved);
    QCOMPARE(saved["train"]["beta1"], json(0.8));  // a field the form does not show is kept

    ModelDesigner e;
    QSignalSpy changed(&e, &ModelDesigner::configChanged);
    QCOMPARE(e.loadFile(path), QString());
    QCOMPARE(changed.count(), 1);
    QCOMPARE(e.config(), saved);
    QVERIFY(e.isValid());
    QCOMPARE(editText(e, "train.lr"), QStringLiteral("0.0003"));
    QVERIFY(!qobject_cast<QCheckBox*>(e.fieldEditor("model.tie_embeddings"))->isChecked());
    // 124,439,808 + an untied lm_head of 50257 x 768.
    QCOMPARE(text(e, "estimate_params"), QStringLiteral("163,037,184 (163.0 M)"));
  }

  void relativeDatasetIsTakenFromTheFilesFolder() {
    QDir().mkpath(dir_.filePath("configs"));
    const QString path = dir_.filePath("configs/demo.json");
    json doc = gpt2Doc();
    doc["data"]["path"] = "../data/fortunes";
    writeFile(path, QByteArray::fromStdString(doc.dump()));
    ModelDesigner d;
    QCOMPARE(d.loadFile(path), QString());
    QCOMPARE(d.config()["data"]["path"], json(QDir::cleanPath(dir_.filePath("data/fortunes")).toStdString()));
  }

  void brokenFilesLeaveTheFormAlone() {
    ModelDesigner d;
    d.setConfig(gpt2Doc());
    const json before = d.config();
    QSignalSpy changed(&d, &ModelDesigner::configChanged);

    const QString broken = dir_.filePath("broken.json");
    writeFile(broken, "{ \"model\": { \"n_layer\": 4, }\n");
    QString err = d.loadFile(broken);
    QVERIFY2(err.contains("not valid JSON") && err.contains("broken.json") && err.contains("line 1"), qPrintable(err));
    QCOMPARE(d.config(), before);

    const QString invalid = dir_.filePath("invalid.json");
    json bad = gpt2Doc();
    bad["model"]["n_layer"] = 0;
    writeFile(invalid, QByteArray::fromStdString(bad.dump()));
    err = d.loadFile(invalid);
    QVERIFY2(err.contains("model.n_layer: value 0 is out of range: allowed [1, 1024]"), qPrintable(err));
    QCOMPARE(d.config(), before);

    err = d.loadFile(dir_.filePath("absent.json"));
    QVERIFY2(err.contains("Cannot open") && err.contains("absent.json"), qPrintable(err));
    QCOMPARE(d.config(), before);
    QCOMPARE(changed.count(), 0);
    QVERIFY(d.isValid());
  }

  void invalidConfigIsNotSaved() {
    ModelDesigner d;
    d.setConfig(gpt2Doc());
    retype(d.fieldEditor("model.n_layer"), "0");
    const QString path = dir_.filePath("not-saved.json");
    const QString err = d.saveFile(path);
    QVERIFY2(err.contains("model.n_layer"), qPrintable(err));
    QVERIFY(!QFile::exists(path));
  }

  void uncalibratedThreadsOfferCalibration() {
    ModelDesigner d;
    d.show();
    json doc = gpt2Doc();
    doc["train"]["threads"] = 3;  // no cache entry for 3 threads
    d.setConfig(doc);
    QCOMPARE(text(d, "estimate_tokens_per_s"), QStringLiteral("not calibrated"));
    QVERIFY(d.findChild<QPushButton*>("calibrate_button")->isVisible());
    retype(d.fieldEditor("train.threads"), "2");
    QCOMPARE(text(d, "estimate_tokens_per_s"), QStringLiteral("≈ 58.47 tokens/s"));
    QVERIFY(d.findChild<QPushButton*>("calibrate_button")->isHidden());
  }
};

QTEST_MAIN(TestModelDesigner)
#include "test_model_designer.moc"
