// Deploy, launch and follow of one remote run (remote_run_job.h).
#include "gui/runs/remote_run_job.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "engine/common/error.h"
#include "gui/runs/remote_ops.h"
#include "gui/runs/run_controller.h"
#include "remote/deploy.h"
#include "remote/remote_run.h"
#include "store/store.h"

namespace td::gui {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Event = RemoteRunEvent;

namespace {

constexpr uint64_t kLogChunk = 256 * 1024;  // bytes of engine.log fetched per poll at most
constexpr int kBackoffInitialMs = 500;      // first wait after a failed reconnect, doubled each time
constexpr int kBackoffMaxMs = 30000;

// lupdate files a free tr() in this namespace under the context "td::gui": look it up there.
QString tr(const char* text) { return QCoreApplication::translate("td::gui", text); }

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Sleeps `ms` in short slices; false when the task was cancelled meanwhile.
bool sleep_unless_cancelled(const RemoteTask::Shared& shared, int ms) {
  for (int waited = 0; waited < ms; waited += 50) {
    if (shared.cancelled()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, ms - waited)));
  }
  return !shared.cancelled();
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f.flush()) throw td::Error("cannot write " + tmp.string() + ": check that the runs folder is writable");
  }
  fs::rename(tmp, path);
}

std::string read_text(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw td::Error("cannot read " + path.string());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// One deploy at a time per node work directory in this process. Two runs started together on a
// node (a sweep) upload the same bundle and dataset files: both wrote the same "<file>.part" at
// once and one deploy failed (or the other renamed a half-written file). The second deploy waits
// (cancellable) and then finds everything there: it sends nothing.
class NodeDeployLock {
 public:
  NodeDeployLock(std::string key, const std::function<bool()>& cancelled, const std::function<void()>& waiting)
      : key_(std::move(key)) {
    std::unique_lock<std::mutex> lock(mu());
    bool told = false;
    while (busy().count(key_)) {
      if (cancelled()) throw td::Error("deploy cancelled");
      if (!told) {
        told = true;
        lock.unlock();
        waiting();
        lock.lock();
        continue;
      }
      cv().wait_for(lock, std::chrono::milliseconds(100));
    }
    busy().insert(key_);
  }
  ~NodeDeployLock() {
    {
      std::lock_guard<std::mutex> lock(mu());
      busy().erase(key_);
    }
    cv().notify_all();
  }
  NodeDeployLock(const NodeDeployLock&) = delete;
  NodeDeployLock& operator=(const NodeDeployLock&) = delete;

 private:
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static std::condition_variable& cv() {
    static std::condition_variable c;
    return c;
  }
  static std::set<std::string>& busy() {
    static std::set<std::string> b;
    return b;
  }
  std::string key_;
};

// Deploys (bundle, dataset, config) and launches; returns (run folder on the node, pid).
std::pair<std::string, int64_t> deploy_and_launch(const RemoteRunSpec& spec, const RemoteConnector& connect,
                                                  RemoteRunControl& control, RemoteTask::Shared& shared,
                                                  const std::function<void(Event)>& report) {
  const fs::path local_dir = spec.local_dir.toStdString();
  const bool resume = spec.mode == RemoteRunSpec::Mode::Resume;
  std::string config_json = spec.config_json;
  if (resume) {
    config_json = read_text(local_dir / "config.json");
  } else {
    write_text(local_dir / "config.json", config_json);
  }
  const nlohmann::json config = nlohmann::json::parse(config_json);
  if (const QString problem = RunController::datasetProblem(config); !problem.isEmpty())
    throw td::Error(problem.toStdString());
  const fs::path dataset = config["data"]["path"].get<std::string>();

  auto phase = [&](const QString& text, qint64 done = 0, qint64 total = 0) {
    report({Event::Kind::Progress, done, total, text, false});
  };
  auto cancelled = [&] { return control.cancel_deploy.load() || shared.cancelled(); };
  // deploy() takes one flag: a watcher thread would be overkill, so the two are folded into
  // cancel_deploy before each step and by the progress callback.
  auto fold = [&] {
    if (shared.cancelled()) control.cancel_deploy = true;
  };

  phase(tr("preparing the engine bundle"));
  const fs::path bundle = remote_ops::cached_bundle(spec.engine.toStdString(), spec.bundle_cache.toStdString());
  fold();
  if (cancelled()) throw td::Error("deploy cancelled");

  phase(tr("connecting to %1").arg(QString::fromStdString(spec.node.display_name())));
  td::remote::Session s = connect(spec.node);
  fold();
  if (cancelled()) throw td::Error("deploy cancelled");

  const NodeDeployLock one_deploy(
      s.where() + "|" + spec.node.work_dir, cancelled,
      [&] { phase(tr("waiting for another deploy to %1").arg(QString::fromStdString(spec.node.display_name()))); });
  const QString uploading = tr("uploading the engine and the dataset");
  phase(uploading);
  auto last = Clock::now() - std::chrono::seconds(1);
  td::remote::DeployResult d = td::remote::deploy(
      s, bundle, dataset, config_json, spec.node.work_dir, spec.run_id.toStdString(),
      [&](uint64_t done, uint64_t total) {
        fold();
        // At most ~10 reports a second, and always the last one.
        if (done == total || Clock::now() - last > std::chrono::milliseconds(100)) {
          last = Clock::now();
          phase(uploading, qint64(done), qint64(total));
        }
      },
      &control.cancel_deploy);
  fold();
  if (cancelled()) throw td::Error("deploy cancelled");

  phase(resume ? tr("resuming the engine on the node") : tr("starting the engine on the node"));
  const int64_t pid = remote_ops::launch_engine(s, d, spec.run_id.toStdString(), resume);

  // The run exists from here on: the store knows it before its first event is ingested.
  td::store::Store store(spec.store_path.toStdString());
  const double t = now_s();
  store.note_launch(spec.run_id.toStdString(), spec.experiment.toStdString(), (local_dir / "events.jsonl").string(),
                    pid, spec.node.display_name(), t);
  td::store::RemoteRun row;
  row.run_id = spec.run_id.toStdString();
  row.cluster = spec.cluster.toStdString();
  row.node_json = td::remote::to_json(spec.node).dump();
  row.run_dir = d.run_dir;
  row.pid = pid;
  row.created = t;
  store.note_remote_run(row);
  return {d.run_dir, pid};
}

}  // namespace

