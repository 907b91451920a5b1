// RAII wrappers over the SQLite C API (see sqlite.h).
#include "store/sqlite.h"

#include "engine/common/error.h"

namespace td::store {

void throw_sqlite(sqlite3* db, const std::string& what) {
  std::string msg = what + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
  if (db) msg += " (SQLite code " + std::to_string(sqlite3_extended_errcode(db)) + ")";
  const int code = db ? (sqlite3_errcode(db) & 0xff) : SQLITE_NOMEM;
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    msg += "; another process holds the store's write lock for too long, retry later";
  else if (code == SQLITE_FULL)
    msg += "; the disk holding the store is full, free some space";
  else if (code == SQLITE_READONLY || code == SQLITE_CANTOPEN || code == SQLITE_PERM)
    msg += "; check that the store file and its folder are writable";
  else if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
    msg += "; the file is not a valid TrainDeck store: choose another (--db, or File > Open store)";
  throw Error(msg);
}

Stmt::Stmt(sqlite3* db, std::string_view sql) : db_(db) {
  if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                         &st_, nullptr) != SQLITE_OK)
    throw_sqlite(db, "preparing SQL '" + std::string(sql) + "'");
}

Stmt::~Stmt() { sqlite3_finalize(st_); }

Stmt::Stmt(Stmt&& o) noexcept : db_(o.db_), st_(o.st_) { o.st_ = nullptr; }

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(st_);
    db_ = o.db_;
    st_ = o.st_;
    o.st_ = nullptr;
  }
  return *this;
}

static void check_bind(sqlite3* db, int rc) {
  if (rc != SQLITE_OK) throw_sqlite(db, "binding a SQL parameter");
}

Stmt& Stmt::bind(int i, int64_t v) {
  check_bind(db_, sqlite3_bind_int64(st_, i, v));
  return *this;
}
Stmt& Stmt::bind(int i, double v) {
  check_bind(db_, sqlite3_bind_double(st_, i, v));
  return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
  check_bind(db_, sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  return *this;
}
Stmt& Stmt::bind_null(int i) {
  check_bind(db_, sqlite3_bind_null(st_, i));
  return *this;
}

bool Stmt::step() {
  const int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const std::string sql = sqlite3_sql(st_) ? sqlite3_sql(st_) : "";
  sqlite3_reset(st_);
  throw_sqlite(db_, "running SQL '" + sql + "'");
}

void Stmt::exec() {
  while (step()) {
  }
  sqlite3_reset(st_);
}

void Stmt::reset() { sqlite3_reset(st_); }

bool Stmt::is_null(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
int64_t Stmt::col_int(int col) const { return sqlite3_column_int64(st_, col); }
double Stmt::col_double(int col) const { return sqlite3_column_double(st_, col); }
std::string Stmt::col_text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, col));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(st_, col))) : std::string();
}
std::optional<int64_t> Stmt::col_opt_int(int col) const {
  if (is_null(col)) return std::nullopt;
  return col_int(col);
}
std::optional<double> Stmt::col_opt_double(int col) const {
  if (is_null(col)) return std::nullopt;
  return col_double(col);
}

void exec_sql(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    sqlite3_free(err);
    throw_sqlite(db, std::string("running SQL '") + sql + "'");
  }
}

Transaction::Transaction(sqlite3* db) : db_(db) { exec_sql(db, "BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  exec_sql(db_, "COMMIT");
  open_ = false;
}

}  // namespace td::store
