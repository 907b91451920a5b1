#include "gui/runs/remote_target_base.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>

#include <chrono>
#include <utility>

#include "gui/core/paths.h"
#include "gui/core/store_client.h"
#include "gui/runs/run_controller.h"
#include "remote/checkpoints.h"
#include "store/store.h"

namespace td::gui {

namespace {

void set_error(QString* error, const QString& message) {
  if (error) *error = message;
}

QString engine_missing() {
  return RunTarget::tr("The training engine (traindeck-engine) was not found. Build it (cmake --build build) or set "
                       "TRAINDECK_ENGINE to its path.");
}

}  // namespace

RemoteTargetBase::RemoteTargetBase(RemoteConnector connect, QObject* parent)
    : RunTarget(parent), connect_(std::move(connect)) {}

RemoteTargetBase::~RemoteTargetBase() = default;  // derived destructors detachAll()

void RemoteTargetBase::setStoreClient(StoreClient* store) {
  detachAll();
  store_ = store;
  reattach();
}

QString RemoteTargetBase::bundleCacheDir() const {
  if (!bundle_cache_.isEmpty()) return bundle_cache_;
  return store_ ? QDir(runsRoot(store_->path())).filePath(QStringLiteral(".cache/engine-bundle")) : QString();
}

QString RemoteTargetBase::runDir(const QString& run_id) const {
  return store_ ? QDir(runsRoot(store_->path())).filePath(run_id) : QString();
}

QStringList RemoteTargetBase::activeRuns() const {
  QStringList ids;
  for (const auto& [id, run] : runs_) ids << id;
  return ids;
}

RunTargetState RemoteTargetBase::state(const QString& run_id) const {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? RunTargetState{} : it->second.state;
}

RunFiles RemoteTargetBase::files(const QString& run_id) const {
  RunFiles f = runFolderFiles(runDir(run_id));
  if (auto it = runs_.find(run_id); it != runs_.end()) {
    f.host = it->second.host;
    f.remote_dir = it->second.remote_dir;
  }
  return f;
}

bool RemoteTargetBase::canReachNodes(QString* error) const {
  if (!store_) {
    set_error(error, tr("No store is open."));
    return false;
  }
  if (!connect_) {
    set_error(error, tr("No way to connect to nodes is set up (no connector)."));
    return false;
  }
  return true;
}

QString RemoteTargetBase::startChecks(const nlohmann::json& config, const QString& name, QString* run_name,
                                      QString* error) const {
  if (!canReachNodes(error)) return {};
  if (!acceptRunName(name, run_name, error)) return {};
  if (const QString problem = RunController::datasetProblem(config); !problem.isEmpty()) {
    set_error(error, problem);
    return {};
  }
  const QString engine = engineExecutable();
  if (engine.isEmpty()) set_error(error, engine_missing());
  return engine;
}

RemoteTargetBase::Run& RemoteTargetBase::addRun(const QString& run_id, RunTargetState::Phase phase,
                                                const QString& detail) {
  Run& run = runs_[run_id];
  run.control = std::make_shared<RemoteRunControl>();
  run.control->kill_timeout_ms = kill_timeout_ms_;
  run.serial = ++serial_;
  run.state = {phase, detail, 0, 0};
  return run;
}

RemoteTargetBase::Run* RemoteTargetBase::current(const QString& run_id, quint64 serial) {
  auto it = runs_.find(run_id);
  return it == runs_.end() || it->second.serial != serial ? nullptr : &it->second;
}

void RemoteTargetBase::nameRun(const QString& run_id, Run& run) {
  const QString name = std::exchange(run.name, QString());
  if (name.isEmpty() || !store_) return;
  // The store client runs its jobs in order: runStarted's listeners read the name.
  store_->exec(
      this, [id = run_id.toStdString(), n = name.toStdString()](td::store::Store& s) { s.set_run_name(id, n); }, [] {},
      [this](const QString& m) { emit this->error(m); });
}

bool RemoteTargetBase::stop(const QString& run_id, QString* error) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) {
    set_error(error, tr("Run %1 is not followed here.").arg(run_id));
    return false;
  }
  Run& run = it->second;
  run.control->kill_timeout_ms = kill_timeout_ms_;
  if (run.state.phase == RunTargetState::Phase::Deploying) run.control->cancel_deploy = true;
  run.control->stop = true;
  run.state = {RunTargetState::Phase::Stopping, tr("stopping"), 0, 0};
  emit stateChanged(run_id);
  return true;
}

