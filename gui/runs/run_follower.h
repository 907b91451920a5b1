// RunFollower: follows live runs' events files and logs into the store, off the GUI thread.
//
// Threading rule: construct it on the GUI thread, then it moves itself to a QThread of its own
// with a Store connection of its own; call its public methods from the GUI thread (they queue
// work to the follower thread); its signals arrive queued. Every ~100 ms it ingests what each
// followed run's engine appended to events.jsonl through td::store::RunTail, the component every
// target's follower ingests with (one transaction per batch, resumable by byte offset: a run
// re-attached after a GUI restart backfills everything written meanwhile), reads
// new bytes of the run's log (engine stderr), and checks the engine process. When the process is
// gone and every line is ingested, it ends the run: a run without a run_end event is marked
// 'failed' with the log's last line as reason, and ended() is emitted.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <QThread>

#include <memory>

namespace td::gui {

/// What to follow. Paths absolute; pid 0 when unknown (then the run is followed until its
/// run_end is ingested).
struct FollowSpec {
  QString run_id;
  QString experiment;   // for a run the store does not know yet
  QString events_path;  // <run dir>/events.jsonl
  QString log_path;     // <run dir>/engine.log ("" = none)
  qint64 pid = 0;
  QStringList must_contain;  // the engine's command line holds these (guards recycled pids)
  bool note_launch = false;  // record the launch in the store first (Store::note_launch)
  QString host;              // for note_launch
  double launch_time = 0;    // Unix seconds, for note_launch
  qint64 log_offset = -1;    // start reading the log here; -1: its last 16 KB
};

class RunFollower : public QObject {
  Q_OBJECT
 public:
  explicit RunFollower(const QString& store_path, int interval_ms = 100);
  ~RunFollower() override;  // stops following (runs keep going), joins the thread

  void follow(const FollowSpec& spec);
  /// Stops following `run_id` without touching the run or its process.
  void unfollow(const QString& run_id);
  void unfollowAll();
  /// Test helper: blocks until the follower thread has processed everything queued so far and
  /// one more poll of every followed run is done.
  void sync();

 signals:
  /// Rows of `run_id` were written to the store; `last_step` is the run's last step there.
  void ingested(const QString& run_id, qint64 rows, qint64 last_step);
  void logAppended(const QString& run_id, const QString& text);
  /// The run's engine process is gone and its events are all in the store; `status` is the
  /// run's final status there (completed, stopped, failed).
  void ended(const QString& run_id, const QString& status);
  /// Following failed (events file truncated or replaced, store error): message says what.
  void failed(const QString& run_id, const QString& message);

 private:
  struct Impl;
  QThread thread_;
  std::shared_ptr<Impl> impl_;
  QObject* worker_ = nullptr;  // lives on thread_
};

}  // namespace td::gui
