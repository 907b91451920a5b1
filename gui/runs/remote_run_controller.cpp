#include "gui/runs/remote_run_controller.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>

#include <chrono>
#include <filesystem>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/run_id.h"
#include "gui/core/paths.h"
#include "gui/core/store_client.h"
#include "gui/runs/remote_task.h"
#include "remote/checkpoints.h"
#include "remote/multinode.h"
#include "gui/runs/run_controller.h"
#include "store/store.h"

namespace td::gui {

namespace {

void set_error(QString* error, const QString& message) {
  if (error) *error = message;
}

}  // namespace

RemoteRunController::RemoteRunController(StoreClient* store, Connector connector, QObject* parent)
    : RunTarget(parent), connector_(std::move(connector)) {
  setStoreClient(store);
}

RemoteRunController::~RemoteRunController() { detachAll(); }

void RemoteRunController::setStoreClient(StoreClient* store) {
  detachAll();
  store_ = store;
  reattach();
}

void RemoteRunController::setConnector(Connector connector) { connector_ = std::move(connector); }

QString RemoteRunController::bundleCacheDir() const {
  if (!bundle_cache_.isEmpty()) return bundle_cache_;
  return store_ ? QDir(runsRoot(store_->path())).filePath(QStringLiteral(".cache/engine-bundle")) : QString();
}

QString RemoteRunController::runDir(const QString& run_id) const {
  return store_ ? QDir(runsRoot(store_->path())).filePath(run_id) : QString();
}

QStringList RemoteRunController::runs_keys() const {
  QStringList ids;
  for (const auto& [id, run] : runs_) ids << id;
  return ids;
}

bool RemoteRunController::isDeploying(const QString& run_id) const {
  auto it = runs_.find(run_id);
  return it != runs_.end() && it->second.deploying;
}

bool RemoteRunController::canReachNodes(QString* error) const {
  if (!store_) {
    set_error(error, tr("No store is open."));
    return false;
  }
  if (!connector_) {
    set_error(error, tr("No way to connect to nodes is set up (no connector)."));
    return false;
  }
  return true;
}

QString RemoteRunController::startProblem(const td::remote::ClusterSpec& cluster, const nlohmann::json& config,
                                          QString* error) const {
  if (!canReachNodes(error)) return {};
  if (cluster.nodes.empty()) {
    set_error(error, tr("The cluster %1 has no nodes: add them on the Clusters page.")
                         .arg(QString::fromStdString(cluster.name)));
    return {};
  }
  for (const td::remote::NodeSpec& node : cluster.nodes)
    if (node.host.empty()) {
      set_error(error, tr("The node has no host: set it in the cluster designer."));
      return {};
    }
  if (const auto problems = td::remote::validate(cluster); !problems.empty()) {
    // The nodes' own checks (port, GPUs, work directory, addresses).
    const QString who = cluster.nodes.size() == 1 ? QString::fromStdString(cluster.nodes[0].display_name())
                                                   : QString::fromStdString(cluster.name);
    set_error(error, tr("The node %1 cannot be used: %2. Fix it on the Clusters page.")
                         .arg(who, QString::fromStdString(problems.front())));
    return {};
  }
  if (td::remote::is_multi_rank(cluster)) {
    try {
      td::remote::cluster_device(cluster);
    } catch (const td::Error& e) {
      set_error(error, QString::fromStdString(e.what()));
      return {};
    }
  }
  if (const QString problem = RunController::datasetProblem(config); !problem.isEmpty()) {
    set_error(error, problem);
    return {};
  }
  const QString engine = engineExecutable();
  if (engine.isEmpty())
    set_error(error, tr("The training engine (traindeck-engine) was not found. Build it (cmake --build build) or "
                        "set TRAINDECK_ENGINE to its path."));
  return engine;
}

QString RemoteRunController::startRun(const QString& cluster, const td::remote::NodeSpec& node,
                                      const QString& experiment, const nlohmann::json& config, QString* error) {
  td::remote::ClusterSpec one;
  one.name = cluster.isEmpty() ? std::string("cluster") : cluster.toStdString();
  one.nodes.push_back(node);
  return startClusterRun(one, experiment, config, error);
}

QString RemoteRunController::startClusterRun(const td::remote::ClusterSpec& cluster, const QString& experiment,
                                             const nlohmann::json& config, QString* error) {
  const QString engine = startProblem(cluster, config, error);
  if (engine.isEmpty()) return {};
  RemoteRunSpec spec;
  spec.mode = RemoteRunSpec::Mode::Start;
  spec.run_id = QString::fromStdString(td::new_run_id());
  spec.experiment = experiment;
  spec.cluster = QString::fromStdString(cluster.name);
  spec.node = cluster.nodes.front();
  if (td::remote::is_multi_rank(cluster)) spec.nodes = cluster.nodes;
  spec.engine = engine;
  spec.config_json = config.dump(2) + "\n";
  const QString id = spec.run_id;
  launchTask(std::move(spec));
  return id;
}

QString RemoteRunController::start(const RunPlacement& placement, const QString& experiment,
                                   const nlohmann::json& config, const QString& name, QString* error) {
  if (!placement.cluster || placement.cluster->nodes.empty()) {
    set_error(error, tr("An SSH run needs a cluster with at least one node."));
    return {};
  }
  const td::remote::ClusterSpec& c = *placement.cluster;
  if (placement.node >= int(c.nodes.size())) {
    set_error(error, tr("The cluster %1 has no node %2; choose where to train again.")
                         .arg(QString::fromStdString(c.name))
                         .arg(placement.node + 1));
    return {};
  }
  QString run_name;
  if (!acceptRunName(name, &run_name, error)) return {};
  const QString cluster = QString::fromStdString(c.name);
  const QString id = placement.node >= 0 || c.nodes.size() == 1
                         ? startRun(cluster, c.nodes[size_t(std::max(placement.node, 0))], experiment, config, error)
                         : startClusterRun(c, experiment, config, error);
  if (!id.isEmpty()) runs_[id].name = run_name;
  return id;
}

RunTargetState RemoteRunController::state(const QString& run_id) const {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? RunTargetState{} : it->second.state;
}

RunFiles RemoteRunController::files(const QString& run_id) const {
  RunFiles f;
  f.local_dir = runDir(run_id);
  if (f.local_dir.isEmpty()) return f;
  f.events = QDir(f.local_dir).filePath(QStringLiteral("events.jsonl"));
  const QString log = QDir(f.local_dir).filePath(QStringLiteral("engine.log"));
  if (QFileInfo::exists(log)) f.log = log;
  f.host = nodes_.value(run_id);
  f.remote_dir = remote_dirs_.value(run_id);
  return f;
}

bool RemoteRunController::placeFromStore(const td::store::RemoteRun& row, RemoteRunSpec& spec, QString* error) {
  try {
    spec.node = td::remote::node_from_json(nlohmann::json::parse(row.node_json));
    spec.nodes.clear();
    spec.layout_json = row.layout_json;
    if (!row.layout_json.empty()) {
      const td::remote::ClusterRun layout = td::remote::cluster_run_from_json(nlohmann::json::parse(row.layout_json));
      for (const td::remote::NodeRanks& n : layout.nodes) spec.nodes.push_back(n.node);
    }
    return true;
  } catch (const std::exception& e) {
    set_error(error, tr("Run %1: its stored node is unreadable: %2")
                         .arg(QString::fromStdString(row.run_id), QString::fromUtf8(e.what())));
    return false;
  }
}

void RemoteRunController::launchTask(RemoteRunSpec spec) {
  spec.store_path = store_->path();
  if (spec.local_dir.isEmpty()) spec.local_dir = runDir(spec.run_id);
  spec.bundle_cache = bundleCacheDir();
  spec.poll_ms = poll_ms_;
  const QString id = spec.run_id;
  Run& run = runs_[id];
  run.control = std::make_shared<RemoteRunControl>();
  run.control->kill_timeout_ms = kill_timeout_ms_;
  run.deploying = spec.mode != RemoteRunSpec::Mode::Attach;
  run.serial = ++serial_;
  run.state.phase = run.deploying ? RunTargetState::Phase::Deploying : RunTargetState::Phase::Running;
  if (spec.mode == RemoteRunSpec::Mode::Attach) remote_dirs_[id] = QString::fromStdString(spec.remote_run_dir);
  QStringList names;
  for (const td::remote::NodeSpec& n : is_multi_rank(spec) ? spec.nodes : std::vector<td::remote::NodeSpec>{spec.node})
    names << QString::fromStdString(n.display_name());
  nodes_[id] = names.join(QStringLiteral(", "));
  auto control = run.control;
  auto connector = connector_;
  run.task = std::make_unique<RemoteTask>(
      this, [spec, control, connector, this, serial = run.serial](RemoteTask::Shared& shared) {
        run_remote_job(spec, connector, *control, shared, [&shared, this, id = spec.run_id, serial](RemoteRunEvent e) {
          shared.post([this, id, serial, e]() { onEvent(id, serial, e); });
        });
      });
}

void RemoteRunController::onEvent(const QString& run_id, quint64 serial, const RemoteRunEvent& e) {
  auto it = runs_.find(run_id);
  if (it == runs_.end() || it->second.serial != serial) return;
  using K = RemoteRunEvent::Kind;
  switch (e.kind) {
    case K::Progress:
      it->second.state = {RunTargetState::Phase::Deploying, e.text, e.a, e.b};
      emit deployProgress(run_id, e.a, e.b, e.text);
      emit stateChanged(run_id);
      break;
    case K::Launched: {
      it->second.deploying = false;
      if (it->second.state.phase != RunTargetState::Phase::Stopping)
        it->second.state = {RunTargetState::Phase::Running, {}, 0, 0};
      remote_dirs_[run_id] = e.text;
      // The name chosen at Start run, on the row the launch created (before runStarted's
      // listeners read it: the store client runs its jobs in order).
      if (const QString name = std::exchange(it->second.name, QString()); !name.isEmpty() && store_)
        store_->exec(
            this, [id = run_id.toStdString(), n = name.toStdString()](td::store::Store& s) { s.set_run_name(id, n); },
            [] {}, [this](const QString& m) { emit this->error(m); });
      emit runStarted(run_id);
      emit stateChanged(run_id);
      break;
    }
    case K::Ingested:
      emit runIngested(run_id, e.a);
      break;
    case K::Log:
      emit logAppended(run_id, e.text);
      break;
    case K::State:
      states_[run_id] = e.text;
      if (it->second.state.phase == RunTargetState::Phase::Running) it->second.state.detail = e.text;
      it->second.state.connection = e.connection;
      it->second.state.reconnect_attempt = e.connection == RunTargetState::Connection::Reconnecting ? int(e.a) : 0;
      emit connectionState(run_id, e.text);
      emit stateChanged(run_id);
      break;
    case K::RanksLost:
      it->second.state.lost_ranks += e.ranks;
      emit stateChanged(run_id);
      break;
    case K::Ended:
      finish(run_id);
      emit runEnded(run_id, e.text);
      break;
    case K::StartFailed:
      finish(run_id);
      emit startFailed(run_id, e.text);
      if (!e.cancelled) emit this->error(tr("Run %1 on %2: %3").arg(run_id, nodes_.value(run_id), e.text));
      break;
    case K::Failed:
      finish(run_id);
      emit this->error(tr("Run %1 on %2: %3").arg(run_id, nodes_.value(run_id), e.text));
      break;
  }
}

void RemoteRunController::finish(const QString& run_id) {
  // The task's body is returning: its destructor joins at once.
  runs_.erase(run_id);
  states_.remove(run_id);
  remote_dirs_.remove(run_id);
}

bool RemoteRunController::stopRun(const QString& run_id, QString* error) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) {
    set_error(error, tr("Run %1 is not followed here.").arg(run_id));
    return false;
  }
  it->second.control->kill_timeout_ms = kill_timeout_ms_;
  if (it->second.deploying) it->second.control->cancel_deploy = true;
  it->second.control->stop = true;
  it->second.state = {RunTargetState::Phase::Stopping, {}, 0, 0};
  emit stateChanged(run_id);
  return true;
}

