// A fast path for the engine's hot event lines: a JSON object whose values are all scalars
// (numbers, strings without escapes or non-ASCII bytes, true, false, null).
//
// scan_flat() accepts only lines that are valid JSON of that shape and reports false for
// anything else (nested values, escapes, bad syntax), so the caller can fall back to a full
// parser (nlohmann-json) and get identical results and error messages. It is ~10x faster than
// building a DOM because it allocates nothing: keys and strings are views into the line.
#pragma once

#include <cstdint>
#include <string_view>

namespace td::store {

struct FlatValue {
  enum Kind { Null, Bool, Int, Float, String } kind = Null;
  int64_t i = 0;        // Int (and Bool: 0/1)
  double d = 0;         // Int and Float, as a double
  std::string_view s;   // String, without its quotes
  bool is_number() const { return kind == Int || kind == Float; }
};

/// A flat object: at most kMaxFields members, in line order; a repeated key's last value wins
/// in get(), as in nlohmann-json.
struct FlatObject {
  static constexpr int kMaxFields = 32;
  std::string_view key[kMaxFields];
  FlatValue value[kMaxFields];
  int n = 0;
  /// The member `k`, or nullptr.
  const FlatValue* get(std::string_view k) const {
    for (int i = n - 1; i >= 0; --i)
      if (key[i] == k) return &value[i];
    return nullptr;
  }
};

/// Parses [begin, end) as a flat JSON object into `out`. Returns false (out unspecified) when
/// the text is not exactly that: not JSON, nested, escaped or non-ASCII strings, integers
/// outside int64, more than kMaxFields members. Never throws.
bool scan_flat(const char* begin, const char* end, FlatObject& out);

}  // namespace td::store
