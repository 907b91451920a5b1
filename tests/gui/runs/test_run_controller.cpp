// RunController with the real engine: a tiny model runs detached to completion and lands in the
// store; stop then resume continues the same run with no missing step; a run left running while
// the GUI is gone is re-attached and backfilled; a failing or killed engine ends the run 'failed'
// with the reason.
#include <QDir>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <ctime>

#include <signal.h>
#include <sys/stat.h>

#include "../gui_test_util.h"
#include "../target_test_util.h"
#include "gui/core/store_client.h"
#include "gui/runs/run_controller.h"
#include "store/store.h"

using namespace td::gui;
using td::store::Store;
using tdguitest::loss_rows;
using tdguitest::Rows;
using tdguitest::wait_ended;
using tdguitest::wait_step;

namespace {

// Permission bits of p itself (not of a link's target); -1 when missing.
int mode_of(const QString& p) {
  struct stat st;
  return ::lstat(p.toLocal8Bit().constData(), &st) == 0 ? int(st.st_mode & 07777) : -1;
}

td::store::RunInfo run_info(const QString& db, const QString& run_id) {
  Store s(db.toStdString());
  return s.get_run(run_id.toStdString());
}

}  // namespace

class TestRunController : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_, db_;

 private slots:
  void initTestCase() {
    ::umask(022);  // the usual one, under which files and folders are world-readable by default
    qputenv("TRAINDECK_ENGINE", TD_ENGINE_EXE);
    qputenv("TRAINDECK_RUNS_DIR", dir_.filePath("runs").toUtf8());
    data_ = tdguitest::prepare_tiny_dataset(dir_.path());
    QVERIFY(!data_.isEmpty());
    db_ = dir_.filePath("td.db");
  }

  void runsToCompletionIntoTheStore() {
    StoreClient client(db_);
    RunController rc(&client);
    QSignalSpy ended(&rc, &RunController::runEnded);
    QString log;
    connect(&rc, &RunController::logAppended, this, [&](const QString&, const QString& t) { log += t; });
    QString error;
    // A named run (issue 14): the name goes to the engine (train --run-name), into its
    // run_start event and from there into the store, trimmed.
    // The id is minted in UTC (td::new_run_id, the engine's generator), whatever the local time
    // zone: here one 14 hours ahead of UTC (a POSIX TZ string, no zoneinfo needed).
    const QByteArray tz = qgetenv("TZ");
    qputenv("TZ", "XYZ-14");
    tzset();
    const std::time_t before = std::time(nullptr);
    const QString id = tdguitest::start_here(rc, "exp-a", tdguitest::tiny_config(data_, 30), &error, QStringLiteral(" lr=1e-3 "));
    const std::time_t after = std::time(nullptr);
    tz.isNull() ? qunsetenv("TZ") : qputenv("TZ", tz);
    tzset();
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    {
      std::tm named{};
      QVERIFY2(strptime(id.toLatin1().constData(), "%Y%m%d-%H%M%S", &named), qPrintable(id));
      const std::time_t t = timegm(&named);
      QVERIFY2(t >= before - 1 && t <= after + 1, qPrintable(id + " does not name the UTC time of its start"));
    }
    QVERIFY(rc.isActive(id));
    QCOMPARE(wait_ended(ended, id), QString("completed"));
    QCOMPARE(Store(db_.toStdString()).get_run(id.toStdString()).name, std::string("lr=1e-3"));
    {
      QFile ev(rc.runDir(id) + "/events.jsonl");
      QVERIFY(ev.open(QIODevice::ReadOnly));
      QVERIFY(ev.readLine().contains("\"name\":\"lr=1e-3\""));
    }
    // A name the engine would refuse is refused before launch, nothing started.
    QString refused;
    QVERIFY(tdguitest::start_here(rc, "exp-a", tdguitest::tiny_config(data_, 30), &refused, QStringLiteral("a\nb")).isEmpty());
    QVERIFY2(refused.contains("control characters"), qPrintable(refused));
    QVERIFY(!rc.isActive(id));
    const Rows r = loss_rows(db_, id);
    QCOMPARE(r.count, 30);
    QCOMPARE(r.first, 1);
    QCOMPARE(r.last, 30);
    Store s(db_.toStdString());
    QCOMPARE((int)s.metric_series(id.toStdString(), "val_loss").size(), 3);  // eval at 10, 20, 30
    const auto info = s.get_run(id.toStdString());
    QCOMPARE(info.experiment, std::string("exp-a"));
    QCOMPARE(info.status, std::string("completed"));
    QVERIFY(QFile::exists(rc.runDir(id) + "/config.json"));
    QVERIFY2(log.contains("step 30/30"), qPrintable(log.right(400)));
    // Owner-only, as the engine's own run folders (issue 13: they were world-readable), under
    // the umask 022 set in initTestCase.
    QCOMPARE(mode_of(dir_.filePath("runs")), 0700);
    QCOMPARE(mode_of(rc.runDir(id)), 0700);
    for (const char* f : {"config.json", "engine.log", "events.jsonl"}) QCOMPARE(mode_of(rc.runDir(id) + "/" + f), 0600);
  }

  void stopThenResumeHasNoMissingStep() {
    StoreClient client(db_);
    RunController rc(&client);
    QSignalSpy ended(&rc, &RunController::runEnded);
    QSignalSpy ingested(&rc, &RunController::runIngested);
    QString error;
    QStringList errors;
    connect(&rc, &RunController::error, this, [&](const QString& m) { errors << m; });
    const QString id = tdguitest::start_here(rc, "exp-a", tdguitest::tiny_config(data_, 1000000), &error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QVERIFY2(wait_step(ingested, id, 12) >= 12, qPrintable(errors.join(" | ")));
    QVERIFY2(rc.stop(id, &error), qPrintable(error));
    QCOMPARE(wait_ended(ended, id), QString("stopped"));
    const int64_t stopped_at = *run_info(db_, id).last_step;
    QVERIFY(stopped_at >= 12);
    // Continue to stopped_at + 15 steps (a changed train setting is allowed on resume).
    auto cfg = tdguitest::tiny_config(data_, int(stopped_at + 15));
    QFile f(rc.runDir(id) + "/config.json");
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(QByteArray::fromStdString(cfg.dump()));
    f.close();
    ended.clear();
    QVERIFY2(rc.resume(id, &error), qPrintable(error));
    QCOMPARE(wait_ended(ended, id), QString("completed"));
    const Rows r = loss_rows(db_, id);
    QCOMPARE(r.first, 1);
    QCOMPARE(r.last, stopped_at + 15);
    QCOMPARE(r.count, stopped_at + 15);  // every step once: none missing, none twice
    Store s(db_.toStdString());
    const auto attempts = s.run_attempts(id.toStdString());
    QCOMPARE((int)attempts.size(), 2);
    QCOMPARE(attempts[1].resumed_from_step.value_or(-1), stopped_at);
  }

  void reattachesAfterAGuiRestart() {
    QString id;
    qint64 seen_before = 0;
    {
      StoreClient client(db_);
      RunController rc(&client);
      QSignalSpy ingested(&rc, &RunController::runIngested);
      QString error;
      id = tdguitest::start_here(rc, "exp-b", tdguitest::tiny_config(data_, 1000000, 1000000), &error);
      QVERIFY2(!id.isEmpty(), qPrintable(error));
      seen_before = wait_step(ingested, id, 5);
      QVERIFY(seen_before >= 5);
    }  // the "GUI" is gone; the engine keeps training
    const qint64 pid = *run_info(db_, id).pid;
    QTest::qWait(1500);
    QVERIFY(::kill(pid, 0) == 0);
    StoreClient client(db_);
    RunController rc(&client);
    QSignalSpy attached(&rc, &RunController::runAttached);
    QSignalSpy ingested(&rc, &RunController::runIngested);
    QSignalSpy ended(&rc, &RunController::runEnded);
    QTRY_COMPARE_WITH_TIMEOUT(attached.count(), 1, tdguitest::kSlowMs);
    QCOMPARE(attached.at(0).at(0).toString(), id);
    QVERIFY(rc.isActive(id));
    const qint64 backfilled = wait_step(ingested, id, seen_before + 1);
    QVERIFY2(backfilled > seen_before, "steps written while no GUI ran are backfilled");
    QString error;
    QVERIFY2(rc.stop(id, &error), qPrintable(error));
    QCOMPARE(wait_ended(ended, id), QString("stopped"));
    const Rows r = loss_rows(db_, id);
    QCOMPARE(r.first, 1);
    QCOMPARE(r.count, r.last);  // no missing step across the restart
    QCOMPARE(r.last, *run_info(db_, id).last_step);
  }

  void remoteRunsAreLeftToTheRemoteController() {
    // A running remote run (its events path is a local mirror, its pid the node's) must not be
    // taken for a local run whose process is gone: reattach skips it, resume refuses it.
    const std::string rid = "remote-run-1";
    {
      td::store::Store s(db_.toStdString());
      s.note_launch(rid, "exp-r", QDir(QFileInfo(db_).absolutePath()).filePath("mirror/events.jsonl").toStdString(),
                    999999, "gpu1", 100.0);
      s.note_remote_run({rid, "lab", R"({"host":"gpu1"})", "/home/u/traindeck/runs/remote-run-1", 999999, 0});
    }
    StoreClient client(db_);
    RunController rc(&client);
    QSignalSpy attached(&rc, &RunController::runAttached);
    QSignalSpy errors(&rc, &RunController::error);
    rc.reattach();
    QVERIFY(client.waitIdle(tdguitest::kSlowMs));
    QTest::qWait(500);
    QVERIFY(!rc.isActive(QString::fromStdString(rid)));
    for (const auto& a : attached) QVERIFY(a.at(0).toString() != QString::fromStdString(rid));
    QCOMPARE(QString::fromStdString(run_info(db_, QString::fromStdString(rid)).status), QString("running"));
    QVERIFY(rc.resume(QString::fromStdString(rid), nullptr));
    QTRY_VERIFY_WITH_TIMEOUT(!errors.isEmpty(), tdguitest::kSlowMs);
    QVERIFY2(errors.last().at(0).toString().contains("SSH node"), qPrintable(errors.last().at(0).toString()));
    QVERIFY(!rc.isActive(QString::fromStdString(rid)));
  }

  void engineErrorEndsTheRunFailedWithItsMessage() {
    StoreClient client(db_);
    RunController rc(&client);
    QSignalSpy ended(&rc, &RunController::runEnded);
    QString error;
    auto cfg = tdguitest::tiny_config(data_, 10);
    cfg["train"]["device"] = "cuda";  // the engine refuses it (no CUDA backend in this build)
    const QString id = tdguitest::start_here(rc, "exp-a", cfg, &error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    QCOMPARE(wait_ended(ended, id), QString("failed"));
    const auto info = run_info(db_, id);
    QVERIFY2(QString::fromStdString(info.end_reason).contains("train.device"), info.end_reason.c_str());
  }

  void datasetProblemsAreRefusedBeforeLaunch() {
    StoreClient client(db_);
    RunController rc(&client);
    const int runs_before = (int)Store(db_.toStdString()).list_runs().size();
    QString error;
    QVERIFY(tdguitest::start_here(rc, "exp-a", tdguitest::tiny_config(dir_.filePath("no-such-dataset"), 10), &error).isEmpty());
    QVERIFY2(error.contains("no manifest.json") && error.contains("no-such-dataset"), qPrintable(error));
    auto cfg = tdguitest::tiny_config(data_, 10);
    cfg["model"]["vocab_size"] = 300;  // the byte tokenizer has 257
    QVERIFY(tdguitest::start_here(rc, "exp-a", cfg, &error).isEmpty());
    QVERIFY2(error.contains("vocab_size is 300") && error.contains("257"), qPrintable(error));
    cfg["data"].erase("path");
    QVERIFY(!RunController::datasetProblem(cfg).isEmpty());
    QVERIFY(RunController::datasetProblem(tdguitest::tiny_config(data_, 10)).isEmpty());
    QCOMPARE((int)Store(db_.toStdString()).list_runs().size(), runs_before);  // nothing stored
  }

  void killedEngineEndsTheRunFailed() {
    StoreClient client(db_);
    RunController rc(&client);
    QSignalSpy ended(&rc, &RunController::runEnded);
    QSignalSpy ingested(&rc, &RunController::runIngested);
    QString error;
    const QString id = tdguitest::start_here(rc, "exp-a", tdguitest::tiny_config(data_, 1000000, 1000000), &error);
    QVERIFY2(!id.isEmpty(), qPrintable(error));
    const qint64 seen = wait_step(ingested, id, 3, 120000);
    const auto pid = run_info(db_, id).pid;
    if (seen < 3) {
      if (pid) ::kill(*pid, SIGKILL);  // never leave a million-step engine behind
      QFile log(rc.runDir(id) + "/engine.log");
      log.open(QIODevice::ReadOnly);
      QFAIL(qPrintable(QString("no step 3 within 120 s (saw %1); status %2; engine.log: %3")
                           .arg(seen)
                           .arg(QString::fromStdString(run_info(db_, id).status), QString::fromUtf8(log.readAll().right(2000)))));
    }
    QVERIFY(pid.has_value());
    ::kill(*pid, SIGKILL);
    QCOMPARE(wait_ended(ended, id), QString("failed"));
    QVERIFY(QString::fromStdString(run_info(db_, id).end_reason).contains("without a run_end"));
  }
};

QTEST_GUILESS_MAIN(TestRunController)
#include "test_run_controller.moc"
