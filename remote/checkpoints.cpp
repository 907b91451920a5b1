// Listing and downloading a run's checkpoints on a node (checkpoints.h).
#include "remote/checkpoints.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/checksums.h"
#include "engine/common/error.h"
#include "engine/common/fileio.h"
#include "remote/sftp.h"

namespace td::remote {
namespace fs = std::filesystem;

namespace {

// $1: the run folder. Prints "ckpt=<name>" per complete checkpoint folder, then "<bytes> <name>/<file>"
// per regular file in it (stat); exit 3 when the run folder is missing.
const char* kListScript =
    "cd -- \"$1\" 2>/dev/null || exit 3\n"
    "[ -d checkpoints ] || exit 0\n"
    "cd checkpoints || exit 4\n"
    "for d in step_*; do\n"
    "  case $d in *.tmp) continue ;; esac\n"
    "  [ -d \"$d\" ] || continue\n"
    "  echo \"ckpt=$d\"\n"
    "  for f in \"$d\"/*; do [ -f \"$f\" ] || continue; stat -c '%s %n' -- \"$f\"; done\n"
    "done\n";

const std::regex kName(R"(step_([0-9]{8}))");

// A line of the listing for a file: "<bytes> <checkpoint>/<name>", <name> without '/'.
const std::regex kFileLine(R"(([0-9]{1,19}) (step_[0-9]{8})/([^/]+))");

std::string join(const std::string& dir, const std::string& rel) {
  if (dir.empty()) return rel;
  return dir.back() == '/' ? dir + rel : dir + "/" + rel;
}

// The downloaded files of checkpoint `name` in dir against its SHA256SUMS (written by the engine
// before the checkpoint's rename; docs/formats.md). download() proves each file equals the
// node's; this proves the node's copy is what the engine wrote. False when the checkpoint has no
// SHA256SUMS (written before checksums). Throws td::Error naming the file that does not match.
bool matches_checksums(const Session& s, const fs::path& dir, const std::string& name) {
  const fs::path sums_path = dir / td::kChecksumsFile;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(sums_path, ec))) return false;
  const int fd = ::open(sums_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw td::Error("cannot open " + sums_path.string() + ": " + std::strerror(errno));
  std::string text;
  char buf[4096];
  ssize_t n;
  while (text.size() <= (64u << 10) && (n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, (size_t)n);
  ::close(fd);
  const std::string where = s.where() + ": checkpoint " + name;
  if (text.size() > (64u << 10)) throw td::Error(where + ": its " + td::kChecksumsFile + " is larger than 64 KiB (not the engine's)");
  for (const auto& [file, hex] : td::parse_sha256sums(text, where + " " + td::kChecksumsFile)) {
    const fs::path p = dir / file;
    if (!fs::is_regular_file(fs::symlink_status(p, ec)))
      throw td::Error(where + ": " + file + " is listed in its " + td::kChecksumsFile + " but was not downloaded (the node's copy is incomplete)");
    if (sha256_file(p) != hex)
      throw td::Error(where + ": " + file + " does not match its SHA-256 in " + td::kChecksumsFile +
                      ": the node's copy is damaged; download an older checkpoint");
  }
  return true;
}

bool known_file(std::string_view name) {
  return std::find(kCheckpointFileNames.begin(), kCheckpointFileNames.end(), name) != kCheckpointFileNames.end();
}

// A single path component that is a plain name: not "." or "..", no control character.
bool plain_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::none_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// `text` for a message: control characters as \n, \t or \xHH, so a hostile name shows as it is.
std::string printable(const std::string& text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else out += c;
  }
  return out;
}

std::string names_list() {
  std::string out;
  for (std::string_view n : kCheckpointFileNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

}  // namespace

std::vector<RemoteCheckpoint> list_checkpoints(Session& s, const std::string& remote_run_dir, size_t max_bytes) {
  ExecOptions eo;
  eo.max_output = max_bytes;
  ExecResult r = s.exec({"sh", "-c", kListScript, "sh", remote_run_dir}, eo);
  if (r.truncated)
    throw td::Error(s.where() + ": the listing of the checkpoints in " + remote_run_dir + " is longer than " +
                    std::to_string(max_bytes >> 10) + " KiB, so it is not used (the newest would be missing). "
                    "Delete old checkpoints on the node (train.keep_checkpoints keeps the newest few), or "
                    "folders that are not checkpoints under its checkpoints/ folder");
  if (r.exit_status == 3) throw td::Error(s.where() + ": the run folder " + remote_run_dir + " does not exist on the node");
  if (r.exit_status != 0)
    throw td::Error(s.where() + ": cannot list the checkpoints in " + remote_run_dir + " (exit " +
                    std::to_string(r.exit_status) + "): " + r.err);
  return parse_checkpoint_listing(r.out, s.where() + ": " + remote_run_dir);
}

std::vector<RemoteCheckpoint> parse_checkpoint_listing(const std::string& listing, const std::string& where) {
  std::vector<RemoteCheckpoint> out;
  std::istringstream in(listing);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ckpt=", 0) == 0) {
      const std::string name = line.substr(5);
      if (!std::regex_match(name, m, kName)) {
        out.push_back({});  // a folder like step_12 that is not the engine's: placeholder, dropped below
        continue;
      }
      out.push_back({name, std::stoll(m[1].str()), 0, {}});
      continue;
    }
    if (out.empty() || out.back().name.empty()) continue;  // files of a folder that is not the engine's
    // The node answers what its stat prints: refuse any line that is not one plain file name of
    // this checkpoint, before anything is downloaded (a name like step_N/../../x, /abs/x or one
    // with a newline would otherwise become a local path outside the download folder).
    RemoteCheckpoint& c = out.back();
    if (!std::regex_match(line, m, kFileLine) || m[2].str() != c.name || !plain_name(m[3].str()))
      throw td::Error(where + ": refused the node's listing of checkpoint " + c.name + ": the line '" +
                      printable(line) + "' is not '<bytes> " + c.name +
                      "/<file name>' with a plain file name (no '/', '..' or control characters); nothing was "
                      "downloaded. A checkpoint holds only " + names_list() +
                      ": check that folder on the node, and that its stat is coreutils' (stat -c '%s %n')");
    if (!known_file(m[3].str())) continue;  // a plain name the engine does not write: left on the node
    const std::string digits = m[1].str();
    uint64_t size = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size);
    if (ec != std::errc() || end != digits.data() + digits.size())
      throw td::Error(where + ": refused the node's listing of checkpoint " + c.name + ": the size in '" + printable(line) +
                      "' is not a number of bytes; nothing was downloaded");
    c.files.emplace_back(m[3].str(), size);
    c.size_bytes += size;
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const RemoteCheckpoint& c) { return c.name.empty(); }), out.end());
  std::sort(out.begin(), out.end(), [](const RemoteCheckpoint& a, const RemoteCheckpoint& b) { return a.step < b.step; });
  for (RemoteCheckpoint& c : out) std::sort(c.files.begin(), c.files.end());
  return out;
}

