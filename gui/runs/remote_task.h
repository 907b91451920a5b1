// RemoteTask: one blocking network job (deploy + follow of a remote run, a checkpoint download)
// on a thread of its own, reporting to a GUI-thread object through queued calls.
//
// Threading rule: create and destroy a RemoteTask on the GUI thread. The body runs on the task's
// own std::thread; it reports with post(fn), which queues fn to run on the context object's
// thread (dropped once the task is destroyed or the context is gone), and checks cancelled()
// (set by cancel() and by the destructor) between network calls. The destructor never waits
// long: it cancels, gives the body kJoinWaitMs to return, and otherwise lets the thread finish
// on its own (a hung node's call ends at its own timeout); the body's shared state stays alive
// until then. So a closing window or a store switch never blocks on SSH.
#pragma once

#include <QObject>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

namespace td::gui {

class RemoteTask {
 public:
  static constexpr int kJoinWaitMs = 2000;

  /// Shared between the task's thread and the GUI thread.
  struct Shared {
    std::atomic<bool> cancel{false};
    std::mutex mu;               // guards context
    QObject* context = nullptr;  // cleared by ~RemoteTask
    /// Queues fn on context's thread; nothing once the task is gone.
    void post(std::function<void()> fn);
    bool cancelled() const { return cancel.load(); }
    /// Sleeps `ms` in 50 ms slices; false when the task was cancelled meanwhile (return then).
    bool sleep(int ms) const;
  };

  /// Starts body(shared) on a new thread. Exceptions escaping the body are swallowed (the body
  /// reports its own errors through post()).
  RemoteTask(QObject* context, std::function<void(Shared&)> body);
  ~RemoteTask();
  RemoteTask(const RemoteTask&) = delete;
  RemoteTask& operator=(const RemoteTask&) = delete;

  void cancel() { shared_->cancel = true; }
  /// True once the body has returned.
  bool finished() const;
  Shared& shared() { return *shared_; }

 private:
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
  std::shared_future<void> done_;
};

}  // namespace td::gui
