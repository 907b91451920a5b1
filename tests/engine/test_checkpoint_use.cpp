// Using a run's checkpoints from the workbench's Checkpoints tab (issue 14): `sample --stream`
// writes exactly the bytes `sample` prints (byte and sentencepiece tokenizers, greedy and
// sampled), a checkpoint marked keep (<root>/step_NNNNNNNN.keep) survives pruning while the
// others are still pruned (a symlinked marker does not count), and `export --progress` counts
// up to its total, one line per tensor and file.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/keep.h"
#include "engine/common/error.h"
#include "engine/config.h"
#include "engine/export/export.h"
#include "engine/model/gpt.h"
#include "test_util.h"

using json = nlohmann::json;
using namespace tdtest;

namespace {
QStringList entries(const QString& dir) { return QDir(dir).entryList(QDir::Dirs | QDir::NoDotAndDotDot); }

// The raw bytes of a command's stdout (ProcResult decodes them as UTF-8, which would hide a
// difference in invalid bytes).
QByteArray stdout_bytes(const QStringList& args, QString* err) {
  QProcess p;
  p.start(TD_ENGINE_EXE, args);
  if (!p.waitForFinished(300000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
    *err = QString::fromUtf8(p.readAllStandardError()) + " (exit " + QString::number(p.exitCode()) + ")";
    return {};
  }
  return p.readAllStandardOutput();
}
}  // namespace

class TestCheckpointUse : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_, cfg_;
  QString path(const QString& name) const { return dir_.filePath(name); }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QByteArray text;
    for (int i = 0; i < 4000; i++) text += "line " + QByteArray::number(i * 7919 % 1000) + " of a small test corpus, gr\xc3\xbc\xc3\x9f""e\n";
    const TinyRun t = write_tiny_run(dir_.path(), text);
    QVERIFY2(t.prepare.exit_code == 0, qPrintable(t.prepare.err));
    data_ = t.data;
    cfg_ = t.cfg;
  }

  void stream_writes_the_same_bytes_as_sample() {
    const QString run = path("stream");
    auto r = engine({"train", "--config", cfg_, "--out", run, "--quiet", "--no-events-stdout"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    // A BPE model too: sentencepiece joins byte pieces into characters, so its decode is not a
    // concatenation of per-token decodes. Untrained (one step): random pieces and bytes.
    auto p = engine({"prepare", "--input", path("corpus.txt"), "--out", path("ds-bpe"), "--tokenizer", "bpe", "--vocab-size", "320",
                     "--quiet"});
    QVERIFY2(p.exit_code == 0, qPrintable(p.err));
    const QString bpe_run = path("stream-bpe");
    r = engine({"train", "--config", cfg_, "--out", bpe_run, "--quiet", "--no-events-stdout", "--set", "data.path=" + path("ds-bpe"),
                "--set", "model.vocab_size=320", "--set", "train.steps=10"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    struct Case {
      QString run;
      QStringList opts;
    };
    const QList<Case> cases = {
        {run, {"--prompt", "line 4", "--tokens", "40", "--temperature", "0"}},
        {run, {"--prompt", "gr", "--tokens", "60", "--temperature", "1.5", "--top-k", "0", "--seed", "7"}},
        {bpe_run, {"--prompt", "line", "--tokens", "60", "--temperature", "1", "--top-k", "0", "--seed", "3"}},
        {bpe_run, {"--tokens", "30", "--temperature", "0"}},
    };
    for (const Case& c : cases) {
      QString err;
      const QByteArray whole = stdout_bytes(QStringList{"sample", "--checkpoint", c.run} + c.opts, &err);
      QVERIFY2(!whole.isEmpty(), qPrintable(err));
      const QByteArray streamed = stdout_bytes(QStringList{"sample", "--checkpoint", c.run, "--stream"} + c.opts, &err);
      QVERIFY2(!streamed.isEmpty(), qPrintable(err));
      QVERIFY2(streamed == whole, qPrintable(c.opts.join(' ') + ": streamed '" + streamed.toHex() + "' vs '" + whole.toHex() + "'"));
      QVERIFY(whole.endsWith('\n'));
    }
  }

  void a_kept_checkpoint_survives_pruning() {
    const QString run = path("keep");
    auto r = engine({"train", "--config", cfg_, "--out", run, "--quiet", "--no-events-stdout"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const std::string root = (run + "/checkpoints").toStdString();
    QCOMPARE(entries(run + "/checkpoints"), QStringList({"step_00000010", "step_00000020"}));
    td::set_checkpoint_kept(root, 10, true);
    QVERIFY(td::checkpoint_is_kept(root, 10));
    QVERIFY(QFileInfo(run + "/checkpoints/step_00000010.keep").isFile());
    QVERIFY(!td::checkpoint_is_kept(root, 20));
    // A marker that is a symlink (to a plain file) does not count.
    write_file(path("elsewhere.txt"), "x");
    QVERIFY(QFile::link(path("elsewhere.txt"), run + "/checkpoints/step_00000020.keep"));
    QVERIFY(!td::checkpoint_is_kept(root, 20));
    // Marking a step without a checkpoint is refused, naming it.
    try {
      td::set_checkpoint_kept(root, 15, true);
      QFAIL("marking a missing checkpoint was accepted");
    } catch (const td::Error& e) {
      QVERIFY2(QString(e.what()).contains("step_00000015"), e.what());
    }
    // The marker is ignored by the listing (not a step directory).
    auto st = td::checkpoint_statuses(root);
    QCOMPARE(int(st.size()), 2);
    QCOMPARE(st[0].step, 10);
    QCOMPARE(st[1].step, 20);
    // Resume to step 40 keeping 1: 20 and 30 are pruned, 40 is the one kept, 10 is marked.
    r = engine({"train", "--config", cfg_, "--out", run, "--quiet", "--no-events-stdout", "--resume", "--set", "train.steps=40", "--set",
                "train.keep_checkpoints=1"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(entries(run + "/checkpoints"), QStringList({"step_00000010", "step_00000040"}));
    QCOMPARE(QString::fromStdString(*td::latest_checkpoint(root)), run + "/checkpoints/step_00000040");
    QVERIFY(td::checkpoint_problem(root + "/step_00000010").empty());  // its files untouched
    // The symlink's target was never touched; unmarking removes only the marker.
    QVERIFY(QFileInfo(path("elsewhere.txt")).isFile());
    td::set_checkpoint_kept(root, 20, false);
    QVERIFY(!QFileInfo(run + "/checkpoints/step_00000020.keep").exists() && !QFileInfo(run + "/checkpoints/step_00000020.keep").isSymLink());
    QVERIFY(QFileInfo(path("elsewhere.txt")).isFile());
    // Unmarked, step 10 goes at the next prune.
    td::set_checkpoint_kept(root, 10, false);
    QVERIFY(!td::checkpoint_is_kept(root, 10));
    td::prune_checkpoints(root, 1);
    QCOMPARE(entries(run + "/checkpoints"), QStringList({"step_00000040"}));
  }

  void export_progress_counts_to_its_total() {
    const QString run = path("export");
    auto r = engine({"train", "--config", cfg_, "--out", run, "--quiet", "--no-events-stdout"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    r = engine({"export", "--checkpoint", run + "/checkpoints/step_00000020", "--format", "hf", "--out", path("export-hf"), "--progress"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QStringList lines = r.out.split('\n', Qt::SkipEmptyParts);
    QVERIFY(lines.size() > 2);
    QVERIFY2(lines.last().startsWith("exported step 20 of "), qPrintable(lines.last()));
    lines.removeLast();
    // One line per tensor and per file (the model's tensors, 7 files and the marker), counting from 0.
    const td::ModelConfig m = td::parse_config(td::read_json_file(cfg_.toStdString())).model;
    const int total = td::export_progress_total(m, "hf", "byte");
    QCOMPARE(lines.size(), total + 1);
    for (int i = 0; i <= total; i++) QCOMPARE(lines[i], QString("progress %1 %2").arg(i).arg(total));
    // 8 files (the marker included): model.safetensors counted by its tensors, the 7 others one each.
    QCOMPARE(QDir(path("export-hf")).entryList(QDir::Files | QDir::Hidden).size(), 8);
    QCOMPARE(total - int(td::gpt_param_tensors(m).size()), 7);
  }
};

QTEST_GUILESS_MAIN(TestCheckpointUse)
#include "test_checkpoint_use.moc"
