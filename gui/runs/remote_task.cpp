#include "gui/runs/remote_task.h"

#include <QMetaObject>

#include <algorithm>
#include <chrono>

namespace td::gui {

bool RemoteTask::Shared::sleep(int ms) const {
  for (int waited = 0; waited < ms; waited += 50) {
    if (cancelled()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, ms - waited)));
  }
  return !cancelled();
}

void RemoteTask::Shared::post(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu);
  if (context) QMetaObject::invokeMethod(context, std::move(fn), Qt::QueuedConnection);
}

RemoteTask::RemoteTask(QObject* context, std::function<void(Shared&)> body) : shared_(std::make_shared<Shared>()) {
  shared_->context = context;
  auto promise = std::make_shared<std::promise<void>>();
  done_ = promise->get_future().share();
  thread_ = std::thread([shared = shared_, body = std::move(body), promise]() {
    try {
      body(*shared);
    } catch (...) {
    }
    promise->set_value();
  });
}

RemoteTask::~RemoteTask() {
  shared_->cancel = true;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->context = nullptr;
  }
  if (done_.wait_for(std::chrono::milliseconds(kJoinWaitMs)) == std::future_status::ready)
    thread_.join();
  else
    thread_.detach();  // holds its own reference to the shared state
}

bool RemoteTask::finished() const {
  return done_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace td::gui
