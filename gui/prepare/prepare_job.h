// PrepareJob: runs the engine's `prepare` on a corpus as a child process and reports progress,
// the finished dataset (registered in the store), an error, or a cancel.
//
// Threading rule: create, call and destroy a PrepareJob on one thread (the GUI thread). The work
// happens in the `traindeck-engine prepare ... --progress-json` process (QProcess, asynchronous),
// the store registration in a StoreClient job, and the removal of a cancelled job's partial
// output on a short-lived thread; the calling thread never waits on any of them (except in the
// destructor of a job still running). Signals are emitted on that thread.
#pragma once

#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QThread>
#include <QTimer>

namespace td::gui {

class StoreClient;

/// What to prepare: the engine's prepare options (docs/formats.md).
struct PrepareRequest {
  QStringList inputs;           // files and folders (folders are walked recursively)
  QString out_dir;              // the dataset directory to write
  QString tokenizer = QStringLiteral("byte");  // "byte" or "bpe"
  int vocab_size = 0;           // bpe: ids (300..1048576; 0: engine default 8000); byte: 0 or 257
  double val_fraction = 0.1;    // [0, 0.5]: the last fraction of the token stream is validation
};

class PrepareJob : public QObject {
  Q_OBJECT
 public:
  enum class State { Idle, Running, Cancelling, Registering };

  explicit PrepareJob(QObject* parent = nullptr);
  /// A job still running is stopped (SIGTERM, then SIGKILL after the grace period; this waits
  /// for the process) and its partial output removed, as by cancel(), but without signals.
  ~PrepareJob() override;

  /// The store the finished dataset is registered in (Store::register_dataset) before finished()
  /// is emitted; nullptr: not registered. The client must outlive the job or be reset first.
  void setStoreClient(StoreClient* store);
  /// Milliseconds between SIGTERM and SIGKILL on cancel (default 3000). The engine stops within
  /// ~250 ms of SIGTERM while encoding; BPE training does not look at signals until it is done.
  void setCancelGraceMs(int ms) { grace_ms_ = ms; }

  /// Starts `<engineExecutable()> prepare --input=... --out=... --tokenizer=... [--vocab-size=N]
  /// --val-fraction=F --progress-json`. Returns false when a job is running (nothing happens) or
  /// when the request cannot start (no input, no output folder, no engine binary): then
  /// failed(message) is emitted, queued.
  bool start(const PrepareRequest& request);
  /// Stops a running job: SIGTERM, SIGKILL after the grace period; then removes what the job
  /// wrote: the engine's "<out>.tmp-*" folders it created, the output folder only when it did
  /// not exist before start() (a pre-existing dataset is never deleted), and the parent folders
  /// it created. Emits cancelled() once that is done. No effect when idle or registering.
  void cancel();

  State state() const { return state_; }
  bool isRunning() const { return state_ != State::Idle; }
  const PrepareRequest& request() const { return request_; }
  /// After finished(): whether the engine reused an already prepared dataset ("already prepared").
  bool reused() const { return reused_; }
  /// After finished(): manifest.json's text exactly as the engine reported it (64-bit numbers
  /// such as mtime_ns intact, unlike the QJsonObject of finished()).
  QString manifestText() const { return manifest_text_; }

  /// The engine arguments start() uses for `request` (after the executable).
  static QStringList arguments(const PrepareRequest& request);

 signals:
  /// Input bytes encoded so far and in all; at most ~4 a second while encoding (BPE training
  /// reports nothing). The last has done == total.
  void progress(qint64 bytes_done, qint64 bytes_total);
  /// The dataset at absolute folder `out` is complete (and registered, when a store is set).
  /// `manifest` is its manifest.json (docs/formats.md).
  void finished(const QJsonObject& manifest, const QString& out);
  /// The engine refused or failed: `message` is its own error message ("error: " dropped), or
  /// what went wrong starting it or registering the dataset. Nothing partial is left behind.
  void failed(const QString& message);
  /// cancel() finished: the process is gone and its partial output removed.
  void cancelled();

 private:
  void onStdout();
  void onStderr();
  void onFinished(int exit_code, QProcess::ExitStatus status);
  void onError(QProcess::ProcessError error);
  void handleLine(const QByteArray& line);
  void finishFailed(const QString& message);
  void removePartial(bool remove_out, bool sync);
  QString engineMessage() const;

  QPointer<StoreClient> store_;
  QProcess* process_ = nullptr;
  QTimer kill_timer_;
  QPointer<QThread> cleanup_;  // removing a cancelled job's partial output
  int grace_ms_ = 3000;
  State state_ = State::Idle;
  PrepareRequest request_;
  QString out_abs_;
  bool out_existed_ = false;
  QStringList tmp_before_;     // "<out>.tmp-*" entries beside out before start
  QString created_root_;       // topmost parent of out that did not exist before start
  QByteArray stdout_buf_, stderr_buf_;
  bool done_seen_ = false;
  bool reused_ = false;
  QString manifest_text_;
  QJsonObject manifest_;
};

}  // namespace td::gui
