// Run ids: what a valid one looks like. A run id names a folder (runs/<run_id>, the GUI's and a
// node's run folders) and a row of the store, so one that comes from a file (a checkpoint's
// trainer.json, an events line) is checked exactly as --run-id is. New ids come from
// td::new_run_id() below, the one generator the engine, the workbench and every run target use.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>
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

/// A new run id: "YYYYmmdd-HHMMSS-xxxxxx", the UTC time (so ids sort by start time on every
/// machine and time zone) and 24 random bits from std::random_device (the kernel's getrandom:
/// two ids made in the same second on two machines differ). Always valid_run_id().
inline std::string new_run_id() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y%m%d-%H%M%S", &utc);
  std::random_device rd;
  char id[48];
  std::snprintf(id, sizeof id, "%s-%06x", when, static_cast<unsigned>(rd() & 0xFFFFFFu));
  return id;
}

/// A run's name (train --run-name, the GUI's Start run and Rename): free text for people
/// ("lr=1e-3, 6 layers"), shown instead of the id; the id stays the key. Returns `name` without
/// leading and trailing spaces, or throws nothing and sets *problem (non-empty) when it is
/// longer than 120 bytes or holds a control character (a newline, an escape: it is printed in
/// terminals and tables). An empty name means "no name" (the id is shown).
inline std::string normalise_run_name(std::string_view name, std::string* problem) {
  problem->clear();
  size_t b = 0, e = name.size();
  while (b < e && (name[b] == ' ' || name[b] == '\t')) ++b;
  while (e > b && (name[e - 1] == ' ' || name[e - 1] == '\t')) --e;
  const std::string_view n = name.substr(b, e - b);
  if (n.size() > 120) {
    *problem = "a run name is at most 120 bytes (this one has " + std::to_string(n.size()) + "): shorten it";
    return {};
  }
  for (unsigned char c : n)
    if (c < 0x20 || c == 0x7f) {
      *problem = "a run name cannot hold control characters (newlines, tabs inside, escapes): use plain text";
      return {};
    }
  return std::string(n);
}

}  // namespace td