CheckpointDownload download_checkpoint(Session& s, const std::string& remote_run_dir, const std::string& name,
                                       const fs::path& local_dir,
                                       const std::function<void(uint64_t, uint64_t)>& progress,
                                       const std::atomic<bool>* cancel) {
  if (!std::regex_match(name, kName))
    throw td::Error("'" + name + "' is not a checkpoint name (step_ and 8 digits, e.g. step_00001000)");
  const std::vector<RemoteCheckpoint> all = list_checkpoints(s, remote_run_dir);
  auto it = std::find_if(all.begin(), all.end(), [&](const RemoteCheckpoint& c) { return c.name == name; });
  if (it == all.end()) {
    std::string have;
    for (const RemoteCheckpoint& c : all) have += (have.empty() ? "" : ", ") + c.name;
    throw td::Error(s.where() + ": checkpoint " + name + " is not in " + remote_run_dir + "/checkpoints (" +
                    (have.empty() ? "the run has no checkpoint yet" : "there: " + have) + ")");
  }
  CheckpointDownload res;
  res.local_path = local_dir / name;
  const bool in_place = fs::is_directory(res.local_path);
  if (in_place && fs::is_regular_file(res.local_path / "trainer.json")) {
    // The folder holds a checkpoint already: updating it in place is right for the same run
    // (a second download), but would silently replace another run's checkpoint of that step.
    const auto run_of = [](const std::string& text) {
      const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
      return j.is_object() && j.contains("run_id") && j["run_id"].is_string() ? j["run_id"].get<std::string>()
                                                                             : std::string();
    };
    std::ifstream in(res.local_path / "trainer.json", std::ios::binary);
    const std::string local_run = run_of(std::string(std::istreambuf_iterator<char>(in), {}));
    const ExecResult remote = s.exec({"cat", "--", join(remote_run_dir, "checkpoints/" + name + "/trainer.json")});
    const std::string remote_run = remote.exit_status == 0 ? run_of(remote.out) : std::string();
    if (!local_run.empty() && !remote_run.empty() && local_run != remote_run)
      throw td::Error(res.local_path.string() + " holds " + name + " of run " + local_run + ", not of run " +
                      remote_run + ": download into another folder (or move that checkpoint away first)");
  }
  const fs::path target = in_place ? res.local_path : local_dir / (name + ".tmp");
  fs::create_directories(target);
  const uint64_t total = it->size_bytes;
  uint64_t done = 0;
  if (progress) progress(0, total);
  const std::string remote_ckpt = join(remote_run_dir, "checkpoints/" + name);
  for (const auto& [file, size] : it->files) {
    TransferOptions t;
    t.cancel = cancel;
    t.skip_same = true;
    const uint64_t base = done;
    if (progress) t.progress = [&](uint64_t d, uint64_t) { progress(base + d, total); };
    TransferResult tr = download(s, join(remote_ckpt, file), target / file, t);
    if (tr.outcome == TransferResult::Outcome::Cancelled) {
      res.cancelled = true;
      return res;
    }
    res.bytes_sent += tr.bytes_sent;
    (tr.outcome == TransferResult::Outcome::Skipped ? res.files_skipped : res.files_sent)++;
    done = base + size;
    if (progress) progress(done, total);
  }
  try {
    res.checksums_verified = matches_checksums(s, target, name);
  } catch (const td::Error&) {
    std::error_code ec;
    if (!in_place) fs::remove_all(target, ec);  // no damaged copy is left to be taken for a checkpoint
    throw;
  }
  if (!in_place) fs::rename(target, res.local_path);
  return res;
}

}  // namespace td::remote
