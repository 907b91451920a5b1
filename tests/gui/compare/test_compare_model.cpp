// CompareModel (Qt Core): summary numbers and config diff of runs ingested from hand-written
// events files (compare_fixture.h has every expected number worked out).
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <thread>

#include "compare_fixture.h"
#include "engine/config.h"
#include "gui/compare/compare_format.h"
#include "gui/compare/compare_model.h"

using namespace td::gui;
using S = CompareSummaryModel;

namespace {

QVariant raw(QAbstractItemModel* m, int row, int col) { return m->index(row, col).data(Qt::UserRole); }
QString text(QAbstractItemModel* m, int row, int col) { return m->index(row, col).data().toString(); }

}  // namespace

class TestCompareModel : public QObject {
  Q_OBJECT
 private slots:
  void summaryNumbersAreTheHandComputedOnes() {
    QTemporaryDir dir;
    StoreClient client(test::makeCompareStore(dir.path()));
    CompareModel cmp(&client);
    QSignalSpy loaded(&cmp, &CompareModel::loaded);
    cmp.setRuns({"run-a", "run-b"});
    QVERIFY(cmp.isLoading());
    QVERIFY(loaded.wait(10000));
    QVERIFY(!cmp.isLoading());
    auto* m = cmp.summaryModel();
    QCOMPARE(m->rowCount(), 2);
    QCOMPARE(m->columnCount(), int(S::ColumnCount));
    // run-a
    QCOMPARE(raw(m, 0, S::Run).toString(), QString("run-a"));
    QCOMPARE(raw(m, 0, S::Experiment).toString(), QString("exp"));
    QCOMPARE(raw(m, 0, S::Status).toString(), QString("completed"));
    QCOMPARE(raw(m, 0, S::FinalLoss).toDouble(), 2.9);
    QCOMPARE(raw(m, 0, S::BestLoss).toDouble(), 2.75);
    QCOMPARE(raw(m, 0, S::FinalValLoss).toDouble(), 3.1);
    QCOMPARE(raw(m, 0, S::BestValLoss).toDouble(), 2.8);
    QCOMPARE(raw(m, 0, S::TokensPerS).toDouble(), 1950.0);
    QCOMPARE(raw(m, 0, S::Mfu).toDouble(), 0.375);
    QCOMPARE(raw(m, 0, S::WallTime).toDouble(), 75.0);
    QCOMPARE(raw(m, 0, S::TokensSeen).toLongLong(), 6144LL);
    QCOMPARE(raw(m, 0, S::Parameters).toLongLong(), 12345LL);
    QCOMPARE(raw(m, 0, S::Steps).toLongLong(), 6LL);
    QCOMPARE(text(m, 0, S::FinalLoss), QString("2.9000"));
    QCOMPARE(text(m, 0, S::Mfu), QString("37.5%"));
    QCOMPARE(text(m, 0, S::TokensPerS), QString("1950"));  // as the run page and `runs show` print it
    QCOMPARE(text(m, 0, S::WallTime), QString("1 min 15 s"));
    QCOMPARE(text(m, 0, S::TokensSeen), QString("6144"));
    QCOMPARE(text(m, 0, S::Parameters), QString("12.3k"));
    // run-b: running, no eval, no MFU
    QCOMPARE(raw(m, 1, S::Status).toString(), QString("running"));
    QCOMPARE(raw(m, 1, S::FinalLoss).toDouble(), 4.125);
    QVERIFY(!raw(m, 1, S::BestValLoss).isValid());
    QVERIFY(!raw(m, 1, S::FinalValLoss).isValid());
    QCOMPARE(text(m, 1, S::BestValLoss), compare_format::missing());
    QVERIFY(!raw(m, 1, S::Mfu).isValid());
    QCOMPARE(raw(m, 1, S::TokensPerS).toDouble(), 1400.0);
    QCOMPARE(raw(m, 1, S::WallTime).toDouble(), 50.0);
    QCOMPARE(text(m, 1, S::WallTime), QString("50.0 s so far"));
    QCOMPARE(raw(m, 1, S::TokensSeen).toLongLong(), 5120LL);
    QCOMPARE(raw(m, 1, S::Steps).toLongLong(), 5LL);
  }

