// StoreClient: runs store work on a thread of its own, with a connection of its own.
//
// Threading rule: create, call and destroy a StoreClient on one thread (the GUI thread).
// Jobs run in submission order on the client's store thread, each with the client's
// td::store::Store (opened on that thread at the first job; SQLite WAL lets several clients on
// one file read while one ingester writes). The job's result is delivered to `done` on the
// thread of `context`, queued, never re-entrantly; nothing is delivered when `context` has been
// destroyed meanwhile, or when the job was cancelled before it started. A job that throws
// (td::Error, any std::exception) delivers its message to `fail` instead (or, when no `fail` is
// given, emits error()). The GUI thread never waits on a job, except in waitIdle() (tests).
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <QThread>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "store/store.h"

namespace td::gui {

class StoreClient : public QObject {
  Q_OBJECT
 public:
  /// `path` is the SQLite file (created with its folder when missing). Opening errors are
  /// reported to the first job's fail (or error()), never thrown here.
  explicit StoreClient(const QString& path, QObject* parent = nullptr);
  /// Drops jobs not yet started, waits for the running one, closes the connection.
  ~StoreClient() override;

  QString path() const { return path_; }

  /// Runs fn(store) on the store thread, then done(result) on context's thread. Returns a job
  /// id for cancel(). R must be copyable or movable.
  template <class R>
  quint64 run(QObject* context, std::function<R(td::store::Store&)> fn, std::function<void(R)> done,
              std::function<void(const QString&)> fail = {}) {
    auto result = std::make_shared<R>();
    return post(context, [fn = std::move(fn), result](td::store::Store& s) { *result = fn(s); },
                [done = std::move(done), result]() { if (done) done(std::move(*result)); }, std::move(fail));
  }
  /// A job without a result (writes: rename, delete, notes ...); done() may be empty.
  quint64 exec(QObject* context, std::function<void(td::store::Store&)> fn, std::function<void()> done = {},
               std::function<void(const QString&)> fail = {});

  /// A job that has not started yet is dropped (its done/fail never called). Cheap; unknown
  /// or finished ids are ignored.
  void cancel(quint64 id);

  /// Test helper: processes events until every job submitted so far has delivered, or
  /// `timeout_ms` passed. Returns whether it got idle.
  bool waitIdle(int timeout_ms = 10000);

  /// Jobs submitted but not delivered yet.
  int pending() const { return pending_.load(); }

 signals:
  /// A job without its own fail handler failed (message says what and, where the store knows,
  /// what to do).
  void error(const QString& message);
  /// Every store failure, also of jobs with their own fail handler, and every transaction or
  /// statement a job left open (Store::release_open_state), for the terminal and the status bar:
  /// nothing the store refused goes unsaid. Also written to stderr ("traindeck: store: ...").
  void problem(const QString& message);

 private:
  quint64 post(QObject* context, std::function<void(td::store::Store&)> work, std::function<void()> deliver,
               std::function<void(const QString&)> fail);
  bool take_cancelled(quint64 id);

  QString path_;
  QThread thread_;
  QObject* worker_ = nullptr;  // lives on thread_; owns nothing but is the target of posts
  std::shared_ptr<std::unique_ptr<td::store::Store>> store_;  // touched on thread_ only
  std::atomic<quint64> next_id_{1};
  std::atomic<int> pending_{0};
  std::mutex mu_;
  std::unordered_set<quint64> cancelled_;
};

}  // namespace td::gui
