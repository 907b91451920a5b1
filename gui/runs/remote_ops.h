// Remote-run steps the GUI needs beyond remote/deploy.h and remote/remote_run.h: the engine
// bundle cached per engine binary, a detached launch that can --resume, the node's engine.log
// fetched by byte offset, and the newest checkpoint of a run listed and downloaded. Plain C++ on
// a td::remote::Session (no Qt).
//
// Threading rule: that of the Session (one thread at a time); cached_bundle() may be called from
// any thread (one process-wide lock guards the cache folder); `cancel` flags may be set from any
// thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "remote/deploy.h"
#include "remote/session.h"

namespace td::gui::remote_ops {

/// The engine bundle of `engine_binary` under `cache_dir`/<16 hex of a hash of (path, size, mtime)>
/// (remote/bundle.h layout), built with td::remote::make_bundle the first time and reused while
/// the binary's path, size and modification time are unchanged. Older bundles in `cache_dir`
/// are removed when a new one is built. *built says whether this call built it.
/// Errors: td::Error from make_bundle (binary missing, a library ldd cannot resolve).
std::filesystem::path cached_bundle(const std::filesystem::path& engine_binary, const std::filesystem::path& cache_dir,
                                    bool* built = nullptr);

/// Starts `d.engine train --config <run_dir>/config.json --out <run_dir> --run-id <run_id>
/// --no-events-stdout [--resume]` on the node in its own session (setsid), stdin /dev/null,
/// stdout /dev/null, stderr appended to <run_dir>/engine.log: td::remote::launch_detached with
/// --resume added when `resume`. Every value is a positional argument of a fixed sh script.
/// Returns the engine's pid on the node. Errors: td::Error when the command fails.
int64_t launch_engine(td::remote::Session& s, const td::remote::DeployResult& d, const std::string& run_id,
                      bool resume);

/// Bytes of <remote_run_dir>/engine.log from byte `offset` on, at most `max_bytes`; "" when the
/// log is missing or has nothing new. *shorter is set when the node's log is shorter than
/// `offset` (the run folder was replaced: the caller starts again at 0).
/// Errors: td::Error when the command cannot run (a dropped connection).
std::string fetch_log(td::remote::Session& s, const std::string& remote_run_dir, uint64_t offset, uint64_t max_bytes,
                      bool* shorter = nullptr);

/// A complete checkpoint folder on the node (docs/formats.md "Checkpoints").
struct RemoteCheckpoint {
  int64_t step = 0;                 ///< optimizer steps completed (from the folder name)
  std::string dir;                  ///< <remote_run_dir>/checkpoints/step_NNNNNNNN
  std::vector<std::pair<std::string, uint64_t>> files;  ///< (file name, bytes), by name
  uint64_t total_bytes() const;
};

/// The newest complete checkpoint (a step_NNNNNNNN folder without .tmp) of the run folder on the
/// node, or nothing when the run has none. Errors: td::Error when the listing cannot run.
std::optional<RemoteCheckpoint> newest_checkpoint(td::remote::Session& s, const std::string& remote_run_dir);

/// Downloads every file of `c` into `local_dir`/step_NNNNNNNN/ (SFTP, sha256 verified, resumable
/// .part files). progress(done_bytes, total_bytes) over the whole checkpoint. Returns the local
/// checkpoint folder. Errors: td::Error for a transfer error, or "download cancelled".
std::filesystem::path download_checkpoint(td::remote::Session& s, const RemoteCheckpoint& c,
                                          const std::filesystem::path& local_dir,
                                          const std::function<void(uint64_t, uint64_t)>& progress = {},
                                          const std::atomic<bool>* cancel = nullptr);

}  // namespace td::gui::remote_ops
