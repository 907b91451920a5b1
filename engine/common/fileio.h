// Small POSIX file helpers with errors that name the file (td::Error).
//
// Files TrainDeck writes into a run folder, a store's folder or an export are opened through
// open_private_file(): the last path component is never followed when it is a symbolic link
// (O_NOFOLLOW), a file with other hard links or a non-regular file is refused, and new files get
// mode 0600; new folders get 0700 (create_private_dirs). A planted link therefore leaves what it
// points to untouched (docs/formats.md "Permissions and links").
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "engine/common/error.h"

namespace td {

/// Opens `path` for a file TrainDeck owns (a run's lock, events or log file, a checkpoint or
/// export file, a store), with O_NOFOLLOW | O_CLOEXEC added to `flags` (O_RDONLY / O_WRONLY /
/// O_RDWR, optionally O_CREAT, O_EXCL, O_APPEND, O_TRUNC); a created file gets mode 0600 (less
/// the umask). Refused with td::Error naming `what` and the path, before anything is written:
/// a symbolic link (even a dangling one: the file it names is not created), a file with other
/// hard links (writing would change the other name's file too; O_TRUNC is applied only after
/// this check), or anything but a regular file (a FIFO cannot block the open: it is opened
/// O_NONBLOCK, then the flag is cleared). Other errors: "cannot open <what> '<path>': <strerror>".
/// Returns the descriptor, owned by the caller.
inline int open_private_file(const std::string& path, int flags, const std::string& what) {
  const bool trunc = (flags & O_TRUNC) != 0;
  const int fd = ::open(path.c_str(), (flags & ~O_TRUNC) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0) {
    if (errno == ELOOP)
      fail(what + " '" + path + "' is a symbolic link: TrainDeck never follows a link there (writing would change the file it " +
           "points to); delete the link, or choose another folder");
    fail_errno("cannot open " + what, path);
  }
  struct stat st;
  std::string problem;
  if (::fstat(fd, &st) != 0) problem = std::string("cannot be examined (") + std::strerror(errno) + ")";
  else if (!S_ISREG(st.st_mode)) problem = "is not a regular file";
  else if (st.st_nlink > 1) problem = "has another hard link (writing would change the file of the other name too)";
  if (problem.empty() && ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
    problem = std::string("cannot be opened for blocking I/O (") + std::strerror(errno) + ")";
  if (problem.empty() && trunc && ::ftruncate(fd, 0) != 0) problem = std::string("cannot be truncated (") + std::strerror(errno) + ")";
  if (!problem.empty()) {
    ::close(fd);
    fail(what + " '" + path + "' " + problem + "; TrainDeck writes only files of its own there: delete it, or choose another folder");
  }
  return fd;
}

/// Creates `dir` and its missing parents, each new folder with mode 0700 (owner only; existing
/// folders keep their mode). Returns an empty error_code on success, or the error of the first
/// folder that could not be created (std::errc::not_a_directory when a file has that name).
inline std::error_code create_private_dirs(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (dir.empty()) return ec;
  const fs::path p = fs::path(dir).lexically_normal();
  fs::path at;
  for (const auto& part : p) {
    if (part.empty()) continue;  // a trailing separator
    at /= part;
    if (part == "." || part == "..") continue;
    struct stat st;
    bool made = false;
    for (int tries = 0; tries < 2 && !made; tries++) {
      if (::stat(at.c_str(), &st) == 0) {  // an existing folder, or a link to one
        if (!S_ISDIR(st.st_mode)) return std::make_error_code(std::errc::not_a_directory);
        made = true;
      } else if (::mkdir(at.c_str(), 0700) == 0) {
        made = true;
      } else if (errno != EEXIST) {  // EEXIST: made meanwhile by another process, look again
        return std::error_code(errno, std::generic_category());
      }
    }
    if (!made) return std::make_error_code(std::errc::file_exists);
  }
  return ec;
}

/// An owned file descriptor. Every failure throws td::Error naming the call and the path.
class File {
 public:
  /// kRead: an existing file (links are followed: a source may be a link, e.g. a Hugging Face
  /// cache). kWriteNew: a new file, mode 0600; refused when anything (a file, a link) already has
  /// the name (O_CREAT | O_EXCL | O_NOFOLLOW): checkpoint and export files are written into fresh
  /// temporary folders. kAppend: open_private_file(O_WRONLY | O_CREAT | O_APPEND).
  enum Mode { kRead, kWriteNew, kAppend };
  File(const std::string& path, Mode mode) : path_(path) {
    if (mode == kAppend) {
      fd_ = open_private_file(path, O_WRONLY | O_CREAT | O_APPEND, "the file");
      return;
    }
    int flags = mode == kRead ? O_RDONLY : (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW);
    fd_ = ::open(path.c_str(), flags | O_CLOEXEC, 0600);
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

/// fsyncs a directory so that a rename inside it is durable. Throws td::Error naming the folder
/// when it cannot be opened or the fsync fails (EIO: the rename may not survive a crash); a
/// filesystem that cannot fsync folders at all (EINVAL, as some network and FUSE filesystems
/// answer) counts as done: there is nothing more to wait for.
inline void sync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_errno("cannot open directory", dir);
  if (::fsync(fd) != 0 && errno != EINVAL) {
    const int e = errno;
    ::close(fd);
    errno = e;
    fail_errno("cannot fsync directory (is the disk failing or full?)", dir);
  }
  ::close(fd);
}

/// Writes `data` to `path` and fsyncs it: a new file with mode `mode` (less the umask) or an
/// existing regular file truncated first. The last component is never followed when it is a
/// symbolic link (O_NOFOLLOW). Throws td::Error naming the file when it cannot be created,
/// written (a full disk) or synced.
inline void write_file_synced(const std::string& path, std::string_view data, mode_t mode = 0600) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) fail_errno(errno == ELOOP ? "refusing to write through the symbolic link" : "cannot create", path);
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const int e = errno;
      ::close(fd);
      errno = e;
      fail_errno("cannot write (is the disk full?)", path);
    }
    done += (size_t)w;
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    fail_errno("cannot fsync", path);
  }
  ::close(fd);
}

}  // namespace td
