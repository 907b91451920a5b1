// "Run again" from a run's card (gui/runs/run_again.h; issue 16 part 5). A real short CPU run of
// the real engine is started through RunTargets, its card read back from the store (its
// dataset's manifest hash checked against coreutils' sha256sum, its tokens against the
// manifest), then run again from the card: the new run's loss and val_loss equal the old run's
// bit for bit, step by step. A changed manifest, and a dataset gone, are said before starting.
// A remote run's card goes to the same cluster and node (a recording "ssh" target stands in for
// the SSH one) with the dataset registered here; a cluster no longer saved is refused.
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>

#include "../gui_test_util.h"
#include "engine/metrics/sysinfo.h"
#include "gui/core/store_client.h"
#include "gui/runs/run_again.h"
#include "gui/runs/run_controller.h"
#include "gui/runs/run_targets.h"
#include "store/ingest.h"
#include "store/store.h"

using namespace td::gui;
using td::store::Store;
using tdguitest::wait_ended;

namespace {

// Stands in for the SSH target: records the placement and config it was given.
class RecordingSsh : public RunTarget {
 public:
  using RunTarget::RunTarget;
  QString kind() const override { return QStringLiteral("ssh"); }
  void setStoreClient(StoreClient*) override {}
  QString start(const RunPlacement& p, const QString& experiment, const nlohmann::json& config, const QString& name,
                QString*) override {
    placement = p;
    this->experiment = experiment;
    this->config = config;
    this->name = name;
    return QStringLiteral("ssh-run-1");
  }
  bool stop(const QString&, QString*) override { return false; }
  bool resume(const QString&, QString*) override { return false; }
  void reattach() override {}
  void detachAll() override {}
  QStringList activeRuns() const override { return {}; }
  RunTargetState state(const QString&) const override { return {}; }
  RunFiles files(const QString&) const override { return {}; }

  RunPlacement placement;
  QString experiment, name;
  nlohmann::json config;
};

// coreutils' sha256sum of a file: an implementation independent of the engine's (OpenSSL) and
// the GUI's (QCryptographicHash).
QString sha256sum(const QString& path) {
  QProcess p;
  p.start(QStringLiteral("sha256sum"), {path});
  if (!p.waitForFinished(30000) || p.exitCode() != 0) return {};
  return QString::fromLatin1(p.readAllStandardOutput()).section(QLatin1Char(' '), 0, 0);
}

// Waits for ra's loaded/failed about run_id; "" when loaded, else the failure or "timeout".
QString wait_loaded(RunAgain& ra, QSignalSpy& loaded, QSignalSpy& failed, const QString& run_id) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < tdguitest::kSlowMs) {
    for (const auto& a : loaded)
      if (a.at(0).toString() == run_id && ra.isLoaded()) return {};
    for (const auto& a : failed)
      if (a.at(0).toString() == run_id) return a.at(1).toString();
    loaded.wait(100);
  }
  return QStringLiteral("timeout: waited for the card of %1").arg(run_id);
}

// The bits of a double: equal bit for bit, not merely within a tolerance.
quint64 bits(double v) {
  quint64 b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

}  // namespace

