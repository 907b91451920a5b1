// Thin RAII wrappers over the SQLite C API: a connection, a prepared statement, a transaction.
//
// Every failing SQLite call throws td::Error naming the call, the SQL (or the file) and
// SQLite's message. None of these types is thread-safe: one connection per thread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace td::store {

/// Throws td::Error("<what>: <sqlite message> (<extended code>)") for connection `db`.
[[noreturn]] void throw_sqlite(sqlite3* db, const std::string& what);

/// A prepared statement. Bind indices are 1-based, column indices 0-based (SQLite's).
class Stmt {
 public:
  Stmt() = default;
  /// Prepares `sql` on `db` (persistent: meant to be reused). Throws td::Error on a SQL error.
  Stmt(sqlite3* db, std::string_view sql);
  ~Stmt();
  Stmt(Stmt&& o) noexcept;
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  explicit operator bool() const { return st_ != nullptr; }

  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view v);  // copied (SQLITE_TRANSIENT)
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Stmt& bind_null(int i);
  template <class T>
  Stmt& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }

  /// Steps once: true when a row is available, false when done. Throws td::Error on failure.
  bool step();
  /// Steps a statement that returns no rows, then resets it (bindings are kept).
  void exec();
  /// Resets the statement so it can run again; bindings are kept.
  void reset();

  bool is_null(int col) const;
  int64_t col_int(int col) const;
  double col_double(int col) const;
  std::string col_text(int col) const;  // "" for NULL
  std::optional<int64_t> col_opt_int(int col) const;
  std::optional<double> col_opt_double(int col) const;

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* st_ = nullptr;
};

/// Runs one or more SQL statements that return no rows (sqlite3_exec). Throws td::Error.
void exec_sql(sqlite3* db, const char* sql);

/// A write transaction: BEGIN IMMEDIATE on construction (takes the write lock at once, waiting
/// up to the busy timeout), ROLLBACK on destruction unless commit() was called.
class Transaction {
 public:
  explicit Transaction(sqlite3* db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  /// COMMIT. Throws td::Error (and leaves the transaction to roll back) on failure.
  void commit();

 private:
  sqlite3* db_;
  bool open_ = true;
};

}  // namespace td::store