bool RemoteTargetBase::cancel(const QString& run_id) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return false;
  switch (it->second.state.phase) {
    case RunTargetState::Phase::Deploying:
      it->second.control->cancel_deploy = true;
      return true;
    case RunTargetState::Phase::Queued:
      return stop(run_id, nullptr);
    default:
      return false;
  }
}

bool RemoteTargetBase::resume(const QString& run_id, QString* error) {
  if (!canReachNodes(error)) return false;
  if (runs_.count(run_id)) {
    set_error(error, tr("Run %1 is still running.").arg(run_id));
    return false;
  }
  struct Found {
    std::optional<td::store::RunInfo> info;
    std::optional<td::store::RemoteRun> remote;
  };
  const quint64 generation = generation_;
  store_->run<Found>(
      this, [id = run_id.toStdString()](td::store::Store& s) { return Found{s.find_run(id), s.remote_run(id)}; },
      [this, run_id, generation](Found f) {
        if (generation != generation_) return;
        if (!f.info) return emit this->error(tr("Run %1 is not in this store.").arg(run_id));
        if (!f.remote) return emit this->error(tr("Run %1 ran on this machine, not on a node.").arg(run_id));
        if (QString::fromStdString(f.remote->target) != kind())
          return emit this->error(
              tr("Run %1 ran on a %2 target: it resumes there.").arg(run_id, QString::fromStdString(f.remote->target)));
        if (f.info->status == "running" || runs_.count(run_id)) return emit this->error(tr("Run %1 is still running.").arg(run_id));
        if (f.info->status == "completed")
          return emit this->error(tr("Run %1 has completed: start a new run to train further.").arg(run_id));
        const QString engine = engineExecutable();
        if (engine.isEmpty()) return emit this->error(engine_missing());
        resumeStored(*f.info, *f.remote, engine);
      },
      [this](const QString& m) { emit this->error(m); });
  return true;
}

void RemoteTargetBase::reattach() {
  if (!store_ || !connect_) return;
  struct Live {
    td::store::RemoteRun remote;
    std::string experiment, events_path;
  };
  const quint64 generation = generation_;
  store_->run<std::vector<Live>>(
      this,
      [kind = kind().toStdString()](td::store::Store& s) {
        std::vector<Live> live;
        for (auto& r : s.active_remote_runs(kind))
          if (auto info = s.find_run(r.run_id)) live.push_back({r, info->experiment, info->events_path});
        return live;
      },
      [this, generation](std::vector<Live> live) {
        if (generation != generation_ || !store_) return;
        for (const auto& l : live) {
          const QString id = QString::fromStdString(l.remote.run_id);
          if (runs_.count(id)) continue;
          // The mirror is where the store ingested from (normally runDir(id)/events.jsonl).
          const QString local_dir =
              l.events_path.empty() ? QString() : QFileInfo(QString::fromStdString(l.events_path)).absolutePath();
          QString problem;
          if (!attachStored(l.remote, QString::fromStdString(l.experiment), local_dir, &problem)) {
            emit this->error(problem);
            continue;
          }
          emit runAttached(id);
        }
      },
      [this](const QString& m) { emit this->error(m); });
}

void RemoteTargetBase::detachAll() {
  ++generation_;
  // Cancel every task first, so their threads wind down together, then drop them.
  for (auto& [id, run] : runs_)
    if (run.task) run.task->cancel();
  for (auto* tasks : {&fetches_, &listings_})
    for (auto& [id, task] : *tasks)
      if (task) task->cancel();
  runs_.clear();  // each RemoteTask cancels and lets its thread end (RemoteTask::kJoinWaitMs at most)
  fetches_.clear();
  listings_.clear();
}

void RemoteTargetBase::startNodeTask(const QString& run_id, std::map<QString, std::unique_ptr<RemoteTask>>& tasks,
                                     NodeTaskBody body) {
  const quint64 generation = generation_;
  store_->run<std::optional<td::store::RemoteRun>>(
      this, [id = run_id.toStdString()](td::store::Store& s) { return s.remote_run(id); },
      [this, run_id, &tasks, body = std::move(body), generation](std::optional<td::store::RemoteRun> remote) {
        if (generation != generation_) return;
        if (!remote) {
          tasks.erase(run_id);
          return emit this->error(tr("Run %1 did not run on a node: its checkpoints are on this machine.").arg(run_id));
        }
        td::remote::NodeSpec node;
        try {
          node = td::remote::node_from_json(nlohmann::json::parse(remote->node_json));
        } catch (const std::exception& e) {
          tasks.erase(run_id);
          return emit this->error(tr("Run %1: its stored node is unreadable: %2").arg(run_id, QString::fromUtf8(e.what())));
        }
        const std::string run_dir = remote->run_dir;
        tasks[run_id] = std::make_unique<RemoteTask>(
            this, [body, node, run_dir](RemoteTask::Shared& shared) { body(shared, node, run_dir); });
      },
      [this, run_id, &tasks](const QString& m) {
        tasks.erase(run_id);
        emit this->error(m);
      });
}

