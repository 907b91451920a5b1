// RemoteFollower (remote_run.h): mirror, ingest, reconnect, liveness, stop.
#include "remote/remote_run.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/common/error.h"
#include "remote/proc_check.h"

namespace td::remote {
namespace fs = std::filesystem;

namespace {

std::string join(const std::string& dir, const std::string& rel) {
  return dir.empty() || dir.back() == '/' ? dir + rel : dir + "/" + rel;
}

// Exit 0 when process $1 is the engine of run $2 (proc_check.h).
const std::string kAliveScript = std::string(detail::kAliveFunction) + "td_alive \"$1\" \"$2\"\n";

}  // namespace

RemoteFollower::RemoteFollower(Connect connect, td::store::Store& store, std::string remote_run_dir, std::string run_id,
                               int64_t pid, std::string local_mirror, std::string experiment, FollowOptions opts)
    : connect_(std::move(connect)),
      store_(store),
      remote_dir_(std::move(remote_run_dir)),
      run_id_(std::move(run_id)),
      mirror_(std::move(local_mirror)),
      pid_(pid),
      opts_(opts),
      tail_(store, run_id_, mirror_, std::move(experiment)) {}

RemoteFollower::~RemoteFollower() = default;

template <class F>
auto RemoteFollower::with_session(F&& f) -> decltype(f(std::declval<Session&>())) {
  int failures = 0;
  int wait_ms = opts_.backoff_initial_ms;
  std::string last_error;
  while (true) {
    try {
      if (!session_) {
        session_ = std::make_unique<Session>(connect_());
        if (connected_once_) ++reconnects_;
        connected_once_ = true;
      }
      return f(*session_);
    } catch (const td::Error& e) {
      session_.reset();  // a failed call leaves the session unusable: start a new one
      last_error = e.what();
      if (++failures > opts_.max_reconnect_attempts)
        throw td::Error("lost the connection to the node following run " + run_id_ + " and could not reconnect (" +
                        std::to_string(opts_.max_reconnect_attempts) + " attempts): " + last_error);
      for (int waited = 0; waited < wait_ms; waited += 50) {
        if (opts_.cancel && opts_.cancel->load()) throw td::Error("following run " + run_id_ + " cancelled");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      wait_ms = std::min(wait_ms * 2, opts_.backoff_max_ms);
    }
  }
}

uint64_t RemoteFollower::fetch() {
  uint64_t fetched = 0;
  const std::string remote = join(remote_dir_, "events.jsonl");
  while (true) {
    std::error_code ec;
    const uint64_t have = fs::exists(mirror_) ? fs::file_size(mirror_) : 0;
    // Only the network part is retried after a reconnect; what the node answers is judged here.
    ExecResult r = with_session([&](Session& s) {
      ExecOptions eo;
      eo.max_output = opts_.max_fetch_bytes + 1;
      return s.exec({"sh", "-c",
                     "[ -f \"$1\" ] || exit 3; [ \"$(stat -c %s -- \"$1\")\" -ge \"$2\" ] || exit 4; "
                     "tail -c +\"$(($2 + 1))\" -- \"$1\" | head -c \"$3\"",
                     "sh", remote, std::to_string(have), std::to_string(opts_.max_fetch_bytes)},
                    eo);
    });
    if (r.exit_status == 3) return fetched;  // not written yet
    if (r.exit_status == 4)
      throw td::Error("the node's " + remote + " is shorter than the local mirror " + mirror_ + " (" +
                      std::to_string(have) + " bytes): the run folder on the node was replaced; delete the mirror "
                      "to follow the new file from its start");
    if (r.exit_status != 0 || r.truncated)
      throw td::Error("reading " + remote + " on the node failed (exit " + std::to_string(r.exit_status) + "): " + r.err);
    if (r.out.empty()) return fetched;
    // The whole chunk arrived (the command exited): append it at once.
    fs::create_directories(fs::path(mirror_).parent_path(), ec);
    std::ofstream f(mirror_, std::ios::binary | std::ios::app);
    f.write(r.out.data(), static_cast<std::streamsize>(r.out.size()));
    f.close();
    if (!f) throw td::Error("cannot append to the local events mirror " + mirror_);
    fetched += r.out.size();
    if (r.out.size() < opts_.max_fetch_bytes) return fetched;
  }
}

bool RemoteFollower::alive(Session& s) {
  ExecResult r = s.exec({"sh", "-c", kAliveScript, "sh", std::to_string(pid_), run_id_});
  return r.exit_status == 0;
}

std::string RemoteFollower::log_tail(Session& s) {
  ExecResult r = s.exec({"tail", "-n", std::to_string(opts_.log_tail_lines), "--", join(remote_dir_, "engine.log")});
  std::string t = r.exit_status == 0 ? r.out : "(no engine.log: " + r.err + ")";
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

bool RemoteFollower::remote_alive() {
  return with_session([&](Session& s) { return alive(s); });
}

FollowState RemoteFollower::poll() {
  FollowState st;
  st.fetched_bytes = fetch();
  st.ingest = tail_.ingest();
  if (opts_.check_process && !tail_.ended()) {
    const bool up = with_session([&](Session& s) { return alive(s); });
    if (!up) {
      // Gone: take what it wrote last, then end the run if its run_end is not among it.
      st.fetched_bytes += fetch();
      st.ingest += tail_.ingest();
      if (!tail_.ended()) {
        const std::string tail = with_session([&](Session& s) { return log_tail(s); });
        const auto end = tail_.finish(
            "failed",
            "the engine process (pid " + std::to_string(pid_) + ") on the node ended without a run_end event; "
            "last lines of " + join(remote_dir_, "engine.log") + ":\n" + tail);
        st.marked_failed = end.marked;
      }
    }
  }
  fill(st);
  return st;
}

FollowState RemoteFollower::finish(const std::string& status, const std::string& reason) {
  FollowState st;
  st.fetched_bytes = fetch();
  const auto end = tail_.finish(status, reason);
  st.ingest = end.ingest;
  st.marked_failed = end.marked;
  fill(st);
  return st;
}

void RemoteFollower::fill(FollowState& st) {
  if (auto run = tail_.run()) {
    st.status = run->status;
    st.finished = run->end_time.has_value();
    if (st.finished) st.end_reason = run->end_reason;
  }
  st.mirror_bytes = fs::exists(mirror_) ? fs::file_size(mirror_) : 0;
}

bool RemoteFollower::stop(int kill_timeout_ms) {
  return with_session([&](Session& s) {
    if (!alive(s)) return false;
    s.exec({"kill", "-TERM", std::to_string(pid_)});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kill_timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!alive(s)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (alive(s)) s.exec({"kill", "-KILL", std::to_string(pid_)});
    if (opts_.container.enabled()) remove_containers(s, opts_.container, {container_name(run_id_, 0)});
    return false;
  });
}

}  // namespace td::remote
