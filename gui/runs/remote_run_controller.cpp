#include "gui/runs/remote_run_controller.h"

#include <QFileInfo>

#include <utility>

#include "engine/common/error.h"
#include "engine/common/run_id.h"
#include "gui/core/store_client.h"
#include "remote/multinode.h"
#include "store/store.h"

namespace td::gui {

namespace {

void set_error(QString* error, const QString& message) {
  if (error) *error = message;
}

}  // namespace

RemoteRunController::RemoteRunController(StoreClient* store, Connector connector, QObject* parent)
    : RemoteTargetBase(std::move(connector), parent) {
  poll_ms_ = 500;
  setStoreClient(store);
}

RemoteRunController::~RemoteRunController() { detachAll(); }

QList<PlacementChoice> RemoteRunController::placements(const std::optional<td::remote::ClusterSpec>& cluster) const {
  QList<PlacementChoice> out;
  if (!cluster || !accepts(RunPlacement{cluster, -1})) return out;
  const td::remote::ClusterSpec& c = *cluster;
  const QString name = QString::fromStdString(c.name);
  // Every node at once: one rank per GPU, or one per CPU node. A cluster mixing GPU and CPU
  // nodes cannot train as one run (remote/multinode.h refuses it), so it gets no such entry.
  int gpu_nodes = 0;
  for (const auto& n : c.nodes) gpu_nodes += n.gpus > 0 ? 1 : 0;
  const bool mixed = gpu_nodes > 0 && gpu_nodes < int(c.nodes.size());
  if (c.nodes.size() > 1 && !mixed) {
    int ranks = 0;
    for (const auto& n : c.nodes) ranks += n.gpus > 0 ? n.gpus : 1;
    out.push_back({tr("%1 / all %2 nodes (%3 ranks)").arg(name).arg(c.nodes.size()).arg(ranks),
                   QStringLiteral("remote"), RunPlacement{c, -1}});
  }
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const auto& n = c.nodes[i];
    const QString what = n.gpus == 1 ? tr("1 GPU") : n.gpus > 1 ? tr("%1 GPUs").arg(n.gpus) : tr("CPU");
    out.push_back({QStringLiteral("%1 / %2 (%3)").arg(name, QString::fromStdString(n.display_name()), what),
                   QStringLiteral("remote"), RunPlacement{c, int(i)}});
  }
  return out;
}

bool RemoteRunController::nodesProblem(const td::remote::ClusterSpec& cluster, QString* error) const {
  if (cluster.nodes.empty()) {
    set_error(error, tr("The cluster %1 has no nodes: add them on the Clusters page.")
                         .arg(QString::fromStdString(cluster.name)));
    return true;
  }
  for (const td::remote::NodeSpec& node : cluster.nodes)
    if (node.host.empty()) {
      set_error(error, tr("The node has no host: set it in the cluster designer."));
      return true;
    }
  if (const auto problems = td::remote::validate(cluster); !problems.empty()) {
    // The nodes' own checks (port, GPUs, work directory, addresses).
    const QString who = cluster.nodes.size() == 1 ? QString::fromStdString(cluster.nodes[0].display_name())
                                                   : QString::fromStdString(cluster.name);
    set_error(error, tr("The node %1 cannot be used: %2. Fix it on the Clusters page.")
                         .arg(who, QString::fromStdString(problems.front())));
    return true;
  }
  if (td::remote::is_multi_rank(cluster)) {
    try {
      td::remote::cluster_device(cluster);
    } catch (const td::Error& e) {
      set_error(error, QString::fromStdString(e.what()));
      return true;
    }
  }
  return false;
}

QString RemoteRunController::start(const RunPlacement& placement, const QString& experiment,
                                   const nlohmann::json& config, const QString& name, QString* error) {
  if (!placement.cluster || placement.cluster->nodes.empty()) {
    set_error(error, placement.cluster ? tr("The cluster %1 has no nodes: add them on the Clusters page.")
                                             .arg(QString::fromStdString(placement.cluster->name))
                                       : tr("An SSH run needs a cluster with at least one node."));
    return {};
  }
  const td::remote::ClusterSpec& c = *placement.cluster;
  if (placement.node >= int(c.nodes.size())) {
    set_error(error, tr("The cluster %1 has no node %2; choose where to train again.")
                         .arg(QString::fromStdString(c.name))
                         .arg(placement.node + 1));
    return {};
  }
  // One node (chosen, or the cluster's only one), or every node.
  td::remote::ClusterSpec nodes;
  nodes.name = c.name.empty() ? std::string("cluster") : c.name;
  if (placement.node >= 0 || c.nodes.size() == 1)
    nodes.nodes.push_back(c.nodes[size_t(std::max(placement.node, 0))]);
  else
    nodes.nodes = c.nodes;
  QString run_name;
  const QString engine = startChecks(config, name, &run_name, error);
  if (engine.isEmpty() || nodesProblem(nodes, error)) return {};
  RemoteRunSpec spec;
  spec.mode = RemoteRunSpec::Mode::Start;
  spec.run_id = QString::fromStdString(td::new_run_id());
  spec.experiment = experiment;
  spec.cluster = QString::fromStdString(nodes.name);
  spec.node = nodes.nodes.front();
  if (td::remote::is_multi_rank(nodes)) spec.nodes = nodes.nodes;
  spec.engine = engine;
  spec.config_json = config.dump(2) + "\n";
  const QString id = spec.run_id;
  launchTask(std::move(spec));
  runs_[id].name = run_name;
  return id;
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
  const bool attach = spec.mode == RemoteRunSpec::Mode::Attach;
  Run& run = addRun(id, attach ? RunTargetState::Phase::Running : RunTargetState::Phase::Deploying);
  run.started = attach;
  if (attach) run.remote_dir = QString::fromStdString(spec.remote_run_dir);
  QStringList names;
  for (const td::remote::NodeSpec& n : is_multi_rank(spec) ? spec.nodes : std::vector<td::remote::NodeSpec>{spec.node})
    names << QString::fromStdString(n.display_name());
  run.host = names.join(QStringLiteral(", "));
  auto control = run.control;
  auto connector = connect_;
  run.task = std::make_unique<RemoteTask>(
      this, [spec, control, connector, this, serial = run.serial](RemoteTask::Shared& shared) {
        run_remote_job(spec, connector, *control, shared, [&shared, this, id = spec.run_id, serial](RemoteRunEvent e) {
          shared.post([this, id, serial, e]() { onEvent(id, serial, e); });
        });
      });
}

