// GuiMailbox: run a function on the thread of a QObject ("the GUI thread"), posted from any
// thread, safely even while that object is being destroyed.
//
// Worker threads of gui/cluster (NodeAccess prompts, keyring jobs, ConnectionTester results)
// post their callbacks through it instead of QMetaObject::invokeMethod on a raw pointer: the
// context's destroyed() closes the mailbox under the same mutex the posters hold, so a post
// either reaches a live object (and is dropped with it if it dies before delivery) or is
// refused (post() returns false). A dropped function is destroyed unrun; callers that wait for
// an answer hold a std::promise in it, so the waiter sees a broken promise instead of hanging.
//
// Threading rule: construct on the context's thread; post() from any thread; copy freely (the
// state is shared).
#pragma once

#include <QObject>

#include <functional>
#include <memory>
#include <mutex>

namespace td::gui {

class GuiMailbox {
 public:
  /// `context` must live on the thread the functions are to run on; nullptr: always closed.
  explicit GuiMailbox(QObject* context);

  /// Queues fn to run on the context's thread. False (fn destroyed unrun) when it is gone.
  bool post(std::function<void()> fn) const;
  /// True when the caller runs on the context's thread (waiting there would deadlock).
  bool onContextThread() const;
  /// No more posts (on the context's thread; also done by the context's destruction).
  void close() const;

 private:
  struct State {
    std::mutex mu;
    QObject* context = nullptr;
    Qt::HANDLE thread = nullptr;
  };
  std::shared_ptr<State> s_;
};

}  // namespace td::gui
