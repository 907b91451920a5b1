// Text forms of numbers and times shared by CSV export and the runs tables.
#pragma once

#include <optional>
#include <string>

namespace td::store {

/// The shortest decimal text that reads back to exactly `v`: whole numbers below 2^53 as
/// integers ("183500800"), others in fixed notation when 1e-5 <= |v| < 1e16 ("0.0003",
/// "3.91", "1764470000.25"), else scientific ("1e-08"); "nan"/"inf"/"-inf" when not finite.
std::string format_number(double v);

/// `v` with `digits` significant digits (%.*g), or `empty` when there is no value.
std::string format_short(std::optional<double> v, int digits = 4, const char* empty = "-");

/// Unix seconds as local time "YYYY-mm-dd HH:MM:SS", or `empty` when there is no value.
std::string format_time(std::optional<double> unix_s, const char* empty = "-");

/// Seconds as "1h02m03s", "4m05s" or "6.5s" (td::format_duration, engine/common/duration.h).
std::string format_duration(double seconds);

/// A run's tokens/s (Store::run_throughput) as every view prints it: whole tokens per second
/// without separators, "11748"; `empty` when there is no value. The run page, `runs list`,
/// `runs show`, the sidebar and Compare all print it with this, so one run shows one number.
std::string format_tokens_per_s(std::optional<double> tokens_per_s, const char* empty = "-");

/// `s` quoted for CSV (RFC 4180) when it holds a comma, quote, CR or LF; as is otherwise.
std::string csv_field(const std::string& s);

}  // namespace td::store
