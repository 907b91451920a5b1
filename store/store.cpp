// Store: opening, experiments and runs (see store.h). Row queries live in queries.cpp.
#include "store/store.h"

#include <chrono>
#include <thread>

#include <cstdlib>
#include <ctime>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/fileio.h"
#include "engine/common/run_id.h"
#include "store/schema.h"
#include "store/sqlite.h"

namespace td::store {

namespace fs = std::filesystem;

std::string default_db_path() {
  if (const char* p = std::getenv("TRAINDECK_DB"); p && *p) return p;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
    return (fs::path(x) / "traindeck" / "traindeck.db").string();
  const char* home = std::getenv("HOME");
  if (!home || !*home)
    throw Error("cannot find the default store: HOME is not set; pass --db FILE or set TRAINDECK_DB");
  return (fs::path(home) / ".local" / "share" / "traindeck" / "traindeck.db").string();
}

static double now_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

Store::Store(const std::string& path, Options opts) : path_(path) {
  TD_CHECK(!path.empty(), "store path is empty; pass --db FILE or set TRAINDECK_DB");
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (!exists) {
    TD_CHECK(opts.create, "no store at '" + path +
                              "'; check the path, or ingest a run first (traindeck-engine train --db " +
                              path + ")");
    const fs::path dir = fs::path(path).parent_path();
    if (!dir.empty()) {
      ec = create_private_dirs(dir.string());  // new folders 0700
      TD_CHECK(!ec, "cannot create the folder '" + dir.string() + "' for the store: " + ec.message() +
                        "; pass --db with a writable location");
    }
    // SQLite would create the file with the umask's mode (world-readable under 022); the store
    // holds cluster specs (hosts, users, key-file paths), so it is created owner-only first. Its
    // -wal and -shm files take the main file's mode (SQLite's unix VFS).
    ::close(open_private_file(path, O_RDWR | O_CREAT, "the new store"));  // no O_EXCL: another process may be creating it too
  }
  // NOMUTEX: a Store is used by one thread at a time, so SQLite's per-call locking is waste.
  const int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (opts.create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error("cannot open the store '" + path + "': " + msg +
                "; check that the file and its folder exist and are writable");
  }
  try {
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, opts.busy_timeout_ms);
    auto init = [&] {
      {
        // Fails with SQLITE_NOTADB on a file that is not a database.
        Stmt wal(db_, "PRAGMA journal_mode = WAL");
        wal.step();
        const std::string mode = wal.col_text(0);
        TD_CHECK(mode == "wal", "store '" + path + "': cannot switch to WAL journal mode (got '" + mode +
                                    "'); put the store on a local file system");
      }
      // NORMAL in WAL mode: a killed process never loses a committed transaction; a power cut
      // may lose the last ones, but the file stays consistent (offsets commit with their rows).
      // wal_autocheckpoint: copy the WAL back into the file every ~32 MiB rather than every
      // 4 MiB; each checkpoint is an fsync, which made small ingest batches I/O-bound.
      exec_sql(db_, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
                    " PRAGMA wal_autocheckpoint = 8192;");
      migrate(db_, path_);
    };
    // Two processes opening a NEW store at once race for the journal-mode switch and the first
    // migration; SQLite answers SQLITE_BUSY there without calling the busy handler, so the
    // set-up is retried until the busy timeout has passed.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(opts.busy_timeout_ms);
    for (;;) {
      try {
        init();
        break;
      } catch (const Error&) {
        const int code = sqlite3_errcode(db_) & 0xff;
        if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || std::chrono::steady_clock::now() >= deadline) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  } catch (const Error& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    const std::string what = e.what();
    if (what.find(path) == std::string::npos)
      throw Error("store '" + path + "': " + what);
    throw;
  }
}

Store::~Store() {
  if (db_) sqlite3_close_v2(db_);
}

std::vector<std::string> Store::release_open_state() {
  std::vector<std::string> found;
  if (!db_) return found;
  for (sqlite3_stmt* s = sqlite3_next_stmt(db_, nullptr); s; s = sqlite3_next_stmt(db_, s))
    if (sqlite3_stmt_busy(s)) {
      const char* sql = sqlite3_sql(s);
      std::string text = sql ? sql : "?";
      if (text.size() > 120) text = text.substr(0, 120) + "...";
      found.push_back("a statement was left unfinished, holding an old snapshot of the store: " + text);
      sqlite3_reset(s);
    }
  if (!sqlite3_get_autocommit(db_)) {
    found.push_back("a transaction was left open (its writes were not committed); rolled back");
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  return found;
}

// ---- experiments ---------------------------------------------------------------------------

int64_t Store::ensure_experiment(const std::string& name) {
  TD_CHECK(!name.empty(), "experiment name is empty; give the experiment a name");
  Stmt ins(db_, "INSERT INTO experiments(name, created) VALUES(?, ?) ON CONFLICT(name) DO NOTHING");
  ins.bind(1, name).bind(2, now_seconds()).exec();
  Stmt sel(db_, "SELECT id FROM experiments WHERE name = ?");
  sel.bind(1, name);
  TD_ASSERT(sel.step());
  return sel.col_int(0);
}

int64_t Store::require_experiment(const std::string& name) {
  Stmt sel(db_, "SELECT id FROM experiments WHERE name = ?");
  sel.bind(1, name);
  TD_CHECK(sel.step(), "no experiment '" + name + "' in store '" + path_ +
                           "'; list them with `traindeck-engine runs list`");
  return sel.col_int(0);
}

std::vector<Experiment> Store::list_experiments() {
  Stmt st(db_,
          "SELECT e.id, e.name, e.notes, e.tags, e.created,"
          " (SELECT count(*) FROM runs r WHERE r.experiment = e.id)"
          " FROM experiments e ORDER BY e.name");
  std::vector<Experiment> out;
  while (st.step()) {
    Experiment e;
    e.id = st.col_int(0);
    e.name = st.col_text(1);
    e.notes = st.col_text(2);
    const auto tags = nlohmann::json::parse(st.col_text(3), nullptr, false);
    if (tags.is_array())
      for (const auto& t : tags)
        if (t.is_string()) e.tags.push_back(t.get<std::string>());
    e.created = st.col_double(4);
    e.run_count = st.col_int(5);
    out.push_back(std::move(e));
  }
  return out;
}

void Store::rename_experiment(const std::string& from, const std::string& to) {
  TD_CHECK(!to.empty(), "the new experiment name is empty; give a name");
  Transaction tx(db_);
  const int64_t id = require_experiment(from);
  Stmt taken(db_, "SELECT 1 FROM experiments WHERE name = ?");
  taken.bind(1, to);
  TD_CHECK(from == to || !taken.step(),
           "cannot rename experiment '" + from + "' to '" + to + "': that name is taken; choose another");
  Stmt st(db_, "UPDATE experiments SET name = ? WHERE id = ?");
  st.bind(1, to).bind(2, id).exec();
  tx.commit();
}

void Store::delete_experiment(const std::string& name) {
  Transaction tx(db_);
  const int64_t id = require_experiment(name);
  // Cascades (foreign keys): runs -> metrics, samples, checkpoints, warnings, attempts, offsets.
  Stmt st(db_, "DELETE FROM experiments WHERE id = ?");
  st.bind(1, id).exec();
  tx.commit();
}

void Store::set_experiment_notes(const std::string& name, const std::string& notes) {
  Transaction tx(db_);
  Stmt st(db_, "UPDATE experiments SET notes = ? WHERE id = ?");
  st.bind(1, notes).bind(2, require_experiment(name)).exec();
  tx.commit();
}

void Store::set_experiment_tags(const std::string& name, const std::vector<std::string>& tags) {
  Transaction tx(db_);
  Stmt st(db_, "UPDATE experiments SET tags = ? WHERE id = ?");
  st.bind(1, nlohmann::json(tags).dump()).bind(2, require_experiment(name)).exec();
  tx.commit();
}

// ---- runs ----------------------------------------------------------------------------------

std::optional<int64_t> Store::run_key(const std::string& run_id) {
  Stmt st(db_, "SELECT id FROM runs WHERE run_id = ?");
  st.bind(1, run_id);
  if (!st.step()) return std::nullopt;
  return st.col_int(0);
}

int64_t Store::require_run(const std::string& run_id) {
  const auto key = run_key(run_id);
  TD_CHECK(key.has_value(), "no run '" + run_id + "' in store '" + path_ +
                                "'; list the runs with `traindeck-engine runs list`");
  return *key;
}

// Columns shared by list_runs and find_run (indices 0..11 fill RunSummary, but tokens_per_s:
// recent_median, one bounded read per run).
static constexpr const char* kRunColumns =
    "r.run_id, e.name, r.status, coalesce(r.host, ''), r.start_time, r.end_time, r.attempts,"
    " r.last_step,"
    // Best val loss from the coarsest level of detail (a few rows; min is exact per bucket).
    " (SELECT min(l.v_min) FROM metric_lod l WHERE l.run = r.id AND l.rank = 0 AND l.level = 8 AND"
    "    l.name = (SELECT id FROM metric_names WHERE name = 'val_loss')),"
    // train.steps of the config (json_valid first: json_extract raises an error on bad text).
    " CASE WHEN json_valid(r.config) THEN json_extract(r.config, '$.train.steps') END,"
    " r.notes, r.name";

static void read_summary(const Stmt& st, RunSummary& r) {
  r.run_id = st.col_text(0);
  r.experiment = st.col_text(1);
  r.status = st.col_text(2);
  r.host = st.col_text(3);
  r.start_time = st.col_opt_double(4);
  r.end_time = st.col_opt_double(5);
  r.attempts = static_cast<int>(st.col_int(6));
  r.last_step = st.col_opt_int(7);
  r.best_val_loss = st.col_opt_double(8);
  r.total_steps = st.col_opt_int(9);
  r.notes = st.col_text(10);
  r.name = st.col_text(11);
}

std::vector<RunSummary> Store::list_runs(const std::string& experiment) {
  std::string sql = std::string("SELECT ") + kRunColumns +
                    ", r.id FROM runs r JOIN experiments e ON e.id = r.experiment";
  if (!experiment.empty()) sql += " WHERE e.name = ?1";
  sql += " ORDER BY r.start_time IS NULL, r.start_time, r.run_id";
  Stmt st(db_, sql);
  if (!experiment.empty()) st.bind(1, experiment);
  std::vector<RunSummary> out;
  while (st.step()) {
    RunSummary r;
    read_summary(st, r);
    r.tokens_per_s = recent_median(st.col_int(12), "tokens_per_s");
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<RunInfo> Store::find_run(const std::string& run_id) {
  Stmt st(db_, std::string("SELECT ") + kRunColumns +
                   ", coalesce(r.config, ''), coalesce(r.device, ''), coalesce(r.engine_version, ''),"
                   " coalesce(r.end_reason, ''), coalesce(r.events_path, ''), r.world_size,"
                   " r.n_params, r.flops_per_token, r.peak_flops, r.pid,"
                   " coalesce((SELECT f.byte_offset FROM event_files f WHERE f.path = r.events_path), 0),"
                   " coalesce((SELECT sum(f.skipped) FROM event_files f WHERE f.run = r.id OR f.path = r.events_path), 0),"
                   " r.id FROM runs r JOIN experiments e ON e.id = r.experiment WHERE r.run_id = ?");
  st.bind(1, run_id);
  if (!st.step()) return std::nullopt;
  RunInfo r;
  read_summary(st, r);
  r.config_json = st.col_text(12);
  r.device = st.col_text(13);
  r.engine_version = st.col_text(14);
  r.end_reason = st.col_text(15);
  r.events_path = st.col_text(16);
  r.world_size = st.col_opt_int(17);
  r.n_params = st.col_opt_int(18);
  r.flops_per_token = st.col_opt_double(19);
  r.peak_flops = st.col_opt_double(20);
  r.pid = st.col_opt_int(21);
  r.events_offset = st.col_int(22);
  r.skipped_lines = st.col_int(23);
  const int64_t key = st.col_int(24);
  st.reset();
  r.tokens_per_s = recent_median(key, "tokens_per_s");
  return r;
}

RunInfo Store::get_run(const std::string& run_id) {
  auto r = find_run(run_id);
  TD_CHECK(r.has_value(), "no run '" + run_id + "' in store '" + path_ +
                              "'; list the runs with `traindeck-engine runs list`");
  return std::move(*r);
}

std::vector<RunAttempt> Store::run_attempts(const std::string& run_id) {
  const int64_t key = require_run(run_id);
  Stmt st(db_,
          "SELECT attempt, start_time, end_time, status, resumed_from_step, coalesce(host, '')"
          " FROM run_attempts WHERE run = ? ORDER BY attempt");
  st.bind(1, key);
  std::vector<RunAttempt> out;
  while (st.step()) {
    RunAttempt a;
    a.attempt = static_cast<int>(st.col_int(0));
    a.start_time = st.col_opt_double(1);
    a.end_time = st.col_opt_double(2);
    a.status = st.col_text(3);
    a.resumed_from_step = st.col_opt_int(4);
    a.host = st.col_text(5);
    out.push_back(std::move(a));
  }
  return out;
}

void Store::set_run_pid(const std::string& run_id, std::optional<int64_t> pid) {
  Stmt st(db_, "UPDATE runs SET pid = ? WHERE id = ?");
  st.bind(1, pid).bind(2, require_run(run_id)).exec();
}

void Store::set_run_name(const std::string& run_id, const std::string& name) {
  std::string problem;
  const std::string n = td::normalise_run_name(name, &problem);
  TD_CHECK(problem.empty(), "run '" + run_id + "': " + problem);
  Stmt st(db_, "UPDATE runs SET name = ? WHERE id = ?");
  st.bind(1, n).bind(2, require_run(run_id)).exec();
}

void Store::set_run_notes(const std::string& run_id, const std::string& notes) {
  Stmt st(db_, "UPDATE runs SET notes = ? WHERE id = ?");
  st.bind(1, notes).bind(2, require_run(run_id)).exec();
}

void Store::move_run(const std::string& run_id, const std::string& experiment) {
  Transaction tx(db_);
  const int64_t key = require_run(run_id);
  Stmt st(db_, "UPDATE runs SET experiment = ? WHERE id = ?");
  st.bind(1, ensure_experiment(experiment)).bind(2, key).exec();
  tx.commit();
}

void Store::delete_run(const std::string& run_id) {
  Transaction tx(db_);
  Stmt st(db_, "DELETE FROM runs WHERE id = ?");
  st.bind(1, require_run(run_id)).exec();
  tx.commit();
}

}  // namespace td::store
