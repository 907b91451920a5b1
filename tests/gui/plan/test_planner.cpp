// Planner: the engine's validation keyed per field, the plan of known shapes (GPT-2 small's
// published parameter count, FLOPs per token by hand), estimates from a calibration cache,
// calibrate() through a fake and the real engine; and the number formats the designer shows.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/common/error.h"
#include "engine/metrics/calibrate.h"
#include "engine/metrics/sysinfo.h"
#include "gui/plan/format.h"
#include "gui/plan/planner.h"

using nlohmann::json;
using td::gui::PlanCheck;
using td::gui::Planner;

namespace {

json presetModel(const char* id) {
  QFile f(QStringLiteral(TD_SOURCE_DIR "/resources/presets/%1.json").arg(id));
  if (!f.open(QIODevice::ReadOnly)) return json();
  return json::parse(f.readAll().toStdString())["model"];
}

// A small shape: V = 257, T = 32, L = 2, C = 64, NH = 4, F = 4 C = 256.
json smallDoc() {
  return {{"model", {{"vocab_size", 257}, {"seq_len", 32}, {"n_layer", 2}, {"n_head", 4}, {"d_model", 64}}},
          {"train", {{"micro_batch", 4}, {"grad_accum", 2}, {"steps", 100}, {"threads", 2}}},
          {"data", {{"path", "/data/set"}}}};
}

// The engine's own message for a document, without "path: ".
QString engineMessage(const json& doc, std::string* path) {
  try {
    td::parse_config(doc);
  } catch (const td::ConfigError& e) {
    *path = e.path();
    return QString::fromStdString(std::string(e.what()).substr(e.path().size() + 2));
  }
  return {};
}

void writeFile(const QString& path, const QByteArray& text) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  f.write(text);
}

QString cacheKey(int threads) {
  return QString::fromStdString(td::cpu_model()) + QStringLiteral(" | threads=%1").arg(threads);
}

}  // namespace

class TestPlanner : public QObject {
  Q_OBJECT
  QTemporaryDir cache_;

  // The calibration cache the engine reads: $XDG_CACHE_HOME/traindeck/calibration.json.
  void writeCache(const json& j) {
    QDir().mkpath(cache_.filePath("traindeck"));
    writeFile(cache_.filePath("traindeck/calibration.json"), QByteArray::fromStdString(j.dump()));
  }

 private slots:
  void initTestCase() {
    QVERIFY(cache_.isValid());
    qputenv("XDG_CACHE_HOME", cache_.path().toUtf8());
  }
  void init() { QFile::remove(cache_.filePath("traindeck/calibration.json")); }

  void gpt2SmallHasThePublishedCount() {
    json doc = {{"model", presetModel("gpt2-124m")}, {"data", {{"path", "x"}}}};
    Planner planner;
    PlanCheck c = planner.check(doc);
    QVERIFY2(c.valid, qPrintable(QStringList(c.errors.keys()).join(',')));
    QVERIFY(c.has_plan);
    // Radford et al. 2019 / Hugging Face gpt2: 124,439,808 with the LM head tied to wte.
    QCOMPARE(c.plan.n_params, uint64_t(124439808));
    // Without wte (50257 x 768 = 38,597,376) and wpe (1024 x 768 = 786,432).
    QCOMPARE(c.plan.n_params_non_embedding, uint64_t(85056000));
    // 6 (N - wpe) + 12 L C T = 6 x 123,653,376 + 12 x 12 x 768 x 1024.
    QCOMPARE(c.plan.flops_per_token, 855166464.0);
  }

  void smallShapeByHand() {
    Planner planner;
    PlanCheck c = planner.check(smallDoc());
    QVERIFY(c.valid);
    // N = V C + T C + L (12 C^2 + 13 C) + 2 C = 16,448 + 2,048 + 2 x 50,000 + 128 = 118,592.
    QCOMPARE(c.plan.n_params, uint64_t(118592));
    // 6 (N - T C) + 12 L C T = 6 x 116,544 + 12 x 2 x 64 x 32 = 699,264 + 49,152.
    QCOMPARE(c.plan.flops_per_token, 748416.0);
    QCOMPARE(c.plan.tokens_per_step, uint64_t(4 * 2 * 32));
    QCOMPARE(c.plan.weights_bytes, uint64_t(4 * 118592));
    QCOMPARE(c.plan.grads_bytes, uint64_t(4 * 118592));
    QCOMPARE(c.plan.optimizer_bytes, uint64_t(8 * 118592));
    QCOMPARE(c.config.model.d_ff, 256);  // 0 means 4 d_model
    QCOMPARE(c.threads, 2);
  }

