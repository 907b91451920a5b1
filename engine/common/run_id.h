// Run ids: what a valid one looks like. A run id names a folder (runs/<run_id>, the GUI's and a
// node's run folders) and a row of the store, so one that comes from a file (a checkpoint's
// trainer.json, an events line) is checked exactly as --run-id is. The generator is
// td::new_run_id() (engine/train/trainer.h).
#pragma once

#include <string_view>

namespace td {

/// What a run id must be, as the CLI's --run-id help and the errors say it.
constexpr const char* kRunIdRule = "a run id is 1-128 letters, digits, '.', '_' or '-', not starting with '.' or '-'";

/// True when id is 1-128 ASCII letters, digits, '.', '_' or '-' and does not start with '.' or
/// '-' (so it is never "", ".", "..", an option, or a path with a '/').
inline bool valid_run_id(std::string_view id) {
  if (id.empty() || id.size() > 128 || id[0] == '.' || id[0] == '-') return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace td
