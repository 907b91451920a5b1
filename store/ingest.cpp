// Ingest of events.jsonl into the store (see ingest.h, docs/store.md, docs/events.md).
#include "store/ingest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <type_traits>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>
#include <memory>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/run_id.h"
#include "engine/metrics/events.h"
#include "engine/metrics/run_start_fields.h"
#include "engine/metrics/step_fields.h"
#include "store/flat_json.h"

namespace td::store {

using json = nlohmann::json;

namespace {

constexpr int kEventsVersion = 1;      // the newest events schema this build reads
constexpr size_t kMaxMessages = 20;    // skip reasons kept per call
constexpr size_t kReadChunk = 1 << 20; // bytes read from the file at a time
// Appended metric rows are written sorted by series, kMultiRows per INSERT statement, once
// kMaxAppends are queued (and before anything that reads or rewrites metrics). Measured with
// bench_store_ingest: per-statement overhead and eight interleaved B-tree insertion points
// were most of the ingest time; 64-row statements of one series at a time cost about 40% less.
constexpr size_t kMultiRows = 64;
constexpr size_t kMaxAppends = 16384;

// The `step` event's fields, and the metric each numeric one is stored as: the one table
// kEventFields (engine/metrics/step_fields.h), which the trainer writes from.

// Fields of every event, then the fields of the types outside the tables (run_start has its
// own, engine/metrics/run_start_fields.h; docs/events.md). A
// field outside these and the table is kept out of the store and reported once per Ingester
// (note_unknown_field).
constexpr const char* kCommonFields[] = {"type", "v", "t", "run_id", "attempt", "rank"};
struct TypeFields {
  const char* type;
  std::initializer_list<const char*> fields;
};
const TypeFields kTypeFields[] = {
    {"sample", {"step", "prompt", "text"}},
    {"warning", {"step", "code", "message"}},
    {"alert", {"kind", "severity", "message", "step", "value", "threshold", "ranks", "hosts"}},
    {"run_end", {"status", "reason", "step"}},
};

bool known_field(std::string_view type, std::string_view key) {
  for (const char* c : kCommonFields)
    if (key == c) return true;
  if (type == "step") return find_event_field(EventKind::Step, FieldScope::Global, key) != nullptr;
  if (type == "eval") return find_event_field(EventKind::Eval, FieldScope::Global, key) != nullptr;
  if (type == "checkpoint") return find_event_field(EventKind::Checkpoint, FieldScope::Global, key) != nullptr;
  if (type == "run_start") return find_run_start_field(key) != nullptr;  // engine/metrics/run_start_fields.h
  for (const auto& tf : kTypeFields)
    if (type == tf.type) {
      for (const char* f : tf.fields)
        if (key == f) return true;
      return false;
    }
  return false;
}

const json* field(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

bool is_int(const json* v) { return v && (v->is_number_integer() || v->is_number_unsigned()); }

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

double now_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// A malformed line: caught per line, counted, never escapes poll().
struct Malformed {
  std::string why;
};

constexpr size_t kMaxWarned = 1000;     // unknown types / fields remembered per Ingester
constexpr size_t kMaxNameInMessage = 64;  // bytes of a hostile name quoted in a warning

// `name` for a warning: at most kMaxNameInMessage bytes (then "..." and the full length), so a
// 10 MB field name never reaches a terminal or the store whole.
std::string quoted_name(std::string_view name) {
  if (name.size() <= kMaxNameInMessage) return "\"" + std::string(name) + "\"";
  return "\"" + std::string(name.substr(0, kMaxNameInMessage)) + "...\" (" + std::to_string(name.size()) + " bytes)";
}

}  // namespace

IngestStats& IngestStats::operator+=(const IngestStats& o) {
  lines += o.lines;
  rows += o.rows;
  metric_rows += o.metric_rows;
  skipped += o.skipped;
  foreign += o.foreign;
  ignored += o.ignored;
  unknown_fields += o.unknown_fields;
  bytes += o.bytes;
  batches += o.batches;
  offset = o.offset;
  at_eof = o.at_eof;
  partial_line = o.partial_line;
  for (const auto& m : o.messages)
    if (messages.size() < kMaxMessages) messages.push_back(m);
  return *this;
}

// State of one batch (one transaction).
struct Ingester::Batch {
  IngestStats stats;
  int64_t line_no = 0;      // 1-based number of the line being processed
  int64_t experiment = -1;  // experiments.id, resolved when a run is first created
  size_t batch_rows = 0;
  std::set<std::string> warned;  // unknown types and type.field names first noted in this batch
  // Per run: the last step seen (file order).
  std::map<int64_t, std::optional<int64_t>> progress;
};

Ingester::Ingester(Store& store, std::string events_path, std::string experiment, IngestOptions opts)
    : store_(store), path_(std::move(events_path)), experiment_(std::move(experiment)),
      opts_(std::move(opts)) {
  TD_CHECK(!path_.empty(), "events file path is empty; pass the run's events.jsonl");
  if (experiment_.empty()) experiment_ = kDefaultExperiment;
}

void Ingester::prepare() {
  if (prepared_) return;
  sqlite3* db = store_.handle();
  // A later attempt's value replaces an earlier one's; replaying the same line is a no-op.
  const char* upsert =
      " ON CONFLICT(run, name, rank, step) DO UPDATE"
      " SET attempt = excluded.attempt, t = excluded.t, value = excluded.value"
      " WHERE excluded.attempt >= metrics.attempt";
  metric_ = Stmt(db, std::string("INSERT INTO metrics(run, name, rank, step, attempt, t, value)"
                                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)") + upsert);
  // The same upsert for kMultiRows rows: parameters ?(7i+1) .. ?(7i+7) are row i's.
  std::string many = "INSERT INTO metrics(run, name, rank, step, attempt, t, value) VALUES";
  for (size_t i = 0; i < kMultiRows; ++i) {
    many += i ? ",(" : "(";
    for (size_t c = 1; c <= 7; ++c) many += (c > 1 ? ",?" : "?") + std::to_string(7 * i + c);
    many += ")";
  }
  metric_many_ = Stmt(db, many + upsert);
  sample_ = Stmt(db,
                 "INSERT INTO samples(run, rank, step, attempt, t, prompt, text)"
                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(run, step, rank, prompt) DO UPDATE"
                 " SET attempt = excluded.attempt, t = excluded.t, text = excluded.text"
                 " WHERE excluded.attempt >= samples.attempt");
  checkpoint_ = Stmt(db,
                     "INSERT INTO checkpoints(run, rank, step, attempt, t, path, bytes)"
                     " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(run, step, rank) DO UPDATE"
                     " SET attempt = excluded.attempt, t = excluded.t, path = excluded.path,"
                     " bytes = excluded.bytes WHERE excluded.attempt >= checkpoints.attempt");
  warning_ = Stmt(db,
                  "INSERT OR IGNORE INTO warnings(run, rank, step, attempt, t, code, message)"
                  " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  alert_ = Stmt(db,
                "INSERT OR IGNORE INTO alerts(run, source, attempt, step, t, kind, severity, message, value, threshold)"
                " VALUES(?1, 'engine', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  run_start_ = Stmt(db,
                    "UPDATE runs SET config = coalesce(?2, config), host = coalesce(?3, host),"
                    " device = coalesce(?4, device), world_size = coalesce(?5, world_size),"
                    " n_params = coalesce(?6, n_params),"
                    " flops_per_token = coalesce(?7, flops_per_token), peak_flops = ?8,"
                    " engine_version = coalesce(?9, engine_version), status = 'running',"
                    " end_time = NULL, end_reason = NULL, attempts = max(attempts, ?10 + 1),"
                    " start_time = min(coalesce(start_time, ?11), ?11),"
                    " events_path = coalesce(events_path, ?12),"
                    // The engine's process id, from the latest attempt's run_start only (SET
                    // expressions see the row before this UPDATE).
                    " pid = CASE WHEN ?10 + 1 >= attempts THEN coalesce(?13, pid) ELSE pid END"
                    " WHERE id = ?1");
  attempt_start_ = Stmt(db,
                        "INSERT INTO run_attempts(run, attempt, start_time, status,"
                        " resumed_from_step, host) VALUES(?1, ?2, ?3, 'running', ?4, ?5)"
                        " ON CONFLICT(run, attempt) DO UPDATE SET start_time = excluded.start_time,"
                        " end_time = NULL, status = 'running',"
                        " resumed_from_step = excluded.resumed_from_step, host = excluded.host");
  // A run_end decides the run's status only for the attempt that is running: the newest
  // run_start's (any attempt while none was seen). A forged run_end of another attempt changes
  // nothing; one of an attempt that never started records no attempt either.
  run_end_ = Stmt(db,
                  "UPDATE runs SET status = ?2, end_time = ?3, end_reason = ?4 WHERE id = ?1 AND ?5 ="
                  " coalesce((SELECT max(attempt) FROM run_attempts WHERE run = ?1 AND start_time IS NOT NULL), ?5)");
  attempt_end_ = Stmt(db,
                      "UPDATE run_attempts SET end_time = ?3, status = ?4 WHERE run = ?1 AND attempt = ?2"
                      " AND start_time IS NOT NULL");
  find_run_ = Stmt(db, "SELECT id, coalesce(events_path, '') FROM runs WHERE run_id = ?1");
  new_run_ = Stmt(db, "INSERT INTO runs(run_id, experiment, events_path) VALUES(?1, ?2, ?3)");
  prepared_ = true;
}

// The runs.id of the file's run (claim_line decided it), creating its row the first time.
int64_t Ingester::file_run(Batch& b) {
  TD_ASSERT(!file_run_id_.empty());
  if (file_run_key_ >= 0) return file_run_key_;
  find_run_.bind(1, file_run_id_);
  if (find_run_.step()) {
    file_run_key_ = find_run_.col_int(0);
    find_run_.reset();
    return file_run_key_;
  }
  find_run_.reset();
  if (b.experiment < 0) b.experiment = store_.ensure_experiment(experiment_);
  new_run_.bind(1, file_run_id_).bind(2, b.experiment).bind(3, path_).exec();
  file_run_key_ = sqlite3_last_insert_rowid(store_.handle());
  return file_run_key_;
}

int64_t Ingester::metric_id(const std::string& name) {
  if (auto it = names_.find(name); it != names_.end()) return it->second;
  sqlite3* db = store_.handle();
  Stmt ins(db, "INSERT INTO metric_names(name) VALUES(?1) ON CONFLICT(name) DO NOTHING");
  ins.bind(1, name).exec();
  Stmt sel(db, "SELECT id FROM metric_names WHERE name = ?1");
  sel.bind(1, name);
  TD_ASSERT(sel.step());
  const int64_t id = sel.col_int(0);
  names_.emplace(name, id);
  return id;
}

void Ingester::wrote_rows(Batch& b, size_t n) {
  b.stats.rows += n;
  b.batch_rows += n;
  if (opts_.after_row) opts_.after_row(b.batch_rows);
}

void Ingester::put_metric(Batch& b, int64_t run, int64_t name, int rank, int64_t step,
                          int attempt, double t, double value) {
  // A step above every stored step of the series is a plain insert, folded into the level of
  // detail in memory; any other change (a gap filled, a later attempt's value) marks its
  // buckets for an exact recompute at the end of the batch.
  const bool append = lod_.is_append(run, name, rank, step);
  if (append) {
    // Certainly a new row: queued, counted as written, and written before anything reads it.
    appends_.push_back(Row{run, name, rank, attempt, step, t, value});
    lod_.appended(run, name, rank, step, value);
    b.stats.metric_rows += 1;
    wrote_rows(b, 1);
    if (appends_.size() >= kMaxAppends) flush_appends();
    return;
  }
  flush_appends();  // the upsert below must see every earlier row of the batch
  metric_.bind(1, run).bind(2, name).bind(3, rank).bind(4, step).bind(5, attempt).bind(6, t).bind(7, value);
  metric_.exec();
  const size_t n = static_cast<size_t>(sqlite3_changes(store_.handle()));
  if (n > 0) lod_.changed(run, name, rank, step);
  b.stats.metric_rows += n;
  wrote_rows(b, n);
}

void Ingester::flush_appends() {
  if (appends_.empty()) return;
  // Group the rows by series (a counting sort over the batch's few series, first seen first);
  // each series' rows stay in step order, as appends arrive ascending. Consecutive rows then
  // land next to each other in the metrics B-tree. Lines repeat their series in the same
  // order, so the next series is guessed right almost always.
  struct Key {
    int64_t run, name;
    int rank;
    bool operator==(const Key&) const = default;
  };
  std::vector<Key> keys;
  series_of_.resize(appends_.size());
  size_t guess = 0;
  for (size_t i = 0; i < appends_.size(); ++i) {
    const Key k{appends_[i].run, appends_[i].name, appends_[i].rank};
    size_t id = keys.size();
    for (size_t tries = 0, j = guess; tries < keys.size(); ++tries, j = j + 1 == keys.size() ? 0 : j + 1)
      if (keys[j] == k) {
        id = j;
        break;
      }
    if (id == keys.size()) keys.push_back(k);
    series_of_[i] = static_cast<uint32_t>(id);
    guess = id + 1 == keys.size() ? 0 : id + 1;
  }
  std::vector<size_t> start(keys.size() + 1, 0);
  for (const uint32_t id : series_of_) ++start[id + 1];
  for (size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
  sorted_.resize(appends_.size());
  for (size_t i = 0; i < appends_.size(); ++i) sorted_[start[series_of_[i]]++] = appends_[i];

  auto bind_row = [](Stmt& st, int p, const Row& r) {
    st.bind(p + 1, r.run).bind(p + 2, r.name).bind(p + 3, r.rank).bind(p + 4, r.step);
    st.bind(p + 5, r.attempt).bind(p + 6, r.t).bind(p + 7, r.value);
  };
  size_t i = 0;
  for (; i + kMultiRows <= sorted_.size(); i += kMultiRows) {
    for (size_t k = 0; k < kMultiRows; ++k) bind_row(metric_many_, static_cast<int>(7 * k), sorted_[i + k]);
    metric_many_.exec();
  }
  for (; i < sorted_.size(); ++i) {
    bind_row(metric_, 0, sorted_[i]);
    metric_.exec();
  }
  appends_.clear();
}

void Ingester::track(Batch& b, int64_t run, std::optional<int64_t> step) {
  auto& last = b.progress[run];
  if (step) last = step;
}

bool Ingester::fast_step(const char* begin, const char* end, Batch& b) {
  FlatObject o;
  if (!scan_flat(begin, end, o)) return false;
  // Anything but a well-formed step event takes the full path (and its error messages).
  const FlatValue* type = o.get("type");
  if (!type || type->kind != FlatValue::String || type->s != "step") return false;
  if (const FlatValue* v = o.get("v"); v && v->kind == FlatValue::Int && v->i > kEventsVersion)
    return false;
  const FlatValue* run_id = o.get("run_id");
  if (!run_id || run_id->kind != FlatValue::String || !valid_run_id(run_id->s)) return false;
  const FlatValue* t = o.get("t");
  if (!t || !t->is_number()) return false;
  const FlatValue* a = o.get("attempt");
  if (a && (a->kind != FlatValue::Int || a->i < 0 || a->i > kMaxAttempt)) return false;
  const FlatValue* r = o.get("rank");
  if (r && (r->kind != FlatValue::Int || r->i < 0 || r->i > kMaxRank)) return false;
  const FlatValue* s = o.get("step");
  if (!s || s->kind != FlatValue::Int || s->i < 0 || s->i > kMaxStep) return false;
  const int attempt = a ? static_cast<int>(a->i) : 0;
  const int rank = r ? static_cast<int>(r->i) : 0;
  // Members this build knows: type, run_id, t, step, then the optional ones present.
  int known = 4 + (a != nullptr) + (r != nullptr) + (o.get("v") != nullptr);
  claim_line(run_id->s);  // throws Foreign before anything is written
  const int64_t run = file_run(b);
  for (size_t k = 0; k < kStepMetricFields.size(); ++k) {
    const EventField& f = kEventFields[kStepMetricFields[k].i];
    const FlatValue* v = o.get(f.key);
    known += v != nullptr;
    if (!v || !v->is_number()) continue;  // null (e.g. mfu with an unknown peak): no row
    if (step_ids_[k] < 0) step_ids_[k] = metric_id(f.metric);
    put_metric(b, run, step_ids_[k], rank, s->i, attempt, t->d, v->d);
  }
  track(b, run, s->i);
  // More members than known ones: unknown fields (or a repeated key, which reports nothing).
  if (o.n != known) {
    bool any = false;
    for (int i = 0; i < o.n; ++i)
      if (!known_field("step", o.key[i])) {
        note_unknown_field(b, "step", o.key[i]);
        any = true;
      }
    b.stats.unknown_fields += any;
  }
  return true;
}

void Ingester::process_line(const char* begin, const char* end, Batch& b) {
  if (end > begin && end[-1] == '\r') --end;
  const char* p = begin;
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  if (p == end) return;  // blank line
  if (fast_step(begin, end, b)) return;

  const json j = json::parse(begin, end, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Malformed{"not valid JSON"};
  if (!j.is_object()) throw Malformed{"not a JSON object"};
  const json* type = field(j, "type");
  if (!type || !type->is_string()) throw Malformed{"no \"type\" string"};
  if (const json* v = field(j, "v"); is_int(v) && v->get<int64_t>() > kEventsVersion)
    throw Malformed{"events schema version " + std::to_string(v->get<int64_t>()) +
                    " is newer than this TrainDeck reads (" + std::to_string(kEventsVersion) +
                    "); update TrainDeck"};
  const json* run_id = field(j, "run_id");
  if (!run_id || !run_id->is_string() || run_id->get_ref<const std::string&>().empty())
    throw Malformed{"no \"run_id\" string"};
  if (!valid_run_id(run_id->get_ref<const std::string&>()))
    throw Malformed{"\"run_id\" " + run_id->dump(-1, ' ', false, json::error_handler_t::replace) + " is not a valid run id (" + kRunIdRule + ")"};
  const json* tj = field(j, "t");
  if (!tj || !tj->is_number()) throw Malformed{"no \"t\" number"};
  const double t = tj->get<double>();
  int attempt = 0, rank = 0;
  if (const json* a = field(j, "attempt")) {
    if (!is_int(a) || a->get<int64_t>() < 0 || a->get<int64_t>() > kMaxAttempt)
      throw Malformed{"\"attempt\" is not an integer in 0.." + std::to_string(kMaxAttempt)};
    attempt = static_cast<int>(a->get<int64_t>());
  }
  if (const json* r = field(j, "rank")) {
    if (!is_int(r) || r->get<int64_t>() < 0 || r->get<int64_t>() > kMaxRank)
      throw Malformed{"\"rank\" is not an integer in 0.." + std::to_string(kMaxRank)};
    rank = static_cast<int>(r->get<int64_t>());
  }
  claim_line(run_id->get_ref<const std::string&>());  // throws Foreign before anything is written
  const std::string& ty = type->get_ref<const std::string&>();
  bool rank_unknown = false;  // a `ranks` entry of a step carries a field the table lacks
  // A step outside 0..kMaxStep is impossible (a forged or corrupted line): malformed.
  auto bounded_step = [&](const json* s) -> int64_t {
    if (!s->is_number_integer() || s->get<int64_t>() < 0 || s->get<int64_t>() > kMaxStep)
      throw Malformed{"\"" + ty + "\" event's \"step\" is outside 0.." + std::to_string(kMaxStep)};
    return s->get<int64_t>();
  };
  auto need_step = [&]() -> int64_t {
    const json* s = field(j, "step");
    if (!is_int(s)) throw Malformed{"\"" + ty + "\" event without an integer \"step\""};
    return bounded_step(s);
  };
  // An optional step (warning, alert, run_end, run_start's resumed_from_step): absent or null
  // is none; present, it must be a possible step.
  auto opt_step = [&](const char* k) -> std::optional<int64_t> {
    const json* s = field(j, k);
    if (!is_int(s)) return std::nullopt;
    return bounded_step(s);
  };
  auto opt_string = [&](const char* k) -> std::optional<std::string> {
    const json* s = field(j, k);
    if (s && s->is_string()) return s->get<std::string>();
    return std::nullopt;
  };
  auto opt_number = [&](const char* k) -> std::optional<double> {
    const json* s = field(j, k);
    if (s && s->is_number()) return s->get<double>();
    return std::nullopt;
  };
  auto opt_int = [&](const char* k) -> std::optional<int64_t> {
    const json* s = field(j, k);
    if (is_int(s)) return s->get<int64_t>();
    return std::nullopt;
  };
  auto track = [&](int64_t run, std::optional<int64_t> step) { Ingester::track(b, run, step); };

  if (ty == "step") {
    const int64_t step = need_step();
    const int64_t run = file_run(b);
    for (size_t k = 0; k < kStepMetricFields.size(); ++k) {
      const EventField& f = kEventFields[kStepMetricFields[k].i];
      const json* v = field(j, f.key);
      if (!v || !v->is_number()) continue;  // null (e.g. mfu with an unknown peak): no row
      if (step_ids_[k] < 0) step_ids_[k] = metric_id(f.metric);
      put_metric(b, run, step_ids_[k], rank, step, attempt, t, v->get<double>());
    }
    // A data-parallel step's per-rank figures (docs/events.md): metrics of each rank, under
    // the table's names (ranks[].tokens_per_s is rank_tokens_per_s).
    if (const json* rs = field(j, "ranks"); rs && rs->is_array()) {
      for (const json& e : *rs) {
        const json* r = e.is_object() ? field(e, "rank") : nullptr;
        if (!is_int(r) || r->get<int64_t>() < 0) continue;
        for (size_t k = 0; k < kRankMetricFields.size(); ++k) {
          const EventField& f = kEventFields[kRankMetricFields[k].i];
          const json* v = field(e, f.key);
          if (!v || !v->is_number()) continue;
          if (rank_ids_[k] < 0) rank_ids_[k] = metric_id(f.metric);
          put_metric(b, run, rank_ids_[k], static_cast<int>(r->get<int64_t>()), step, attempt, t, v->get<double>());
        }
        for (auto it = e.begin(); it != e.end(); ++it)
          if (!find_event_field(EventKind::Step, FieldScope::Rank, it.key())) {
            note_unknown_field(b, "step", "ranks[]." + it.key());
            rank_unknown = true;
          }
      }
    }
    track(run, step);
  } else if (ty == "eval") {
    const int64_t step = need_step();
    const json* v = field(j, "val_loss");
    if (!v || !v->is_number()) throw Malformed{"\"eval\" event without a \"val_loss\" number"};
    const int64_t run = file_run(b);
    static_assert(find_event_field(EventKind::Eval, FieldScope::Global, "val_loss") != nullptr);
    put_metric(b, run, metric_id(find_event_field(EventKind::Eval, FieldScope::Global, "val_loss")->metric), rank, step, attempt, t,
               v->get<double>());
    track(run, std::nullopt);
  } else if (ty == "sample") {
    const int64_t step = need_step();
    const auto text = opt_string("text");
    if (!text) throw Malformed{"\"sample\" event without a \"text\" string"};
    const int64_t run = file_run(b);
    sample_.bind(1, run).bind(2, rank).bind(3, step).bind(4, attempt).bind(5, t);
    sample_.bind(6, opt_string("prompt").value_or("")).bind(7, *text).exec();
    wrote_rows(b, static_cast<size_t>(sqlite3_changes(store_.handle())));
    track(run, std::nullopt);
  } else if (ty == "checkpoint") {
    const int64_t step = need_step();
    const auto path = opt_string("path");
    if (!path) throw Malformed{"\"checkpoint\" event without a \"path\" string"};
    const int64_t run = file_run(b);
    checkpoint_.bind(1, run).bind(2, rank).bind(3, step).bind(4, attempt).bind(5, t);
    checkpoint_.bind(6, *path).bind(7, opt_int("bytes")).exec();
    wrote_rows(b, static_cast<size_t>(sqlite3_changes(store_.handle())));
    // Its figures (write time, throughput, pause: the table's checkpoint metrics) at its step.
    for (const EventField& f : kEventFields)
      if (f.event == EventKind::Checkpoint && f.metric)
        if (const json* v = field(j, f.key); v && v->is_number())
          put_metric(b, run, metric_id(f.metric), rank, step, attempt, t, v->get<double>());
    track(run, std::nullopt);
  } else if (ty == "warning") {
    const int64_t run = file_run(b);
    warning_.bind(1, run).bind(2, rank).bind(3, opt_step("step")).bind(4, attempt).bind(5, t);
    warning_.bind(6, opt_string("code").value_or("warning"));
    warning_.bind(7, opt_string("message").value_or("")).exec();
    wrote_rows(b, static_cast<size_t>(sqlite3_changes(store_.handle())));
    track(run, std::nullopt);
  } else if (ty == "alert") {
    // docs/events.md "Alerts"; kept once by (run, 'engine', kind, attempt, step).
    const auto kind = opt_string("kind");
    if (!kind || kind->empty()) throw Malformed{"\"alert\" event without a \"kind\" string"};
    const int64_t run = file_run(b);
    alert_.bind(1, run).bind(2, attempt).bind(3, opt_step("step").value_or(0)).bind(4, t).bind(5, *kind);
    alert_.bind(6, opt_string("severity").value_or("warning")).bind(7, opt_string("message").value_or(""));
    alert_.bind(8, opt_number("value")).bind(9, opt_number("threshold")).exec();
    wrote_rows(b, static_cast<size_t>(sqlite3_changes(store_.handle())));
    track(run, std::nullopt);
  } else if (ty == "run_start") {
    const int64_t run = file_run(b);
    std::optional<std::string> config;
    if (const json* c = field(j, "config"); c && !c->is_null()) config = c->dump();
    const auto host = opt_string("host");
    const auto resumed = opt_step("resumed_from_step");
    run_start_.bind(1, run).bind(2, config).bind(3, host).bind(4, opt_string("device"));
    run_start_.bind(5, opt_int("world_size")).bind(6, opt_int("n_params"));
    run_start_.bind(7, opt_number("flops_per_token")).bind(8, opt_number("peak_flops"));
    run_start_.bind(9, opt_string("engine_version")).bind(10, attempt).bind(11, t);
    run_start_.bind(12, path_).bind(13, opt_int("pid")).exec();
    attempt_start_.bind(1, run).bind(2, attempt).bind(3, t).bind(4, resumed).bind(5, host).exec();
    // The host of every rank of a distributed run (schema version 5), for the charts' series names.
    if (const json* hs = field(j, "hosts"); hs && hs->is_array())
      Stmt(store_.handle(), "UPDATE runs SET hosts = ?2 WHERE id = ?1").bind(1, run).bind(2, hs->dump()).exec();
    // The run's card (schema version 9): device name, engine build, the dataset it read. A
    // field missing or of the wrong type keeps what the store has.
    {
      const json* ds = field(j, "dataset");
      if (ds && !ds->is_object()) ds = nullptr;
      auto ds_string = [&](const char* k) -> std::optional<std::string> {
        if (!ds) return std::nullopt;
        const auto it = ds->find(k);
        return it != ds->end() && it->is_string() ? std::optional<std::string>(it->get<std::string>()) : std::nullopt;
      };
      auto ds_count = [&](const char* k) -> std::optional<int64_t> {
        if (!ds) return std::nullopt;
        const auto it = ds->find(k);
        return it != ds->end() && it->is_number_unsigned() && it->get<uint64_t>() <= uint64_t(INT64_MAX)
                   ? std::optional<int64_t>(int64_t(it->get<uint64_t>())) : std::nullopt;
      };
      Stmt(store_.handle(),
           "UPDATE runs SET device_name = coalesce(?2, device_name), engine_build = coalesce(?3, engine_build),"
           " dataset_path = coalesce(?4, dataset_path), dataset_sha256 = coalesce(?5, dataset_sha256),"
           " dataset_train_tokens = coalesce(?6, dataset_train_tokens), dataset_val_tokens = coalesce(?7, dataset_val_tokens)"
           " WHERE id = ?1")
          .bind(1, run).bind(2, opt_string("device_name")).bind(3, opt_string("engine_build"))
          .bind(4, ds_string("path")).bind(5, ds_string("manifest_sha256")).bind(6, ds_count("train_tokens"))
          .bind(7, ds_count("val_tokens")).exec();
    }
    // The run's name (train --run-name; schema version 7), unless the store has one already (a
    // rename in the GUI wins over a resumed attempt's start). One the engine would refuse
    // (control characters, too long) is left out.
    if (const auto name = opt_string("name"); name && !name->empty()) {
      std::string problem;
      const std::string n = td::normalise_run_name(*name, &problem);
      if (problem.empty() && !n.empty())
        Stmt(store_.handle(), "UPDATE runs SET name = ?2 WHERE id = ?1 AND name = ''").bind(1, run).bind(2, n).exec();
      else if (!problem.empty())
        note(b, "run_start's \"name\" is refused (" + problem + "); the run keeps no name");
    }
    // A resumed attempt restarts after its checkpoint's step.
    track(run, resumed ? resumed : (attempt == 0 ? std::optional<int64_t>(0) : std::nullopt));
  } else if (ty == "run_end") {
    const auto status = opt_string("status");
    if (!status || status->empty()) throw Malformed{"\"run_end\" event without a \"status\" string"};
    const std::optional<int64_t> end_step = opt_step("step");  // refused before anything is written
    const int64_t run = file_run(b);
    run_end_.bind(1, run).bind(2, *status).bind(3, t).bind(4, opt_string("reason")).bind(5, attempt).exec();
    const bool counts = sqlite3_changes(store_.handle()) > 0;
    attempt_end_.bind(1, run).bind(2, attempt).bind(3, t).bind(4, *status).exec();
    if (counts) track(run, end_step);
  } else {
    ++b.stats.ignored;  // a type from a newer engine: ignored, as events.md asks
    if (warned(b, ty.substr(0, kMaxNameInMessage)))
      note(b, "unknown event type " + quoted_name(ty) + " (from a newer engine?); its lines are ignored");
    return;
  }
  // Fields this build does not know are ignored (events.md), the rest of the line kept.
  bool any = rank_unknown;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known_field(ty, it.key())) {
      note_unknown_field(b, ty, it.key());
      any = true;
    }
  b.stats.unknown_fields += any;
}

bool Ingester::warned(Batch& b, const std::string& key) {
  if (warned_.count(key) || b.warned.count(key)) return false;
  if (warned_.size() + b.warned.size() >= kMaxWarned) return false;  // a hostile file's millionth name
  b.warned.insert(key);
  return true;
}

void Ingester::note(Batch& b, const std::string& why) {
  if (b.stats.messages.size() < kMaxMessages)
    b.stats.messages.push_back(path_ + ":" + std::to_string(b.line_no) + ": " + why);
}

void Ingester::note_unknown_field(Batch& b, std::string_view type, std::string_view key) {
  const std::string k = std::string(type.substr(0, kMaxNameInMessage)) + "." + std::string(key.substr(0, kMaxNameInMessage));
  if (warned(b, k))
    note(b, "unknown field " + quoted_name(key) + " in a " + quoted_name(type) +
                " event (from a newer engine?); the field is ignored, the rest of the line kept");
}

IngestStats Ingester::poll(size_t max_lines) {
  if (max_lines == 0) max_lines = 1;
  prepare();
  names_.clear();  // another connection may have changed the store since the last batch
  step_ids_.fill(-1);
  rank_ids_.fill(-1);
  sqlite3* db = store_.handle();
  Batch b;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(opts_.batch_seconds > 0 ? opts_.batch_seconds : 1e9);

  Transaction tx(db);
  lod_.begin(db);  // drops what a rolled-back batch left
  appends_.clear();
  int64_t offset = 0, skipped_total = 0, foreign_total = 0;
  bool long_line = false;  // the offset is inside a line longer than kMaxEventLineBytes
  std::optional<int64_t> recorded;
  {
    Stmt st(db, "SELECT byte_offset, lines, skipped, run, foreign_lines, long_line FROM event_files WHERE path = ?1");
    st.bind(1, path_);
    if (st.step()) {
      offset = st.col_int(0);
      b.line_no = st.col_int(1);
      skipped_total = st.col_int(2);
      recorded = st.col_opt_int(3);
      foreign_total = st.col_int(4);
      long_line = st.col_int(5) != 0;
    }
  }
  resolve_file_run(recorded);
  b.stats.offset = offset;

  // Never through a link (the engine refuses to write one: a link there is planted, and would
  // make the store read whatever file it names): O_NOFOLLOW. Only a regular file: O_NONBLOCK so
  // that a FIFO planted there cannot block the open, then fstat, then blocking reads again.
  const int fd = ::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) {
      b.stats.at_eof = true;
      return b.stats;  // not written yet: nothing to do
    }
    if (errno == ELOOP)
      throw Error("events file '" + path_ + "' is a symbolic link: TrainDeck never reads a run's events through a link; "
                  "delete the link (the run's own events file is never one)");
    fail_errno("cannot open events file", path_);
  }
  struct stat sb {};
  if (::fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    const bool regular = S_ISREG(sb.st_mode);
    ::close(fd);
    if (!regular)
      throw Error("events file '" + path_ + "' is not a regular file (a FIFO, device or folder): TrainDeck reads a run's events "
                  "only from the file the engine writes; delete what is there");
    fail_errno("cannot examine events file", path_);
  }
  std::unique_ptr<std::FILE, FileCloser> f(::fdopen(fd, "rb"));
  if (!f) {
    ::close(fd);
    fail_errno("cannot open events file", path_);
  }
  TD_CHECK(sb.st_size >= offset,
           "events file '" + path_ + "' is " + std::to_string(sb.st_size) +
               " bytes, shorter than the " + std::to_string(offset) +
               " bytes already ingested: it was truncated or replaced since; its rows already in "
               "the store are kept, and a new run in that directory is recorded from its start");
  if (fseeko(f.get(), offset, SEEK_SET) != 0) fail_errno("cannot seek in events file", path_);

  std::string buf;     // unconsumed bytes: buf[pos..] start at file offset `offset`
  size_t pos = 0;
  bool eof = false, stop = false;
  auto consume = [&](size_t len) {
    pos += len;
    offset += static_cast<int64_t>(len);
    b.stats.bytes += len;
  };
  auto end_line = [&] {
    ++b.stats.lines;
    if (b.stats.lines >= max_lines || ((b.stats.lines & 63) == 0 && std::chrono::steady_clock::now() >= deadline))
      stop = true;
  };
  while (!stop) {
    // Consume complete lines already in the buffer.
    while (!stop) {
      const char* base = buf.data() + pos;
      const void* nl = std::memchr(base, '\n', buf.size() - pos);
      if (!nl) {
        // No end in sight: a line already longer than the cap is skipped as it is read, never
        // held whole (its end may come in a later poll, or after a restart: event_files.long_line).
        if (long_line || buf.size() - pos > kMaxEventLineBytes) {
          if (!long_line) ++b.line_no;
          long_line = true;
          consume(buf.size() - pos);
        }
        break;
      }
      const char* end = static_cast<const char*>(nl);
      const size_t len = static_cast<size_t>(end - base) + 1;
      if (long_line || len - 1 > kMaxEventLineBytes) {
        if (!long_line) ++b.line_no;
        long_line = false;
        ++b.stats.skipped;
        note(b, "line longer than " + std::to_string(kMaxEventLineBytes) + " bytes (no event is); line skipped");
        consume(len);
        end_line();
        continue;
      }
      ++b.line_no;
      try {
        process_line(base, end, b);
      } catch (const Malformed& m) {
        ++b.stats.skipped;
        note(b, m.why + "; line skipped");
      } catch (const Foreign& m) {
        ++b.stats.skipped;
        ++b.stats.foreign;
        note(b, m.why + "; line skipped");
      }
      consume(len);
      end_line();
    }
    if (stop || eof) break;
    buf.erase(0, pos);
    pos = 0;
    const size_t have = buf.size();
    buf.resize(have + kReadChunk);
    const size_t got = std::fread(buf.data() + have, 1, kReadChunk, f.get());
    buf.resize(have + got);
    if (got < kReadChunk) {
      if (std::ferror(f.get())) fail_errno("cannot read events file", path_);
      eof = true;
    }
  }
  b.stats.at_eof = eof && std::memchr(buf.data() + pos, '\n', buf.size() - pos) == nullptr;
  b.stats.partial_line = b.stats.at_eof && (pos < buf.size() || long_line);
  b.stats.offset = offset;
  if (b.stats.bytes == 0) return b.stats;  // nothing consumed: roll back the empty transaction

  flush_appends();
  lod_.flush();  // the level of detail commits with the rows it summarises
  // runs.attempts is raised by run_start alone: a line of an attempt that never started counts none.
  Stmt prog(db, "UPDATE runs SET last_step = coalesce(?2, last_step) WHERE id = ?1");
  for (const auto& [run, last] : b.progress) prog.bind(1, run).bind(2, last).exec();
  Stmt off(db,
           "INSERT INTO event_files(path, run, byte_offset, lines, skipped, updated, foreign_lines, long_line)"
           " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(path) DO UPDATE SET"
           " run = coalesce(excluded.run, event_files.run), byte_offset = excluded.byte_offset,"
           " lines = excluded.lines, skipped = excluded.skipped, updated = excluded.updated,"
           " foreign_lines = excluded.foreign_lines, long_line = excluded.long_line");
  off.bind(1, path_);
  if (file_run_key_ >= 0) off.bind(2, file_run_key_); else off.bind_null(2);
  off.bind(3, offset).bind(4, b.line_no).bind(5, skipped_total + static_cast<int64_t>(b.stats.skipped));
  off.bind(6, now_seconds()).bind(7, foreign_total + static_cast<int64_t>(b.stats.foreign)).bind(8, int64_t(long_line)).exec();
  tx.commit();
  warned_.insert(b.warned.begin(), b.warned.end());
  b.stats.batches = 1;
  return b.stats;
}

IngestStats Ingester::poll_all() {
  IngestStats total;
  for (;;) {
    const IngestStats s = poll(opts_.batch_lines);
    total += s;
    if (s.at_eof || s.lines == 0) break;
  }
  return total;
}

int64_t Ingester::offset() {
  Stmt st(store_.handle(), "SELECT byte_offset FROM event_files WHERE path = ?1");
  st.bind(1, path_);
  return st.step() ? st.col_int(0) : 0;
}

void Ingester::reset() {
  Stmt st(store_.handle(),
          "UPDATE event_files SET byte_offset = 0, lines = 0, skipped = 0, foreign_lines = 0, long_line = 0 WHERE path = ?1");
  st.bind(1, path_).exec();
}

}  // namespace td::store
