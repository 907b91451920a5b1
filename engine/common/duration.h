// A duration for people reading a terminal: the one formatter of the engine's progress lines
// and the `runs` tables (store/format.h forwards to it). Header-only; no Qt.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace td {

/// Seconds as "1h02m03s", "4m05s" or "6.5s" (below a minute, one decimal; else whole seconds,
/// rounded). Negative or non-finite seconds give "?".
inline std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  char buf[48];
  if (seconds < 59.95) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  } else {
    const long long s = std::llround(seconds);
    if (s >= 3600)
      std::snprintf(buf, sizeof buf, "%lldh%02lldm%02llds", s / 3600, (s / 60) % 60, s % 60);
    else
      std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  }
  return buf;
}

}  // namespace td
