// Shared by the fuzz targets (tests/fuzz/README.md). A parser may refuse an input with td::Error
// (that is its job: a message that says what is wrong); any other exception, a crash, a
// sanitizer report or a broken invariant (TD_FUZZ_REQUIRE) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/common/error.h"

#define TD_FUZZ_REQUIRE(cond)                                                                  \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "fuzz invariant broken: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)

namespace tdfuzz {

inline std::string_view text(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// An independent check of what td::is_plain_file_name promises (engine/common/fileio.h).
inline bool plain_name(const std::string& s) {
  if (s.empty() || s == "." || s == "..") return false;
  for (char c : s)
    if (c == '/' || c == '\0') return false;
  return true;
}

}  // namespace tdfuzz
