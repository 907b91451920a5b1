// Schema migrations of the experiment store (see schema.h and docs/store.md).
#include "store/schema.h"

#include "engine/common/error.h"
#include "store/lod.h"
#include "store/sqlite.h"

namespace td::store {

namespace {

// Version 1: the first schema. Times are Unix seconds (REAL), sizes bytes, steps 1-based.
// metrics is WITHOUT ROWID with the primary key (run, name, rank, step): rows are stored in
// that order, so a chart's range query (one run, one metric, one rank, a step range) is one
// B-tree seek plus a sequential read, and a later attempt's row replaces an earlier one's.
constexpr const char* kV1 = R"sql(
CREATE TABLE experiments (
  id      INTEGER PRIMARY KEY,
  name    TEXT NOT NULL UNIQUE,
  notes   TEXT NOT NULL DEFAULT '',
  tags    TEXT NOT NULL DEFAULT '[]',        -- JSON array of strings
  created REAL NOT NULL                      -- Unix seconds
);
CREATE TABLE runs (
  id              INTEGER PRIMARY KEY,       -- compact key used by the row tables
  run_id          TEXT NOT NULL UNIQUE,      -- the engine's run id (events.md)
  experiment      INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
  config          TEXT,                      -- the validated config, JSON
  status          TEXT NOT NULL DEFAULT 'unknown', -- unknown|running|completed|stopped|failed
  host            TEXT,
  device          TEXT,
  world_size      INTEGER,
  n_params        INTEGER,
  flops_per_token REAL,
  peak_flops      REAL,                      -- FLOP/s, NULL when unknown
  engine_version  TEXT,
  start_time      REAL,                      -- first run_start's t
  end_time        REAL,                      -- last run_end's t; NULL while running
  end_reason      TEXT,
  last_step       INTEGER,                   -- last completed optimizer step seen
  attempts        INTEGER NOT NULL DEFAULT 0,-- attempts seen (max attempt + 1)
  events_path     TEXT,                      -- events.jsonl that holds its run_start
  pid             INTEGER,                   -- engine process id, when the launcher knows it
  notes           TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_experiment ON runs(experiment);
CREATE TABLE run_attempts (
  run               INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  attempt           INTEGER NOT NULL,
  start_time        REAL,
  end_time          REAL,
  status            TEXT NOT NULL DEFAULT 'running',
  resumed_from_step INTEGER,
  host              TEXT,
  PRIMARY KEY (run, attempt)
) WITHOUT ROWID;
-- Where each events file's ingest stands: the byte offset just past the last complete line
-- ingested, updated in the same transaction as the rows that line produced.
CREATE TABLE event_files (
  path          TEXT PRIMARY KEY,
  run           INTEGER REFERENCES runs(id) ON DELETE CASCADE, -- the one run the file feeds
  byte_offset   INTEGER NOT NULL DEFAULT 0,
  lines         INTEGER NOT NULL DEFAULT 0,  -- complete lines ingested
  skipped       INTEGER NOT NULL DEFAULT 0,  -- malformed lines skipped
  updated       REAL
);
CREATE TABLE metric_names (
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE                  -- loss, lr, grad_norm, val_loss, ...
);
-- No REFERENCES on metrics: a foreign key costs two parent lookups per inserted row, the
-- hottest path of ingest. Only the ingester writes it (with ids it just read), and the
-- trigger runs_delete_metrics below does what ON DELETE CASCADE would.
CREATE TABLE metrics (
  run     INTEGER NOT NULL,                  -- runs.id
  name    INTEGER NOT NULL,                  -- metric_names.id
  rank    INTEGER NOT NULL,
  step    INTEGER NOT NULL,
  attempt INTEGER NOT NULL,                  -- the attempt whose value this is
  t       REAL NOT NULL,                     -- Unix seconds of the event
  value   REAL NOT NULL,
  PRIMARY KEY (run, name, rank, step)
) WITHOUT ROWID;
CREATE TRIGGER runs_delete_metrics AFTER DELETE ON runs BEGIN
  DELETE FROM metrics WHERE run = OLD.id;
END;
CREATE TABLE samples (
  id      INTEGER PRIMARY KEY,
  run     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank    INTEGER NOT NULL,
  step    INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  t       REAL NOT NULL,
  prompt  TEXT NOT NULL,
  text    TEXT NOT NULL,
  UNIQUE (run, step, rank, prompt)
);
CREATE TABLE checkpoints (
  id      INTEGER PRIMARY KEY,
  run     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank    INTEGER NOT NULL,
  step    INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  t       REAL NOT NULL,
  path    TEXT NOT NULL,
  bytes   INTEGER,
  UNIQUE (run, step, rank)
);
CREATE TABLE warnings (
  id      INTEGER PRIMARY KEY,
  run     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank    INTEGER NOT NULL,
  step    INTEGER,                           -- NULL when not tied to a step
  attempt INTEGER NOT NULL,
  t       REAL NOT NULL,
  code    TEXT NOT NULL,
  message TEXT NOT NULL,
  UNIQUE (run, attempt, rank, t, code)
);
)sql";

// Version 2: the level of detail of every metric series (docs/store.md "Level of detail").
// Level k groups steps into buckets of 64 * 4^k steps (bucket = step >> (6 + 2k)), k = 0..7
// (version 6 made them finer: lod::shift);
// each row summarises the raw rows of one bucket. The ingester keeps it in step with
// `metrics` in the same transaction; this step builds it for the rows already stored (one
// sequential pass over `metrics`, lod::rebuild).
constexpr const char* kV2 =
    "CREATE TABLE metric_lod ("
    "  run         INTEGER NOT NULL,"   // runs.id
    "  name        INTEGER NOT NULL,"   // metric_names.id
    "  rank        INTEGER NOT NULL,"
    "  level       INTEGER NOT NULL,"   // since v6 0..8: buckets of 16 * 4^level steps
    "  bucket      INTEGER NOT NULL,"   // step >> lod::shift(level)
    "  n           INTEGER NOT NULL,"   // raw rows in the bucket (>= 1)
    "  step_min    INTEGER NOT NULL,"   // first and last step with a row
    "  step_max    INTEGER NOT NULL,"
    "  v_min       REAL NOT NULL,"
    "  v_max       REAL NOT NULL,"
    "  step_at_min INTEGER NOT NULL,"   // earliest step holding v_min
    "  step_at_max INTEGER NOT NULL,"   // earliest step holding v_max
    "  v_first     REAL NOT NULL,"      // value at step_min
    "  v_last      REAL NOT NULL,"      // value at step_max
    "  v_sum       REAL NOT NULL,"      // sum of the values (mean = v_sum / n)
    "  PRIMARY KEY (run, name, rank, level, bucket)"
    ") WITHOUT ROWID;\n"
    "CREATE TRIGGER runs_delete_metric_lod AFTER DELETE ON runs BEGIN"
    "  DELETE FROM metric_lod WHERE run = OLD.id;"
    " END;\n";

void fill_v2(sqlite3* db) { lod::rebuild(db, std::nullopt); }

// Version 3: prepared datasets registered for reuse (the GUI's Data panel, store/datasets.cpp).
// One row per dataset directory, keyed by its absolute path; the columns are read from the
// dataset's manifest.json (docs/formats.md), which is kept whole. Forgetting a dataset deletes
// the row, never the files.
constexpr const char* kV3 =
    "CREATE TABLE datasets ("
    "  id           INTEGER PRIMARY KEY,"
    "  path         TEXT NOT NULL UNIQUE,"   // absolute, normalised dataset directory
    "  name         TEXT NOT NULL,"          // the directory's name
    "  tokenizer    TEXT NOT NULL,"          // byte | bpe
    "  vocab_size   INTEGER NOT NULL,"
    "  train_tokens INTEGER NOT NULL,"
    "  val_tokens   INTEGER NOT NULL,"
    "  bytes_read   INTEGER NOT NULL,"       // input bytes in all
    "  files        INTEGER NOT NULL,"       // source files read
    "  skipped      INTEGER NOT NULL,"       // files skipped
    "  val_fraction REAL NOT NULL,"
    "  manifest     TEXT NOT NULL,"          // manifest.json as prepare wrote it
    "  created      REAL NOT NULL,"          // Unix seconds of the first registration
    "  updated      REAL NOT NULL"           // Unix seconds of the last registration
    ");\n";

// Version 4: clusters the person designed (gui/cluster) and where each remote run lives
// (store/clusters.cpp). A cluster's spec is the JSON of remote/cluster.h and never holds a
// secret (Store::save_cluster refuses one). remote_runs keeps what a reattach needs: the node
// as it was at launch, the run folder on the node and the engine's pid there.
constexpr const char* kV4 =
    "CREATE TABLE clusters ("
    "  name     TEXT PRIMARY KEY,"
    "  spec     TEXT NOT NULL,"          // remote/cluster.h JSON: {name, nodes: [...]}, no secrets
    "  created  REAL NOT NULL,"          // Unix seconds
    "  updated  REAL NOT NULL"
    ");\n"
    "CREATE TABLE remote_runs ("
    "  run      INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
    "  cluster  TEXT NOT NULL,"          // the cluster's name at launch
    "  node     TEXT NOT NULL,"          // the node's JSON (remote/cluster.h NodeSpec) at launch
    "  run_dir  TEXT NOT NULL,"          // the run folder on the node
    "  pid      INTEGER,"                // the engine's pid on the node
    "  created  REAL NOT NULL"
    ");\n";

// Version 5: multi-node runs (remote/multinode.h). runs.hosts is the host of every rank (the
// run_start event's `hosts`, a JSON array in rank order; NULL for a single-process run), so
// charts can name a rank's series by its node; remote_runs.layout is the run's layout (every
// node with its run folder and its ranks' pids: remote/multinode.h ClusterRun JSON; NULL for a
// run on one node, whose node, run_dir and pid columns say everything). Existing rows get NULL.
constexpr const char* kV5 =
    "ALTER TABLE runs ADD COLUMN hosts TEXT;\n"
    "ALTER TABLE remote_runs ADD COLUMN layout TEXT;\n";

// Version 6: finer level of detail (store/lod.h): level k now holds buckets of 16 * 4^k steps,
// k = 0..8 (was 64 * 4^k, k = 0..7), so that a chart of any run length gets about one bucket
// per pixel column (a 1,000-step run on a 300-pixel chart had sixteen 64-step buckets). The
// buckets are rebuilt from the raw rows (one pass over `metrics`); no raw row changes.
constexpr const char* kV6 = "DELETE FROM metric_lod;\n";

void fill_v6(sqlite3* db) { lod::rebuild(db, std::nullopt); }

// Version 7: a run's name for people (train --run-name, the GUI's Start run and Rename;
// td::normalise_run_name), shown instead of its id where there is one; '' when unnamed.
constexpr const char* kV7 = "ALTER TABLE runs ADD COLUMN name TEXT NOT NULL DEFAULT '';\n";

// Version 8: run targets (gui/runs/run_target.h). remote_runs.target is the kind of target the
// run went to ('ssh': an SSH node or cluster; 'slurm': a Slurm cluster, whose node column is
// the login node); existing rows were SSH runs. run_jobs lists the scheduler jobs a run took
// (Slurm job ids; a run continued after a time limit or a resume takes several), in order,
// with the last state the target saw of each.
constexpr const char* kV8 =
    "ALTER TABLE remote_runs ADD COLUMN target TEXT NOT NULL DEFAULT 'ssh';\n"
    "CREATE TABLE run_jobs ("
    "  run        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  job_id     TEXT NOT NULL,"          // the scheduler's id ("4242")
    "  submitted  REAL NOT NULL,"          // Unix seconds it was seen first
    "  state      TEXT NOT NULL DEFAULT '',"  // PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, NODE_FAIL ...
    "  reason     TEXT NOT NULL DEFAULT '',"  // the pending reason or the end's exit code, as people read it
    "  PRIMARY KEY (run, job_id)"
    ");\n";

// Version 9: a run's card (Store::run_card, docs/store.md "Run card"): what a run needs to be
// reproduced beyond its config. From the run_start event: device_name (the GPU's name or the CPU
// model), engine_build (compiler, build type, architecture) and the dataset it read (dataset_path,
// dataset_sha256: the SHA-256 of its manifest.json, dataset_train_tokens, dataset_val_tokens).
// Existing rows get NULL: runs recorded before say nothing of these.
constexpr const char* kV9 =
    "ALTER TABLE runs ADD COLUMN device_name TEXT;\n"
    "ALTER TABLE runs ADD COLUMN engine_build TEXT;\n"
    "ALTER TABLE runs ADD COLUMN dataset_path TEXT;\n"
    "ALTER TABLE runs ADD COLUMN dataset_sha256 TEXT;\n"
    "ALTER TABLE runs ADD COLUMN dataset_train_tokens INTEGER;\n"
    "ALTER TABLE runs ADD COLUMN dataset_val_tokens INTEGER;\n";

// Version 10: alerts (engine/metrics/alerts.h, docs/events.md "Alerts"). One row per alert: from
// the engine's `alert` events (source 'engine', ingested exactly once: the UNIQUE key) and from
// the workbench's follower (source 'workbench': stall, connection lost, rank lost, run ended).
// seen: the person has looked at the run since (the sidebar's badge counts the unseen ones);
// notified: the desktop notification for it was shown (so that alerts written while no workbench
// followed the run notify once at reattach).
constexpr const char* kV10 =
    "CREATE TABLE alerts ("
    "  id        INTEGER PRIMARY KEY,"
    "  run       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  source    TEXT NOT NULL,"             // engine | workbench
    "  attempt   INTEGER NOT NULL,"
    "  step      INTEGER NOT NULL,"          // the run's last step when it fired (0 before the first)
    "  t         REAL NOT NULL,"             // Unix seconds
    "  kind      TEXT NOT NULL,"             // nonfinite, loss_spike, throughput_drop, disk_low, stall, ...
    "  severity  TEXT NOT NULL,"             // info | warning | critical
    "  message   TEXT NOT NULL,"
    "  value     REAL,"                      // in the rule's unit; NULL where it has none
    "  threshold REAL,"
    "  seen      INTEGER NOT NULL DEFAULT 0,"
    "  notified  INTEGER NOT NULL DEFAULT 0,"
    "  UNIQUE (run, source, kind, attempt, step)"
    ");\n"
    "CREATE INDEX alerts_unseen ON alerts(run) WHERE seen = 0;\n";

// Version 11: an events file feeds exactly one run (store/ingest.h). event_files.run is that run;
// foreign_lines counts the lines naming another run (skipped); long_line is 1 while the ingest's
// offset is inside a line longer than kMaxEventLineBytes, so its rest is skipped after a restart.
constexpr const char* kV11 =
    "ALTER TABLE event_files ADD COLUMN foreign_lines INTEGER NOT NULL DEFAULT 0;\n"
    "ALTER TABLE event_files ADD COLUMN long_line INTEGER NOT NULL DEFAULT 0;\n";

constexpr Migration kMigrations[] = {
    {1, kV1},
    {2, kV2, fill_v2},
    {3, kV3},
    {4, kV4},
    {5, kV5},
    {6, kV6, fill_v6},
    {7, kV7},
    {8, kV8},
    {9, kV9},
    {10, kV10},
    {11, kV11},
};

}  // namespace

std::span<const Migration> migrations() { return kMigrations; }

int schema_version() { return kMigrations[std::size(kMigrations) - 1].version; }

int read_user_version(sqlite3* db) {
  Stmt st(db, "PRAGMA user_version");
  st.step();
  return static_cast<int>(st.col_int(0));
}

static void check_newer(int have, int latest, const std::string& path) {
  if (have > latest)
    throw Error("store '" + path + "' has schema version " + std::to_string(have) +
                ", newer than this TrainDeck understands (" + std::to_string(latest) +
                "); open it with a newer TrainDeck, or choose another store (--db, or File > Open store)");
}

int migrate(sqlite3* db, const std::string& path, std::span<const Migration> steps) {
  const int latest = steps.empty() ? 0 : steps.back().version;
  const int before = read_user_version(db);
  check_newer(before, latest, path);
  if (before == latest) return before;

  Transaction tx(db);
  // Another process may have migrated between the read above and taking the write lock.
  const int have = read_user_version(db);
  check_newer(have, latest, path);
  for (const Migration& m : steps) {
    if (m.version <= have) continue;
    char* err = nullptr;
    if (sqlite3_exec(db, m.sql, nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string why = err ? err : sqlite3_errmsg(db);
      sqlite3_free(err);
      throw Error("store '" + path + "': migration to schema version " +
                  std::to_string(m.version) + " failed: " + why +
                  "; the file was left unchanged at version " + std::to_string(have));
    }
    if (m.fill) {
      try {
        m.fill(db);
      } catch (const Error& e) {
        throw Error("store '" + path + "': migration to schema version " +
                    std::to_string(m.version) + " failed: " + e.what() +
                    "; the file was left unchanged at version " + std::to_string(have));
      }
    }
    exec_sql(db, ("PRAGMA user_version = " + std::to_string(m.version)).c_str());
  }
  tx.commit();
  return have;
}

}  // namespace td::store
