#include "gui/cluster/gui_mailbox.h"

#include <QThread>

namespace td::gui {

GuiMailbox::GuiMailbox(QObject* context) : s_(std::make_shared<State>()) {
  s_->context = context;
  s_->thread = context ? QThread::currentThreadId() : nullptr;
  if (context) {
    std::weak_ptr<State> weak = s_;
    // Direct: runs inside ~QObject on the context's thread, before its posted events are removed.
    QObject::connect(context, &QObject::destroyed, [weak] {
      if (auto s = weak.lock()) {
        std::lock_guard<std::mutex> lock(s->mu);
        s->context = nullptr;
      }
    });
  }
}

bool GuiMailbox::post(std::function<void()> fn) const {
  std::lock_guard<std::mutex> lock(s_->mu);
  if (!s_->context) return false;
  return QMetaObject::invokeMethod(s_->context, std::move(fn), Qt::QueuedConnection);
}

bool GuiMailbox::onContextThread() const { return QThread::currentThreadId() == s_->thread; }

void GuiMailbox::close() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->context = nullptr;
}

}  // namespace td::gui
