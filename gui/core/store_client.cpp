#include "gui/core/store_client.h"

#include "gui/core/crash_note.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QMetaObject>

#include <cstdio>
#include <exception>

namespace td::gui {

StoreClient::StoreClient(const QString& path, QObject* parent)
    : QObject(parent), path_(path), store_(std::make_shared<std::unique_ptr<td::store::Store>>()) {
  thread_.setObjectName(QStringLiteral("store:") + path);
  worker_ = new QObject;
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  thread_.start();
}

StoreClient::~StoreClient() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Everything still queued is dropped: mark ids up to next_id_ as cancelled.
    for (quint64 id = 1; id < next_id_.load(); ++id) cancelled_.insert(id);
  }
  // The connection is closed on its own thread, after any job already running.
  auto store = store_;
  QMetaObject::invokeMethod(worker_, [store]() { store->reset(); }, Qt::QueuedConnection);
  thread_.quit();
  thread_.wait();
}

bool StoreClient::take_cancelled(quint64 id) {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_.erase(id) > 0;
}

void StoreClient::cancel(quint64 id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (id > 0 && id < next_id_.load()) cancelled_.insert(id);
}

quint64 StoreClient::exec(QObject* context, std::function<void(td::store::Store&)> fn, std::function<void()> done,
                          std::function<void(const QString&)> fail) {
  return post(context, std::move(fn), std::move(done), std::move(fail));
}

quint64 StoreClient::post(QObject* context, std::function<void(td::store::Store&)> work, std::function<void()> deliver,
                          std::function<void(const QString&)> fail) {
  const quint64 id = next_id_.fetch_add(1);
  pending_.fetch_add(1);
  QPointer<QObject> ctx(context);
  QPointer<StoreClient> self(this);
  auto store = store_;
  const std::string path = path_.toStdString();
  QMetaObject::invokeMethod(
      worker_,
      [=, this, work = std::move(work), deliver = std::move(deliver), fail = std::move(fail)]() mutable {
        // Runs on the store thread. `this` is alive: the destructor waits for this thread.
        if (take_cancelled(id)) {
          pending_.fetch_sub(1);
          return;
        }
        // For the crash note (crash_note.h): what the store thread began last.
        char what[128];
        std::snprintf(what, sizeof what, "job %llu for %s", static_cast<unsigned long long>(id),
                      ctx ? ctx->metaObject()->className() : "a closed page");
        note_store_operation(what);
        QString error;
        try {
          if (!*store) *store = std::make_unique<td::store::Store>(path);
          work(**store);
        } catch (const std::exception& e) {
          error = QString::fromStdString(e.what());
        }
        // Nothing a job leaves open survives it: its writes are committed or rolled back now,
        // and no statement keeps this connection on an old snapshot.
        QStringList problems;
        if (!error.isEmpty()) problems << error;
        if (*store)
          for (const std::string& p : (*store)->release_open_state()) problems << QString::fromStdString(p);
        for (const QString& p : problems) {
          std::fprintf(stderr, "traindeck: store: %s\n", qPrintable(p));
          QMetaObject::invokeMethod(this, [self, p] { if (self) emit self->problem(p); }, Qt::QueuedConnection);
        }
        auto back = [=, deliver = std::move(deliver), fail = std::move(fail)]() {
          // Runs on the context's thread.
          if (self) self->pending_.fetch_sub(1);
          if (!ctx) return;
          if (self && self->take_cancelled(id)) return;
          if (error.isEmpty()) {
            if (deliver) deliver();
          } else if (fail) {
            fail(error);
          } else if (self) {
            emit self->error(error);
          }
        };
        if (ctx)
          QMetaObject::invokeMethod(ctx.data(), std::move(back), Qt::QueuedConnection);
        else
          pending_.fetch_sub(1);
      },
      Qt::QueuedConnection);
  return id;
}

bool StoreClient::waitIdle(int timeout_ms) {
  QDeadlineTimer deadline(timeout_ms);
  while (pending_.load() > 0) {
    if (deadline.hasExpired()) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    QThread::msleep(1);
  }
  QCoreApplication::processEvents();
  return true;
}

}  // namespace td::gui
