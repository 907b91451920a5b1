#include "gui/runs/run_follower.h"

#include <QFile>
#include <QMetaObject>
#include <QTimer>

#include <map>
#include <vector>

#include "gui/runs/launcher.h"
#include "store/run_tail.h"
#include "store/store.h"

namespace td::gui {

namespace {
constexpr qint64 kLogChunk = 256 * 1024;  // bytes of log read per poll at most
constexpr double kPollBudgetSeconds = 0.25;  // ingest time per run per poll at most (a backfill yields)
}  // namespace

struct RunFollower::Impl {
  struct Followed {
    FollowSpec spec;
    std::unique_ptr<td::store::RunTail> tail;
    qint64 log_offset = 0;
    QString last_log_line;
  };

  RunFollower* q = nullptr;
  std::string store_path;
  std::unique_ptr<td::store::Store> store;
  std::map<QString, Followed> runs;
  QTimer* timer = nullptr;

  td::store::Store& db() {
    if (!store) store = std::make_unique<td::store::Store>(store_path);
    return *store;
  }

  void add(const FollowSpec& spec) {
    Followed f;
    f.spec = spec;
    try {
      if (spec.note_launch)
        db().note_launch(spec.run_id.toStdString(), spec.experiment.toStdString(), spec.events_path.toStdString(),
                         spec.pid, spec.host.toStdString(), spec.launch_time);
      f.tail = std::make_unique<td::store::RunTail>(db(), spec.run_id.toStdString(), spec.events_path.toStdString(),
                                                    spec.experiment.toStdString());
    } catch (const std::exception& e) {
      emit q->failed(spec.run_id, QString::fromStdString(e.what()));
      return;
    }
    if (!spec.log_path.isEmpty()) {
      const qint64 size = QFile(spec.log_path).size();
      f.log_offset = spec.log_offset >= 0 ? spec.log_offset : std::max<qint64>(0, size - 16 * 1024);
    }
    runs[spec.run_id] = std::move(f);
    if (!poll_one(runs[spec.run_id])) runs.erase(spec.run_id);
  }

  void read_log(Followed& f) {
    if (f.spec.log_path.isEmpty()) return;
    QFile file(f.spec.log_path);
    if (!file.open(QIODevice::ReadOnly)) return;
    if (file.size() < f.log_offset) f.log_offset = 0;  // replaced
    if (file.size() == f.log_offset) return;
    file.seek(f.log_offset);
    const QByteArray bytes = file.read(kLogChunk);
    f.log_offset += bytes.size();
    const QString text = QString::fromUtf8(bytes);
    // The engine redraws progress lines with '\r'; the log view shows each as its own line.
    const QStringList lines = QString(text).replace('\r', '\n').split('\n', Qt::SkipEmptyParts);
    if (!lines.isEmpty()) f.last_log_line = lines.back().trimmed();
    emit q->logAppended(f.spec.run_id, text);
  }

  // Returns false when the run is finished with (ended or failed) and must be dropped.
  bool poll_one(Followed& f) {
    const std::string run_id = f.spec.run_id.toStdString();
    try {
      const bool alive_before = f.spec.pid <= 0 || process_alive(f.spec.pid, to_std(f.spec.must_contain));
      const td::store::IngestStats st = f.tail->ingest(kPollBudgetSeconds);
      read_log(f);
      auto info = f.tail->run();
      if (st.rows > 0 && info) emit q->ingested(f.spec.run_id, (qint64)st.rows, info->last_step.value_or(0));
      if (!st.at_eof) return true;  // more to backfill next time
      if (f.spec.pid > 0) {
        if (alive_before) return true;
      } else if (!info || info->status == "running" || info->status == "unknown") {
        return true;  // no pid to watch: wait for its run_end
      }
      // The process is gone (checked before the last ingest, so its final lines are in).
      read_log(f);
      if (!info) {
        emit q->ended(f.spec.run_id, QStringLiteral("failed"));
        return false;
      }
      const QString reason =
          QStringLiteral("the engine process %1 ended without a run_end event%2")
              .arg(f.spec.pid)
              .arg(f.last_log_line.isEmpty() ? QString() : QStringLiteral(": ") + f.last_log_line);
      const td::store::RunTail::End end = f.tail->finish("failed", reason.toStdString());
      emit q->ended(f.spec.run_id, QString::fromStdString(end.status));
      return false;
    } catch (const std::exception& e) {
      emit q->failed(f.spec.run_id, QString::fromStdString(e.what()));
      return false;
    }
  }

  void poll_all() {
    std::vector<QString> done;
    for (auto& [id, f] : runs)
      if (!poll_one(f)) done.push_back(id);
    for (const auto& id : done) runs.erase(id);
  }

  static std::vector<std::string> to_std(const QStringList& l) {
    std::vector<std::string> v;
    for (const auto& s : l) v.push_back(s.toStdString());
    return v;
  }
};

RunFollower::RunFollower(const QString& store_path, int interval_ms) : impl_(std::make_shared<Impl>()) {
  impl_->q = this;
  impl_->store_path = store_path.toStdString();
  thread_.setObjectName(QStringLiteral("run-follower"));
  worker_ = new QObject;
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  thread_.start();
  auto impl = impl_;
  QObject* worker = worker_;
  QMetaObject::invokeMethod(worker_, [impl, worker, interval_ms]() {
    impl->timer = new QTimer(worker);
    impl->timer->setInterval(interval_ms);
    QObject::connect(impl->timer, &QTimer::timeout, worker, [impl]() { impl->poll_all(); });
    impl->timer->start();
  });
}

RunFollower::~RunFollower() {
  auto impl = impl_;
  QMetaObject::invokeMethod(worker_, [impl]() {
    impl->runs.clear();
    impl->store.reset();
  });
  thread_.quit();
  thread_.wait();
}

void RunFollower::follow(const FollowSpec& spec) {
  auto impl = impl_;
  QMetaObject::invokeMethod(worker_, [impl, spec]() { impl->add(spec); });
}

void RunFollower::unfollow(const QString& run_id) {
  auto impl = impl_;
  QMetaObject::invokeMethod(worker_, [impl, run_id]() { impl->runs.erase(run_id); });
}

void RunFollower::unfollowAll() {
  auto impl = impl_;
  QMetaObject::invokeMethod(worker_, [impl]() { impl->runs.clear(); });
}

void RunFollower::sync() {
  auto impl = impl_;
  QMetaObject::invokeMethod(worker_, [impl]() { impl->poll_all(); }, Qt::BlockingQueuedConnection);
}

}  // namespace td::gui
