// `traindeck-engine train --db` and `runs ingest`: the store never loses or mixes runs (issue 13,
// section 3). Every case runs the built engine and reads the store back: a run that fails keeps
// its end, a store locked for longer than the busy timeout catches up, two processes claiming one
// run id cannot merge, forged attempts neither wrap nor override the status, and skipped lines
// are reported.
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "store/store.h"
#include "test_util.h"

using json = nlohmann::json;
using namespace tdtest;

namespace {

// Values of one metric in the events file of a run (rank 0, step order as written).
std::vector<double> event_values(const std::vector<json>& ev, const char* name) {
  std::vector<double> v;
  for (const auto& e : events_of_type(ev, "step")) v.push_back(e[name].get<double>());
  return v;
}

int64_t count_rows(td::store::Store& st, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(st.handle(), sql.c_str(), -1, &s, nullptr) != SQLITE_OK) return -1;
  int64_t n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
  sqlite3_finalize(s);
  return n;
}

}  // namespace

class TestDbSink : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_, cfg_;

  QString path(const QString& name) const { return dir_.filePath(name); }
  QStringList train_args(const QString& out, QStringList extra = {}) const {
    return QStringList{"train", "--config", cfg_, "--out", out, "--quiet", "--no-events-stdout"} + extra;
  }
  ProcResult train(const QString& out, QStringList extra = {}) { return engine(train_args(out, extra), 300000); }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const QByteArray text = generated_text(3000);
    const TinyRun t = write_tiny_run(dir_.path(), text);
    QVERIFY2(t.prepare.exit_code == 0, qPrintable(t.prepare.err));
    data_ = t.data;
    cfg_ = t.cfg;
  }

  // Finding 1: a checkpoint that cannot be written (a file named `checkpoints` where the folder
  // goes; chmod does not stop root) fails the run; the store says failed at the last step.
  void a_failed_run_is_failed_in_the_store() {
    const QString out = path("ckfail"), db = path("ckfail.db");
    QVERIFY(QDir().mkpath(out));
    write_file(out + "/checkpoints", "in the way\n");
    auto r = train(out, {"--db", db, "--run-id", "ckfail"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("error: "), qPrintable(r.err));
    auto ev = read_events(out + "/events.jsonl");
    auto ends = events_of_type(ev, "run_end");
    QCOMPARE(ends.size(), size_t(1));
    QCOMPARE(ends[0]["status"].get<std::string>(), std::string("failed"));
    td::store::Store st(db.toStdString());
    const auto run = st.get_run("ckfail");
    QCOMPARE(run.status, std::string("failed"));
    QCOMPARE(*run.last_step, int64_t(10));  // the checkpoint at step 10 failed
    QVERIFY(!run.end_reason.empty());
    QCOMPARE(st.metric_series("ckfail", "loss").size(), size_t(10));
  }

  // Finding 2: a store locked (BEGIN EXCLUSIVE from another connection) for longer than the busy
  // timeout while the run trains: recording goes on once it is free, every step exactly once.
  void a_locked_store_catches_up() {
    const QString out = path("locked"), db = path("locked.db");
    const int steps = 400;
    QProcess p;
    p.start(TD_ENGINE_EXE, QStringList{"train", "--config", cfg_, "--out", out, "--quiet", "--db", db, "--run-id", "locked",
                                       "--set", "train.steps=" + QString::number(steps), "--set", "train.checkpoint_interval=100"});
    QVERIFY(p.waitForStarted());
    QByteArray seen = wait_for_stdout(p, "\"step\":3,");
    QVERIFY2(seen.contains("\"step\":3,"), qPrintable("awaited the run's step 3: " + QString::fromUtf8(p.readAllStandardError())));
    sqlite3* lock = nullptr;
    QCOMPARE(sqlite3_open(db.toUtf8().constData(), &lock), SQLITE_OK);
    sqlite3_busy_timeout(lock, 60000);
    QCOMPARE(sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    // Hold it past the store's 10 s busy timeout; the sink says once that it cannot write.
    QByteArray err;
    QElapsedTimer held;
    held.start();
    while (held.elapsed() < 11000) {
      p.waitForReadyRead(200);
      p.readAllStandardOutput();
      err += p.readAllStandardError();
    }
    QCOMPARE(sqlite3_exec(lock, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(lock);
    QVERIFY2(p.state() == QProcess::NotRunning || p.waitForFinished(300000), "awaited the end of the run");
    err += p.readAllStandardError();
    QCOMPARE(p.exitCode(), 0);
    QVERIFY2(err.count("cannot be written") == 1, err.constData());
    QVERIFY2(err.contains("caught up"), err.constData());
    td::store::Store st(db.toStdString());
    const auto run = st.get_run("locked");
    QCOMPARE(run.status, std::string("completed"));
    QCOMPARE(*run.last_step, int64_t(steps));
    const auto loss = st.metric_series("locked", "loss");
    QCOMPARE(loss.size(), size_t(steps));
    for (int i = 0; i < steps; i++) QCOMPARE(loss.step[(size_t)i], int64_t(i + 1));
    QCOMPARE(loss.value, event_values(read_events(out + "/events.jsonl"), "loss"));
  }

  // Finding 2: `runs ingest` catches a store up by hand, exactly once.
  void runs_ingest_catches_up_exactly_once() {
    const QString out = path("noDb"), db = path("ingest.db");
    auto r = train(out, {"--run-id", "by-hand"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const auto ev = read_events(out + "/events.jsonl");
    auto first = engine({"runs", "ingest", out, "--db", db, "--experiment", "later"});
    QVERIFY2(first.exit_code == 0, qPrintable(first.err));
    QVERIFY2(first.out.contains(QString("%1 new lines").arg(ev.size())), qPrintable(first.out));
    QVERIFY2(first.out.contains("run by-hand: completed at step 20"), qPrintable(first.out));
    auto second = engine({"runs", "ingest", out, "--db", db});
    QVERIFY2(second.exit_code == 0, qPrintable(second.err));
    QVERIFY2(second.out.contains("0 new lines"), qPrintable(second.out));
    td::store::Store st(db.toStdString());
    QCOMPARE(st.get_run("by-hand").experiment, std::string("later"));
    QCOMPARE(st.get_run("by-hand").status, std::string("completed"));
    const auto loss = st.metric_series("by-hand", "loss");
    QCOMPARE(loss.value, event_values(ev, "loss"));
    QCOMPARE(st.metric_series("by-hand", "lr").value, event_values(ev, "lr"));
    QCOMPARE(count_rows(st, "SELECT count(*) FROM metrics WHERE name = (SELECT id FROM metric_names WHERE name = 'loss')"),
             int64_t(20));
    QCOMPARE(st.checkpoints("by-hand").size(), size_t(2));
    // Not a run directory: a message, nothing written.
    auto bad = engine({"runs", "ingest", path("nowhere"), "--db", db});
    QCOMPARE(bad.exit_code, 1);
    QVERIFY2(bad.err.contains("no events file") && bad.err.contains("nowhere"), qPrintable(bad.err));
  }

  // Issue 35: `runs show` marks the checkpoints train.keep_checkpoints pruned (the events record
  // all of them) and the ones a person marked kept. Steps 10..50 every 10, keep 2: 10, 20, 30 gone.
  void runs_show_marks_pruned_checkpoints() {
    const QString out = path("pruned"), db = path("pruned.db");
    auto r = train(out, {"--db", db, "--run-id", "pruned", "--set", "train.steps=50", "--set", "train.keep_checkpoints=2"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(QDir(out + "/checkpoints").entryList({"step_*"}, QDir::Dirs), QStringList({"step_00000040", "step_00000050"}));
    const auto show = engine({"runs", "show", "pruned", "--db", db});
    QVERIFY2(show.exit_code == 0, qPrintable(show.err));
    const QString root = QFileInfo(out).absoluteFilePath() + "/checkpoints/";
    for (const char* gone : {"step_00000010", "step_00000020", "step_00000030"})
      QVERIFY2(show.out.contains(QRegularExpression(QString(" pruned +") + root + gone)), qPrintable(show.out));
    for (const char* kept : {"step_00000040", "step_00000050"})
      QVERIFY2(show.out.contains(QRegularExpression(QString(" yes +") + root + kept)), qPrintable(show.out));
    QVERIFY2(show.out.contains("  3 of 5 pruned (train.keep_checkpoints keeps the newest; marked ones stay)"), qPrintable(show.out));
  }

  // Finding 3: two processes started together with one --run-id: one trains into the store, the
  // other is refused; the store's rows all come from one events file.
  void one_run_id_is_claimed_once() {
    for (int round = 0; round < 3; round++) {
      const QString id = QString("twin-%1").arg(round), db = path(id + ".db");
      const QString a = path(id + "-a"), b = path(id + "-b");
      QProcess pa, pb;
      pa.start(TD_ENGINE_EXE, train_args(a, {"--db", db, "--run-id", id}));
      pb.start(TD_ENGINE_EXE, train_args(b, {"--db", db, "--run-id", id}));
      QVERIFY(pa.waitForStarted() && pb.waitForStarted());
      QVERIFY2(pa.waitForFinished(300000) && pb.waitForFinished(300000), "awaited both runs' ends");
      const QString ea = QString::fromUtf8(pa.readAllStandardError()), eb = QString::fromUtf8(pb.readAllStandardError());
      const int codes = pa.exitCode() * 10 + pb.exitCode();
      QVERIFY2(codes == 1 || codes == 10, qPrintable(QString("exit codes %1, %2: %3 | %4").arg(pa.exitCode()).arg(pb.exitCode()).arg(ea, eb)));
      const QString winner = pa.exitCode() == 0 ? a : b;
      const QString loser_err = pa.exitCode() == 0 ? eb : ea;
      QVERIFY2(loser_err.contains("already in the store"), qPrintable(loser_err));
      QVERIFY(!QFileInfo::exists((pa.exitCode() == 0 ? b : a) + "/events.jsonl"));
      td::store::Store st(db.toStdString());
      const auto run = st.get_run(id.toStdString());
      QCOMPARE(QString::fromStdString(run.events_path), QFileInfo(winner + "/events.jsonl").absoluteFilePath());
      QCOMPARE(run.status, std::string("completed"));
      QCOMPARE(st.metric_series(id.toStdString(), "loss").value, event_values(read_events(winner + "/events.jsonl"), "loss"));
    }
  }

  // Finding 4: a forged "attempt": 2147483647 line does not make the next attempt wrap, and a
  // forged run_end of another attempt does not decide the status.
  void forged_attempts_neither_wrap_nor_end_the_run() {
    const QString out = path("forged"), db = path("forged.db");
    auto r = train(out, {"--db", db, "--run-id", "forged"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    {
      std::ofstream f((out + "/events.jsonl").toStdString(), std::ios::app);
      f << json{{"type", "step"}, {"v", 1}, {"t", 1.0}, {"run_id", "forged"}, {"attempt", 2147483647}, {"rank", 0},
                {"step", 3}, {"loss", 99.0}}.dump() << "\n";
      f << json{{"type", "run_end"}, {"v", 1}, {"t", 2.0}, {"run_id", "forged"}, {"attempt", 5}, {"rank", 0},
                {"status", "failed"}, {"reason", "forged"}, {"step", 3}}.dump() << "\n";
    }
    r = train(out, {"--db", db, "--resume", "--set", "train.steps=30"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const auto ev = read_events(out + "/events.jsonl");
    const auto starts = events_of_type(ev, "run_start");
    QCOMPARE(starts.size(), size_t(2));
    QCOMPARE(starts[1]["attempt"].get<int>(), 1);
    QCOMPARE(events_of_type(ev, "step").back()["attempt"].get<int>(), 1);
    // train --db says that a line was skipped.
    QVERIFY2(r.err.contains("1 malformed line") && r.err.contains("skipped"), qPrintable(r.err));
    td::store::Store st(db.toStdString());
    const auto run = st.get_run("forged");
    QCOMPARE(run.status, std::string("completed"));
    QCOMPARE(*run.last_step, int64_t(30));
    QCOMPARE(run.attempts, 2);
    const auto loss = st.metric_series("forged", "loss");
    QCOMPARE(loss.size(), size_t(30));
    QVERIFY(loss.value[2] != 99.0);
    // runs show names the skipped line.
    auto show = engine({"runs", "show", "forged", "--db", db});
    QVERIFY2(show.out.contains("skipped lines") && show.out.contains("1 malformed"), qPrintable(show.out));
  }

  // Issue 35: a full disk under events.jsonl. The engine cannot write its run_end there; the
  // store gets the end directly (failed, the engine's reason) instead of saying "running" forever.
  // The run folder is a 48 KiB tmpfs mounted in a mount namespace of the engine's own (root and
  // unshare(1) needed), so nothing else on the machine sees it and it goes with the process.
  void a_full_disk_ends_the_run_in_the_store() {
    if (::geteuid() != 0) QSKIP("needs root to mount a small tmpfs for the run folder (unshare -m)");
    if (run("unshare", {"-m", "true"}, 60000).exit_code != 0) QSKIP("unshare -m does not work here (no mount namespaces)");
    const QString out = path("full"), db = path("full.db");
    QVERIFY(QDir().mkpath(out));
    const QStringList args = QStringList{"-m", "sh", "-c", "mount -t tmpfs -o size=48k tmpfs \"$1\" && shift && exec \"$@\"", "sh", out,
                                         TD_ENGINE_EXE} +
                             train_args(out, {"--db", db, "--run-id", "full", "--set", "train.steps=1000000", "--set",
                                              "train.checkpoint_interval=0"});
    const auto r = run("unshare", args, 300000);
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("No space left on device"), qPrintable(r.err));
    QVERIFY2(r.err.contains("the store records it as failed"), qPrintable(r.err));
    td::store::Store st(db.toStdString());
    const auto run_info = st.get_run("full");
    QCOMPARE(run_info.status, std::string("failed"));
    QVERIFY(run_info.end_time.has_value());
    QVERIFY2(run_info.end_reason.find("No space left on device") != std::string::npos, run_info.end_reason.c_str());
    QVERIFY2(run_info.end_reason.find("the store recorded the end directly") != std::string::npos, run_info.end_reason.c_str());
    QVERIFY(run_info.last_step && *run_info.last_step > 0);  // it trained until the disk was full
    QVERIFY(!run_info.pid);
    const auto attempts = st.run_attempts("full");
    QCOMPARE(attempts.size(), size_t(1));
    QCOMPARE(attempts[0].status, std::string("failed"));
  }

  // Finding 4: an attempt number out of range in the checkpoint is refused, not wrapped.
  void an_attempt_out_of_range_in_a_checkpoint_is_refused() {
    const QString out = path("bigattempt");
    auto r = train(out, {"--set", "train.steps=10"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const QString tj = out + "/checkpoints/step_00000010/trainer.json";
    QFile f(tj);
    QVERIFY(f.open(QIODevice::ReadOnly));
    json st = json::parse(f.readAll().toStdString());
    f.close();
    st["attempt"] = 2147483647;
    std::ofstream(tj.toStdString()) << st.dump(2);
    // Forged with its SHA256SUMS updated (coreutils' sha256sum writes that format), so that the
    // attempt check refuses it, not the checksum (docs/formats.md).
    const QString ckpt = out + "/checkpoints/step_00000010";
    const auto sums = run("sha256sum", {"model.safetensors", "optimizer.safetensors", "trainer.json"}, 60000, ckpt);
    QVERIFY2(sums.exit_code == 0, qPrintable(sums.err));
    write_file(ckpt + "/SHA256SUMS", sums.out.toUtf8());
    r = train(out, {"--resume", "--set", "train.steps=12"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("attempt") && r.err.contains("2147483647"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestDbSink)
#include "test_db_sink.moc"
