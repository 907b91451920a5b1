// Store: saved clusters and where remote runs live (store.h "clusters and remote runs",
// schema version 4). Secrets never reach these tables: a spec or node holding a password,
// passphrase or secret field is refused before anything is written.
#include <ctime>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace td::store {

using json = nlohmann::json;

namespace {

double now_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// The path of the first secret-looking field in `j` ("nodes[1].password"), or "".
std::string secret_field(const json& j, const std::string& at) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      const std::string here = at.empty() ? k : at + "." + k;
      if (k == "password" || k == "passphrase" || k == "secret") return here;
      if (std::string s = secret_field(v, here); !s.empty()) return s;
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      if (std::string s = secret_field(j[i], at + "[" + std::to_string(i) + "]"); !s.empty()) return s;
  }
  return {};
}

void check_no_secret(const std::string& text, const std::string& what) {
  const json j = json::parse(text, nullptr, false);
  TD_CHECK(!j.is_discarded() && j.is_object(), what + " is not a JSON object");
  const std::string s = secret_field(j, "");
  TD_CHECK(s.empty(), what + " holds a secret field (" + s +
                          "); passwords and passphrases are never stored: keep them in the keyring or ask for them");
}

RemoteRun read_remote(const Stmt& st) {
  RemoteRun r;
  r.run_id = st.col_text(0);
  r.cluster = st.col_text(1);
  r.node_json = st.col_text(2);
  r.run_dir = st.col_text(3);
  if (!st.is_null(4)) r.pid = st.col_int(4);
  r.created = st.col_double(5);
  r.layout_json = st.col_text(6);
  r.target = st.col_text(7);
  return r;
}

constexpr const char* kRemoteSelect =
    "SELECT r.run_id, m.cluster, m.node, m.run_dir, m.pid, m.created, coalesce(m.layout, ''), m.target"
    " FROM remote_runs m JOIN runs r ON r.id = m.run";

}  // namespace

void Store::save_cluster(const std::string& name, const std::string& spec_json) {
  TD_CHECK(!name.empty(), "a cluster needs a name");
  check_no_secret(spec_json, "cluster '" + name + "'");
  const double now = now_seconds();
  Stmt(db_, "INSERT INTO clusters(name, spec, created, updated) VALUES(?1, ?2, ?3, ?3)"
            " ON CONFLICT(name) DO UPDATE SET spec = excluded.spec, updated = excluded.updated")
      .bind(1, name).bind(2, spec_json).bind(3, now).exec();
}

std::vector<ClusterRow> Store::list_clusters() {
  std::vector<ClusterRow> out;
  Stmt st(db_, "SELECT name, spec, created, updated FROM clusters ORDER BY name");
  while (st.step()) out.push_back({st.col_text(0), st.col_text(1), st.col_double(2), st.col_double(3)});
  return out;
}

std::optional<ClusterRow> Store::find_cluster(const std::string& name) {
  Stmt st(db_, "SELECT name, spec, created, updated FROM clusters WHERE name = ?1");
  st.bind(1, name);
  if (!st.step()) return std::nullopt;
  return ClusterRow{st.col_text(0), st.col_text(1), st.col_double(2), st.col_double(3)};
}

bool Store::forget_cluster(const std::string& name) {
  Stmt(db_, "DELETE FROM clusters WHERE name = ?1").bind(1, name).exec();
  return sqlite3_changes(db_) > 0;
}

void Store::note_remote_run(const RemoteRun& r) {
  check_no_secret(r.node_json, "the node of run '" + r.run_id + "'");
  if (!r.layout_json.empty()) check_no_secret(r.layout_json, "the layout of run '" + r.run_id + "'");
  const int64_t key = require_run(r.run_id);
  std::optional<std::string> layout;
  if (!r.layout_json.empty()) layout = r.layout_json;
  TD_CHECK(!r.target.empty(), "run '" + r.run_id + "': a remote run needs its target kind");
  Stmt(db_, "INSERT OR REPLACE INTO remote_runs(run, cluster, node, run_dir, pid, created, layout, target)"
            " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
      .bind(1, key).bind(2, r.cluster).bind(3, r.node_json).bind(4, r.run_dir).bind(5, r.pid)
      .bind(6, r.created > 0 ? r.created : now_seconds()).bind(7, layout).bind(8, r.target).exec();
}

std::optional<RemoteRun> Store::remote_run(const std::string& run_id) {
  Stmt st(db_, std::string(kRemoteSelect) + " WHERE r.run_id = ?1");
  st.bind(1, run_id);
  if (!st.step()) return std::nullopt;
  return read_remote(st);
}

std::vector<RemoteRun> Store::active_remote_runs(const std::string& target) {
  std::vector<RemoteRun> out;
  Stmt st(db_, std::string(kRemoteSelect) +
                   " WHERE r.status IN ('running', 'unknown') AND m.target = ?1 ORDER BY m.created, r.run_id");
  st.bind(1, target);
  while (st.step()) out.push_back(read_remote(st));
  return out;
}

std::string Store::run_target(const std::string& run_id) {
  const int64_t key = require_run(run_id);
  Stmt st(db_, "SELECT target FROM remote_runs WHERE run = ?1");
  st.bind(1, key);
  return st.step() ? st.col_text(0) : std::string("local");
}

void Store::note_run_job(const std::string& run_id, const RunJob& job) {
  TD_CHECK(!job.job_id.empty(), "run '" + run_id + "': a scheduler job needs its id");
  const int64_t key = require_run(run_id);
  Stmt(db_, "INSERT INTO run_jobs(run, job_id, submitted, state, reason) VALUES(?1, ?2, ?3, ?4, ?5)"
            " ON CONFLICT(run, job_id) DO UPDATE SET state = excluded.state, reason = excluded.reason")
      .bind(1, key).bind(2, job.job_id).bind(3, job.submitted > 0 ? job.submitted : now_seconds())
      .bind(4, job.state).bind(5, job.reason).exec();
}

std::vector<RunJob> Store::run_jobs(const std::string& run_id) {
  const int64_t key = require_run(run_id);
  std::vector<RunJob> out;
  Stmt st(db_, "SELECT job_id, submitted, state, reason FROM run_jobs WHERE run = ?1 ORDER BY submitted, rowid");
  st.bind(1, key);
  while (st.step()) out.push_back({st.col_text(0), st.col_double(1), st.col_text(2), st.col_text(3)});
  return out;
}

RunOverview Store::run_overview(const std::string& run_id) {
  RunOverview o;
  o.info = find_run(run_id);
  if (!o.info) return o;
  o.has_checkpoint = !checkpoints(run_id).empty();
  o.remote = remote_run(run_id);
  o.progress = run_progress(run_id);
  if (o.remote && o.remote->target != "ssh") o.jobs = run_jobs(run_id);
  return o;
}

}  // namespace td::store
