#include "gui/runs/slurm_target.h"

#include <QCoreApplication>
#include <QFileInfo>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/fileio.h"
#include "engine/common/run_id.h"
#include "gui/core/store_client.h"
#include "gui/runs/remote_ops.h"
#include "remote/remote_run.h"
#include "remote/slurm.h"
#include "store/store.h"

namespace td::gui {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Phase = RunTargetState::Phase;

struct SlurmRunSpec {
  enum class Mode { Start, Resume, Attach };
  Mode mode = Mode::Start;
  QString run_id, experiment, cluster;
  td::remote::NodeSpec login;
  td::remote::SlurmSpec slurm;
  QString store_path, local_dir, engine, bundle_cache;
  std::string config_json;     // Start: the run config (data.path local); Resume: <local_dir>/config.json
  std::string remote_run_dir;  // Attach: the run folder on the shared filesystem
  int poll_ms = 1000;
};

namespace {

constexpr uint64_t kLogChunk = 256 * 1024;  // bytes of engine.log fetched per poll at most
constexpr int kJobEvery = 3;                // the job's state every this many polls
constexpr int kBackoffInitialMs = 500;      // first wait after a failed reconnect, doubled each time
constexpr int kBackoffMaxMs = 30000;

// lupdate files a free tr() in this namespace under the context "td::gui": look it up there.
QString tr(const char* text) { return QCoreApplication::translate("td::gui", text); }
QString q(const std::string& s) { return QString::fromStdString(s); }

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What a task reports to the GUI thread.
struct Report {
  // Connection: the login node reached again (text: the job's last words, to show again) or not
  // (text: "reconnecting (attempt N): why", a = N); connection says which.
  enum class Kind { Progress, Submitted, Job, Ingested, Log, Ended, StartFailed, Failed, Connection };
  Kind kind = Kind::Progress;
  qint64 a = 0, b = 0;
  QString text, job, remote_dir;
  Phase phase = Phase::Unknown;
  RunTargetState::Connection connection = RunTargetState::Connection::None;
};

// remote_runs.layout of a Slurm run: {"slurm": <its settings at submission>}.
std::string layout_of(const td::remote::SlurmSpec& s) { return nlohmann::json{{"slurm", td::remote::to_json(s)}}.dump(); }

// Deploys and submits (Start, Resume); returns the run folder on the cluster and the job id.
std::pair<std::string, std::string> submit_run(const SlurmRunSpec& spec, const RemoteConnector& connect,
                                               RemoteRunControl& control, const std::function<void(Report)>& report) {
  auto phase = [&](const QString& text) { report({Report::Kind::Progress, 0, 0, text, {}, {}, Phase::Deploying}); };
  // A container image holds the engine: no bundle is built or uploaded then.
  fs::path bundle;
  if (!spec.slurm.container.enabled()) {
    phase(tr("preparing the engine bundle"));
    bundle = remote_ops::cached_bundle(spec.engine.toStdString(), spec.bundle_cache.toStdString());
  }
  const fs::path local_dir = spec.local_dir.toStdString();
  const std::string config_json =
      spec.mode == SlurmRunSpec::Mode::Resume ? remote_ops::read_run_file(local_dir / "config.json", "the run's config is missing here") : spec.config_json;
  const nlohmann::json config = nlohmann::json::parse(config_json);
  const std::string dataset = config.at("data").at("path").get<std::string>();
  if (spec.mode == SlurmRunSpec::Mode::Start) remote_ops::write_run_file(local_dir / "config.json", config_json);
  phase(tr("connecting to %1").arg(q(spec.login.display_name())));
  td::remote::Session s = connect(spec.login);
  td::remote::SlurmStartOptions o;
  o.resume = spec.mode == SlurmRunSpec::Mode::Resume;
  o.cancel = &control.cancel_deploy;
  o.progress = [&](uint64_t done, uint64_t total) {
    report({Report::Kind::Progress, qint64(done), qint64(total), tr("uploading to %1").arg(spec.cluster), {}, {},
            Phase::Deploying});
  };
  const td::remote::SlurmRun run =
      td::remote::start_slurm_run(s, spec.slurm, bundle, dataset, config_json, spec.run_id.toStdString(), o);
  // The script as submitted stays in the run folder here too (and there: traindeck.sbatch).
  remote_ops::write_run_file(local_dir / "traindeck.sbatch", run.script);

  td::store::Store store(spec.store_path.toStdString());
  const double t = now_s();
  const std::string id = spec.run_id.toStdString();
  store.note_launch(id, spec.experiment.toStdString(), (local_dir / "events.jsonl").string(), 0,
                    spec.cluster.toStdString(), t);
  td::store::RemoteRun row;
  row.run_id = id;
  row.cluster = spec.cluster.toStdString();
  row.node_json = td::remote::to_json(spec.login).dump();
  row.run_dir = run.paths.run_dir;
  row.created = t;
  row.layout_json = layout_of(spec.slurm);
  row.target = "slurm";
  store.note_remote_run(row);
  store.note_run_job(id, {run.job_id, t, "PENDING", ""});
  return {run.paths.run_dir, run.job_id};
}

// The task's body (see the header): deploy and submit (Start, Resume), then follow the run's
// jobs until the run ends, the task is cancelled (detach) or following fails.
void run_slurm_job(const SlurmRunSpec& spec, const RemoteConnector& connect, RemoteRunControl& control,
                   RemoteTask::Shared& shared, const std::function<void(Report)>& report) {
  const std::string run_id = spec.run_id.toStdString();
  std::string remote_dir = spec.remote_run_dir;
  if (spec.mode != SlurmRunSpec::Mode::Attach) {
    try {
      auto [dir, job] = submit_run(spec, connect, control, report);
      remote_dir = dir;
      report({Report::Kind::Submitted, 0, 0, {}, q(job), q(dir), Phase::Queued});
    } catch (const std::exception& e) {
      const bool cancelled = control.cancel_deploy.load() || shared.cancelled();
      if (!shared.cancelled())
        report({Report::Kind::StartFailed, cancelled ? 1 : 0, 0, cancelled ? tr("deploy cancelled") : q(e.what()), {},
                {}, Phase::Unknown});
      return;
    }
  }

  const fs::path local_dir = spec.local_dir.toStdString();
  const fs::path log_mirror = local_dir / "engine.log";
  std::optional<td::store::Store> store;
  std::optional<td::remote::RemoteFollower> follower;
  try {
    store.emplace(spec.store_path.toStdString());
    td::remote::FollowOptions fo;
    fo.max_reconnect_attempts = 0;  // the backoff is done here
    fo.cancel = &shared.cancel;
    fo.check_process = false;       // the engine runs on compute nodes: the job's state says
    follower.emplace([&connect, node = spec.login] { return connect(node); }, *store, remote_dir, run_id, 0,
                     (local_dir / "events.jsonl").string(), spec.experiment.toStdString(), fo);
  } catch (const std::exception& e) {
    report({Report::Kind::Failed, 0, 0, q(e.what()), {}, {}, Phase::Unknown});
    return;
  }

  std::error_code ec;
  uint64_t log_offset = fs::exists(log_mirror, ec) ? fs::file_size(log_mirror, ec) : 0;
  auto fetch_log = [&](td::remote::Session& s) {
    for (int i = 0; i < 16; ++i) {
      bool shorter = false;
      const std::string bytes = remote_ops::fetch_log(s, remote_dir, log_offset, kLogChunk, &shorter);
      if (shorter) {
        fs::remove(log_mirror, ec);
        log_offset = 0;
        continue;
      }
      if (bytes.empty()) return;
      std::ofstream f(log_mirror, std::ios::binary | std::ios::app);
      f.write(bytes.data(), std::streamsize(bytes.size()));
      log_offset += bytes.size();
      report({Report::Kind::Log, 0, 0, QString::fromUtf8(bytes.data(), qsizetype(bytes.size())), {}, {}, Phase::Unknown});
      if (bytes.size() < kLogChunk) return;
    }
  };

  std::string job, last_state, last_reason;
  bool term_sent = false, cancel_sent = false;
  // Running is reported once the job is seen running, its steps arrive, or it ended on nodes:
  // a short job can go from PENDING to COMPLETED between two looks at its state.
  bool reported_running = false;
  auto report_running = [&](const QString& text) {
    if (reported_running || term_sent) return;
    reported_running = true;
    report({Report::Kind::Job, 0, 0, text, q(job), {}, Phase::Running});
  };
  Clock::time_point cancel_at{};
  int polls = 0, attempt = 0;
  RunTargetState::Connection connection = RunTargetState::Connection::None;
  QString job_text;  // the job's state in words, as last reported
  auto next = Clock::now();
  while (!shared.cancelled()) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    if (wait > 0 && !shared.sleep(int(wait))) return;
    next = Clock::now() + std::chrono::milliseconds(spec.poll_ms);
    try {
      const td::remote::FollowState st = follower->poll();
      attempt = 0;
      if (connection != RunTargetState::Connection::Connected) {
        connection = RunTargetState::Connection::Connected;
        report({Report::Kind::Connection, 0, 0, job_text, q(job), {}, Phase::Unknown, connection});
      }
      if (st.ingest.rows > 0) {
        const auto info = store->find_run(run_id);
        report({Report::Kind::Ingested, info ? info->last_step.value_or(0) : 0, 0, {}, {}, {}, Phase::Unknown});
        if (!job.empty()) report_running(tr("job %1 running").arg(q(job)));
      }
      td::remote::Session* s = follower->session();
      if (!s) continue;
      const bool stopping = control.stop.load();
      if (polls++ % kJobEvery != 0 && !(stopping && !term_sent)) continue;
      fetch_log(*s);
      const std::vector<std::string> jobs = td::remote::read_job_ids(*s, remote_dir);
      if (!jobs.empty()) job = jobs.back();
      if (job.empty()) {
        const auto stored = store->run_jobs(run_id);
        if (!stored.empty()) job = stored.back().job_id;
      }
      if (job.empty()) throw td::Error("the run folder " + remote_dir + " lists no Slurm job (slurm-jobs is empty)");
      td::remote::SlurmJobState js = td::remote::job_state(*s, job);
      // Stop: a waiting job leaves the queue; a running one gets the engine's graceful stop on
      // its ranks, then scancel after the timeout.
      if (stopping && !term_sent) {
        if (js.pending()) {
          td::remote::cancel_job(*s, job);
          cancel_sent = true;
        } else if (js.running()) {
          td::remote::signal_job(*s, job, "TERM");
        }
        term_sent = true;
        cancel_at = Clock::now() + std::chrono::milliseconds(control.kill_timeout_ms.load());
        report({Report::Kind::Job, 0, 0, tr("stopping"), q(job), {}, Phase::Stopping});
      } else if (term_sent && !cancel_sent && Clock::now() >= cancel_at && !js.ended()) {
        td::remote::cancel_job(*s, job);
        cancel_sent = true;
      }
      const std::string reason = js.pending() ? td::remote::pending_reason_text(js.reason) : td::remote::job_state_text(js);
      if (js.state != last_state || reason != last_reason) {
        last_state = js.state;
        last_reason = reason;
        store->note_run_job(run_id, {job, 0, js.state, reason});
        const Phase phase = term_sent ? Phase::Stopping : js.pending() ? Phase::Queued : js.running() ? Phase::Running : Phase::Ended;
        const QString text = js.pending() ? q(reason) : js.running() ? tr("job %1 on %2").arg(q(job), q(js.nodes)) : q(reason);
        job_text = text;
        if (phase == Phase::Running || phase == Phase::Queued) {
          reported_running = phase == Phase::Running;  // a requeued job runs again
        } else if (phase == Phase::Ended && !js.nodes.empty()) {
          report_running(tr("job %1 on %2").arg(q(job), q(js.nodes)));  // it ran, between two looks
        }
        report({Report::Kind::Job, 0, 0, text, q(job), {}, phase});
      }
      if (!js.ended() && js.state != "UNKNOWN") continue;
      // The job ended: a continuation (requeue after a time limit) is listed before it ends.
      const std::vector<std::string> again = td::remote::read_job_ids(*s, remote_dir);
      if (!again.empty() && again.back() != job) continue;
      // Everything the engine wrote, then the run's end: its run_end, or what Slurm said.
      for (int i = 0; i < 3; ++i) follower->poll();
      fetch_log(*s);
      const std::string why = js.state == "UNKNOWN" ? "Slurm no longer knows job " + job : td::remote::job_state_text(js);
      // Without a run_end, what the runtime (podman's "Error: ...") or the engine said last.
      std::string tail;
      if (std::ifstream f(log_mirror, std::ios::binary); f) {
        f.seekg(0, std::ios::end);
        const std::streamoff size = f.tellg(), n = std::min<std::streamoff>(size, 16384);
        tail.resize(size_t(n));
        f.seekg(size - n);
        f.read(tail.data(), n);
      }
      const td::remote::FollowState end =
          follower->finish(term_sent ? "stopped" : "failed",
                           term_sent ? "stopped (job " + job + " " + why + ")" : td::remote::job_end_reason(js, tail));
      // The engine says "stop requested (signal)" for any SIGTERM; Slurm knows whether it was
      // scancel, a node failure or preemption, and TrainDeck whether it asked.
      if (end.finished)
        if (const auto own = td::remote::scheduler_stop_reason(js, end.end_reason, term_sent))
          store->replace_end_reason(run_id, end.end_reason, *own);
      report({Report::Kind::Ended, 0, 0, end.status.empty() ? QStringLiteral("unknown") : q(end.status), q(job), {},
              Phase::Ended});
      return;
    } catch (const std::exception& e) {
      if (shared.cancelled()) return;
      if (follower->session() != nullptr) {
        // Not a network failure: the mirror was replaced there, cannot be written, or the store failed.
        report({Report::Kind::Failed, 0, 0, q(e.what()), {}, {}, Phase::Unknown});
        return;
      }
      ++attempt;
      connection = RunTargetState::Connection::Reconnecting;
      report({Report::Kind::Connection, attempt, 0, tr("reconnecting (attempt %1): %2").arg(attempt).arg(q(e.what())), q(job), {},
              Phase::Unknown, connection});
      next = Clock::now() + std::chrono::milliseconds(std::min(kBackoffMaxMs, kBackoffInitialMs << std::min(attempt - 1, 10)));
    }
  }
}

}  // namespace

