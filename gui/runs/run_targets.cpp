#include "gui/runs/run_targets.h"

#include <QDir>
#include <QFileInfo>

#include "engine/common/run_id.h"
#include "gui/core/store_client.h"
#include "gui/runs/remote_run_controller.h"
#include "gui/runs/run_controller.h"
#include "gui/runs/slurm_target.h"
#include "store/store.h"

namespace td::gui {

QString RunPlacement::kind() const {
  if (!cluster) return QStringLiteral("local");
  return cluster->kind.empty() ? QStringLiteral("ssh") : QString::fromStdString(cluster->kind);
}

bool RunTarget::acceptRunName(const QString& name, QString* normalised, QString* error) {
  std::string problem;
  const std::string n = td::normalise_run_name(name.toStdString(), &problem);
  if (!problem.empty()) {
    if (error) *error = tr("The run name is refused: %1").arg(QString::fromStdString(problem));
    return false;
  }
  if (normalised) *normalised = QString::fromStdString(n);
  return true;
}

RunFiles RunTarget::runFolderFiles(const QString& dir) {
  RunFiles f;
  f.local_dir = dir;
  if (dir.isEmpty()) return f;
  f.events = QDir(dir).filePath(QStringLiteral("events.jsonl"));
  const QString log = QDir(dir).filePath(QStringLiteral("engine.log"));
  if (QFileInfo::exists(log)) f.log = log;
  return f;
}

void RunTarget::listCheckpoints(const QString& run_id) {
  emit this->error(tr("Run %1's checkpoints are not kept away from this machine: the Checkpoints tab reads them here.").arg(run_id));
}

bool RunTarget::fetchCheckpoint(const QString& run_id, const QString&, const QString&, QString* error) {
  if (error) *error = tr("Run %1's checkpoints are on this machine already.").arg(run_id);
  return false;
}

RunTargets* make_targets(const RemoteConnector& connect, QObject* parent) {
  auto* targets = new RunTargets(parent);
  // The order of registration is the order of the "Train on" entries of one cluster.
  targets->add(new RunController(nullptr));
  targets->add(new RemoteRunController(nullptr, connect));
  targets->add(new SlurmTarget(nullptr, connect));
  return targets;
}

RunTargets::RunTargets(QObject* parent) : RunTarget(parent) {}

RunTargets::~RunTargets() = default;

bool RunTargets::add(RunTarget* target) {
  if (!target || this->target(target->kind())) return false;
  target->setParent(this);
  targets_.push_back(target);
  connect(target, &RunTarget::runStarted, this, &RunTarget::runStarted);
  connect(target, &RunTarget::runAttached, this, &RunTarget::runAttached);
  connect(target, &RunTarget::runIngested, this, &RunTarget::runIngested);
  connect(target, &RunTarget::logAppended, this, &RunTarget::logAppended);
  connect(target, &RunTarget::runEnded, this, &RunTarget::runEnded);
  connect(target, &RunTarget::stateChanged, this, &RunTarget::stateChanged);
  connect(target, &RunTarget::startFailed, this, &RunTarget::startFailed);
  connect(target, &RunTarget::checkpointsListed, this, &RunTarget::checkpointsListed);
  connect(target, &RunTarget::checkpointProgress, this, &RunTarget::checkpointProgress);
  connect(target, &RunTarget::checkpointFetched, this, &RunTarget::checkpointFetched);
  connect(target, &RunTarget::error, this, &RunTarget::error);
  // A target destroyed before this object (its owner deleted it) leaves the list.
  connect(target, &QObject::destroyed, this, [this, target] { targets_.removeAll(target); });
  target->setKillTimeoutMs(kill_timeout_ms_);
  return true;
}

RunTarget* RunTargets::target(const QString& kind) const {
  for (RunTarget* t : targets_)
    if (t->kind() == kind) return t;
  return nullptr;
}

RunTarget* RunTargets::owner(const QString& run_id) const {
  for (RunTarget* t : targets_)
    if (t->isActive(run_id)) return t;
  return nullptr;
}

QList<RunTarget*> RunTargets::targets() const { return QList<RunTarget*>(targets_.begin(), targets_.end()); }

bool RunTargets::accepts(const RunPlacement& p) const {
  for (RunTarget* t : targets_)
    if (t->accepts(p)) return true;
  return false;
}

QList<PlacementChoice> RunTargets::placements(const std::optional<td::remote::ClusterSpec>& cluster) const {
  QList<PlacementChoice> out;
  for (RunTarget* t : targets_) out += t->placements(cluster);
  return out;
}

QList<PlacementChoice> RunTargets::placements(const QList<td::remote::ClusterSpec>& clusters) const {
  QList<PlacementChoice> out = placements(std::nullopt);
  for (const td::remote::ClusterSpec& c : clusters) out += placements(std::optional<td::remote::ClusterSpec>(c));
  return out;
}

void RunTargets::setStoreClient(StoreClient* store) {
  store_ = store;
  for (RunTarget* t : targets_) t->setStoreClient(store);
}

QString RunTargets::start(const RunPlacement& placement, const QString& experiment, const nlohmann::json& config,
                          const QString& name, QString* error) {
  for (RunTarget* t : targets_)
    if (t->accepts(placement)) return t->start(placement, experiment, config, name, error);
  if (error) *error = tr("Nothing here can start a run on a target of kind \"%1\".").arg(placement.kind());
  return {};
}

bool RunTargets::stop(const QString& run_id, QString* error) {
  if (RunTarget* t = owner(run_id)) return t->stop(run_id, error);
  if (error) *error = tr("Run %1 is not running here.").arg(run_id);
  return false;
}

void RunTargets::withTargetOf(const QString& run_id, const QString& what, std::function<void(RunTarget*)> fn) {
  if (RunTarget* t = owner(run_id)) return fn(t);
  if (!store_) return emit this->error(tr("No store is open."));
  store_->run<std::string>(
      this, [id = run_id.toStdString()](td::store::Store& s) { return s.run_target(id); },
      [this, run_id, fn = std::move(fn)](std::string kind) {
        RunTarget* t = target(QString::fromStdString(kind));
        if (!t)
          return emit this->error(tr("Run %1 ran on a target of kind \"%2\", which this TrainDeck cannot reach.")
                                .arg(run_id, QString::fromStdString(kind)));
        fn(t);
      },
      [this, run_id, what](const QString& m) { emit this->error(what.arg(run_id) + m); });
}

bool RunTargets::resume(const QString& run_id, QString* error) {
  if (owner(run_id)) {
    if (error) *error = tr("Run %1 is still running.").arg(run_id);
    return false;
  }
  if (!store_) {
    if (error) *error = tr("No store is open.");
    return false;
  }
  withTargetOf(run_id, tr("Run %1 cannot be resumed: "), [this, run_id](RunTarget* t) {
    QString err;
    if (!t->resume(run_id, &err)) emit this->error(err);
  });
  return true;
}

bool RunTargets::cancel(const QString& run_id) {
  RunTarget* t = owner(run_id);
  return t && t->cancel(run_id);
}

bool RunTargets::fetchesCheckpoints() const {
  for (RunTarget* t : targets_)
    if (t->fetchesCheckpoints()) return true;
  return false;
}

void RunTargets::listCheckpoints(const QString& run_id) {
  withTargetOf(run_id, tr("Checkpoints of run %1: "), [run_id](RunTarget* t) { t->listCheckpoints(run_id); });
}

bool RunTargets::fetchCheckpoint(const QString& run_id, const QString& local_dir, const QString& name,
                                 QString* error) {
  if (RunTarget* t = owner(run_id)) return t->fetchCheckpoint(run_id, local_dir, name, error);
  if (isFetching(run_id)) {
    if (error) *error = tr("A checkpoint of run %1 is being downloaded already.").arg(run_id);
    return false;
  }
  withTargetOf(run_id, tr("Checkpoint of run %1: "), [this, run_id, local_dir, name](RunTarget* t) {
    QString err;
    if (!t->fetchCheckpoint(run_id, local_dir, name, &err)) emit this->error(err);
  });
  return true;
}

void RunTargets::cancelFetch(const QString& run_id) {
  for (RunTarget* t : targets_) t->cancelFetch(run_id);
}

bool RunTargets::isFetching(const QString& run_id) const {
  for (RunTarget* t : targets_)
    if (t->isFetching(run_id)) return true;
  return false;
}

bool RunTargets::isListing(const QString& run_id) const {
  for (RunTarget* t : targets_)
    if (t->isListing(run_id)) return true;
  return false;
}

void RunTargets::reattach() {
  for (RunTarget* t : targets_) t->reattach();
}

void RunTargets::detachAll() {
  for (RunTarget* t : targets_) t->detachAll();
}

void RunTargets::stopAll() {
  for (RunTarget* t : targets_) t->stopAll();
}

QStringList RunTargets::activeRuns() const {
  QStringList ids;
  for (RunTarget* t : targets_) ids += t->activeRuns();
  return ids;
}

RunTargetState RunTargets::state(const QString& run_id) const {
  RunTarget* t = owner(run_id);
  return t ? t->state(run_id) : RunTargetState{};
}

RunFiles RunTargets::files(const QString& run_id) const {
  RunTarget* t = owner(run_id);
  return t ? t->files(run_id) : RunFiles{};
}

void RunTargets::setKillTimeoutMs(int ms) {
  RunTarget::setKillTimeoutMs(ms);
  for (RunTarget* t : targets_) t->setKillTimeoutMs(ms);
}

}  // namespace td::gui
