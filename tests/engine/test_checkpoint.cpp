// Checkpoints carry checksums (issue 13, sections 2 and 4): every checkpoint directory has a
// SHA256SUMS file in coreutils' format, checked here by `sha256sum -c` (an independent
// implementation). A checkpoint whose files do not match it, or whose weights are not finite,
// does not verify: --resume, sample and export --run skip it with a warning naming it and use
// the newest one that verifies; sample / export --checkpoint refuse it. A run that fails after
// non-finite steps names a checkpoint that verifies; --resume-from STEP starts from an older one.
// Checkpoints written before checksums (no SHA256SUMS) are still read, with a warning.
#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <fstream>

#include "test_util.h"

using json = nlohmann::json;
using namespace tdtest;

namespace {

// The byte offset of the data section of a safetensors file (8 + its header length).
qint64 data_start(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return -1;
  quint64 n = 0;
  if (f.read(reinterpret_cast<char*>(&n), 8) != 8) return -1;
  return qint64(8 + n);
}

// XORs 16 bytes of weight data with 0x01 (64 bytes into the data section): the values change
// (low mantissa bits, one exponent bit) but stay finite, and the header still parses, so only a
// checksum can tell.
bool flip16(const QString& path) {
  const qint64 at = data_start(path) + 64;
  QFile f(path);
  if (at < 72 || !f.open(QIODevice::ReadWrite) || !f.seek(at)) return false;
  QByteArray b = f.read(16);
  if (b.size() != 16) return false;
  for (char& c : b) c = char(c ^ 0x01);
  return f.seek(at) && f.write(b) == 16;
}

// Overwrites the first float of the data section (wte.weight[0][0]) with a quiet NaN.
bool write_nan(const QString& path) {
  const qint64 at = data_start(path);
  QFile f(path);
  if (at < 8 || !f.open(QIODevice::ReadWrite) || !f.seek(at)) return false;
  const quint32 nan_bits = 0x7FC00000u;
  return f.write(reinterpret_cast<const char*>(&nan_bits), 4) == 4;
}

// Runs program in dir (sha256sum on a checkpoint's files).
ProcResult run_cmd_in(const QString& dir, const QString& program, const QStringList& args) { return run(program, args, 60000, dir); }

QStringList entries(const QString& dir) { return QDir(dir).entryList(QDir::Dirs | QDir::NoDotAndDotDot); }

}  // namespace