  void divisibilityIsKeyedByTheFieldsItNames() {
    json doc = smallDoc();
    doc["model"]["d_model"] = 768;
    doc["model"]["n_head"] = 5;
    std::string engine_path;
    const QString engine_msg = engineMessage(doc, &engine_path);
    QCOMPARE(engine_path, std::string("model.d_model"));
    QCOMPARE(engine_msg, QStringLiteral("value 768 must be a multiple of model.n_head = 5"));
    QMap<QString, QString> errors = Planner::fieldErrors(doc);
    QCOMPARE(errors.size(), 2);
    QCOMPARE(errors.value("model.d_model"), engine_msg);
    QCOMPARE(errors.value("model.n_head"), engine_msg);
    PlanCheck c = Planner().check(doc);
    QVERIFY(!c.valid);
    QVERIFY(!c.has_plan);
  }

  // train.tensor_parallel's rules (tp_config_problem) are the trainer's words, keyed by the
  // field: the heads and d_ff must be multiples of the degree.
  void tensorParallelIsCheckedAsTheTrainerChecksIt() {
    json doc = smallDoc();
    doc["train"]["tensor_parallel"] = 3;
    auto errors = Planner::fieldErrors(doc);
    QCOMPARE(errors.size(), 1);
    QCOMPARE(errors.value("train.tensor_parallel"),
             QStringLiteral("value 3: model.n_head (4) is not a multiple of train.tensor_parallel (3): each rank computes n_head / "
                            "tensor_parallel attention heads; choose a degree that divides them"));
    PlanCheck c = Planner().check(doc);
    QVERIFY(!c.valid && !c.has_plan);
    doc["train"]["tensor_parallel"] = 2;
    QVERIFY(Planner::fieldErrors(doc).isEmpty());
    doc["train"]["device"] = "cuda";  // bf16 trains on a GPU: with tensor parallelism too
    doc["train"]["precision"] = "bf16";
    QVERIFY(Planner::fieldErrors(doc).isEmpty());
  }

  void crossFieldRulesDoNotBlameValidPairs() {
    // Alone with its default partner each would fail (n_head 6 does not divide 100; default lr
    // 6e-4 < min_lr 5): together they are valid.
    json doc = smallDoc();
    doc["model"]["d_model"] = 100;
    doc["model"]["n_head"] = 5;
    doc["train"]["lr"] = 8;
    doc["train"]["min_lr"] = 5;
    QVERIFY(Planner::fieldErrors(doc).isEmpty());
    doc["train"].erase("lr");
    auto errors = Planner::fieldErrors(doc);
    QCOMPARE(errors.value("train.min_lr"), QStringLiteral("value 5.000000 must be at most train.lr = 0.000600"));
    QCOMPARE(errors.value("train.lr"), errors.value("train.min_lr"));
    QCOMPARE(errors.size(), 2);
  }

  void everyInvalidFieldAtOnce() {
    json doc = smallDoc();
    doc["model"]["n_layer"] = 0;
    doc["train"]["lr"] = -1;
    doc["train"]["micro_batch"] = "abc";
    doc["model"]["foo"] = 1;
    doc["cluster"] = json::object();
    auto errors = Planner::fieldErrors(doc);
    QCOMPARE(errors.value("model.n_layer"), QStringLiteral("value 0 is out of range: allowed [1, 1024]"));
    QCOMPARE(errors.value("train.lr"), QStringLiteral("value -1 is out of range: allowed number in (0, 10]"));
    QCOMPARE(errors.value("train.micro_batch"), QStringLiteral("expected an integer in [1, 65536], got \"abc\""));
    QCOMPARE(errors.value("model.foo"), QStringLiteral("unknown field (see docs/config.md for the fields of 'model')"));
    QCOMPARE(errors.value("cluster"), QStringLiteral("unknown section: allowed sections are model, train, data"));
    QCOMPARE(errors.size(), 5);
    // Each message is the engine's: the document with only that field wrong says the same.
    json one = smallDoc();
    one["model"]["n_layer"] = 0;
    std::string p;
    QCOMPARE(engineMessage(one, &p), errors.value("model.n_layer"));
    QCOMPARE(p, std::string("model.n_layer"));
  }

