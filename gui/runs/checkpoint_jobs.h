// What the Checkpoints tab does with a run's checkpoints, without widgets (Qt Core only):
//   SampleJob   `traindeck-engine sample --stream`: the generated text as it arrives
//   ExportJob   `traindeck-engine export --format hf --progress`: progress, then the result line
//   removeCheckpointDir()   deletes one step_NNNNNNNN directory, refusing anything else
//
// Threading rule: SampleJob and ExportJob live on the GUI thread; the engine runs in a QProcess
// (asynchronous: nothing here waits for it), their signals come from its events. The free
// functions touch the file system synchronously: call removeCheckpointDir() on a pool thread
// (QtConcurrent), the others (a few stat calls) anywhere.
#pragma once

#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace td::gui {

/// `sample --stream` of one checkpoint. A UTF-8 sequence cut by the end of a read is held back
/// until its other bytes arrive (Utf8Stream), so a character split across reads is kept whole;
/// invalid bytes (an untrained byte-level model writes them) become U+FFFD exactly as
/// QString::fromUtf8 of the whole output makes them.
class Utf8Stream {
 public:
  /// The text of `bytes` appended to what was held back, without a cut sequence at its end.
  QString decode(const QByteArray& bytes);
  /// What is held back (an incomplete sequence at the very end: U+FFFD).
  QString finish();

 private:
  QByteArray held_;
};

class SampleJob : public QObject {
  Q_OBJECT
 public:
  struct Options {
    QString checkpoint;       ///< a step_NNNNNNNN directory
    QString prompt;
    int tokens = 200;
    double temperature = 0.8;  ///< 0: greedy
    int top_k = 40;            ///< 0: all
    quint64 seed = 1;
    QString data;              ///< dataset whose tokenizer to use ("": the run's data.path)
  };
  explicit SampleJob(QObject* parent = nullptr);
  ~SampleJob() override;
  /// The engine's arguments for `opt` (with --stream), e.g. for a reference run in a test.
  static QStringList arguments(const Options& opt, bool stream = true);
  /// Starts the engine; false with *error when no engine is found or one is running already.
  bool start(const Options& opt, QString* error = nullptr);
  /// Kills the engine (finished() follows, with stopped = true).
  void stop();
  bool isRunning() const { return proc_ && proc_->state() != QProcess::NotRunning; }
  /// Everything decoded so far of this start.
  QString text() const { return text_; }

 signals:
  void textAppended(const QString& text);
  /// ok: exit code 0. error: the engine's "error: ..." lines (or why it did not start) and
  /// its exit code; empty when ok or stopped.
  void finished(bool ok, bool stopped, const QString& error);

 private:
  QProcess* proc_ = nullptr;
  Utf8Stream decoder_;
  QString text_;
  QByteArray stderr_;
  bool stopped_ = false;
};

/// `export --checkpoint DIR --format hf --out OUT --progress [--force]`.
class ExportJob : public QObject {
  Q_OBJECT
 public:
  explicit ExportJob(QObject* parent = nullptr);
  ~ExportJob() override;
  /// --force is passed only when `out` is an earlier export (isEarlierExport); the engine checks
  /// it again. False with *error when no engine is found, one is running, or `out` is a non-empty
  /// folder that is not an export (the engine would refuse it: said before it starts).
  bool start(const QString& checkpoint, const QString& out, const QString& data = {}, QString* error = nullptr);
  void cancel();
  bool isRunning() const { return proc_ && proc_->state() != QProcess::NotRunning; }

 signals:
  /// From the engine's "progress DONE TOTAL" lines.
  void progress(int done, int total);
  /// ok: `message` is the engine's result line ("exported step 20 of ... to DIR (8 files, 0.1 MB)");
  /// else the engine's error and exit code.
  void finished(bool ok, const QString& message, const QString& out_dir);

 private:
  QProcess* proc_ = nullptr;
  QByteArray out_buf_, stderr_;
  QString result_, out_dir_;
};

/// True when `dir` holds the marker of an earlier export (.traindeck-export, a plain file).
bool isEarlierExport(const QString& dir);

/// Deletes `root`/`name` and its keep marker. Refuses (returns why, deletes nothing) unless
/// `name` is step_ + 8 digits and root/name is a real directory (not a symlink) directly under
/// `root`; symlinks inside are removed, never followed (std::filesystem::remove_all). "" when
/// deleted.
QString removeCheckpointDir(const QString& root, const QString& name);

/// The summed size in bytes of the plain files directly in a checkpoint directory (-1 when it
/// is not a directory).
qint64 checkpointDirBytes(const QString& dir);

}  // namespace td::gui
