// Small POSIX file helpers with errors that name the file (td::Error).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include "engine/common/error.h"

namespace td {

/// An owned file descriptor. Every failure throws td::Error naming the call and the path.
class File {
 public:
  enum Mode { kRead, kWriteNew, kAppend };
  File(const std::string& path, Mode mode) : path_(path) {
    int flags = mode == kRead ? O_RDONLY : mode == kWriteNew ? (O_WRONLY | O_CREAT | O_TRUNC) : (O_WRONLY | O_CREAT | O_APPEND);
    fd_ = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    if (fd_ < 0) fail_errno(mode == kRead ? "cannot open" : "cannot create", path);
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }
  uint64_t size() const {
    struct stat st;
    if (fstat(fd_, &st) != 0) fail_errno("cannot stat", path_);
    return (uint64_t)st.st_size;
  }
  void write_all(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) fail_errno("cannot write", path_);
      p += w;
      n -= (size_t)w;
    }
  }
  void pread_all(void* data, size_t n, uint64_t offset) const {
    char* p = static_cast<char*>(data);
    while (n > 0) {
      ssize_t r = ::pread(fd_, p, n, (off_t)offset);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail_errno("cannot read", path_);
      if (r == 0) fail("'" + path_ + "' is truncated (unexpected end of file)");
      p += r;
      n -= (size_t)r;
      offset += (uint64_t)r;
    }
  }
  void sync() {
    if (::fsync(fd_) != 0) fail_errno("cannot fsync", path_);
  }

 private:
  std::string path_;
  int fd_ = -1;
};

/// Whether `name` is a plain file name, safe to join to a folder: not empty, not "." or "..",
/// no "/" and no NUL. For names read from files or nodes (a manifest's shard, a listing's file).
inline bool is_plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

/// fsyncs a directory so that a rename inside it is durable.
inline void sync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_errno("cannot open directory", dir);
  ::fsync(fd);
  ::close(fd);
}

}  // namespace td
