// Corpus discovery: directory walk, dedup, text/binary sniffing (corpus.h).
#include "engine/data/corpus.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "engine/common/error.h"
#include "engine/tokenizer/tokenizer.h"

namespace td {
namespace fs = std::filesystem;

std::string binary_reason(const char* head, size_t n) {
  const void* nul = std::memchr(head, 0, n);
  if (nul)
    return "binary (NUL byte at offset " +
           std::to_string(static_cast<const char*>(nul) - head) + ")";
  size_t bad = utf8_invalid_offset(head, n, /*allow_truncated_tail=*/true);
  if (bad != n) return "binary or not UTF-8 (invalid UTF-8 at offset " + std::to_string(bad) + ")";
  return "";
}

namespace {

using DevIno = std::pair<uint64_t, uint64_t>;

struct Walker {
  Corpus c;
  std::set<DevIno> dirs;
  std::map<DevIno, std::string> seen_files;  // (dev,ino) -> first path

  void skip(const std::string& path, const std::string& why) { c.skipped.emplace_back(path, why); }

  const std::string* seen(DevIno k) const {
    auto it = seen_files.find(k);
    return it == seen_files.end() ? nullptr : &it->second;
  }

  // Reads the head of a file and says why it is binary ("" when it is text).
  static std::string sniff(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail_errno("cannot open input", path);
    char head[kSniffBytes];
    ssize_t n = ::pread(fd, head, sizeof head, 0);
    ::close(fd);
    if (n < 0) fail_errno("cannot read input", path);
    return binary_reason(head, static_cast<size_t>(n));
  }

  void add_file(const std::string& path, const struct stat& st, bool named) {
    DevIno key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
    if (const std::string* first = seen(key)) {
      skip(path, "same file as " + *first + " (already included)");
      return;
    }
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
    SourceKind kind = SourceKind::text;
    bool known = ext.empty() || ext == ".txt" || ext == ".md";
    if (ext == ".jsonl") { kind = SourceKind::jsonl; known = true; }
    std::string bin = sniff(path);
    if (!known && !named) {
      skip(path, bin.empty() ? "extension '" + ext + "' is not a text type (text files are .txt, "
                               ".md, .jsonl or have no extension; name the file to include it)"
                             : bin);
      return;
    }
    if (!bin.empty()) {
      if (named)
        fail("input '" + path + "' is " + bin +
             ": prepare reads UTF-8 text (.txt, .md, no extension) and .jsonl; leave it out");
      skip(path, bin);
      return;
    }
    if (st.st_size == 0) {
      if (named) fail("input '" + path + "' is empty: give a file with text in it");
      skip(path, "empty file");
      return;
    }
    seen_files.emplace(key, path);
    SourceFile f;
    f.path = path;
    f.kind = kind;
    f.bytes = static_cast<uint64_t>(st.st_size);
    f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    c.total_bytes += f.bytes;
    c.files.push_back(std::move(f));
  }

  void walk_dir(const std::string& dir, const struct stat& st) {
    DevIno key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
    if (!dirs.insert(key).second) {
      skip(dir, "directory already walked (a symlink loop or a second path to it)");
      return;
    }
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      names.push_back(it->path().filename().string());
    if (ec) fail("cannot list input directory '" + dir + "': " + ec.message());
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      std::string p = (fs::path(dir) / name).string();
      if (name[0] == '.') {
        skip(p, "hidden");
        continue;
      }
      struct stat s {};
      if (::stat(p.c_str(), &s) != 0) {
        skip(p, std::string("cannot stat (broken symlink?): ") + std::strerror(errno));
        continue;
      }
      if (S_ISDIR(s.st_mode)) walk_dir(p, s);
      else if (S_ISREG(s.st_mode)) add_file(p, s, false);
      else skip(p, "not a regular file");
    }
  }
};

}  // namespace

Corpus walk_inputs(const std::vector<std::string>& inputs) {
  Walker w;
  if (inputs.empty()) fail("no input given: name text files or directories with --input");
  for (const std::string& in : inputs) {
    std::string p = fs::absolute(fs::path(in)).lexically_normal().string();
    if (p.size() > 1 && p.back() == '/') p.pop_back();
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0)
      fail("input '" + in + "' does not exist (" + std::strerror(errno) +
           "): check the path given to --input");
    if (S_ISDIR(st.st_mode)) w.walk_dir(p, st);
    else if (S_ISREG(st.st_mode)) w.add_file(p, st, true);
    else fail("input '" + in + "' is not a regular file or a directory");
  }
  return std::move(w.c);
}

}  // namespace td
