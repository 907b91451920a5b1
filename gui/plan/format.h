// How the designer writes the planner's numbers: counts, bytes, FLOPs, rates and durations.
// Qt Core only; pure functions, any thread.
#pragma once

#include <QString>

#include <cstdint>

namespace td::gui {

/// 124439808 -> "124,439,808" (comma groups of three, as the papers print parameter counts).
QString formatCount(uint64_t n);
/// A count in SI units: 124439808 -> "124.4 M", 950 -> "950", 1.5e9 -> "1.50 G".
QString formatSi(double v);
/// Bytes in binary units: 1536 -> "1.5 KiB", 497759232 -> "474.7 MiB", >= 1 GiB -> "1.39 GiB".
QString formatBytes(uint64_t bytes);
/// A duration in seconds with a unit that fits it. Below a second, three significant digits of
/// ms, µs or ns: 0.0354 -> "35.4 ms", 8.12e-4 -> "812 µs", 4.17e-9 -> "4.17 ns" (smaller still
/// stays in ns); 1 to 10 s with one decimal: 4.24 -> "4.2 s"; then the two largest units:
/// 42 -> "42 s", 754 -> "12 min 34 s", 12300 -> "3 h 25 min", 190000 -> "2 d 4 h".
/// 0 -> "0 s"; negative or non-finite -> "?".
QString formatDuration(double seconds);

}  // namespace td::gui