class TestCheckpoint : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_, cfg_;

  QString path(const QString& name) const { return dir_.filePath(name); }
  ProcResult train(const QString& out, QStringList extra = {}) {
    return engine(QStringList{"train", "--config", cfg_, "--out", out, "--quiet", "--no-events-stdout"} + extra);
  }
  // A finished run of 20 steps with checkpoints at 10 and 20.
  void trained_run(const QString& out) {
    auto r = train(out);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(entries(out + "/checkpoints"), QStringList({"step_00000010", "step_00000020"}));
  }
  static QString ckpt(const QString& run, int step) {
    return run + QString("/checkpoints/step_%1").arg(step, 8, 10, QChar('0'));
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QByteArray text;
    for (int i = 0; i < 4000; i++) text += "line " + QByteArray::number(i * 7919 % 1000) + " of a small test corpus\n";
    const TinyRun t = write_tiny_run(dir_.path(), text);
    QVERIFY2(t.prepare.exit_code == 0, qPrintable(t.prepare.err));
    data_ = t.data;
    cfg_ = t.cfg;
  }

  void every_checkpoint_has_sha256sums_that_sha256sum_accepts() {
    const QString run = path("sums");
    trained_run(run);
    for (int step : {10, 20}) {
      auto r = run_cmd_in(ckpt(run, step), "sha256sum", {"-c", "SHA256SUMS"});
      QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
      QCOMPARE(r.out, QString("model.safetensors: OK\noptimizer.safetensors: OK\ntrainer.json: OK\n"));
    }
  }

  void resume_uses_the_previous_checkpoint_when_the_newest_is_damaged() {
    const QString run = path("flip_resume");
    trained_run(run);
    QVERIFY(flip16(ckpt(run, 20) + "/model.safetensors"));
    auto r = train(run, {"--resume", "--set", "train.steps=30"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    auto ev = read_events(run + "/events.jsonl");
    QCOMPARE(events_of_type(ev, "run_start").back()["resumed_from_step"].get<int>(), 10);
    auto w = events_of_type(ev, "warning");
    QVERIFY(!w.empty());
    QCOMPARE(w.back()["code"].get<std::string>(), std::string("damaged_checkpoint"));
    const QString msg = QString::fromStdString(w.back()["message"].get<std::string>());
    QVERIFY2(msg.contains("step_00000020") && msg.contains("model.safetensors") && msg.contains("SHA256SUMS"), qPrintable(msg));
    // The damaged one was replaced by the resumed run's own step 20, which verifies.
    QCOMPARE(entries(run + "/checkpoints"), QStringList({"step_00000010", "step_00000020", "step_00000030"}));
    QCOMPARE(run_cmd_in(ckpt(run, 20), "sha256sum", {"-c", "--quiet", "SHA256SUMS"}).exit_code, 0);
  }

  void sample_says_which_older_checkpoint_it_used() {
    const QString run = path("flip_sample");
    trained_run(run);
    QVERIFY(flip16(ckpt(run, 20) + "/model.safetensors"));
    auto r = engine({"sample", "--checkpoint", run, "--prompt", "line", "--tokens", "8", "--temperature", "0"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.startsWith("line"), qPrintable(r.out));
    QVERIFY2(r.err.contains("step_00000020") && r.err.contains("SHA256SUMS"), qPrintable(r.err));
    QVERIFY2(r.err.contains("using " + ckpt(run, 10) + " (step 10)"), qPrintable(r.err));
    // Named directly, the damaged checkpoint is refused.
    r = engine({"sample", "--checkpoint", ckpt(run, 20), "--prompt", "line", "--tokens", "8"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("model.safetensors") && r.err.contains("does not match"), qPrintable(r.err));
  }

  void export_refuses_a_damaged_checkpoint_and_takes_the_older_for_a_run() {
    const QString run = path("flip_export");
    trained_run(run);
    QVERIFY(flip16(ckpt(run, 20) + "/model.safetensors"));
    auto r = engine({"export", "--checkpoint", ckpt(run, 20), "--format", "safetensors", "--out", path("x_flip_ck")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("model.safetensors") && r.err.contains("does not match"), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(path("x_flip_ck")));
    r = engine({"export", "--run", run, "--format", "safetensors", "--out", path("x_flip_run")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.startsWith("exported step 10 of " + ckpt(run, 10)), qPrintable(r.out));
    QVERIFY2(r.err.contains("step_00000020") && r.err.contains("SHA256SUMS"), qPrintable(r.err));
    QFile side(path("x_flip_run") + "/traindeck_export.json");
    QVERIFY(side.open(QIODevice::ReadOnly));
    QCOMPARE(json::parse(side.readAll().toStdString())["step"].get<int>(), 10);
  }

  void export_refuses_nonfinite_weights_even_with_a_valid_checksum() {
    const QString run = path("nan_export");
    trained_run(run);
    const QString c = ckpt(run, 20);
    QVERIFY(write_nan(c + "/model.safetensors"));
    // The checksums written again by coreutils: the files match them, the weights are NaN.
    auto s = run_cmd_in(c, "sh", {"-c", "sha256sum model.safetensors optimizer.safetensors trainer.json > SHA256SUMS"});
    QVERIFY2(s.exit_code == 0, qPrintable(s.err));
    auto r = engine({"export", "--checkpoint", c, "--format", "hf", "--out", path("x_nan")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("non-finite") && r.err.contains("wte.weight"), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(path("x_nan")));
  }

  // Issue 35: a run whose checkpoints folder is a link (to another run's, or anywhere) is refused
  // before anything is read or written there, for a resume and for a fresh run; a step folder
  // that is a link is not taken for a checkpoint.
  void a_symlinked_checkpoints_folder_is_not_followed() {
    const QString run = path("linked_root"), other = path("linked_other");
    trained_run(run);
    QVERIFY(QDir().rename(run + "/checkpoints", other));
    QVERIFY(QFile::link(other, run + "/checkpoints"));
    const QStringList before = entries(other);
    auto r = train(run, {"--resume", "--set", "train.steps=25"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("checkpoints' is a symbolic link") && r.err.contains("replace the link with a real folder"),
             qPrintable(r.err));
    const QString fresh = path("linked_fresh");
    QVERIFY(QDir().mkpath(fresh));
    QVERIFY(QFile::link(other, fresh + "/checkpoints"));
    r = train(fresh, {"--set", "train.steps=12"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("checkpoints' is a symbolic link"), qPrintable(r.err));
    QCOMPARE(entries(other), before);  // nothing written through either link
    QVERIFY(!QFileInfo::exists(fresh + "/events.jsonl"));
    // A real folder whose newest step folder is a link: that one is not a checkpoint.
    QVERIFY(QFile::remove(run + "/checkpoints"));
    QVERIFY(QDir().mkpath(run + "/checkpoints"));
    QVERIFY(QDir().rename(other + "/step_00000010", run + "/checkpoints/step_00000010"));
    QVERIFY(QFile::link(other + "/step_00000020", run + "/checkpoints/step_00000020"));
    r = train(run, {"--resume", "--set", "train.steps=25"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(events_of_type(read_events(run + "/events.jsonl"), "run_start").back()["resumed_from_step"].get<int>(), 10);
  }

  void a_symlinked_file_in_a_checkpoint_is_not_followed() {
    // The same bytes behind a symlink: the checksum would match, but a checkpoint's files are
    // opened O_NOFOLLOW (files of other programs or nodes are not trusted to point elsewhere).
    const QString run = path("symlinked");
    trained_run(run);
    const QString m = ckpt(run, 20) + "/model.safetensors";
    QVERIFY(QFile::rename(m, path("elsewhere.safetensors")));
    QVERIFY(QFile::link(path("elsewhere.safetensors"), m));
    auto r = engine({"export", "--checkpoint", ckpt(run, 20), "--format", "safetensors", "--out", path("x_link")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("model.safetensors' is a symbolic link"), qPrintable(r.err));
    r = train(run, {"--resume", "--set", "train.steps=25"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(events_of_type(read_events(run + "/events.jsonl"), "run_start").back()["resumed_from_step"].get<int>(), 10);
  }

  // Issue 35: deleting SHA256SUMS does not turn verification off. A checkpoint whose trainer.json
  // says it was written with checksums and that lacks the list does not verify: --resume passes
  // over it to the older one and says why.
  void a_deleted_checksum_list_does_not_verify() {
    const QString run = path("nosums");
    trained_run(run);
    QVERIFY(QFile::remove(ckpt(run, 20) + "/SHA256SUMS"));
    // Asked for by name, it is refused.
    auto r = engine({"sample", "--checkpoint", ckpt(run, 20), "--prompt", "line", "--tokens", "8"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("SHA256SUMS is missing"), qPrintable(r.err));
    r = train(run, {"--resume", "--set", "train.steps=25"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    auto ev = read_events(run + "/events.jsonl");
    QCOMPARE(events_of_type(ev, "run_start").back()["resumed_from_step"].get<int>(), 10);
    auto w = events_of_type(ev, "warning");
    QVERIFY(!w.empty());
    QCOMPARE(w.back()["code"].get<std::string>(), std::string("damaged_checkpoint"));
    const QString msg = QString::fromStdString(w.back()["message"].get<std::string>());
    QVERIFY2(msg.contains("step_00000020") && msg.contains("SHA256SUMS is missing, but trainer.json says"), qPrintable(msg));
  }

  void a_checkpoint_without_checksums_still_resumes_with_a_warning() {
    // Written before checksums: no SHA256SUMS. Read as before (structure and finite weights).
    const QString run = path("legacy");
    trained_run(run);
    for (int step : {10, 20}) {
      QVERIFY(QFile::remove(ckpt(run, step) + "/SHA256SUMS"));
      // An older engine's trainer.json: without "checksums".
      const QString tj = ckpt(run, step) + "/trainer.json";
      QFile f(tj);
      QVERIFY(f.open(QIODevice::ReadOnly));
      json st = json::parse(f.readAll().toStdString());
      f.close();
      QCOMPARE(st.value("checksums", ""), std::string("SHA256SUMS"));
      st.erase("checksums");
      QVERIFY(QFile::remove(tj));
      write_file(tj, QByteArray::fromStdString(st.dump(2)));
    }
    auto r = train(run, {"--resume", "--set", "train.steps=25"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    auto ev = read_events(run + "/events.jsonl");
    QCOMPARE(events_of_type(ev, "run_start").back()["resumed_from_step"].get<int>(), 20);
    auto w = events_of_type(ev, "warning");
    QVERIFY(!w.empty());
    QCOMPARE(w.back()["code"].get<std::string>(), std::string("unverified_checkpoint"));
    const QString msg = QString::fromStdString(w.back()["message"].get<std::string>());
    QVERIFY2(msg.contains("step_00000020") && msg.contains("no SHA256SUMS"), qPrintable(msg));
    // Its new checkpoint has them.
    QCOMPARE(run_cmd_in(ckpt(run, 25), "sha256sum", {"-c", "--quiet", "SHA256SUMS"}).exit_code, 0);
    // A new run initialised from the old checkpoint says so too.
    const QString fresh = path("legacy_init");
    r = train(fresh, {"--init-from", ckpt(run, 10), "--set", "train.steps=2"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    w = events_of_type(read_events(fresh + "/events.jsonl"), "warning");
    QVERIFY(!w.empty());
    QCOMPARE(w.back()["code"].get<std::string>(), std::string("unverified_checkpoint"));
    QVERIFY2(QString::fromStdString(w.back()["message"].get<std::string>()).startsWith("initialised from checkpoint '" + ckpt(run, 10) + "'"),
             w.back()["message"].get<std::string>().c_str());
  }

  void a_failed_run_names_a_checkpoint_that_verifies() {
    // Issue 13, 2: step 20 is damaged; before checksums, --resume took it and the run that then
    // failed said "the last good checkpoint (step 20) is kept". Now the resume takes step 10,
    // writes a new step 20, and the failure names it: it verifies.
    const QString run = path("flip_fail");
    trained_run(run);
    QVERIFY(flip16(ckpt(run, 20) + "/model.safetensors"));
    auto r = train(run, {"--resume", "--set", "train.steps=40", "--debug-nonfinite-at", "21", "22", "23"});
    QCOMPARE(r.exit_code, 1);
    auto end = events_of_type(read_events(run + "/events.jsonl"), "run_end");
    QCOMPARE(end.back()["status"].get<std::string>(), std::string("failed"));
    const QString reason = QString::fromStdString(end.back()["reason"].get<std::string>());
    QVERIFY2(reason.contains("is step 20 (" + ckpt(run, 20) + ")"), qPrintable(reason));
    QCOMPARE(run_cmd_in(ckpt(run, 20), "sha256sum", {"-c", "--quiet", "SHA256SUMS"}).exit_code, 0);
    // A run that failed before its first checkpoint names none.
    const QString early = path("early_fail");
    QCOMPARE(train(early, {"--debug-nonfinite-at", "1", "2", "3"}).exit_code, 1);
    const QString why = QString::fromStdString(events_of_type(read_events(early + "/events.jsonl"), "run_end").back()["reason"].get<std::string>());
    QCOMPARE(why, QString("3 steps in a row had a non-finite loss or gradient norm; lower train.lr or check the data."));
  }

  void a_checkpoint_with_nonfinite_weights_is_not_named_nor_resumed() {
    // The update of step 20 made a weight NaN (its loss was still finite): the checkpoint of
    // step 20 holds it, steps 21-23 are non-finite and the run fails. It must name step 10, and
    // --resume must continue from step 10, not fail again from step 20.
    const QString run = path("nan_fail");
    auto r = train(run, {"--set", "train.steps=40", "--debug-nonfinite-weights-at", "20"});
    QCOMPARE(r.exit_code, 1);
    auto ev = read_events(run + "/events.jsonl");
    const QString reason = QString::fromStdString(events_of_type(ev, "run_end").back()["reason"].get<std::string>());
    QVERIFY2(reason.contains("is step 10 (" + ckpt(run, 10) + ")"), qPrintable(reason));
    bool warned = false;
    for (const auto& w : events_of_type(ev, "warning")) {
      const QString m = QString::fromStdString(w["message"].get<std::string>());
      warned = warned || (w["code"] == "damaged_checkpoint" && m.contains("step_00000020") && m.contains("non-finite"));
    }
    QVERIFY2(warned, "no damaged_checkpoint warning naming step_00000020 and its non-finite weights");
    r = train(run, {"--resume", "--set", "train.steps=25"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    ev = read_events(run + "/events.jsonl");
    QCOMPARE(events_of_type(ev, "run_start").back()["resumed_from_step"].get<int>(), 10);
    QCOMPARE(events_of_type(ev, "run_end").back()["status"].get<std::string>(), std::string("completed"));
  }

  void resume_from_an_older_step() {
    const QString run = path("resume_from");
    trained_run(run);
    const size_t before = read_events(run + "/events.jsonl").size();
    // A step that is not there: refused, listing those that are.
    auto r = train(run, {"--resume-from", "15", "--set", "train.steps=30"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("no checkpoint of step 15") && r.err.contains("step_00000010") && r.err.contains("step_00000020"),
             qPrintable(r.err));
    // One that does not verify: refused with its problem.
    QVERIFY(flip16(ckpt(run, 20) + "/model.safetensors"));
    r = train(run, {"--resume-from", "20", "--set", "train.steps=30"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("step_00000020") && r.err.contains("does not match") && r.err.contains("step_00000010 (verifies)"),
             qPrintable(r.err));
    QCOMPARE(read_events(run + "/events.jsonl").size(), before);  // refused before anything was written
    // An older one that verifies: the run continues from it.
    r = train(run, {"--resume-from", "10", "--set", "train.steps=30"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    auto ev = read_events(run + "/events.jsonl");
    QVERIFY(ev.size() > before);
    QCOMPARE(events_of_type(ev, "run_start").back()["resumed_from_step"].get<int>(), 10);
    QCOMPARE(events_of_type(ev, "step").back()["step"].get<int>(), 30);
    QCOMPARE(events_of_type(ev, "step")[events_of_type(ev, "step").size() - 20]["step"].get<int>(), 11);
  }
};

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