  void missingDatasetStillPlans() {
    json doc = smallDoc();
    doc.erase("data");
    PlanCheck c = Planner().check(doc);
    QCOMPARE(c.errors.keys(), QStringList{"data.path"});
    QVERIFY(c.errors.value("data.path").startsWith("missing"));
    QVERIFY(!c.valid);
    QVERIFY(c.has_plan);
    QCOMPARE(c.plan.n_params, uint64_t(118592));
  }

  void notAnObject() {
    auto errors = Planner::fieldErrors(json::array());
    QCOMPARE(errors.keys(), QStringList{"(document)"});
    json doc = smallDoc();
    doc["model"] = 3;
    errors = Planner::fieldErrors(doc);
    QCOMPARE(errors.value("model"), QStringLiteral("expected a JSON object, got 3"));
  }

  void estimatesFromTheCalibrationCache() {
    Planner planner;
    PlanCheck c = planner.check(smallDoc());
    QVERIFY(!c.peak_flops);
    QCOMPARE(c.tokens_per_s, 0.0);
    writeCache({{cacheKey(2).toStdString(), 1e11}});
    planner.reloadCalibration();
    c = planner.check(smallDoc());
    QCOMPARE(*c.peak_flops, 1e11);
    QCOMPARE(c.mfu, 0.5);
    // 1e11 FLOP/s x 0.5 / 748,416 FLOP per token; 100 steps x 256 tokens / that.
    QCOMPARE(c.tokens_per_s, 5e10 / 748416.0);
    QCOMPARE(c.run_seconds, 100.0 * 256.0 / (5e10 / 748416.0));
    QSignalSpy changed(&planner, &Planner::estimatesChanged);
    planner.setMeasuredMfu(0.25);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(planner.check(smallDoc()).tokens_per_s, 2.5e10 / 748416.0);
    QVERIFY(planner.check(smallDoc()).mfu_basis == td::gui::MfuBasis::Runs);
    planner.setMeasuredMfu(1.5);  // not an MFU: back to the default
    QCOMPARE(planner.mfu(), Planner::kDefaultCpuMfu);
    QVERIFY(planner.check(smallDoc()).mfu_basis == td::gui::MfuBasis::Assumed);
    // Calibrated: the engine's measured share of the peak is the MFU before any run.
    writeCache({{cacheKey(2).toStdString(), 1e11}, {(cacheKey(2) + " | engine_mfu").toStdString(), 0.23}});
    planner.reloadCalibration();
    c = planner.check(smallDoc());
    QCOMPARE(c.mfu, 0.23);
    QVERIFY(c.mfu_basis == td::gui::MfuBasis::Calibration);
    QCOMPARE(c.tokens_per_s, 1e11 * 0.23 / 748416.0);
    // A run measured here beats it.
    planner.setMeasuredMfu(0.31);
    QCOMPARE(planner.check(smallDoc()).mfu, 0.31);
    planner.setMeasuredMfu(0);
    QCOMPARE(planner.check(smallDoc()).mfu, 0.23);
    // Another thread count has no entry.
    json doc = smallDoc();
    doc["train"]["threads"] = 3;
    QVERIFY(!planner.check(doc).peak_flops);
  }

  void engineShareIsCachedBesideThePeak() {
    QVERIFY(!td::cached_engine_mfu(2));
    td::store_peak_flops(2, 1e11);
    td::store_engine_mfu(2, 0.3);
    QCOMPARE(*td::cached_engine_mfu(2), 0.3);
    QCOMPARE(*td::cached_peak_flops(2), 1e11);  // the peak is not touched
    td::store_engine_mfu(2, 0.2);                // a loaded machine's lower measurement
    QCOMPARE(*td::cached_engine_mfu(2), 0.3);
    td::store_engine_mfu(2, 1.5);  // not an MFU
    td::store_engine_mfu(2, 0);
    QCOMPARE(*td::cached_engine_mfu(2), 0.3);
    td::store_engine_mfu(2, 0.4);
    QCOMPARE(*td::cached_engine_mfu(2), 0.4);
    QVERIFY(!td::cached_engine_mfu(3));  // per thread count
    // A hand-edited cache with a share above 1 is not believed.
    writeCache({{(cacheKey(2) + " | engine_mfu").toStdString(), 1.7}});
    QVERIFY(!td::cached_engine_mfu(2));
  }

  void fieldDocsCarryTheEngineRanges() {
    QCOMPARE(Planner::fieldDoc("model.n_head").range, QStringLiteral("integer in [1, 1024]"));
    QCOMPARE(Planner::fieldDoc("train.lr").default_value, QStringLiteral("0.0006"));
    QVERIFY(Planner::fieldDoc("model.nope").path.isEmpty());
  }