bool RemoteRunController::cancelDeploy(const QString& run_id) {
  auto it = runs_.find(run_id);
  if (it == runs_.end() || !it->second.deploying) return false;
  it->second.control->cancel_deploy = true;
  return true;
}

bool RemoteRunController::resumeRun(const QString& run_id, QString* error) {
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
        if (f.remote->target != "ssh")
          return emit this->error(tr("Run %1 ran on a %2 cluster: it resumes there.").arg(run_id, QString::fromStdString(f.remote->target)));
        if (f.info->status == "running" || runs_.count(run_id))
          return emit this->error(tr("Run %1 is still running.").arg(run_id));
        if (f.info->status == "completed")
          return emit this->error(tr("Run %1 has completed: start a new run to train further.").arg(run_id));
        const QString engine = engineExecutable();
        if (engine.isEmpty())
          return emit this->error(tr("The training engine (traindeck-engine) was not found. Build it or set "
                               "TRAINDECK_ENGINE to its path."));
        RemoteRunSpec spec;
        spec.mode = RemoteRunSpec::Mode::Resume;
        spec.run_id = run_id;
        spec.experiment = QString::fromStdString(f.info->experiment);
        spec.cluster = QString::fromStdString(f.remote->cluster);
        QString problem;
        if (!placeFromStore(*f.remote, spec, &problem)) return emit this->error(problem);
        spec.layout_json.clear();  // the resumed ranks get a new layout
        spec.engine = engine;
        // The mirrors stay where the run's events were ingested from.
        if (!f.info->events_path.empty())
          spec.local_dir = QFileInfo(QString::fromStdString(f.info->events_path)).absolutePath();
        launchTask(std::move(spec));
      },
      [this](const QString& m) { emit this->error(m); });
  return true;
}

