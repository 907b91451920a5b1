#include "engine/checkpoint/keep.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "engine/common/error.h"

namespace td {

int checkpoint_step_of_name(const std::string& name) {
  if (name.size() != 13 || name.rfind("step_", 0) != 0) return -1;
  int step = 0;
  for (size_t i = 5; i < name.size(); i++) {
    if (name[i] < '0' || name[i] > '9') return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

std::string checkpoint_dir_of(const std::string& root, int step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08d", step);
  return root + "/" + buf;
}

std::string checkpoint_keep_marker(const std::string& root, int step) { return checkpoint_dir_of(root, step) + ".keep"; }

bool checkpoint_is_kept(const std::string& root, int step) {
  struct stat st;
  return ::lstat(checkpoint_keep_marker(root, step).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void set_checkpoint_kept(const std::string& root, int step, bool keep) {
  const std::string marker = checkpoint_keep_marker(root, step);
  struct stat st;
  const bool there = ::lstat(marker.c_str(), &st) == 0;
  if (there && S_ISDIR(st.st_mode))
    fail("'" + marker + "' is a directory, not a keep marker; remove it by hand to mark or unmark the checkpoint");
  if (!keep) {
    if (there && ::unlink(marker.c_str()) != 0 && errno != ENOENT) fail_errno("cannot remove the keep marker", marker);
    return;
  }
  const std::string dir = marker.substr(0, marker.size() - 5);  // without ".keep"
  struct stat ds;
  if (::lstat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode))
    fail("there is no checkpoint directory '" + dir + "' to keep (it was pruned or deleted, or is a symbolic link)");
  if (there && S_ISREG(st.st_mode)) return;
  if (there && ::unlink(marker.c_str()) != 0) fail_errno("cannot replace the non-file keep marker", marker);
  const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) fail_errno("cannot create the keep marker", marker);
  ::close(fd);
}

}  // namespace td
