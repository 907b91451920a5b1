// Soak test of the workbench's store side (issue 35, "the workbench lost what it had shown as
// saved"): a driver process with the GUI's store thread (StoreClient) follows three runs through
// RunTail and writes as the GUI does (soak_driver.cpp), while this process appends the runs'
// events and reads and writes the same store through a connection of its own; the driver is
// SIGKILLed at random moments (seeded) and started again, 8 times. Afterwards every write the
// driver reported as saved is in the store, so is every write of this process, and each run's
// metrics are exactly its events' steps, each once.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <random>
#include <set>

#include "../../store/events_fixture.h"
#include "store/run_tail.h"
#include "store/store.h"

using namespace td::store;
using namespace td::store::test;

class TestStoreSoak : public QObject {
  Q_OBJECT
 private slots:
  void killedAtRandomNothingSavedIsLost() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("td.db").toStdString(), events = dir.path().toStdString();
    constexpr int kRuns = 3, kRounds = 8;
    const unsigned seed = std::random_device{}();
    qInfo("seed %u", seed);
    std::mt19937 rng(seed);
    std::vector<int> steps(kRuns, 0);
    auto append_steps = [&](int r, int n) {
      std::ofstream f(events + "/run" + std::to_string(r) + ".jsonl", std::ios::app | std::ios::binary);
      for (int i = 0; i < n; ++i) {
        ++steps[r];
        f << line(step("soak-run-" + std::to_string(r), 1000.0 + steps[r], steps[r], 5.0 - 1e-4 * steps[r]));
      }
    };
    for (int r = 0; r < kRuns; ++r) {
      std::ofstream(events + "/run" + std::to_string(r) + ".jsonl", std::ios::binary) << line(run_start("soak-run-" + std::to_string(r), 1000.0));
    }
    Store mine(db);  // this process's own connection: "the CLI" beside the workbench
    std::set<int> saved;
    std::vector<std::string> cli_writes;
    int next_k = 0;
    for (int round = 0; round < kRounds; ++round) {
      QProcess driver;
      driver.start(TD_SOAK_DRIVER, {QString::fromStdString(db), QString::fromStdString(events), QString::number(kRuns),
                                    QString::number(next_k)});
      QVERIFY2(driver.waitForStarted(), "the soak driver did not start");
      // Let it work for a random 0.3 .. 1.5 s while events arrive and this process writes.
      const int ms = std::uniform_int_distribution<int>(300, 1500)(rng);
      QElapsedTimer t;
      t.start();
      while (t.elapsed() < ms) {
        append_steps(int(rng() % kRuns), 1 + int(rng() % 20));
        const std::string name = "cli-" + std::to_string(cli_writes.size());
        mine.ensure_experiment(name);
        cli_writes.push_back(name);
        (void)mine.list_runs("");  // a reader beside the writer
        driver.waitForReadyRead(20);
      }
      driver.kill();  // SIGKILL: no cleanup, no last commit
      QVERIFY(driver.waitForFinished(60000));
      const QString out = QString::fromUtf8(driver.readAllStandardOutput());
      for (const QString& l : out.split('\n', Qt::SkipEmptyParts)) {
        QVERIFY2(l.startsWith("saved "), qPrintable(l));
        saved.insert(l.mid(6).toInt());
      }
      next_k += 100000;  // the next driver's job numbers never meet this one's
      const QByteArray err = driver.readAllStandardError();
      QVERIFY2(!err.contains("left open") && !err.contains("left unfinished"), err.constData());
    }
    QVERIFY2(saved.size() > 10, qPrintable(QString("only %1 writes were saved in all rounds").arg(saved.size())));
    // Every write reported as saved is there, and every write of this process.
    std::set<std::string> have;
    for (const auto& e : mine.list_experiments()) have.insert(e.name);
    for (int k : saved) QVERIFY2(have.count("soak-" + std::to_string(k)), qPrintable(QString("saved %1 is missing").arg(k)));
    for (const auto& n : cli_writes) QVERIFY2(have.count(n), n.c_str());
    // The followers' rows: finishing the ingest as the next start would, each step exactly once.
    for (int r = 0; r < kRuns; ++r) {
      const std::string id = "soak-run-" + std::to_string(r);
      RunTail(mine, id, events + "/run" + std::to_string(r) + ".jsonl", "soak").ingest();
      const auto loss = mine.metric_series(id, "loss");
      QCOMPARE(int64_t(loss.size()), int64_t(steps[r]));
      for (size_t i = 0; i < loss.size(); ++i) {
        QCOMPARE(loss.step[i], int64_t(i + 1));
        QCOMPARE(loss.value[i], 5.0 - 1e-4 * double(i + 1));
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestStoreSoak)
#include "test_store_soak.moc"
