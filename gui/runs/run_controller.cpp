#include "gui/runs/run_controller.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSysInfo>
#include <QTimer>

#include "gui/core/paths.h"
#include "gui/core/store_client.h"
#include "gui/runs/launcher.h"
#include "gui/runs/run_follower.h"
#include "engine/common/fileio.h"
#include "engine/common/run_id.h"
#include "engine/config.h"
#include "store/store.h"

namespace td::gui {

namespace {

// Writes path through "<path>.tmp", created new (O_EXCL: a link planted at the name is removed,
// never followed) and owner-only, as the engine's run files (engine/common/fileio.h).
bool write_file(const QString& path, const QByteArray& bytes, QString* error) {
  QFile f(path + QStringLiteral(".tmp"));
  QFile::remove(f.fileName());  // a stale one (or a link: the link itself goes)
  if (!f.open(QIODevice::WriteOnly | QIODevice::NewOnly, QFileDevice::ReadOwner | QFileDevice::WriteOwner) ||
      f.write(bytes) != bytes.size() || !f.flush()) {
    if (error) *error = QObject::tr("cannot write '%1': %2").arg(path, f.errorString());
    return false;
  }
  f.close();
  QFile::remove(path);
  if (!QFile::rename(f.fileName(), path)) {
    if (error) *error = QObject::tr("cannot write '%1'").arg(path);
    return false;
  }
  return true;
}

void set_error(QString* error, const QString& message) {
  if (error) *error = message;
}

}  // namespace

RunController::RunController(StoreClient* store, QObject* parent) : RunTarget(parent) { setStoreClient(store); }

RunController::~RunController() = default;

void RunController::setStoreClient(StoreClient* store) {
  follower_.reset();
  active_.clear();
  pids_.clear();
  stopping_.clear();
  store_ = store;
  if (!store) return;
  follower_ = std::make_unique<RunFollower>(store->path());
  connect(follower_.get(), &RunFollower::ingested, this,
          [this](const QString& id, qint64, qint64 last_step) { emit runIngested(id, last_step); });
  connect(follower_.get(), &RunFollower::logAppended, this, &RunController::logAppended);
  connect(follower_.get(), &RunFollower::ended, this, [this](const QString& id, const QString& status) {
    active_.remove(id);
    pids_.remove(id);
    stopping_.remove(id);
    emit runEnded(id, status);
    emit stateChanged(id);
  });
  connect(follower_.get(), &RunFollower::failed, this, [this](const QString& id, const QString& message) {
    active_.remove(id);
    pids_.remove(id);
    stopping_.remove(id);
    emit error(tr("Run %1: %2").arg(id, message));
  });
  reattach();
}

QString RunController::runDir(const QString& run_id) const {
  return store_ ? QDir(runsRoot(store_->path())).filePath(run_id) : QString();
}

QString RunController::datasetProblem(const nlohmann::json& config) {
  const nlohmann::json* data = config.contains("data") ? &config["data"] : nullptr;
  const QString path =
      data && data->contains("path") && (*data)["path"].is_string()
          ? QString::fromStdString((*data)["path"].get<std::string>())
          : QString();
  if (path.isEmpty()) return tr("The design has no dataset (data.path): prepare one on the Data page, then pick it.");
  QFile manifest(QDir(path).filePath(QStringLiteral("manifest.json")));
  if (!manifest.exists())
    return tr("'%1' holds no prepared dataset (no manifest.json): prepare it on the Data page, or pick another "
              "dataset.")
        .arg(path);
  if (manifest.size() > 64 * 1024 * 1024 || !manifest.open(QIODevice::ReadOnly))
    return tr("Cannot read the dataset manifest '%1'.").arg(manifest.fileName());
  const auto doc = nlohmann::json::parse(manifest.readAll().toStdString(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("tokenizer") || !doc["tokenizer"].is_object() ||
      !doc["tokenizer"].contains("vocab_size") || !doc["tokenizer"]["vocab_size"].is_number_integer())
    return tr("The dataset manifest '%1' is damaged (no tokenizer.vocab_size): prepare the dataset again.")
        .arg(manifest.fileName());
  const int data_vocab = doc["tokenizer"]["vocab_size"].get<int>();
  const int model_vocab = config.contains("model") && config["model"].contains("vocab_size") &&
                                  config["model"]["vocab_size"].is_number_integer()
                              ? config["model"]["vocab_size"].get<int>()
                              : td::ModelConfig{}.vocab_size;
  if (data_vocab != model_vocab)
    return tr("model.vocab_size is %1 but the dataset '%2' has %3 tokens in its tokenizer: set vocab_size to %3.")
        .arg(model_vocab)
        .arg(path)
        .arg(data_vocab);
  return {};
}

QList<PlacementChoice> RunController::placements(const std::optional<td::remote::ClusterSpec>& cluster) const {
  if (cluster) return {};
  return {{tr("This machine"), QStringLiteral("run"), RunPlacement{}}};
}

QString RunController::start(const RunPlacement& placement, const QString& experiment, const nlohmann::json& config,
                             const QString& name, QString* error) {
  if (placement.cluster) {
    set_error(error, tr("This machine's target cannot start a run on cluster %1.")
                         .arg(QString::fromStdString(placement.cluster->name)));
    return {};
  }
  if (!store_) {
    set_error(error, tr("No store is open."));
    return {};
  }
  QString run_name;
  if (!acceptRunName(name, &run_name, error)) return {};
  if (const QString problem = datasetProblem(config); !problem.isEmpty()) {
    set_error(error, problem);
    return {};
  }
  const QString run_id = QString::fromStdString(td::new_run_id());
  const QString dir = runDir(run_id);
  // Owner-only (0700, new parents too), as the engine makes its run folders.
  if (const std::error_code ec = td::create_private_dirs(dir.toStdString())) {
    set_error(error, tr("Cannot create the run folder '%1' (%2): check that its parent is writable.")
                         .arg(dir, QString::fromStdString(ec.message())));
    return {};
  }
  if (!write_file(QDir(dir).filePath(QStringLiteral("config.json")), QByteArray::fromStdString(config.dump(2) + "\n"),
                  error))
    return {};
  if (!launch(run_id, experiment, dir, /*resume=*/false, error, run_name)) return {};
  emit runStarted(run_id);
  return run_id;
}

bool RunController::launch(const QString& run_id, const QString& experiment, const QString& dir, bool resume,
                           QString* error, const QString& name) {
  const QString engine = engineExecutable();
  if (engine.isEmpty()) {
    set_error(error, tr("The training engine (traindeck-engine) was not found. Build it (cmake --build build) or "
                        "set TRAINDECK_ENGINE to its path."));
    return false;
  }
  const QString log = QDir(dir).filePath(QStringLiteral("engine.log"));
  LaunchSpec spec;
  spec.program = engine.toStdString();
  spec.args = {"train", "--config", QDir(dir).filePath(QStringLiteral("config.json")).toStdString(), "--out",
               dir.toStdString(), "--run-id", run_id.toStdString(), "--no-events-stdout"};
  if (resume) spec.args.push_back("--resume");
  // The name travels in the run's run_start event (ingest stores it): in the events file, so a
  // store rebuilt from the files keeps it.
  if (!name.isEmpty()) spec.args.insert(spec.args.end(), {"--run-name", name.toStdString()});
  spec.working_dir = dir.toStdString();
  spec.stderr_path = log.toStdString();
  const qint64 log_offset = QFileInfo(log).size();
  pid_t pid = 0;
  try {
    pid = launch_detached(spec);
  } catch (const std::exception& e) {
    set_error(error, QString::fromStdString(e.what()));
    return false;
  }
  follow(run_id, experiment, QDir(dir).filePath(QStringLiteral("events.jsonl")), pid, /*note_launch=*/true, log_offset);
  return true;
}

void RunController::follow(const QString& run_id, const QString& experiment, const QString& events, qint64 pid,
                           bool note_launch, qint64 log_offset) {
  const QString dir = QFileInfo(events).absolutePath();
  FollowSpec spec;
  spec.run_id = run_id;
  spec.experiment = experiment;
  spec.events_path = events;
  const QString log = QDir(dir).filePath(QStringLiteral("engine.log"));
  spec.log_path = QFileInfo::exists(log) || note_launch ? log : QString();
  spec.pid = pid;
  spec.must_contain = {QStringLiteral("traindeck-engine"), QFileInfo(dir).fileName()};
  spec.note_launch = note_launch;
  spec.host = QSysInfo::machineHostName();
  spec.launch_time = QDateTime::currentMSecsSinceEpoch() / 1000.0;
  spec.log_offset = log_offset;
  active_.insert(run_id);
  pids_[run_id] = pid;
  follower_->follow(spec);
}

bool RunController::stop(const QString& run_id, QString* error) {
  const qint64 pid = pids_.value(run_id, 0);
  if (!active_.contains(run_id) || pid <= 0) {
    set_error(error, tr("Run %1 is not running here.").arg(run_id));
    return false;
  }
  if (!request_stop(static_cast<pid_t>(pid))) {
    set_error(error, tr("Run %1: its engine process %2 is gone.").arg(run_id).arg(pid));
    return false;
  }
  stopping_.insert(run_id);
  emit stateChanged(run_id);
  // The hard stop: the same process (pid and run folder), still followed, after the timeout.
  QTimer::singleShot(kill_timeout_ms_, this, [this, run_id, pid] {
    if (pids_.value(run_id, 0) != pid) return;
    if (process_alive(static_cast<pid_t>(pid), {"traindeck-engine", run_id.toStdString()}))
      kill_process(static_cast<pid_t>(pid));
  });
  return true;
}

RunTargetState RunController::state(const QString& run_id) const {
  if (!active_.contains(run_id)) return {};
  RunTargetState s;
  s.phase = stopping_.contains(run_id) ? RunTargetState::Phase::Stopping : RunTargetState::Phase::Running;
  return s;
}

RunFiles RunController::files(const QString& run_id) const { return runFolderFiles(runDir(run_id)); }

bool RunController::resume(const QString& run_id, QString* error) {
  if (!store_) {
    set_error(error, tr("No store is open."));
    return false;
  }
  if (active_.contains(run_id)) {
    set_error(error, tr("Run %1 is still running.").arg(run_id));
    return false;
  }
  // The run's folder and config come from the store (a query), then the launch happens here.
  struct Found {
    std::optional<td::store::RunInfo> info;
    bool remote = false;
  };
  store_->run<Found>(
      this,
      [id = run_id.toStdString()](td::store::Store& s) { return Found{s.find_run(id), s.remote_run(id).has_value()}; },
      [this, run_id](Found found) {
        const std::optional<td::store::RunInfo>& info = found.info;
        if (!info) return emit this->error(tr("Run %1 is not in this store.").arg(run_id));
        if (found.remote)
          return emit this->error(tr("Run %1 ran on an SSH node; it resumes there (Run page, Resume).").arg(run_id));
        if (info->status == "running" || active_.contains(run_id))
          return emit this->error(tr("Run %1 is still running.").arg(run_id));
        if (info->events_path.empty())
          return emit this->error(tr("Run %1 has no run folder on this machine; it cannot be resumed here.").arg(run_id));
        const QString dir = QFileInfo(QString::fromStdString(info->events_path)).absolutePath();
        const QString config = QDir(dir).filePath(QStringLiteral("config.json"));
        QString err;
        if (!QFileInfo::exists(config)) {
          if (info->config_json.empty())
            return emit this->error(tr("Run %1 has no config.json and the store has no config for it.").arg(run_id));
          if (!write_file(config, QByteArray::fromStdString(info->config_json), &err)) return emit this->error(err);
        }
        if (!launch(run_id, QString::fromStdString(info->experiment), dir, /*resume=*/true, &err))
          return emit this->error(err);
        emit runStarted(run_id);
      },
      [this](const QString& m) { emit this->error(m); });
  return true;
}

void RunController::reattach() {
  if (!store_) return;
  struct Live {
    QString run_id, experiment, events;
    qint64 pid = 0;
  };
  store_->run<std::vector<Live>>(
      this,
      [](td::store::Store& s) {
        std::vector<Live> live;
        for (const auto& r : s.list_runs()) {
          if (r.status != "running") continue;
          if (s.remote_run(r.run_id)) continue;  // on an SSH node: RemoteRunController follows it
          auto info = s.get_run(r.run_id);
          if (info.events_path.empty()) continue;
          live.push_back({QString::fromStdString(r.run_id), QString::fromStdString(r.experiment),
                          QString::fromStdString(info.events_path), info.pid.value_or(0)});
        }
        return live;
      },
      [this](std::vector<Live> live) {
        for (const auto& r : live) {
          if (active_.contains(r.run_id)) continue;
          follow(r.run_id, r.experiment, r.events, r.pid, /*note_launch=*/false, /*log_offset=*/-1);
          emit runAttached(r.run_id);
        }
      },
      [this](const QString& m) { emit error(m); });
}

void RunController::detachAll() {
  if (follower_) follower_->unfollowAll();
  active_.clear();
  pids_.clear();
  stopping_.clear();
}

void RunController::stopAll() {
  for (const auto& id : active_)
    if (pids_.value(id, 0) > 0) request_stop(static_cast<pid_t>(pids_.value(id)));
}

}  // namespace td::gui