SlurmTarget::SlurmTarget(StoreClient* store, RemoteConnector connect, QObject* parent)
    : RemoteTargetBase(std::move(connect), parent) {
  setStoreClient(store);
}

SlurmTarget::~SlurmTarget() { detachAll(); }

QList<PlacementChoice> SlurmTarget::placements(const std::optional<td::remote::ClusterSpec>& cluster) const {
  if (!cluster || !cluster->is_slurm()) return {};
  const auto& sl = cluster->slurm;
  const QString what = sl.gpus_per_node > 0 ? tr("%1 nodes × %2 GPUs").arg(sl.nodes).arg(sl.gpus_per_node)
                                            : tr("%1 CPU nodes").arg(sl.nodes);
  return {{tr("%1 (Slurm, %2)").arg(q(cluster->name), what), QStringLiteral("remote"), RunPlacement{cluster, -1}}};
}

QStringList SlurmTarget::jobsOf(const QString& run_id) const {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? QStringList{} : it->second.jobs;
}

QString SlurmTarget::previewScript(const td::remote::ClusterSpec& cluster, const QString& run_id, QString* error) {
  try {
    if (!cluster.is_slurm()) throw td::Error("cluster '" + cluster.name + "' is not a Slurm cluster");
    td::remote::DeployResult d;
    d.engine = cluster.slurm.work_dir + "/engine/<bundle>/bin/traindeck-engine";
    d.run_dir = cluster.slurm.work_dir + "/runs/" + run_id.toStdString();
    d.config_path = d.run_dir + "/config.json";
    return q(td::remote::sbatch_script(cluster.slurm, td::remote::slurm_job_paths(d), run_id.toStdString(), false));
  } catch (const std::exception& e) {
    if (error) *error = q(e.what());
    return {};
  }
}

