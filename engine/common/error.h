// Errors the engine raises, and the checks that raise them.
//
// Every error a user can cause (a config, a corpus, a file) is a td::Error whose message says
// what was wrong and what to do. System calls go through TD_CHECK_ERRNO so the message carries
// the call, the path and strerror(errno).
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace td {

/// A user-facing error: the message is printed as is by the CLI (exit code 1).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

/// A config error: `path` is the JSON field path ("train.lr"), the message names value and range.
class ConfigError : public Error {
 public:
  ConfigError(std::string path, const std::string& msg)
      : Error(path + ": " + msg), path_(std::move(path)) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

[[noreturn]] inline void fail(const std::string& msg) { throw Error(msg); }

/// Throws td::Error("<what> '<path>': <strerror>") with the current errno.
[[noreturn]] inline void fail_errno(const std::string& what, const std::string& path) {
  throw Error(what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace td

/// Internal invariant check (a bug, not a user error): reports file and line.
#define TD_ASSERT(cond)                                                                       \
  do {                                                                                        \
    if (!(cond))                                                                              \
      throw std::logic_error(std::string("internal error: ") + #cond + " at " + __FILE__ + \
                             ":" + std::to_string(__LINE__));                                 \
  } while (0)

/// User-facing check: throws td::Error(msg) when cond is false.
#define TD_CHECK(cond, msg)               \
  do {                                    \
    if (!(cond)) throw ::td::Error(msg); \
  } while (0)
