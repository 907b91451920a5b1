// Remote-run steps for the GUI (remote_ops.h).
#include "gui/runs/remote_ops.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "engine/common/error.h"
#include "engine/common/fileio.h"
#include "remote/bundle.h"

namespace td::gui::remote_ops {
namespace fs = std::filesystem;
using td::remote::ExecOptions;
using td::remote::ExecResult;
using td::remote::Session;

namespace {

std::string join(const std::string& dir, const std::string& rel) {
  return dir.empty() || dir.back() == '/' ? dir + rel : dir + "/" + rel;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

fs::path cached_bundle(const fs::path& engine_binary, const fs::path& cache_dir, bool* built) {
  if (built) *built = false;
  std::error_code ec;
  const fs::path bin = fs::canonical(engine_binary, ec);
  if (ec) throw td::Error("the engine binary " + engine_binary.string() + " is missing: build traindeck-engine");
  const auto size = fs::file_size(bin);
  const auto mtime = fs::last_write_time(bin).time_since_epoch().count();
  const std::string identity = bin.string() + "\n" + std::to_string(size) + "\n" + std::to_string(mtime);
  char key[17];
  std::snprintf(key, sizeof key, "%016zx", std::hash<std::string>{}(identity));
  const fs::path dir = cache_dir / key;

  std::lock_guard<std::mutex> lock(cache_mutex());
  if (fs::exists(dir / "manifest.json")) {
    try {
      td::remote::read_bundle_manifest(dir);
      return dir;
    } catch (const td::Error&) {
      // damaged: build it again below
    }
  }
  fs::create_directories(cache_dir);
  const fs::path tmp = cache_dir / (std::string(key) + ".tmp");
  fs::remove_all(tmp, ec);
  td::remote::make_bundle(bin, tmp);
  // Older bundles (another engine build) are no longer used.
  for (const auto& e : fs::directory_iterator(cache_dir))
    if (e.path() != tmp) fs::remove_all(e.path(), ec);
  fs::rename(tmp, dir);
  if (built) *built = true;
  return dir;
}

std::string fetch_log(Session& s, const std::string& remote_run_dir, uint64_t offset, uint64_t max_bytes,
                      bool* shorter) {
  if (shorter) *shorter = false;
  ExecOptions eo;
  eo.max_output = max_bytes + 1;
  eo.timeout_ms = 30000;
  ExecResult r = s.exec({"sh", "-c",
                         "[ -f \"$1\" ] || exit 3; [ \"$(stat -c %s -- \"$1\")\" -ge \"$2\" ] || exit 4; "
                         "tail -c +\"$(($2 + 1))\" -- \"$1\" | head -c \"$3\"",
                         "sh", join(remote_run_dir, "engine.log"), std::to_string(offset), std::to_string(max_bytes)},
                        eo);
  if (r.exit_status == 3) return {};
  if (r.exit_status == 4) {
    if (shorter) *shorter = true;
    return {};
  }
  if (r.exit_status != 0)
    throw td::Error(s.where() + ": reading engine.log on the node failed (exit " + std::to_string(r.exit_status) +
                    "): " + trim(r.err));
  if (r.out.size() > max_bytes) r.out.resize(max_bytes);
  return r.out;
}

void write_run_file(const std::filesystem::path& path, const std::string& text) {
  if (const std::error_code ec = td::create_private_dirs(path.parent_path().string()))
    throw td::Error("cannot create the run folder " + path.parent_path().string() + " (" + ec.message() +
                    "): check that the runs folder is writable");
  const std::string tmp = path.string() + ".tmp";
  ::unlink(tmp.c_str());  // a stale one, or a link planted there: the name itself goes
  const int fd = td::open_private_file(tmp, O_WRONLY | O_CREAT | O_EXCL, "run file");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw td::Error("cannot write " + tmp + ": check that the runs folder is writable and not full");
    }
    done += size_t(n);
  }
  ::close(fd);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw td::Error("cannot write " + path.string() + " (" + ec.message() + ")");
}

std::string read_run_file(const std::filesystem::path& path, const std::string& what) {
  int fd = -1;
  try {
    fd = td::open_private_file(path.string(), O_RDONLY, "run file");
  } catch (const td::Error& e) {
    throw td::Error("cannot read " + path.string() + ": " + what + " (" + e.what() + ")");
  }
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  ::close(fd);
  return out;
}

}  // namespace td::gui::remote_ops