void RemoteRunController::reattach() {
  if (!store_ || !connector_) return;
  struct Live {
    td::store::RemoteRun remote;
    std::string experiment, events_path;
  };
  const quint64 generation = generation_;
  store_->run<std::vector<Live>>(
      this,
      [](td::store::Store& s) {
        std::vector<Live> live;
        for (auto& r : s.active_remote_runs()) {
          auto info = s.find_run(r.run_id);
          if (!info) continue;
          live.push_back({r, info->experiment, info->events_path});
        }
        return live;
      },
      [this, generation](std::vector<Live> live) {
        if (generation != generation_ || !store_) return;
        for (const auto& l : live) {
          const QString id = QString::fromStdString(l.remote.run_id);
          if (runs_.count(id)) continue;
          RemoteRunSpec spec;
          spec.mode = RemoteRunSpec::Mode::Attach;
          spec.run_id = id;
          spec.experiment = QString::fromStdString(l.experiment);
          spec.cluster = QString::fromStdString(l.remote.cluster);
          QString problem;
          if (!placeFromStore(l.remote, spec, &problem)) {
            emit this->error(problem);
            continue;
          }
          spec.remote_run_dir = l.remote.run_dir;
          spec.pid = l.remote.pid.value_or(0);
          // The mirror is where the store ingested from (normally runDir(id)/events.jsonl).
          if (!l.events_path.empty())
            spec.local_dir = QFileInfo(QString::fromStdString(l.events_path)).absolutePath();
          launchTask(spec);
          emit runAttached(id);
        }
      },
      [this](const QString& m) { emit this->error(m); });
}