  void calibrateThroughAFakeEngine() {
    // Stands in for `traindeck-engine calibrate --threads 3`: writes the cache entry.
    const QString script = cache_.filePath("fake-engine.sh");
    const json cache = {{cacheKey(3).toStdString(), 2e11}};
    writeFile(script, "#!/bin/sh\n[ \"$1 $2 $3\" = \"calibrate --threads 3\" ] || exit 7\nmkdir -p \"$XDG_CACHE_HOME/traindeck\"\n"
                      "cat > \"$XDG_CACHE_HOME/traindeck/calibration.json\" <<'EOF'\n" +
                          QByteArray::fromStdString(cache.dump()) + "\nEOF\n");
    QFile::setPermissions(script, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    Planner planner;
    planner.setEngineExecutable(script);
    QVERIFY(!planner.peakFlops(3));
    QSignalSpy done(&planner, &Planner::calibrationFinished);
    QSignalSpy failed(&planner, &Planner::calibrationFailed);
    planner.calibrate(3);
    QVERIFY(planner.isCalibrating());
    QVERIFY(done.wait(10000));
    QCOMPARE(failed.count(), 0);
    QCOMPARE(done.at(0).at(0).toDouble(), 2e11);
    QCOMPARE(done.at(0).at(1).toInt(), 3);
    QVERIFY(!planner.isCalibrating());
    QCOMPARE(*planner.peakFlops(3), 2e11);
  }

  void calibrationErrorsSayWhy() {
    const QString script = cache_.filePath("failing-engine.sh");
    writeFile(script, "#!/bin/sh\necho 'sgemm: cannot allocate' >&2\nexit 2\n");
    QFile::setPermissions(script, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    Planner planner;
    QSignalSpy failed(&planner, &Planner::calibrationFailed);
    planner.setEngineExecutable(script);
    planner.calibrate(1);
    QVERIFY(failed.wait(10000));
    QString msg = failed.at(0).at(0).toString();
    QVERIFY2(msg.contains("exit code 2") && msg.contains("sgemm: cannot allocate"), qPrintable(msg));

    planner.setEngineExecutable(cache_.filePath("no-such-engine"));
    planner.calibrate(1);
    QVERIFY(failed.wait(10000));
    msg = failed.at(1).at(0).toString();
    QVERIFY2(msg.contains("Could not start the engine") && msg.contains("no-such-engine"), qPrintable(msg));

    planner.setEngineExecutable(QString());
    planner.calibrate(1);
    QVERIFY(failed.wait(10000));
    msg = failed.at(2).at(0).toString();
    QVERIFY2(msg.contains("TRAINDECK_ENGINE"), qPrintable(msg));
  }

  void calibrateWithTheRealEngine() {
    if (!QFile::exists(TD_ENGINE_EXE)) QSKIP("traindeck-engine is not built");
    Planner planner;
    planner.setEngineExecutable(TD_ENGINE_EXE);
    QSignalSpy done(&planner, &Planner::calibrationFinished);
    QSignalSpy failed(&planner, &Planner::calibrationFailed);
    planner.calibrate(1);
    QVERIFY2(done.wait(60000), failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
    // One core's sgemm reaches well above 1 GFLOP/s on any x86-64 CPU of the last 15 years.
    QVERIFY(done.at(0).at(0).toDouble() > 1e9);
    QCOMPARE(*planner.peakFlops(1), done.at(0).at(0).toDouble());
    // The engine's share of that peak was measured too, and is the MFU of the next estimate.
    const std::optional<double> share = planner.engineMfu(1);
    QFile cache(cache_.filePath("traindeck/calibration.json"));
    QVERIFY2(share.has_value(), qPrintable("no engine share in the calibration cache: " +
                                           (cache.open(QIODevice::ReadOnly) ? QString::fromUtf8(cache.readAll()) : QString("(none)"))));
    QVERIFY2(*share > 0.01 && *share <= 1.0, qPrintable(QString::number(*share)));
    json doc = smallDoc();
    doc["train"]["threads"] = 1;
    const PlanCheck c = planner.check(doc);
    QCOMPARE(c.mfu, *share);
    QVERIFY(c.mfu_basis == td::gui::MfuBasis::Calibration);
    QCOMPARE(c.tokens_per_s, *planner.peakFlops(1) * *share / c.plan.flops_per_token);
  }

  void devicesOfTheRealEngine() {
    if (!QFile::exists(TD_ENGINE_EXE)) QSKIP("traindeck-engine is not built");
    Planner planner;
    planner.setEngineExecutable(TD_ENGINE_EXE);
    QSignalSpy found(&planner, &Planner::devicesFound);
    planner.probeDevices();
    QVERIFY(found.wait(60000));
    const auto devices = found.at(0).at(0).value<QList<td::gui::EngineDevice>>();
    QVERIFY(!devices.isEmpty());
    QCOMPARE(devices.front().device, QStringLiteral("cpu"));
    QCOMPARE(devices.front().name, QString::fromStdString(td::cpu_model()));
    for (int i = 1; i < devices.size(); ++i) {
      QCOMPARE(devices[i].device, QStringLiteral("cuda:%1").arg(i - 1));
      QVERIFY(devices[i].memory_bytes > 0);
    }
    // Without a GPU the engine says why (no driver, no module, ...).
    if (devices.size() == 1) QVERIFY(!found.at(0).at(1).toString().isEmpty());
  }

  void parsesTheEngineDeviceList() {
    QString error, cuda_error;
    const auto list = td::gui::parseEngineDevices(
        R"j({"devices":[{"device":"cpu","name":"AMD EPYC","cores":16},)j"
        R"j({"device":"cuda:0","name":"NVIDIA H200","memory_bytes":150081716224,"compute_capability":90}],)j"
        R"j("cuda_error":"cuda:1 asked for but this machine has 1 GPU (cuda:0)"})j",
        &error, &cuda_error);
    QVERIFY(error.isEmpty());
    QCOMPARE(list.size(), 2);
    QCOMPARE(list[1].device, QStringLiteral("cuda:0"));
    QCOMPARE(list[1].name, QStringLiteral("NVIDIA H200"));
    QCOMPARE(list[1].memory_bytes, quint64(150081716224));
    QCOMPARE(list[1].compute_capability, 90);
    QCOMPARE(cuda_error, QStringLiteral("cuda:1 asked for but this machine has 1 GPU (cuda:0)"));
    QVERIFY(td::gui::parseEngineDevices("step 1/10", &error).isEmpty());
    QVERIFY(error.contains("not the JSON"));
  }

  void formats() {
    QCOMPARE(td::gui::formatCount(124439808), QStringLiteral("124,439,808"));
    QCOMPARE(td::gui::formatCount(999), QStringLiteral("999"));
    QCOMPARE(td::gui::formatCount(1000), QStringLiteral("1,000"));
    QCOMPARE(td::gui::formatCount(0), QStringLiteral("0"));
    QCOMPARE(td::gui::formatSi(124439808), QStringLiteral("124.4 M"));
    QCOMPARE(td::gui::formatSi(1.5e9), QStringLiteral("1.50 G"));
    QCOMPARE(td::gui::formatSi(950), QStringLiteral("950"));
    QCOMPARE(td::gui::formatBytes(1536), QStringLiteral("1.5 KiB"));
    QCOMPARE(td::gui::formatBytes(497759232), QStringLiteral("474.7 MiB"));  // 4 x 124,439,808
    QCOMPARE(td::gui::formatBytes(3ull << 30), QStringLiteral("3.00 GiB"));
    QCOMPARE(td::gui::formatDuration(42), QStringLiteral("42 s"));
    QCOMPARE(td::gui::formatDuration(754), QStringLiteral("12 min 34 s"));
    QCOMPARE(td::gui::formatDuration(12300), QStringLiteral("3 h 25 min"));
    QCOMPARE(td::gui::formatDuration(190000), QStringLiteral("2 d 4 h"));
    // Short spans (a tiny token budget on a large cluster) keep a unit that shows them.
    QCOMPARE(td::gui::formatDuration(0), QStringLiteral("0 s"));
    QCOMPARE(td::gui::formatDuration(4.24), QStringLiteral("4.2 s"));
    QCOMPARE(td::gui::formatDuration(0.0354), QStringLiteral("35.4 ms"));
    QCOMPARE(td::gui::formatDuration(0.4), QStringLiteral("400 ms"));
    QCOMPARE(td::gui::formatDuration(8.12e-4), QStringLiteral("812 µs"));
    QCOMPARE(td::gui::formatDuration(4.17e-9), QStringLiteral("4.17 ns"));
    QCOMPARE(td::gui::formatDuration(9.9996e-4), QStringLiteral("1.00 ms"));  // not "1000 µs"
    QCOMPARE(td::gui::formatDuration(0.9996), QStringLiteral("1.0 s"));
  }
};

QTEST_GUILESS_MAIN(TestPlanner)
#include "test_planner.moc"
