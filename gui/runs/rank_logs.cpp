// RankLogs (rank_logs.h): find and read any rank's log of any run.
#include "gui/runs/rank_logs.h"

#include <unistd.h>

#include <sys/stat.h>

#include <charconv>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/fileio.h"
#include "gui/core/store_client.h"
#include "gui/runs/remote_task.h"
#include "remote/multinode.h"
#include "remote/session.h"

namespace td::gui {

namespace fs = std::filesystem;

std::string rank_log_name(int rank) { return rank == 0 ? "engine.log" : "engine.rank" + std::to_string(rank) + ".log"; }

namespace {

std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

QString q(const std::string& s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

// Prints the file's size, a newline, then its last $2 bytes; refuses a link or a non-file.
constexpr const char* kTailScript =
    "f=$1; n=$2\n"
    "if [ -L \"$f\" ]; then echo \"$f is a symbolic link: not followed\" >&2; exit 3; fi\n"
    "if [ ! -e \"$f\" ]; then echo \"$f does not exist (yet)\" >&2; exit 4; fi\n"
    "if [ ! -f \"$f\" ]; then echo \"$f is not a regular file\" >&2; exit 3; fi\n"
    "wc -c < \"$f\" && tail -c \"$n\" -- \"$f\"\n";

struct Read {
  std::string text;
  bool truncated = false;
  std::string error;
};

Read read_local(const std::string& path, qint64 max_bytes) {
  Read r;
  try {
    const int fd = td::open_private_file(path, O_RDONLY, "log");
    struct stat st {};
    ::fstat(fd, &st);
    const qint64 size = st.st_size;
    const qint64 from = std::max<qint64>(0, size - max_bytes);
    r.text.resize(size_t(size - from));
    const ssize_t got = ::pread(fd, r.text.data(), r.text.size(), off_t(from));
    ::close(fd);
    r.text.resize(got > 0 ? size_t(got) : 0);
    r.truncated = from > 0;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

Read read_remote(td::remote::Session& s, const std::string& path, qint64 max_bytes, const std::atomic<bool>* cancel) {
  Read r;
  td::remote::ExecOptions o;
  o.timeout_ms = 30000;
  o.max_output = size_t(max_bytes) + 64;
  o.cancel = cancel;
  const td::remote::ExecResult x = s.exec({"sh", "-c", kTailScript, "sh", path, std::to_string(max_bytes)}, o);
  if (x.exit_status != 0) {
    std::string err = x.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    r.error = err.empty() ? "reading " + path + " failed (exit status " + std::to_string(x.exit_status) + ")" : err;
    return r;
  }
  // The first line is the size wc printed (a node's output: parsed strictly).
  const size_t nl = x.out.find('\n');
  std::string head = nl == std::string::npos ? x.out : x.out.substr(0, nl);
  while (!head.empty() && head.front() == ' ') head.erase(head.begin());
  long long size = -1;
  const auto [end, ec] = std::from_chars(head.data(), head.data() + head.size(), size);
  if (nl == std::string::npos || ec != std::errc() || end != head.data() + head.size() || size < 0) {
    r.error = "the node answered something other than the size of " + path + "; try again";
    return r;
  }
  r.text = x.out.substr(nl + 1);
  r.truncated = size > max_bytes;
  return r;
}

}  // namespace

std::optional<RankLogPlace> rank_log_place(const td::store::RunInfo& info, const std::optional<td::store::RemoteRun>& remote,
                                           int rank, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<RankLogPlace> {
    if (error) *error = std::move(why);
    return std::nullopt;
  };
  const int64_t world = info.world_size.value_or(1);
  if (rank < 0 || rank >= world)
    return fail("run " + info.run_id + " has ranks 0 to " + std::to_string(world - 1) + "; there is no rank " +
                std::to_string(rank));
  RankLogPlace p;
  const std::string name = rank_log_name(rank);
  if (!remote) {
    if (info.events_path.empty()) return fail("the store records no run folder for run " + info.run_id);
    p.path = join(fs::path(info.events_path).parent_path().string(), name);
    p.where = "this machine";
    return p;
  }
  p.local = false;
  try {
    if (remote->target == "ssh" && !remote->layout_json.empty()) {
      // An SSH cluster: the rank's log is on the node that ran it.
      const td::remote::ClusterRun layout = td::remote::cluster_run_from_json(nlohmann::json::parse(remote->layout_json));
      for (const td::remote::NodeRanks& n : layout.nodes)
        for (const td::remote::RankProcess& r : n.ranks)
          if (r.rank == rank) {
            p.node = n.node;
            p.path = join(n.run_dir, name);
            p.where = n.node.display_name();
            return p;
          }
      return fail("the stored layout of run " + info.run_id + " does not list rank " + std::to_string(rank));
    }
    // One SSH node, or a Slurm cluster's shared filesystem seen from its login node.
    p.node = td::remote::node_from_json(nlohmann::json::parse(remote->node_json));
    p.path = join(remote->run_dir, name);
    p.where = remote->target == "slurm" ? "the login node " + p.node.display_name() : p.node.display_name();
    return p;
  } catch (const std::exception& e) {
    return fail("the stored place of run " + info.run_id + " is unreadable: " + e.what());
  }
}

RankLogs::RankLogs(StoreClient* store, RemoteConnector connect, QObject* parent)
    : QObject(parent), store_(store), connect_(std::move(connect)) {}

RankLogs::~RankLogs() = default;

void RankLogs::setStoreClient(StoreClient* store) {
  store_ = store;
  serial_.clear();
  tasks_.clear();
}

void RankLogs::fetch(const QString& run_id, int rank, qint64 max_bytes) {
  const quint64 serial = ++next_;
  serial_[run_id] = serial;
  if (!store_) {
    QMetaObject::invokeMethod(
        this, [this, run_id, rank] { emit failed(run_id, rank, tr("No store is open.")); }, Qt::QueuedConnection);
    return;
  }
  if (max_bytes <= 0) max_bytes = kDefaultBytes;
  struct Found {
    std::optional<td::store::RunInfo> info;
    std::optional<td::store::RemoteRun> remote;
  };
  store_->run<Found>(
      this, [id = run_id.toStdString()](td::store::Store& s) { return Found{s.find_run(id), s.remote_run(id)}; },
      [this, run_id, rank, max_bytes, serial](Found f) {
        if (serial_[run_id] != serial) return;
        if (!f.info) return emit failed(run_id, rank, tr("Run %1 is not in this store.").arg(run_id));
        std::string problem;
        const auto place = rank_log_place(*f.info, f.remote, rank, &problem);
        if (!place) return emit failed(run_id, rank, q(problem));
        read(run_id, rank, max_bytes, *place, serial);
      },
      [this, run_id, rank](const QString& m) { emit failed(run_id, rank, m); });
}

void RankLogs::read(const QString& run_id, int rank, qint64 max_bytes, const RankLogPlace& place, quint64 serial) {
  const QString where = q(place.local ? place.path : place.node.display_name() + ":" + place.path);
  auto deliver = [this, run_id, rank, serial, where, place](const Read& r) {
    tasks_.erase(serial);
    if (serial_[run_id] != serial) return;
    if (!r.error.empty())
      return emit failed(run_id, rank,
                         tr("The log of rank %1 cannot be read from %2: %3").arg(rank).arg(q(place.where), q(r.error)));
    emit fetched(run_id, rank, QString::fromUtf8(r.text.data(), qsizetype(r.text.size())), r.truncated, where);
  };
  if (place.local) {
    // A local file: small and on this machine, but still read off the GUI thread.
    tasks_[serial] = std::make_unique<RemoteTask>(this, [place, max_bytes, deliver](RemoteTask::Shared& shared) {
      const Read r = read_local(place.path, max_bytes);
      shared.post([deliver, r] { deliver(r); });
    });
    return;
  }
  if (!connect_) {
    Read r;
    r.error = "this TrainDeck has no way to reach nodes";
    QMetaObject::invokeMethod(this, [deliver, r] { deliver(r); }, Qt::QueuedConnection);
    return;
  }
  tasks_[serial] = std::make_unique<RemoteTask>(this, [place, max_bytes, deliver, connect = connect_](RemoteTask::Shared& shared) {
    Read r;
    try {
      td::remote::Session s = connect(place.node);
      r = read_remote(s, place.path, max_bytes, &shared.cancel);
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    shared.post([deliver, r] { deliver(r); });
  });
}

}  // namespace td::gui
