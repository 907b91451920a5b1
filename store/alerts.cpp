// Store: a run's alerts (schema version 10, docs/store.md "Alerts"). The engine's come in
// through the ingest (store/ingest.cpp, `alert` events); the workbench's follower adds its own
// (gui/runs/alert_watch.h) with add_alert. Kept once by (run, source, kind, attempt, step).
#include <ctime>

#include "engine/common/error.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace td::store {

namespace {

constexpr const char* kColumns = "id, source, attempt, step, t, kind, severity, message, value, threshold, seen, notified";

RunAlert read_alert(const Stmt& st) {
  RunAlert a;
  a.id = st.col_int(0);
  a.source = st.col_text(1);
  a.attempt = static_cast<int>(st.col_int(2));
  a.step = st.col_int(3);
  a.t = st.col_double(4);
  a.kind = st.col_text(5);
  a.severity = st.col_text(6);
  a.message = st.col_text(7);
  a.value = st.col_opt_double(8);
  a.threshold = st.col_opt_double(9);
  a.seen = st.col_int(10) != 0;
  a.notified = st.col_int(11) != 0;
  return a;
}

double wall_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

}  // namespace

std::vector<RunAlert> Store::alerts(const std::string& run_id) {
  const int64_t key = require_run(run_id);
  Stmt st(db_, std::string("SELECT ") + kColumns + " FROM alerts WHERE run = ?1 ORDER BY t, id");
  st.bind(1, key);
  std::vector<RunAlert> out;
  while (st.step()) out.push_back(read_alert(st));
  return out;
}

bool Store::add_alert(const std::string& run_id, const RunAlert& a) {
  TD_CHECK(!a.kind.empty(), "run '" + run_id + "': an alert needs its kind");
  const int64_t key = require_run(run_id);
  Stmt st(db_,
          "INSERT OR IGNORE INTO alerts(run, source, attempt, step, t, kind, severity, message, value, threshold)"
          " VALUES(?1, ?2, CASE WHEN ?3 >= 0 THEN ?3 ELSE (SELECT max(attempts - 1, 0) FROM runs WHERE id = ?1) END,"
          " ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  st.bind(1, key).bind(2, a.source.empty() ? std::string("workbench") : a.source).bind(3, a.attempt).bind(4, a.step);
  st.bind(5, a.t > 0 ? a.t : wall_seconds()).bind(6, a.kind).bind(7, a.severity.empty() ? std::string("warning") : a.severity);
  st.bind(8, a.message).bind(9, a.value).bind(10, a.threshold).exec();
  return sqlite3_changes(db_) > 0;
}

std::map<std::string, int> Store::unseen_alert_counts() {
  std::map<std::string, int> out;
  Stmt st(db_, "SELECT r.run_id, count(*) FROM alerts a JOIN runs r ON r.id = a.run WHERE a.seen = 0 GROUP BY a.run");
  while (st.step()) out[st.col_text(0)] = static_cast<int>(st.col_int(1));
  return out;
}

void Store::mark_alerts_seen(const std::string& run_id) {
  Stmt(db_, "UPDATE alerts SET seen = 1 WHERE seen = 0 AND run = (SELECT id FROM runs WHERE run_id = ?1)").bind(1, run_id).exec();
}

std::vector<RunAlert> Store::take_unnotified_alerts(const std::string& run_id) {
  Transaction tx(db_);
  std::vector<RunAlert> out;
  {
    Stmt st(db_, std::string("SELECT ") + kColumns +
                     " FROM alerts WHERE notified = 0 AND run = (SELECT id FROM runs WHERE run_id = ?1) ORDER BY t, id");
    st.bind(1, run_id);
    while (st.step()) out.push_back(read_alert(st));
  }
  if (!out.empty())
    Stmt(db_, "UPDATE alerts SET notified = 1 WHERE notified = 0 AND run = (SELECT id FROM runs WHERE run_id = ?1)").bind(1, run_id).exec();
  tx.commit();
  return out;
}

std::vector<double> Store::recent_metric_values(const std::string& run_id, const std::string& name, int rank, int limit) {
  Stmt st(db_,
          "SELECT value FROM metrics WHERE run = (SELECT id FROM runs WHERE run_id = ?1)"
          " AND name = (SELECT id FROM metric_names WHERE name = ?2) AND rank = ?3 ORDER BY step DESC LIMIT ?4");
  st.bind(1, run_id).bind(2, name).bind(3, rank).bind(4, limit);
  std::vector<double> out;
  while (st.step()) out.push_back(st.col_double(0));
  return {out.rbegin(), out.rend()};
}

}  // namespace td::store