QString SlurmTarget::start(const RunPlacement& placement, const QString& experiment, const nlohmann::json& config,
                           const QString& name, QString* error) {
  auto fail = [&](const QString& m) {
    if (error) *error = m;
    return QString();
  };
  if (!placement.cluster || !placement.cluster->is_slurm()) return fail(tr("This is not a Slurm cluster."));
  const td::remote::ClusterSpec& c = *placement.cluster;
  if (const auto problems = td::remote::validate(c); !problems.empty())
    return fail(tr("The cluster %1 cannot be used: %2").arg(q(c.name), q(problems.front())));
  QString run_name;
  const QString engine = startChecks(config, name, &run_name, error);
  if (engine.isEmpty()) return {};
  SlurmRunSpec spec;
  spec.mode = SlurmRunSpec::Mode::Start;
  spec.run_id = q(td::new_run_id());
  spec.experiment = experiment;
  spec.cluster = q(c.name);
  spec.login = c.nodes.front();
  spec.slurm = c.slurm;
  spec.engine = engine;
  spec.config_json = config.dump(2) + "\n";
  const QString id = spec.run_id;
  launch(std::move(spec));
  runs_[id].name = run_name;
  return id;
}

void SlurmTarget::launch(SlurmRunSpec spec) {
  spec.store_path = store_->path();
  if (spec.local_dir.isEmpty()) spec.local_dir = runDir(spec.run_id);
  spec.bundle_cache = bundleCacheDir();
  spec.poll_ms = poll_ms_;
  const QString id = spec.run_id;
  const bool attach = spec.mode == SlurmRunSpec::Mode::Attach;
  Run& run = attach ? addRun(id, Phase::Running) : addRun(id, Phase::Deploying, tr("preparing"));
  run.started = attach;  // an attached run ran before the restart
  run.host = spec.cluster;
  run.remote_dir = q(spec.remote_run_dir);
  auto control = run.control;
  auto connect = connect_;
  const quint64 serial = run.serial;
  run.task = std::make_unique<RemoteTask>(this, [spec, control, connect, this, serial](RemoteTask::Shared& shared) {
    run_slurm_job(spec, connect, *control, shared, [&shared, this, id = spec.run_id, serial](Report r) {
      shared.post([this, id, serial, r] {
        Run* current_run = current(id, serial);
        if (!current_run) return;
        Run& run = *current_run;
        using K = Report::Kind;
        switch (r.kind) {
          case K::Progress:
            run.state = {Phase::Deploying, r.text, r.a, r.b};
            emit stateChanged(id);
            break;
          case K::Submitted:
            run.remote_dir = r.remote_dir;
            run.jobs << r.job;
            run.state = {Phase::Queued, tr("job %1 submitted").arg(r.job), 0, 0};
            nameRun(id, run);
            emit stateChanged(id);
            break;
          case K::Connection:
            run.state.connection = r.connection;
            run.state.reconnect_attempt = r.connection == RunTargetState::Connection::Reconnecting ? int(r.a) : 0;
            if (!r.text.isEmpty()) run.state.detail = r.text;
            emit stateChanged(id);
            break;
          case K::Job:
            if (!r.job.isEmpty() && !run.jobs.contains(r.job)) run.jobs << r.job;
            if (r.phase != Phase::Unknown) {
              const auto connection = run.state.connection;  // the login node's, not the job's
              run.state = {r.phase, r.text, 0, 0};
              run.state.connection = connection;
            } else {
              run.state.detail = r.text;
            }
            if (r.phase == Phase::Running && !run.started) {
              run.started = true;
              emit runStarted(id);
            }
            emit stateChanged(id);
            break;
          case K::Ingested:
            emit runIngested(id, r.a);
            break;
          case K::Log:
            emit logAppended(id, r.text);
            break;
          case K::Ended:
            finish(id);
            emit runEnded(id, r.text);
            emit stateChanged(id);
            break;
          case K::StartFailed: {
            const QString cluster = run.host;
            finish(id);
            emit startFailed(id, r.text);
            if (!r.a) emit this->error(tr("Run %1 on %2: %3").arg(id, cluster, r.text));
            emit stateChanged(id);
            break;
          }
          case K::Failed: {
            const QString cluster = run.host;
            finish(id);
            emit this->error(tr("Run %1 on %2: %3").arg(id, cluster, r.text));
            emit stateChanged(id);
            break;
          }
        }
      });
    });
  });
}

