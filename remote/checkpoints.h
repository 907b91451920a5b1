// Checkpoints of a run on a node: list them and download one (plain C++ on a Session).
//
// The engine writes <run dir>/checkpoints/step_NNNNNNNN/ (8 digits: optimizer steps done) with
// model.safetensors, optimizer.safetensors and trainer.json; it writes step_NNNNNNNN.tmp/ first
// and renames it, so a folder without ".tmp" is complete (docs/formats.md, "Checkpoints").
// The node is not trusted with file names: only kCheckpointFileNames, each a single path
// component, are listed and downloaded (a node's listing is what its `stat` prints).
// Threading rule: that of the Session (one thread at a time); `cancel` may be set from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "remote/session.h"

namespace td::remote {

/// The files a checkpoint folder may hold, by name (sorted, ASCII): engine/checkpoint/checkpoint.cpp
/// writes model.safetensors, optimizer.safetensors, trainer.json and (once checkpoints carry
/// checksums) SHA256SUMS. A checkpoint's other plain names are left on the node; a name that is
/// not a single path component ('/', "..", control characters) makes the listing an error.
inline constexpr std::array<std::string_view, 4> kCheckpointFileNames = {"SHA256SUMS", "model.safetensors",
                                                                         "optimizer.safetensors", "trainer.json"};

/// One complete checkpoint on the node.
struct RemoteCheckpoint {
  std::string name;          ///< "step_00000030"
  int64_t step = 0;          ///< 30
  uint64_t size_bytes = 0;   ///< sum of its files' sizes
  /// file name (one of kCheckpointFileNames) and bytes, by name
  std::vector<std::pair<std::string, uint64_t>> files;
};

/// The complete checkpoints of the run folder `remote_run_dir` (absolute, or relative to the
/// remote home), oldest step first; empty when the run has none yet. ONE remote command.
/// Errors: td::Error when the run folder does not exist or the command fails, and when the
/// node's listing of a checkpoint has a line that is not "<bytes> step_NNNNNNNN/<name>" with a
/// plain file name (a name with '/', "..", an absolute path, a newline or another control
/// character: a hostile or broken node), naming the line, and when the listing is longer than
/// `max_bytes` (never cut silently: a cut listing would hide the newest checkpoints).
std::vector<RemoteCheckpoint> list_checkpoints(Session& s, const std::string& remote_run_dir,
                                               size_t max_bytes = 16u << 20);

/// What list_checkpoints() makes of its listing script's output (pure; for tests and fuzzing):
/// "ckpt=step_NNNNNNNN" lines, each followed by "<bytes> step_NNNNNNNN/<file>" lines (stat -c
/// '%s %n'). Folders not named step_ + 8 digits are dropped with their lines; files not in
/// kCheckpointFileNames are dropped. Errors: td::Error beginning with `where`, quoting the line
/// (control characters escaped), for a file line of a checkpoint that is not "<bytes> <that
/// checkpoint>/<plain name>": a size that is not a number, a name with '/', "..", an absolute
/// path, or a control character (a newline in a name leaves its rest as a line of its own).
std::vector<RemoteCheckpoint> parse_checkpoint_listing(const std::string& listing, const std::string& where);

struct CheckpointDownload {
  std::filesystem::path local_path;  ///< <local_dir>/<name>
  uint64_t bytes_sent = 0;           ///< bytes moved by this call (0 when everything was there)
  int files_sent = 0;
  int files_skipped = 0;             ///< already local with the same size and sha256
  bool cancelled = false;            ///< stopped by `cancel`; the next call resumes
  bool checksums_verified = false;   ///< the files matched the checkpoint's SHA256SUMS (false: it has none, written before checksums)
};

/// Downloads checkpoint `name` ("step_NNNNNNNN") of the run into <local_dir>/<name>/ with
/// download() (sha256 verified, resume from .part files, skip when the same). A first download
/// goes to <local_dir>/<name>.tmp/ and is renamed at the end, so that, as on the node, a
/// folder without ".tmp" is complete; an existing <local_dir>/<name>/ is updated in place.
/// progress(done_bytes, total_bytes) over the checkpoint's files, on the calling thread.
/// Only kCheckpointFileNames are fetched, each into <local_dir>/<name>[.tmp]/ and nowhere else.
/// Errors: td::Error for a name that is not step_ + 8 digits, a checkpoint not on the node
/// (naming those that are), a listing list_checkpoints() refuses (before anything is
/// written locally), an existing <local_dir>/<name>/ whose trainer.json names another
/// run (never overwritten), a transfer error, or downloaded files that do not match the
/// checkpoint's SHA256SUMS (the node's copy is damaged: a first download leaves nothing behind;
/// an in-place update leaves the files, which the engine then refuses to use).
CheckpointDownload download_checkpoint(Session& s, const std::string& remote_run_dir, const std::string& name,
                                       const std::filesystem::path& local_dir,
                                       const std::function<void(uint64_t done_bytes, uint64_t total_bytes)>& progress = {},
                                       const std::atomic<bool>* cancel = nullptr);

}  // namespace td::remote