class TestRunAgain : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_, db_;

 private slots:
  void initTestCase() {
    qputenv("TRAINDECK_ENGINE", TD_ENGINE_EXE);
    qputenv("TRAINDECK_RUNS_DIR", dir_.filePath("runs").toUtf8());
    data_ = tdguitest::prepare_tiny_dataset(dir_.path());
    QVERIFY(!data_.isEmpty());
    db_ = dir_.filePath("td.db");
  }

  void runAgainRepeatsTheLossesBitForBit() {
    StoreClient client(db_);
    RunTargets targets;
    targets.add(new RunController(nullptr));
    targets.setStoreClient(&client);
    QSignalSpy ended(&targets, &RunTarget::runEnded);
    QString error;
    // 24 steps with an eval every 10: each run takes well under a second of training.
    const nlohmann::json config = tdguitest::tiny_config(data_, 24);
    const QString first = targets.start(RunPlacement{}, "repro", config, "baseline", &error);
    QVERIFY2(!first.isEmpty(), qPrintable(error));
    QCOMPARE(wait_ended(ended, first), QStringLiteral("completed"));

    RunAgain again(&client, &targets);
    QSignalSpy loaded(&again, &RunAgain::loaded);
    QSignalSpy failed(&again, &RunAgain::failed);
    QSignalSpy started(&again, &RunAgain::started);
    again.load(first);
    QCOMPARE(wait_loaded(again, loaded, failed, first), QString());

    // The card, against independent sources: sha256sum, the manifest's split tokens, this
    // build's version, build, host and the config's default seed.
    const td::store::RunCard& card = again.card();
    const QString manifest = QDir(data_).filePath("manifest.json");
    QCOMPARE(QString::fromStdString(card.dataset_sha256), sha256sum(manifest));
    QCOMPARE(QString::fromStdString(card.dataset_path), QDir(data_).absolutePath());
    QFile mf(manifest);
    QVERIFY(mf.open(QIODevice::ReadOnly));
    const auto doc = nlohmann::json::parse(mf.readAll().toStdString());
    QCOMPARE(*card.dataset_train_tokens, doc["splits"]["train"]["tokens"].get<int64_t>());
    QCOMPARE(*card.dataset_val_tokens, doc["splits"]["val"]["tokens"].get<int64_t>());
    QVERIFY(*card.dataset_train_tokens > 30000);  // ~40 KB of text, byte tokens, 10% validation
    QCOMPARE(*card.seed, uint64_t(1337));         // train.seed's default (engine/config.h)
    QCOMPARE(card.engine_version, std::string(TD_VERSION));
    QCOMPARE(card.engine_build, td::engine_build());
    QCOMPARE(card.host, td::host_name());
    QCOMPARE(card.device, std::string("cpu"));
    QCOMPARE(card.device_name, td::cpu_model());
    QCOMPARE(*card.world_size, int64_t(1));
    QCOMPARE(card.target, std::string("local"));
    QCOMPARE(card.name, std::string("baseline"));
    QCOMPARE(again.check().state, DatasetCheck::State::Same);
    QVERIFY(again.check().message.isEmpty());

    const QString second = again.start(&error);
    QVERIFY2(!second.isEmpty(), qPrintable(error));
    QCOMPARE(started.count(), 1);
    QCOMPARE(started.at(0).at(0).toString(), second);
    QCOMPARE(started.at(0).at(1).toString(), first);
    QCOMPARE(wait_ended(ended, second), QStringLiteral("completed"));

    Store s(db_.toStdString());
    QCOMPARE(s.get_run(second.toStdString()).name, std::string("baseline again"));
    QCOMPARE(s.get_run(second.toStdString()).experiment, std::string("repro"));
    QCOMPARE(nlohmann::json::parse(s.get_run(second.toStdString()).config_json),
             nlohmann::json::parse(card.config_json));
    for (const char* metric : {"loss", "val_loss"}) {
      const auto a = s.metric_series(first.toStdString(), metric);
      const auto b = s.metric_series(second.toStdString(), metric);
      QCOMPARE(a.size(), b.size());
      QVERIFY(std::strcmp(metric, "loss") == 0 ? a.size() == 24 : a.size() >= 2);  // evals from step 10 on
      for (size_t i = 0; i < a.size(); ++i) {
        QCOMPARE(b.step[i], a.step[i]);
        QVERIFY2(bits(b.value[i]) == bits(a.value[i]),
                 qPrintable(QStringLiteral("%1 at step %2: %3 vs %4")
                                .arg(metric).arg(a.step[i]).arg(b.value[i], 0, 'g', 17).arg(a.value[i], 0, 'g', 17)));
      }
    }

    // The dataset changes (prepared again with other text; here: its manifest edited): the card
    // says so before anything starts, with both hashes' beginnings.
    {
      QFile f(manifest);
      QVERIFY(f.open(QIODevice::Append));
      f.write("\n");
    }
    const QString now = sha256sum(manifest);
    again.load(first);
    QCOMPARE(wait_loaded(again, loaded, failed, first), QString());
    QCOMPARE(again.check().state, DatasetCheck::State::Changed);
    QCOMPARE(again.check().sha256_now, now);
    QVERIFY2(again.check().message.contains("has changed since this run"), qPrintable(again.check().message));
    QVERIFY2(again.check().message.contains(now.left(12)), qPrintable(again.check().message));
    QVERIFY2(again.check().message.contains(QString::fromStdString(card.dataset_sha256).left(12)),
             qPrintable(again.check().message));
    QVERIFY(again.check().canStart());

    // The dataset is gone: said, and Run again refuses with the same words; nothing starts.
    QVERIFY(QDir().rename(data_, data_ + "-moved"));
    again.load(first);
    QCOMPARE(wait_loaded(again, loaded, failed, first), QString());
    QCOMPARE(again.check().state, DatasetCheck::State::Missing);
    QVERIFY2(again.check().message.contains("is gone"), qPrintable(again.check().message));
    QVERIFY(again.start(&error).isEmpty());
    QCOMPARE(error, again.check().message);
    QCOMPARE(started.count(), 1);
    QVERIFY(QDir().rename(data_ + "-moved", data_));

    // An unknown run fails the load with the store's words.
    again.load("no-such-run");
    QVERIFY(wait_loaded(again, loaded, failed, "no-such-run").contains("no-such-run"));
  }

  void remoteCardGoesToTheSameNode() {
    // A remote run's card as the store gives it: the node's dataset folder
    // <work>/datasets/<name>-<12 hex>, the node by its JSON at launch.
    const QString sha = RunAgain::manifestSha256(data_);
    QCOMPARE(sha, sha256sum(QDir(data_).filePath("manifest.json")));
    td::store::RunCard card;
    card.run_id = "r-remote";
    card.experiment = "exp";
    card.config_json = tdguitest::tiny_config("/home/u/traindeck/datasets/dataset-" + sha.left(12), 5).dump();
    card.dataset_path = "/home/u/traindeck/datasets/dataset-" + sha.left(12).toStdString();
    card.dataset_sha256 = sha.toStdString();
    card.target = "ssh";
    td::store::RemoteRun rr;
    rr.cluster = "lab";
    rr.node_json = R"({"host":"gpu2","name":"second"})";
    card.remote = rr;

    td::store::Dataset other{(dir_.path() + "/elsewhere/dataset").toStdString(), "dataset"};  // no manifest there
    td::store::Dataset here{data_.toStdString(), "dataset"};
    DatasetCheck c = RunAgain::checkDataset(card, {other, here});
    QCOMPARE(c.state, DatasetCheck::State::Same);
    QCOMPARE(c.local_path, data_);
    c = RunAgain::checkDataset(card, {other});
    QCOMPARE(c.state, DatasetCheck::State::Missing);
    QVERIFY2(c.message.contains("no dataset named dataset is registered"), qPrintable(c.message));

    td::remote::ClusterSpec lab;
    lab.name = "lab";
    td::remote::NodeSpec n1, n2;
    n1.host = "gpu1";
    n2.host = "gpu2";
    n2.name = "second";
    lab.nodes = {n1, n2};
    RunAgain::ClusterLookup lookup = [lab](const QString& name) -> std::optional<td::remote::ClusterSpec> {
      if (name == "lab") return lab;
      return std::nullopt;
    };
    RunPlacement p;
    QString error;
    QVERIFY2(RunAgain::placementOf(card, lookup, &p, &error), qPrintable(error));
    QVERIFY(p.cluster);
    QCOMPARE(p.cluster->name, std::string("lab"));
    QCOMPARE(p.node, 1);
    // A multi-node run goes to every node again.
    td::store::RunCard multi = card;
    multi.remote->layout_json = R"({"nodes":[]})";
    QVERIFY(RunAgain::placementOf(multi, lookup, &p, &error));
    QCOMPARE(p.node, -1);
    // A node no longer in the cluster, a cluster no longer saved, a Slurm run on an SSH cluster.
    td::store::RunCard gone = card;
    gone.remote->node_json = R"({"host":"gpu9"})";
    QVERIFY(!RunAgain::placementOf(gone, lookup, &p, &error));
    QVERIFY2(error.contains("gpu9") && error.contains("no longer in the cluster lab"), qPrintable(error));
    QVERIFY(!RunAgain::placementOf(card, {}, &p, &error));
    QVERIFY2(error.contains("no longer saved"), qPrintable(error));
    td::store::RunCard slurm = card;
    slurm.target = "slurm";
    QVERIFY(!RunAgain::placementOf(slurm, lookup, &p, &error));
    QVERIFY2(error.contains("no longer a Slurm cluster"), qPrintable(error));

    // Through RunTargets: the SSH target gets the same cluster and node, the config with the
    // dataset here (deploy sends it to the node again), the card's experiment.
    {
      Store s(db_.toStdString());
      s.register_dataset(data_.toStdString(), [&] {
        QFile f(QDir(data_).filePath("manifest.json"));
        f.open(QIODevice::ReadOnly);
        return f.readAll().toStdString();
      }());
      s.note_launch("r-remote", "exp", dir_.filePath("remote/events.jsonl").toStdString(), 0, "gpu2", 100.0);
      td::store::RemoteRun rec = rr;
      rec.run_id = "r-remote";
      rec.run_dir = "/home/u/traindeck/runs/r-remote";
      s.note_remote_run(rec);
      // Its run_start, as the node's engine wrote it (the fields the card reads).
      const QString events = dir_.filePath("remote/events.jsonl");
      QVERIFY(QDir().mkpath(dir_.filePath("remote")));
      nlohmann::json start = {{"type", "run_start"}, {"v", 1}, {"t", 100.5}, {"run_id", "r-remote"}, {"attempt", 0},
                              {"rank", 0}, {"config", nlohmann::json::parse(card.config_json)}, {"host", "gpu2"},
                              {"device", "cpu"}, {"world_size", 1}, {"engine_version", TD_VERSION},
                              {"dataset", {{"path", card.dataset_path}, {"manifest_sha256", card.dataset_sha256},
                                           {"train_tokens", 1}, {"val_tokens", 1}}}};
      tdguitest::writeFile(events, QByteArray::fromStdString(start.dump() + "\n"));
      td::store::Ingester(s, events.toStdString(), "exp").poll_all();
    }
    StoreClient client(db_);
    RunTargets targets;
    auto* ssh = new RecordingSsh;
    targets.add(ssh);
    RunAgain again(&client, &targets);
    again.setClusterLookup(lookup);
    QSignalSpy loaded(&again, &RunAgain::loaded);
    QSignalSpy failed(&again, &RunAgain::failed);
    again.load("r-remote");
    QCOMPARE(wait_loaded(again, loaded, failed, "r-remote"), QString());
    QCOMPARE(again.check().state, DatasetCheck::State::Same);
    QCOMPARE(again.start(&error), QStringLiteral("ssh-run-1"));
    QCOMPARE(ssh->placement.cluster->name, std::string("lab"));
    QCOMPARE(ssh->placement.node, 1);
    QCOMPARE(ssh->experiment, QStringLiteral("exp"));
    QCOMPARE(ssh->name, QStringLiteral("r-remote again"));
    QCOMPARE(QString::fromStdString(ssh->config["data"]["path"].get<std::string>()), data_);
    QCOMPARE(ssh->config["model"], nlohmann::json::parse(card.config_json)["model"]);
  }

  void againNameKeepsWholeCharacters() {
    td::store::RunCard c;
    c.run_id = "20261202-120000-abcdef";
    QCOMPARE(RunAgain::againName(c), QStringLiteral("20261202-120000-abcdef again"));
    c.name = "Läuft ü";
    QCOMPARE(RunAgain::againName(c), QStringLiteral("Läuft ü again"));
    // 113 ASCII bytes then "ü" (2 bytes) crosses the 114-byte budget: the ü is left out whole.
    c.name = std::string(113, 'x') + "ü";
    const QString n = RunAgain::againName(c);
    QCOMPARE(n, QString(113, 'x') + " again");
    QVERIFY(n.toUtf8().size() <= 120);
  }
};

QTEST_GUILESS_MAIN(TestRunAgain)
#include "test_run_again.moc"
