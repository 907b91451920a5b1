// Text forms of numbers and times (see format.h).
#include "store/format.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "engine/common/duration.h"

namespace td::store {

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Whole numbers (steps, bytes, tokens) as integers, not 1.835008e+08.
  if (std::abs(v) < 9007199254740992.0 && v == std::trunc(v))
    return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  // Fixed notation where it stays short (timestamps, losses, learning rates), else scientific.
  const double a = std::abs(v);
  const auto fmt = a >= 1e-5 && a < 1e16 ? std::chars_format::fixed : std::chars_format::scientific;
  const auto res = std::to_chars(buf, buf + sizeof buf, v, fmt);
  return std::string(buf, res.ptr);
}

std::string format_short(std::optional<double> v, int digits, const char* empty) {
  if (!v) return empty;
  char buf[48];
  // Large magnitudes (tokens/s, bytes) read better as whole numbers than as 1.689e+05.
  if (std::abs(*v) >= std::pow(10.0, digits) && std::abs(*v) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", *v);
  else std::snprintf(buf, sizeof buf, "%.*g", digits, *v);
  return buf;
}

std::string format_time(std::optional<double> unix_s, const char* empty) {
  if (!unix_s) return empty;
  const time_t t = static_cast<time_t>(std::floor(*unix_s));
  tm tmv{};
  localtime_r(&t, &tmv);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tmv);
  return buf;
}

std::string format_duration(double seconds) { return td::format_duration(seconds); }

std::string format_tokens_per_s(std::optional<double> tokens_per_s, const char* empty) {
  if (!tokens_per_s || !std::isfinite(*tokens_per_s)) return empty;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f", *tokens_per_s);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace td::store
