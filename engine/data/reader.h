// Streaming readers for prepare: a file's bytes with their crc32, its lines, JSONL documents.
// Internal to engine/data. Memory: a fixed buffer (4 MiB, or the longest allowed line).
#pragma once

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/data/corpus.h"

namespace td {

constexpr size_t kMaxTextLine = 1 << 20;  // longer text lines are cut (at a space if any)

/// Where to cut the text b[0, n) (n > lim >= 1) so that its first piece holds at most lim bytes:
/// at the last space in b[1, lim] (the space starts the next piece, as sentencepiece's pieces
/// begin with it), else at the last UTF-8 character boundary in [1, lim] (never inside a
/// multi-byte character). Returns the cut, in [1, lim]. Reads b[0..lim].
inline size_t long_line_cut(const char* b, size_t lim) {
  for (size_t i = lim; i >= 1; --i)
    if (b[i] == ' ') return i;
  size_t cut = lim;
  while (cut > 1 && (static_cast<unsigned char>(b[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

// Streams the first f.bytes bytes of a file; keeps the crc32 of what it read.
class FileReader {
 public:
  explicit FileReader(const SourceFile& f) : f_(f) {
    fd_ = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail_errno("cannot open input", f.path);
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
    crc_ = static_cast<uint32_t>(::crc32(0L, Z_NULL, 0));
  }
  ~FileReader() { ::close(fd_); }
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  /// Reads up to n bytes; 0 at the end. Throws if the file shrank since it was listed.
  size_t read(char* p, size_t n) {
    n = static_cast<size_t>(std::min<uint64_t>(n, f_.bytes - pos_));
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd_, p + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail_errno("cannot read input", f_.path);
      if (r == 0)
        fail("input '" + f_.path + "' shrank while it was read (" + std::to_string(pos_ + got) +
             " of " + std::to_string(f_.bytes) + " bytes): run prepare again when it is not being written");
      got += static_cast<size_t>(r);
    }
    crc_ = static_cast<uint32_t>(::crc32(crc_, reinterpret_cast<const Bytef*>(p), static_cast<uInt>(got)));
    pos_ += got;
    // Drop what was read from the page cache: a 1 GB corpus should not push out the machine's.
    if (pos_ - dropped_ >= (64u << 20)) {
      ::posix_fadvise(fd_, static_cast<off_t>(dropped_), static_cast<off_t>(pos_ - dropped_), POSIX_FADV_DONTNEED);
      dropped_ = pos_;
    }
    return got;
  }
  uint32_t crc() const { return crc_; }

 private:
  const SourceFile& f_;
  int fd_ = -1;
  uint64_t pos_ = 0, dropped_ = 0;
  uint32_t crc_ = 0;
};

// Splits a FileReader's bytes into lines (each with its "\n"; the last may lack it).
// A line longer than max_line is cut (cut_long: at its last space, else at a UTF-8 boundary)
// or is an error.
class LineReader {
 public:
  LineReader(FileReader& r, const std::string& path, size_t max_line, bool cut_long)
      : r_(r), path_(path), max_line_(max_line), cut_long_(cut_long), buf_(std::max<size_t>(4 << 20, max_line + 1)) {}

  bool next(std::string_view& line, uint64_t& file_off) {
    for (;;) {
      char* b = buf_.data();
      if (const void* nl = std::memchr(b + begin_, '\n', end_ - begin_)) {
        size_t e = static_cast<size_t>(static_cast<const char*>(nl) - b) + 1;
        return take(e, line, file_off);
      }
      if (eof_) return begin_ < end_ && take(end_, line, file_off);
      if (end_ - begin_ > max_line_) {  // (long_line_cut reads the byte after the limit)
        if (!cut_long_)
          fail("input '" + path_ + "': a line at byte " + std::to_string(base_ + begin_) +
               " is longer than " + std::to_string(max_line_ >> 20) + " MiB: split the document");
        return take(begin_ + long_line_cut(b + begin_, max_line_), line, file_off);
      }
      if (begin_ > 0) {  // compact, then read more
        std::memmove(b, b + begin_, end_ - begin_);
        end_ -= begin_;
        base_ += begin_;
        begin_ = 0;
      }
      size_t got = r_.read(b + end_, buf_.size() - end_);
      if (got == 0) eof_ = true;
      end_ += got;
    }
  }

 private:
  bool take(size_t e, std::string_view& line, uint64_t& file_off) {
    line = std::string_view(buf_.data() + begin_, e - begin_);
    file_off = base_ + begin_;
    begin_ = e;
    return true;
  }
  FileReader& r_;
  const std::string& path_;
  size_t max_line_;
  bool cut_long_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  uint64_t base_ = 0;  // file offset of buf_[0]
  bool eof_ = false;
};

constexpr size_t kMaxJsonLine = 256u << 20;

// Reads the text of a JSONL line's "text" field; false for a blank line or empty text.
// Throws td::Error naming the file and `where` ("line 12") on bad JSON.
inline bool jsonl_text(std::string_view line, const std::string& path, const std::string& where,
                std::string& text) {
  size_t a = line.find_first_not_of(" \t\r\n");
  if (a == std::string_view::npos) return false;  // blank line
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const std::exception& e) {
    fail("input '" + path + "' " + where + " is not valid JSON (" +
         e.what() + "): each line of a .jsonl file must be an object with a \"text\" string");
  }
  if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
    fail("input '" + path + "' " + where + " has no \"text\" string: each line of a .jsonl file must be {\"text\": \"...\"}");
  text = j["text"].get<std::string>();
  return !text.empty();
}


}  // namespace td