namespace {

// A stored Slurm run's login node and settings; false with *error when unreadable.
bool place_from_store(const td::store::RemoteRun& row, SlurmRunSpec& spec, QString* error) {
  try {
    spec.login = td::remote::node_from_json(nlohmann::json::parse(row.node_json));
    spec.slurm = td::remote::slurm_from_json(nlohmann::json::parse(row.layout_json).at("slurm"));
    spec.cluster = q(row.cluster);
    spec.remote_run_dir = row.run_dir;
    return true;
  } catch (const std::exception& e) {
    if (error) *error = tr("Run %1: its stored Slurm cluster is unreadable: %2").arg(q(row.run_id), q(e.what()));
    return false;
  }
}

}  // namespace

void SlurmTarget::resumeStored(const td::store::RunInfo& info, const td::store::RemoteRun& row, const QString& engine) {
  SlurmRunSpec spec;
  spec.mode = SlurmRunSpec::Mode::Resume;
  spec.run_id = q(row.run_id);
  spec.experiment = q(info.experiment);
  QString problem;
  if (!place_from_store(row, spec, &problem)) return emit this->error(problem);
  spec.engine = engine;
  if (!info.events_path.empty()) spec.local_dir = QFileInfo(q(info.events_path)).absolutePath();
  launch(std::move(spec));
}

bool SlurmTarget::attachStored(const td::store::RemoteRun& row, const QString& experiment, const QString& local_dir,
                               QString* error) {
  SlurmRunSpec spec;
  spec.mode = SlurmRunSpec::Mode::Attach;
  spec.run_id = q(row.run_id);
  spec.experiment = experiment;
  if (!place_from_store(row, spec, error)) return false;
  spec.local_dir = local_dir;
  launch(std::move(spec));
  return true;
}

}  // namespace td::gui
