// Deploy, launch and follow of one remote run (remote_run_job.h).
#include "gui/runs/remote_run_job.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
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
#include "engine/common/fileio.h"
#include "gui/runs/remote_ops.h"
#include "gui/runs/run_controller.h"
#include "remote/deploy.h"
#include "remote/multinode.h"
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

// The local folder of a remote run is owner-only (0700), as a local run's (engine/common/fileio.h).
void make_run_folder(const fs::path& dir) {
  if (const std::error_code ec = td::create_private_dirs(dir.string()))
    throw td::Error("cannot create the run folder " + dir.string() + " (" + ec.message() + "): check that the runs folder is writable");
}

// One deploy at a time per node work directory in this process. Two runs started together on a
// node (a sweep) upload the same bundle and dataset files: both wrote the same "<file>.part" at
// once and one deploy failed (or the other renamed a half-written file). The second deploy waits
// (cancellable) and then finds everything there: it sends nothing. A multi-rank run takes the
// keys of all its nodes at once (never one after the other, so two runs cannot deadlock).
class NodeDeployLock {
 public:
  NodeDeployLock(std::vector<std::string> keys, const std::function<bool()>& cancelled,
                 const std::function<void()>& waiting)
      : keys_(std::move(keys)) {
    std::unique_lock<std::mutex> lock(mu());
    bool told = false;
    auto any_busy = [&] {
      for (const std::string& k : keys_)
        if (busy().count(k)) return true;
      return false;
    };
    while (any_busy()) {
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
    for (const std::string& k : keys_) busy().insert(k);
  }
  ~NodeDeployLock() {
    {
      std::lock_guard<std::mutex> lock(mu());
      for (const std::string& k : keys_) busy().erase(k);
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
  std::vector<std::string> keys_;
};

// The deploy lock's key of a node: "user@host:port|work dir" after ~/.ssh/config.
std::string deploy_key(const td::remote::NodeSpec& n) {
  std::string where = n.host;
  try {
    const td::remote::ResolvedNode r = td::remote::resolve_node(n);
    where = r.target.user + "@" + r.target.host + ":" + std::to_string(r.target.port);
  } catch (const td::Error&) {
    // A malformed jump list: the connect fails with the explanation; the host alone is the key.
  }
  return where + "|" + n.work_dir;
}

// The display name of a run's place: the node, or the nodes of a multi-rank run.
std::string place_name(const RemoteRunSpec& spec) {
  if (!is_multi_rank(spec)) return spec.node.display_name();
  std::string names;
  for (const td::remote::NodeSpec& n : spec.nodes) names += (names.empty() ? "" : ", ") + n.display_name();
  return names;
}

// What a start or resume launched: rank 0's run folder and pid, and a multi-rank run's layout.
struct Launched {
  std::string run_dir;
  int64_t pid = 0;
  std::optional<td::remote::ClusterRun> layout;
};

// Deploys (bundle, dataset, config) and launches one engine on spec.node, or every rank of a
// multi-rank run on spec.nodes; records the run in the store.
Launched deploy_and_launch(const RemoteRunSpec& spec, const RemoteConnector& connect, RemoteRunControl& control,
                           RemoteTask::Shared& shared, const std::function<void(Event)>& report) {
  const fs::path local_dir = spec.local_dir.toStdString();
  const bool resume = spec.mode == RemoteRunSpec::Mode::Resume;
  std::string config_json = spec.config_json;
  if (resume) {
    config_json = remote_ops::read_run_file(local_dir / "config.json", "the run's config is missing here");
  } else {
    remote_ops::write_run_file(local_dir / "config.json", config_json);
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
  auto check = [&] {
    fold();
    if (cancelled()) throw td::Error("deploy cancelled");
  };
  const QString uploading = tr("uploading the engine and the dataset");
  auto last = Clock::now() - std::chrono::seconds(1);
  // At most ~10 progress reports a second, and always the last one.
  auto upload_progress = [&](const QString& text, uint64_t done, uint64_t total) {
    fold();
    if (done == total || Clock::now() - last > std::chrono::milliseconds(100)) {
      last = Clock::now();
      phase(text, qint64(done), qint64(total));
    }
  };

  phase(tr("preparing the engine bundle"));
  const fs::path bundle = remote_ops::cached_bundle(spec.engine.toStdString(), spec.bundle_cache.toStdString());
  check();

  std::vector<std::string> keys;
  for (const td::remote::NodeSpec& n : is_multi_rank(spec) ? spec.nodes : std::vector<td::remote::NodeSpec>{spec.node})
    keys.push_back(deploy_key(n));
  const NodeDeployLock one_deploy(keys, cancelled, [&] {
    phase(tr("waiting for another deploy to %1").arg(QString::fromStdString(place_name(spec))));
  });

  Launched l;
  if (!is_multi_rank(spec)) {
    phase(tr("connecting to %1").arg(QString::fromStdString(spec.node.display_name())));
    td::remote::Session s = connect(spec.node);
    check();
    phase(uploading);
    td::remote::DeployOptions options;
    options.container = spec.node.container;  // an image runs the engine there (docs/containers.md)
    td::remote::DeployResult d = td::remote::deploy(
        s, bundle, dataset, config_json, spec.node.work_dir, spec.run_id.toStdString(),
        [&](uint64_t done, uint64_t total) { upload_progress(uploading, done, total); }, &control.cancel_deploy,
        options);
    check();
    phase(resume ? tr("resuming the engine on the node") : tr("starting the engine on the node"));
    l.pid = td::remote::launch_detached(s, d, spec.run_id.toStdString(), resume);
    l.run_dir = d.run_dir;
  } else {
    using Step = td::remote::ClusterLaunchOptions::Step;
    td::remote::ClusterSpec cluster;
    cluster.name = spec.cluster.isEmpty() ? std::string("cluster") : spec.cluster.toStdString();
    cluster.nodes = spec.nodes;
    auto node_name = [&](size_t i) { return QString::fromStdString(spec.nodes.at(i).display_name()); };
    td::remote::ClusterLaunchOptions o;
    o.resume = resume;
    o.cancel = &control.cancel_deploy;
    o.phase = [&](Step step, size_t i) {
      fold();
      switch (step) {
        case Step::Connecting: phase(tr("connecting to %1").arg(node_name(i))); break;
        case Step::Deploying:
          phase(tr("uploading the engine and the dataset to %1 (node %2 of %3)")
                    .arg(node_name(i)).arg(i + 1).arg(spec.nodes.size()));
          break;
        case Step::Starting:
          phase(resume ? tr("resuming the ranks on %1").arg(node_name(i)) : tr("starting the ranks on %1").arg(node_name(i)));
          break;
      }
    };
    o.progress = [&](size_t i, uint64_t done, uint64_t total) {
      upload_progress(tr("uploading the engine and the dataset to %1 (node %2 of %3)")
                          .arg(node_name(i)).arg(i + 1).arg(spec.nodes.size()),
                      done, total);
    };
    l.layout = td::remote::launch_cluster_run(cluster, connect, bundle, dataset, config_json,
                                              spec.run_id.toStdString(), o);
    l.run_dir = l.layout->first().run_dir;
    l.pid = l.layout->rank0_pid();
  }

  // The run exists from here on: the store knows it before its first event is ingested.
  td::store::Store store(spec.store_path.toStdString());
  const double t = now_s();
  store.note_launch(spec.run_id.toStdString(), spec.experiment.toStdString(), (local_dir / "events.jsonl").string(),
                    l.pid, spec.node.display_name(), t);
  td::store::RemoteRun row;
  row.run_id = spec.run_id.toStdString();
  row.cluster = spec.cluster.toStdString();
  row.node_json = td::remote::to_json(spec.node).dump();
  row.run_dir = l.run_dir;
  row.pid = l.pid;
  row.created = t;
  if (l.layout) row.layout_json = td::remote::to_json(*l.layout).dump();
  store.note_remote_run(row);
  return l;
}

}  // namespace

void run_remote_job(const RemoteRunSpec& spec, const RemoteConnector& connect, RemoteRunControl& control,
                    RemoteTask::Shared& shared, const std::function<void(Event)>& report) {
  const std::string run_id = spec.run_id.toStdString();
  std::string remote_dir = spec.remote_run_dir;
  int64_t pid = spec.pid;
  std::optional<td::remote::ClusterRun> layout;  // a multi-rank run: every rank, for stop and cleanup
  if (spec.mode == RemoteRunSpec::Mode::Attach && !spec.layout_json.empty()) {
    try {
      layout = td::remote::cluster_run_from_json(nlohmann::json::parse(spec.layout_json));
    } catch (const std::exception& e) {
      report({Event::Kind::Failed, 0, 0, QString::fromStdString(e.what()), false});
      return;
    }
  }
  if (spec.mode != RemoteRunSpec::Mode::Attach) {
    try {
      Launched l = deploy_and_launch(spec, connect, control, shared, report);
      remote_dir = l.run_dir;
      pid = l.pid;
      layout = std::move(l.layout);
    } catch (const std::exception& e) {
      const bool cancelled = control.cancel_deploy.load() || shared.cancelled();
      if (!shared.cancelled())
        report({Event::Kind::StartFailed, 0, 0,
                cancelled ? tr("deploy cancelled") : QString::fromStdString(e.what()), cancelled});
      return;
    }
    report({Event::Kind::Launched, pid, 0, QString::fromStdString(remote_dir), false});
  }

  // ---- follow ----
  const fs::path local_dir = spec.local_dir.toStdString();
  const fs::path log_mirror = local_dir / "engine.log";
  std::optional<td::store::Store> store;
  std::optional<td::remote::RemoteFollower> follower;
  try {
    make_run_folder(local_dir);
    store.emplace(spec.store_path.toStdString());
    td::remote::FollowOptions fo;
    // One try per poll: the reconnect backoff is done here, so the GUI can show each attempt.
    fo.max_reconnect_attempts = 0;
    fo.cancel = &shared.cancel;
    fo.container = spec.node.container;  // a hard stop also removes the engine's container
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
  // `signal` ("TERM", "KILL") to the run: its engine, or every rank of a multi-rank run that is
  // still running (the engine's stop is collective, but a rank whose peers are gone needs its
  // own). False when a node could not be reached: the next poll tries again.
  auto signal_run = [&](const std::string& signal) {
    if (layout) return td::remote::signal_cluster_run(*layout, connect, signal).errors.empty();
    return !follower->remote_alive() || send_signal(("-" + signal).c_str());
  };

  QString state;
  using Connection = RunTargetState::Connection;
  Connection connection = Connection::None;
  auto set_state = [&](const QString& s, Connection c, int attempt_no = 0) {
    if (s == state && c == connection) return;
    state = s;
    connection = c;
    report({Event::Kind::State, attempt_no, 0, s, false, c});
  };
  set_state(tr("connecting"), Connection::Connecting);
  // A multi-rank run: every kRankCheckEvery polls while rank 0 trains, which ranks still run
  // (signal_cluster_run without a signal: one command per node). Those gone are reported once
  // each (RanksLost) for the alerts; a node that cannot be reached tells nothing.
  constexpr int kRankCheckEvery = 10;
  std::vector<int> reported_lost;
  auto check_ranks = [&] {
    if (!layout || !follower->remote_alive()) return;
    const td::remote::RankSignalReport rep = td::remote::signal_cluster_run(*layout, connect, "");
    if (!rep.errors.empty() || std::find(rep.alive.begin(), rep.alive.end(), 0) == rep.alive.end()) return;
    QStringList lost;
    for (const auto& n : layout->nodes)
      for (const auto& r : n.ranks)
        if (std::find(rep.alive.begin(), rep.alive.end(), r.rank) == rep.alive.end() &&
            std::find(reported_lost.begin(), reported_lost.end(), r.rank) == reported_lost.end()) {
          reported_lost.push_back(r.rank);
          lost << QStringLiteral("rank %1 on %2").arg(r.rank).arg(QString::fromStdString(n.node.display_name()));
        }
    if (!lost.isEmpty()) {
      Event e{Event::Kind::RanksLost, 0, 0, {}, false};
      e.ranks = lost;
      report(e);
    }
  };
  int attempt = 0;
  int polls = 0;
  bool term_sent = false, kill_sent = false;
  Clock::time_point kill_at{};
  auto next = Clock::now();
  while (!shared.cancelled()) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    if (wait > 0 && !shared.sleep(int(wait))) return;
    next = Clock::now() + std::chrono::milliseconds(spec.poll_ms);
    try {
      // Stop: the engine's graceful signal first, the hard kill once the timeout passed. A
      // signal that could not be sent (connection lost) is sent again at the next poll.
      if (control.stop.load() && !term_sent) {
        if (signal_run("TERM")) {
          term_sent = true;
          kill_at = Clock::now() + std::chrono::milliseconds(control.kill_timeout_ms.load());
          set_state(tr("stopping"), Connection::Connected);
        }
      } else if (term_sent && !kill_sent && Clock::now() >= kill_at) {
        if (signal_run("KILL")) kill_sent = true;
      }
      const td::remote::FollowState st = follower->poll();
      attempt = 0;
      set_state(term_sent ? tr("stopping") : tr("connected"), Connection::Connected);
      if (st.ingest.rows > 0) {
        const auto info = store->find_run(run_id);
        report({Event::Kind::Ingested, info ? info->last_step.value_or(0) : 0, 0, {}, false});
      }
      if (!st.finished && !term_sent && (polls + 1) % kRankCheckEvery == 0) {
        try {
          check_ranks();
        } catch (const std::exception&) {
          // The nodes could not be asked now: the next check asks again.
        }
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
            if (!shared.sleep(200)) return;
          fetch_log();
        } catch (const td::Error&) {
          // The node went away meanwhile: the log mirror keeps what it has.
        }
        // The other ranks end on their own after rank 0 (a failed run's peers notice the closed
        // rendezvous); those still blocked 10 s later are killed.
        if (layout) {
          try {
            td::remote::end_leftover_ranks(*layout, connect, 10000);
          } catch (const std::exception&) {
            // A node that cannot be reached keeps its rank until it notices on its own.
          }
        }
        set_state(tr("ended"), Connection::None);
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
      set_state(tr("reconnecting (attempt %1): %2").arg(attempt).arg(QString::fromStdString(e.what())), Connection::Reconnecting, attempt);
      const int backoff = std::min(kBackoffMaxMs, kBackoffInitialMs << std::min(attempt - 1, 10));
      next = Clock::now() + std::chrono::milliseconds(backoff);
    }
  }
}

}  // namespace td::gui