void RemoteRunController::onEvent(const QString& run_id, quint64 serial, const RemoteRunEvent& e) {
  Run* run = current(run_id, serial);
  if (!run) return;
  using K = RemoteRunEvent::Kind;
  switch (e.kind) {
    case K::Progress:
      if (run->state.phase == RunTargetState::Phase::Stopping) break;  // a stop cancels the deploy
      run->state = {RunTargetState::Phase::Deploying, e.text, e.a, e.b};
      emit stateChanged(run_id);
      break;
    case K::Launched:
      run->started = true;
      if (run->state.phase != RunTargetState::Phase::Stopping) run->state = {RunTargetState::Phase::Running, {}, 0, 0};
      run->remote_dir = e.text;
      nameRun(run_id, *run);  // on the row the launch created, before runStarted's listeners read it
      emit runStarted(run_id);
      emit stateChanged(run_id);
      break;
    case K::Ingested:
      emit runIngested(run_id, e.a);
      break;
    case K::Log:
      emit logAppended(run_id, e.text);
      break;
    case K::State:
      // Running or stopping: how the node is reached, in words ("connected", "reconnecting ...").
      if (run->state.phase == RunTargetState::Phase::Running || run->state.phase == RunTargetState::Phase::Stopping)
        run->state.detail = e.text;
      run->state.connection = e.connection;
      run->state.reconnect_attempt = e.connection == RunTargetState::Connection::Reconnecting ? int(e.a) : 0;
      emit stateChanged(run_id);
      break;
    case K::RanksLost:
      run->state.lost_ranks += e.ranks;
      emit stateChanged(run_id);
      break;
    case K::Ended:
      finish(run_id);
      emit runEnded(run_id, e.text);
      emit stateChanged(run_id);
      break;
    case K::StartFailed: {
      const QString host = run->host;
      finish(run_id);
      emit startFailed(run_id, e.text);
      if (!e.cancelled) emit this->error(tr("Run %1 on %2: %3").arg(run_id, host, e.text));
      emit stateChanged(run_id);
      break;
    }
    case K::Failed: {
      const QString host = run->host;
      finish(run_id);
      emit this->error(tr("Run %1 on %2: %3").arg(run_id, host, e.text));
      emit stateChanged(run_id);
      break;
    }
  }
}

void RemoteRunController::resumeStored(const td::store::RunInfo& info, const td::store::RemoteRun& row,
                                       const QString& engine) {
  RemoteRunSpec spec;
  spec.mode = RemoteRunSpec::Mode::Resume;
  spec.run_id = QString::fromStdString(row.run_id);
  spec.experiment = QString::fromStdString(info.experiment);
  spec.cluster = QString::fromStdString(row.cluster);
  QString problem;
  if (!placeFromStore(row, spec, &problem)) return emit this->error(problem);
  spec.layout_json.clear();  // the resumed ranks get a new layout
  spec.engine = engine;
  // The mirrors stay where the run's events were ingested from.
  if (!info.events_path.empty()) spec.local_dir = QFileInfo(QString::fromStdString(info.events_path)).absolutePath();
  launchTask(std::move(spec));
}

bool RemoteRunController::attachStored(const td::store::RemoteRun& row, const QString& experiment,
                                       const QString& local_dir, QString* error) {
  RemoteRunSpec spec;
  spec.mode = RemoteRunSpec::Mode::Attach;
  spec.run_id = QString::fromStdString(row.run_id);
  spec.experiment = experiment;
  spec.cluster = QString::fromStdString(row.cluster);
  if (!placeFromStore(row, spec, error)) return false;
  spec.remote_run_dir = row.run_dir;
  spec.pid = row.pid.value_or(0);
  spec.local_dir = local_dir;
  launchTask(std::move(spec));
  return true;
}

}  // namespace td::gui
