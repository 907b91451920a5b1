// Corpus discovery for prepare: walks input paths into a list of source files (internal to
// engine/data; prepare.h is the public entry point).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace td {

enum class SourceKind { text, jsonl };

/// One input file that will be read. bytes/mtime_ns come from stat at walk time.
struct SourceFile {
  std::string path;       // absolute, as reached (symlink names kept)
  SourceKind kind = SourceKind::text;
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
};

struct Corpus {
  std::vector<SourceFile> files;          // in input order, directories sorted by name
  std::vector<std::pair<std::string, std::string>> skipped;  // (path, reason)
  uint64_t total_bytes = 0;
};

/// Bytes sniffed at the start of a file to tell text from binary.
constexpr size_t kSniffBytes = 8192;

/// Why the first kSniffBytes of a file are not text ("" when they are): a NUL byte or invalid
/// UTF-8 (a multi-byte sequence cut by the end of the window is allowed).
std::string binary_reason(const char* head, size_t n);

/// Walks inputs (files and directories, recursively; symlinks followed, each directory and
/// each file (device+inode) taken once). Text: no extension, .txt, .md; documents per line:
/// .jsonl; a file named explicitly is text whatever its extension. Hidden entries (".name"),
/// binary files, other extensions, empty files and non-regular files inside directories are
/// skipped and listed. Throws td::Error for a missing input or an explicitly named file that
/// is binary, empty or not a regular file.
Corpus walk_inputs(const std::vector<std::string>& inputs);

}  // namespace td