void RemoteRunController::detachAll() {
  ++generation_;
  // Cancel every task first, so their threads wind down together, then drop them.
  for (auto& [id, run] : runs_) run.task->cancel();
  for (auto* tasks : {&downloads_, &listings_})
    for (auto& [id, task] : *tasks)
      if (task) task->cancel();
  runs_.clear();  // each RemoteTask cancels and lets its thread end (RemoteTask::kJoinWaitMs at most)
  downloads_.clear();
  listings_.clear();
  states_.clear();
}

void RemoteRunController::startNodeTask(const QString& run_id, std::map<QString, std::unique_ptr<RemoteTask>>& tasks,
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

bool RemoteRunController::downloadCheckpoint(const QString& run_id, const QString& local_dir, QString* error,
                                             const QString& name) {
  if (!canReachNodes(error)) return false;
  static const QRegularExpression kName(QStringLiteral("^step_[0-9]{8}$"));
  if (!name.isEmpty() && !kName.match(name).hasMatch()) {
    set_error(error, tr("'%1' is not a checkpoint name (step_ and 8 digits).").arg(name));
    return false;
  }
  if (downloads_.count(run_id)) {
    set_error(error, tr("A checkpoint of run %1 is being downloaded already.").arg(run_id));
    return false;
  }
  downloads_[run_id] = nullptr;  // placeholder so a second call is refused until the task exists
  auto connector = connector_;
  const std::string out = local_dir.toStdString();
  const std::string wanted = name.toStdString();
  startNodeTask(run_id, downloads_,
                [this, run_id, connector, out, wanted](RemoteTask::Shared& shared, const td::remote::NodeSpec& node,
                                                       const std::string& run_dir) {
                  auto done = [&](const QString& path, const QString& message) {
                    shared.post([this, run_id, path, message] {
                      downloads_.erase(run_id);
                      if (message.isEmpty())
                        emit checkpointDownloaded(run_id, path);
                      else
                        emit this->error(tr("Checkpoint of run %1: %2").arg(run_id, message));
                    });
                  };
                  try {
                    td::remote::Session s = connector(node);
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

void RemoteRunController::listCheckpoints(const QString& run_id) {
  if (QString why; !canReachNodes(&why)) return emit error(tr("Checkpoints of run %1: %2").arg(run_id, why));
  if (listings_.count(run_id)) return;  // the listing going on answers this call too
  listings_[run_id] = nullptr;
  auto connector = connector_;
  startNodeTask(run_id, listings_,
                [this, run_id, connector](RemoteTask::Shared& shared, const td::remote::NodeSpec& node,
                                          const std::string& run_dir) {
                  QList<RemoteCheckpointEntry> entries;
                  QString message;
                  try {
                    td::remote::Session s = connector(node);
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

void RemoteRunController::cancelDownload(const QString& run_id) {
  auto it = downloads_.find(run_id);
  if (it != downloads_.end() && it->second) it->second->cancel();
}

}  // namespace td::gui