bool RemoteTargetBase::fetchCheckpoint(const QString& run_id, const QString& local_dir, const QString& name,
                                       QString* error) {
  if (!canReachNodes(error)) return false;
  static const QRegularExpression kName(QStringLiteral("^step_[0-9]{8}$"));
  if (!name.isEmpty() && !kName.match(name).hasMatch()) {
    set_error(error, tr("'%1' is not a checkpoint name (step_ and 8 digits).").arg(name));
    return false;
  }
  if (fetches_.count(run_id)) {
    set_error(error, tr("A checkpoint of run %1 is being downloaded already.").arg(run_id));
    return false;
  }
  fetches_[run_id] = nullptr;  // placeholder so a second call is refused until the task exists
  auto connect = connect_;
  const std::string out = local_dir.toStdString();
  const std::string wanted = name.toStdString();
  startNodeTask(run_id, fetches_,
                [this, run_id, connect, out, wanted](RemoteTask::Shared& shared, const td::remote::NodeSpec& node,
                                                     const std::string& run_dir) {
                  auto done = [&](const QString& path, const QString& message) {
                    shared.post([this, run_id, path, message] {
                      fetches_.erase(run_id);
                      if (message.isEmpty())
                        emit checkpointFetched(run_id, path);
                      else
                        emit this->error(tr("Checkpoint of run %1: %2").arg(run_id, message));
                    });
                  };
                  try {
                    td::remote::Session s = connect(node);
                    std::string pick = wanted;
                    if (pick.empty()) {
                      const auto list = td::remote::list_checkpoints(s, run_dir);  // oldest first
                      if (list.empty())
                        return done({}, tr("the run folder %1 on %2 holds no complete checkpoint")
                                            .arg(QString::fromStdString(run_dir),
                                                 QString::fromStdString(node.display_name())));
                      pick = list.back().name;
                    }
                    // download_checkpoint lists again and refuses a name the node does not have,
                    // naming those it has.
                    auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
                    const auto r = td::remote::download_checkpoint(
                        s, run_dir, pick, out,
                        [&](uint64_t d, uint64_t t) {
                          if (d == t || std::chrono::steady_clock::now() - last > std::chrono::milliseconds(100)) {
                            last = std::chrono::steady_clock::now();
                            shared.post([this, run_id, d, t] { emit checkpointProgress(run_id, qint64(d), qint64(t)); });
                          }
                        },
                        &shared.cancel);
                    if (r.cancelled) return done({}, tr("download cancelled"));
                    done(QString::fromStdString(r.local_path.string()), {});
                  } catch (const std::exception& e) {
                    done({}, QString::fromUtf8(e.what()));
                  }
                });
  return true;
}

void RemoteTargetBase::listCheckpoints(const QString& run_id) {
  if (QString why; !canReachNodes(&why)) return emit this->error(tr("Checkpoints of run %1: %2").arg(run_id, why));
  if (listings_.count(run_id)) return;  // the listing going on answers this call too
  listings_[run_id] = nullptr;
  auto connect = connect_;
  startNodeTask(run_id, listings_,
                [this, run_id, connect](RemoteTask::Shared& shared, const td::remote::NodeSpec& node,
                                        const std::string& run_dir) {
                  QList<RemoteCheckpointEntry> entries;
                  QString message;
                  try {
                    td::remote::Session s = connect(node);
                    for (const auto& c : td::remote::list_checkpoints(s, run_dir))
                      entries.push_back({QString::fromStdString(c.name), int(c.step), qint64(c.size_bytes)});
                  } catch (const std::exception& e) {
                    message = QString::fromUtf8(e.what());
                  }
                  shared.post([this, run_id, entries, message] {
                    listings_.erase(run_id);
                    if (message.isEmpty())
                      emit checkpointsListed(run_id, entries);
                    else
                      emit this->error(tr("Checkpoints of run %1: %2").arg(run_id, message));
                  });
                });
}

void RemoteTargetBase::cancelFetch(const QString& run_id) {
  auto it = fetches_.find(run_id);
  if (it != fetches_.end() && it->second) it->second->cancel();
}

}  // namespace td::gui
