// Store rows written by launchers (the GUI's local runs, remote runs), not by events.
#include "engine/common/error.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace td::store {

void Store::note_launch(const std::string& run_id, const std::string& experiment, const std::string& events_path,
                        int64_t pid, const std::string& host, double t) {
  Transaction tx(db_);
  if (auto key = run_key(run_id)) {
    Stmt(db_, "UPDATE runs SET status = 'running', end_time = NULL, end_reason = NULL, pid = ?2,"
              " events_path = coalesce(events_path, ?3), host = coalesce(host, ?4) WHERE id = ?1")
        .bind(1, *key).bind(2, pid).bind(3, events_path).bind(4, host).exec();
  } else {
    const int64_t exp = ensure_experiment(experiment);
    Stmt(db_, "INSERT INTO runs(run_id, experiment, status, host, start_time, events_path, pid)"
              " VALUES(?1, ?2, 'running', ?3, ?4, ?5, ?6)")
        .bind(1, run_id).bind(2, exp).bind(3, host).bind(4, t).bind(5, events_path).bind(6, pid).exec();
  }
  tx.commit();
}

bool Store::mark_run_ended(const std::string& run_id, const std::string& status, const std::string& reason, double t) {
  const int64_t key = require_run(run_id);
  Stmt st(db_, "UPDATE runs SET status = ?2, end_time = ?3, end_reason = ?4, pid = NULL"
               " WHERE id = ?1 AND end_time IS NULL");
  st.bind(1, key).bind(2, status).bind(3, t).bind(4, reason).exec();
  if (sqlite3_changes(db_) == 0) return false;
  Stmt(db_, "UPDATE run_attempts SET status = ?2, end_time = ?3 WHERE run = ?1 AND end_time IS NULL")
      .bind(1, key).bind(2, status).bind(3, t).exec();
  return true;
}

bool Store::replace_end_reason(const std::string& run_id, const std::string& expected, const std::string& reason) {
  const int64_t key = require_run(run_id);
  Stmt(db_, "UPDATE runs SET end_reason = ?3 WHERE id = ?1 AND end_time IS NOT NULL AND end_reason = ?2")
      .bind(1, key).bind(2, expected).bind(3, reason).exec();
  return sqlite3_changes(db_) > 0;
}

Store::Claim Store::claim_run(const std::string& run_id, const std::string& experiment, const std::string& events_path,
                              std::optional<int64_t> pid, std::string* other) {
  TD_CHECK(!events_path.empty(), "claim_run: the events file path is empty");
  Transaction tx(db_);  // BEGIN IMMEDIATE: the check and the insert below are one step
  Stmt sel(db_, "SELECT id, coalesce(events_path, '') FROM runs WHERE run_id = ?1");
  sel.bind(1, run_id);
  if (sel.step()) {
    const int64_t key = sel.col_int(0);
    const std::string have = sel.col_text(1);
    if (!have.empty() && have != events_path) {
      if (other) *other = have;
      return Claim::other_file;  // rolled back: nothing written
    }
    if (have.empty()) Stmt(db_, "UPDATE runs SET events_path = ?2 WHERE id = ?1").bind(1, key).bind(2, events_path).exec();
    tx.commit();
    return Claim::same_file;
  }
  const int64_t exp = ensure_experiment(experiment.empty() ? kDefaultExperiment : experiment);
  Stmt(db_, "INSERT INTO runs(run_id, experiment, status, events_path, pid) VALUES(?1, ?2, 'running', ?3, ?4)")
      .bind(1, run_id).bind(2, exp).bind(3, events_path).bind(4, pid).exec();
  tx.commit();
  return Claim::created;
}

bool Store::release_claim(const std::string& run_id, const std::string& events_path) {
  Stmt st(db_, "DELETE FROM runs WHERE run_id = ?1 AND events_path = ?2 AND attempts = 0"
               " AND NOT EXISTS (SELECT 1 FROM metrics m WHERE m.run = runs.id)");
  st.bind(1, run_id).bind(2, events_path).exec();
  return sqlite3_changes(db_) > 0;
}

}  // namespace td::store
