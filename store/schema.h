// The store's schema as a list of numbered migrations, and the code that applies them.
//
// The schema version lives in PRAGMA user_version. Version 0 is an empty file. Migration N
// takes a store from version N-1 to N; all pending steps run in ONE transaction, so a failed
// step leaves the file exactly as it was. A store newer than this build is refused.
#pragma once

#include <sqlite3.h>

#include <span>
#include <string>

namespace td::store {

/// One migration step: `sql` (one or more statements), then `fill` when set (data the step
/// derives in C++, e.g. the level of detail of existing rows; throws td::Error on failure),
/// take the store to `version`, inside the migration's transaction.
struct Migration {
  int version;
  const char* sql;
  void (*fill)(sqlite3* db) = nullptr;
};

/// The migrations this build knows, in order (versions 1, 2, ...).
std::span<const Migration> migrations();

/// The schema version this build writes: migrations().back().version.
int schema_version();

/// Reads PRAGMA user_version. Throws td::Error on a SQLite error.
int read_user_version(sqlite3* db);

/// Brings `db` to the last version of `steps` (default: migrations()), in one IMMEDIATE
/// transaction. `path` names the file in messages. Throws td::Error when the file's version is
/// newer than the last step ("use a newer TrainDeck") or when a step fails (nothing applied).
/// Returns the version the file had before.
int migrate(sqlite3* db, const std::string& path, std::span<const Migration> steps = migrations());

}  // namespace td::store