  void diffShowsOnlyTheDifferingField() {
    QTemporaryDir dir;
    StoreClient client(test::makeCompareStore(dir.path()));
    CompareModel cmp(&client);
    QSignalSpy loaded(&cmp, &CompareModel::loaded);
    cmp.setRuns({"run-a", "run-b"});
    QVERIFY(loaded.wait(10000));
    ConfigDiffModel* d = cmp.diffModel();
    QCOMPARE(d->columnCount(), 2);
    QCOMPARE(d->rowCount(), 1);
    QCOMPARE(d->path(0), QString("train.lr"));
    QCOMPARE(d->headerData(0, Qt::Vertical).toString(), QString("train.lr"));
    QCOMPARE(d->headerData(1, Qt::Horizontal).toString(), QString("run-b"));
    QCOMPARE(d->index(0, 0).data().toString(), QString("0.001"));
    QCOMPARE(d->index(0, 1).data().toString(), QString("0.002"));
    QCOMPARE(d->equalCount(), 6);  // 7 fields, train.lr differs
  }

  void threeRunsAndOrder() {
    QTemporaryDir dir;
    StoreClient client(test::makeCompareStore(dir.path()));
    CompareModel cmp(&client);
    QSignalSpy loaded(&cmp, &CompareModel::loaded);
    cmp.setRuns({"run-c", "run-a", "run-b"});
    QVERIFY(loaded.wait(10000));
    auto* m = cmp.summaryModel();
    QCOMPARE(m->rowCount(), 3);
    QCOMPARE(m->runId(0), QString("run-c"));
    QCOMPARE(raw(m, 0, S::TokensPerS).toDouble(), 850.0);  // 2 steps, both warm-up: both
    QCOMPARE(raw(m, 0, S::WallTime).toDouble(), 10.0);
    QCOMPARE(raw(m, 0, S::Experiment).toString(), QString("other"));
    QCOMPARE(raw(m, 1, S::BestValLoss).toDouble(), 2.8);
    ConfigDiffModel* d = cmp.diffModel();
    QCOMPARE(d->rowCount(), 2);
    QCOMPARE(d->path(0), QString("model.d_model"));
    QCOMPARE(d->path(1), QString("train.lr"));
    QCOMPARE(d->index(0, 0).data().toString(), QString("128"));
    QCOMPARE(d->index(0, 1).data().toString(), QString("64"));
    QCOMPARE(d->index(0, 2).data().toString(), QString("64"));
    QCOMPARE(d->index(1, 0).data().toString(), QString("0.001"));
    QCOMPARE(d->index(1, 2).data().toString(), QString("0.002"));
    QCOMPARE(d->equalCount(), 5);
  }

  void unknownRunIsReportedOthersShown() {
    QTemporaryDir dir;
    StoreClient client(test::makeCompareStore(dir.path()));
    CompareModel cmp(&client);
    QSignalSpy loaded(&cmp, &CompareModel::loaded);
    QSignalSpy errors(&cmp, &CompareModel::error);
    cmp.setRuns({"run-a", "no-such-run", "run-b"});
    QVERIFY(loaded.wait(10000));
    QCOMPARE(errors.count(), 1);
    QVERIFY2(errors[0][0].toString().contains("no-such-run"), qPrintable(errors[0][0].toString()));
    QCOMPARE(cmp.summaryModel()->rowCount(), 2);
    QCOMPARE(cmp.diffModel()->rowCount(), 1);
  }

  void newerRequestWins() {
    QTemporaryDir dir;
    StoreClient client(test::makeCompareStore(dir.path()));
    CompareModel cmp(&client);
    QSignalSpy loaded(&cmp, &CompareModel::loaded);
    cmp.setRuns({"run-a", "run-b"});
    cmp.setRuns({"run-a", "run-c"});  // before the first result arrived
    QVERIFY(client.waitIdle());
    QCOMPARE(loaded.count(), 1);
    QCOMPARE(cmp.summaryModel()->rowCount(), 2);
    QCOMPARE(cmp.summaryModel()->runId(1), QString("run-c"));
    QCOMPARE(cmp.diffModel()->path(0), QString("model.d_model"));
    cmp.setRuns({});
    QCOMPARE(cmp.summaryModel()->rowCount(), 0);
    QCOMPARE(cmp.diffModel()->columnCount(), 0);
  }

  // The numbers are read on the store thread, never on the caller's.
  void computedOnTheStoreThread() {
    QTemporaryDir dir;
    StoreClient client(test::makeCompareStore(dir.path()));
    const auto gui = std::this_thread::get_id();
    std::thread::id worker;
    client.run<CompareResult>(
        this,
        [&](td::store::Store& s) {
          worker = std::this_thread::get_id();
          return computeComparison(s, {"run-a"});
        },
        [](CompareResult) {});
    QVERIFY(client.waitIdle());
    QVERIFY(worker != std::thread::id() && worker != gui);
  }

