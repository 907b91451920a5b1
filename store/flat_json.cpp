// Fast scanner for flat JSON objects (see flat_json.h). Grammar: RFC 8259.
#include "store/flat_json.h"

#include <charconv>

namespace td::store {

namespace {

const char* skip_ws(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  return p;
}

// A string starting at p ('"'); plain ASCII without escapes only.
bool scan_string(const char*& p, const char* end, std::string_view& out) {
  const char* q = ++p;
  while (q < end && *q != '"') {
    const auto c = static_cast<unsigned char>(*q);
    if (c == '\\' || c < 0x20 || c >= 0x80) return false;  // escapes, control, UTF-8: full parser
    ++q;
  }
  if (q == end) return false;
  out = std::string_view(p, static_cast<size_t>(q - p));
  p = q + 1;
  return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// number = [ minus ] int [ frac ] [ exp ]; int = zero / ( digit1-9 *DIGIT )
bool scan_number(const char*& p, const char* end, FlatValue& v) {
  const char* start = p;
  const char* q = p;
  if (q < end && *q == '-') ++q;
  if (q == end || !is_digit(*q)) return false;
  if (*q == '0') {
    ++q;
  } else {
    while (q < end && is_digit(*q)) ++q;
  }
  bool is_float = false;
  if (q < end && *q == '.') {
    ++q;
    if (q == end || !is_digit(*q)) return false;
    while (q < end && is_digit(*q)) ++q;
    is_float = true;
  }
  if (q < end && (*q == 'e' || *q == 'E')) {
    ++q;
    if (q < end && (*q == '+' || *q == '-')) ++q;
    if (q == end || !is_digit(*q)) return false;
    while (q < end && is_digit(*q)) ++q;
    is_float = true;
  }
  if (is_float) {
    const auto r = std::from_chars(start, q, v.d);
    if (r.ec != std::errc() || r.ptr != q) return false;  // out of range: full parser decides
    v.kind = FlatValue::Float;
  } else {
    const auto r = std::from_chars(start, q, v.i);
    if (r.ec != std::errc() || r.ptr != q) return false;  // beyond int64
    v.d = static_cast<double>(v.i);
    v.kind = FlatValue::Int;
  }
  p = q;
  return true;
}

bool scan_literal(const char*& p, const char* end, std::string_view lit) {
  if (static_cast<size_t>(end - p) < lit.size() || std::string_view(p, lit.size()) != lit) return false;
  p += lit.size();
  return true;
}

}  // namespace

bool scan_flat(const char* begin, const char* end, FlatObject& out) {
  out.n = 0;
  const char* p = skip_ws(begin, end);
  if (p == end || *p != '{') return false;
  p = skip_ws(p + 1, end);
  if (p < end && *p == '}') {
    ++p;
  } else {
    for (;;) {
      if (out.n == FlatObject::kMaxFields || p == end || *p != '"') return false;
      std::string_view key;
      if (!scan_string(p, end, key)) return false;
      p = skip_ws(p, end);
      if (p == end || *p != ':') return false;
      p = skip_ws(p + 1, end);
      if (p == end) return false;
      FlatValue v;
      switch (*p) {
        case '"':
          if (!scan_string(p, end, v.s)) return false;
          v.kind = FlatValue::String;
          break;
        case 't':
          if (!scan_literal(p, end, "true")) return false;
          v.kind = FlatValue::Bool;
          v.i = 1;
          break;
        case 'f':
          if (!scan_literal(p, end, "false")) return false;
          v.kind = FlatValue::Bool;
          break;
        case 'n':
          if (!scan_literal(p, end, "null")) return false;
          break;
        default:
          if (!scan_number(p, end, v)) return false;  // also rejects '{' and '['
      }
      out.key[out.n] = key;
      out.value[out.n] = v;
      ++out.n;
      p = skip_ws(p, end);
      if (p == end) return false;
      if (*p == '}') {
        ++p;
        break;
      }
      if (*p != ',') return false;
      p = skip_ws(p + 1, end);
    }
  }
  return skip_ws(p, end) == end;
}

}  // namespace td::store