void run_remote_job(const RemoteRunSpec& spec, const RemoteConnector& connect, RemoteRunControl& control,
                    RemoteTask::Shared& shared, const std::function<void(Event)>& report) {
  const std::string run_id = spec.run_id.toStdString();
  std::string remote_dir = spec.remote_run_dir;
  int64_t pid = spec.pid;
  if (spec.mode != RemoteRunSpec::Mode::Attach) {
    try {
      std::tie(remote_dir, pid) = deploy_and_launch(spec, connect, control, shared, report);
    } catch (const std::exception& e) {
      const bool cancelled = control.cancel_deploy.load() || shared.cancelled();
      if (!shared.cancelled())
        report({Event::Kind::StartFailed, 0, 0,
                cancelled ? tr("deploy cancelled") : QString::fromStdString(e.what()), cancelled});
      return;
    }
    report({Event::Kind::Launched, pid, 0, {}, false});
  }

  // ---- follow ----
  const fs::path local_dir = spec.local_dir.toStdString();
  const fs::path log_mirror = local_dir / "engine.log";
  std::optional<td::store::Store> store;
  std::optional<td::remote::RemoteFollower> follower;
  try {
    fs::create_directories(local_dir);
    store.emplace(spec.store_path.toStdString());
    td::remote::FollowOptions fo;
    // One try per poll: the reconnect backoff is done here, so the GUI can show each attempt.
    fo.max_reconnect_attempts = 0;
    fo.cancel = &shared.cancel;
    follower.emplace([&connect, node = spec.node] { return connect(node); }, *store, remote_dir, run_id, pid,
                     (local_dir / "events.jsonl").string(), spec.experiment.toStdString(), fo);
  } catch (const std::exception& e) {
    report({Event::Kind::Failed, 0, 0, QString::fromStdString(e.what()), false});
    return;
  }

  std::error_code ec;
  uint64_t log_offset = fs::exists(log_mirror, ec) ? fs::file_size(log_mirror, ec) : 0;
  auto fetch_log = [&] {
    td::remote::Session* s = follower->session();
    if (!s) return;
    for (int i = 0; i < 16; ++i) {  // at most 4 MB per call
      bool shorter = false;
      const std::string bytes = remote_ops::fetch_log(*s, remote_dir, log_offset, kLogChunk, &shorter);
      if (shorter) {  // the node's log was replaced: start the mirror again
        fs::remove(log_mirror, ec);
        log_offset = 0;
        continue;
      }
      if (bytes.empty()) return;
      std::ofstream f(log_mirror, std::ios::binary | std::ios::app);
      f.write(bytes.data(), std::streamsize(bytes.size()));
      log_offset += bytes.size();
      report({Event::Kind::Log, 0, 0, QString::fromUtf8(bytes.data(), qsizetype(bytes.size())), false});
      if (bytes.size() < kLogChunk) return;
    }
  };

  // kill <signal> <pid> on the node through the follower's session (right after remote_alive()
  // checked that pid is still this run's engine). False when the session broke meanwhile.
  auto send_signal = [&](const char* signal) {
    td::remote::Session* s = follower->session();
    if (!s) return false;
    try {
      s->exec({"kill", signal, std::to_string(pid)});
      return true;
    } catch (const td::Error&) {
      return false;
    }
  };

  QString state;
  auto set_state = [&](const QString& s) {
    if (s == state) return;
    state = s;
    report({Event::Kind::State, 0, 0, s, false});
  };
  set_state(tr("connecting"));
  int attempt = 0;
  int polls = 0;
  bool term_sent = false, kill_sent = false;
  Clock::time_point kill_at{};
  auto next = Clock::now();
  while (!shared.cancelled()) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    if (wait > 0 && !sleep_unless_cancelled(shared, int(wait))) return;
    next = Clock::now() + std::chrono::milliseconds(spec.poll_ms);
    try {
      // Stop: the engine's graceful signal first, the hard kill once the timeout passed. A
      // signal that could not be sent (connection lost) is sent again at the next poll.
      if (control.stop.load() && !term_sent) {
        if (!follower->remote_alive() || send_signal("-TERM")) {
          term_sent = true;
          kill_at = Clock::now() + std::chrono::milliseconds(control.kill_timeout_ms.load());
          set_state(tr("stopping"));
        }
      } else if (term_sent && !kill_sent && Clock::now() >= kill_at) {
        if (!follower->remote_alive() || send_signal("-KILL")) kill_sent = true;
      }
      const td::remote::FollowState st = follower->poll();
      attempt = 0;
      if (!term_sent) set_state(tr("connected"));
      if (st.ingest.rows > 0) {
        const auto info = store->find_run(run_id);
        report({Event::Kind::Ingested, info ? info->last_step.value_or(0) : 0, 0, {}, false});
      }
      if (!st.finished && ++polls % std::max(1, spec.log_every) == 0) {
        try {
          fetch_log();
        } catch (const td::Error&) {
          // The connection broke under the log fetch: the next poll reconnects and fetches again.
        }
      }
      if (st.finished) {
        // The engine may still write its last log lines after run_end: wait for it to exit
        // (10 s at most), then take the log's end.
        try {
          for (int i = 0; i < 50 && follower->remote_alive(); ++i)
            if (!sleep_unless_cancelled(shared, 200)) return;
          fetch_log();
        } catch (const td::Error&) {
          // The node went away meanwhile: the log mirror keeps what it has.
        }
        set_state(tr("ended"));
        report({Event::Kind::Ended, 0, 0, QString::fromStdString(st.status), false});
        return;
      }
    } catch (const std::exception& e) {
      if (shared.cancelled()) return;
      if (follower->session() != nullptr) {
        // Not a network failure (RemoteFollower drops its session on those): the mirror was
        // replaced on the node, the mirror cannot be written, or the store failed.
        report({Event::Kind::Failed, 0, 0, QString::fromStdString(e.what()), false});
        return;
      }
      // The node cannot be reached: keep trying, waiting longer each time (the run goes on there).
      ++attempt;
      set_state(tr("reconnecting (attempt %1): %2").arg(attempt).arg(QString::fromStdString(e.what())));
      const int backoff = std::min(kBackoffMaxMs, kBackoffInitialMs << std::min(attempt - 1, 10));
      next = Clock::now() + std::chrono::milliseconds(backoff);
    }
  }
}

}  // namespace td::gui