  void flattenAndDiffRules() {
    const auto flat = td::store::Store::flatten_config(
        R"({"b":{"x":1,"y":[1,2],"z":{}},"a":"text","c":null,"d":1e-3,"e":true})");
    const std::vector<std::pair<std::string, std::string>> want = {
        {"a", "text"}, {"b.x", "1"}, {"b.y", "[1,2]"}, {"b.z", "{}"}, {"c", "null"}, {"d", "0.001"}, {"e", "true"}};
    QCOMPARE(flat, want);
    QVERIFY(td::store::Store::flatten_config("").empty());
    QVERIFY(td::store::Store::flatten_config("{not json").empty());
    // A field missing in one config differs; one config alone has nothing to compare.
    const ConfigDiff d = computeConfigDiff({{{"a", "1"}, {"b", "2"}}, {{"a", "1"}}});
    QCOMPARE(d.rows.size(), size_t(1));
    QCOMPARE(d.rows[0].path, QString("b"));
    QCOMPARE(*d.rows[0].values[0], QString("2"));
    QVERIFY(!d.rows[0].values[1].has_value());
    QCOMPARE(d.equal, 1);
    const ConfigDiff one = computeConfigDiff({{{"a", "1"}, {"b", "2"}}});
    QCOMPARE(one.rows.size(), size_t(0));
    QCOMPARE(one.equal, 2);
  }

  // A Llama run beside a GPT-2 run of the same width (issue 17): the configs as the engine stores
  // them (to_json of the parsed config, as run_start carries it), flattened as the store does.
  // The diff is the family, the resolved SwiGLU width against GELU's 4 C, and the four
  // llama-only fields, which a gpt2 config never carries (shown as missing, not as a default).
  void llamaAgainstGpt2ConfigDiff() {
    const nlohmann::json model = {{"vocab_size", 257}, {"seq_len", 64}, {"n_layer", 2}, {"n_head", 6}, {"d_model", 384}};
    nlohmann::json llama = model;
    llama.update({{"family", "llama"}, {"n_kv_head", 2}});
    auto flat = [](const nlohmann::json& m) {
      return td::store::Store::flatten_config(td::to_json(td::parse_config({{"model", m}, {"data", {{"path", "ds"}}}})).dump());
    };
    const ConfigDiff d = computeConfigDiff({flat(model), flat(llama)});
    std::map<QString, std::pair<std::optional<QString>, std::optional<QString>>> rows;
    for (const auto& r : d.rows) rows[r.path] = {r.values[0], r.values[1]};
    using V = std::optional<QString>;
    // d_ff: gpt2 4 x 384 = 1536; llama 256 x ceil(floor(8 x 384 / 3) / 256) = 256 x 4 = 1024.
    const std::map<QString, std::pair<V, V>> want = {
        {"model.d_ff", {QString("1536"), QString("1024")}},
        {"model.family", {QString("gpt2"), QString("llama")}},
        {"model.ffn_multiple_of", {std::nullopt, QString("256")}},
        {"model.n_kv_head", {std::nullopt, QString("2")}},
        {"model.rms_norm_eps", {std::nullopt, QString("1e-05")}},
        {"model.rope_theta", {std::nullopt, QString("10000.0")}}};
    for (const auto& [path, v] : rows)
      qInfo("%s: %s | %s", qPrintable(path), qPrintable(v.first.value_or("-")), qPrintable(v.second.value_or("-")));
    QCOMPARE(rows, want);
    QVERIFY(d.equal > 20);  // every train.* and data.* field, and the shared model fields
  }

  void humanFormats() {
    QCOMPARE(compare_format::count(6144), QString("6144"));
    QCOMPARE(compare_format::count(12345), QString("12.3k"));
    QCOMPARE(compare_format::count(124439808), QString("124M"));
    QCOMPARE(compare_format::count(2.5e9), QString("2.50B"));
    QCOMPARE(compare_format::duration(12.5), QString("12.5 s"));
    QCOMPARE(compare_format::duration(75), QString("1 min 15 s"));
    QCOMPARE(compare_format::duration(3720), QString("1 h 02 min"));
    QCOMPARE(compare_format::duration(93600), QString("1 d 02 h"));
    QCOMPARE(compare_format::percent(0.42), QString("42.0%"));
    QCOMPARE(compare_format::loss(2.75), QString("2.7500"));
  }
};

QTEST_GUILESS_MAIN(TestCompareModel)
#include "test_compare_model.moc"
