// Remote-run steps the GUI needs beyond remote/deploy.h, remote/remote_run.h and
// remote/checkpoints.h: the engine bundle cached per engine binary and the node's engine.log
// fetched by byte offset. Plain C++ on a td::remote::Session (no Qt).
//
// Threading rule: that of the Session (one thread at a time); cached_bundle() may be called from
// any thread (one process-wide lock guards the cache folder); `cancel` flags may be set from any
// thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>

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

/// Writes `text` to `path` in a local run folder (created owner-only, 0700, with its parents):
/// through "<path>.tmp", created new with O_NOFOLLOW (td::open_private_file: a link planted at
/// either name is never followed), then renamed over `path`.
/// Errors: td::Error naming the file and what to check.
void write_run_file(const std::filesystem::path& path, const std::string& text);
/// The whole of local file `path` (a link is refused: td::open_private_file). Errors: td::Error
/// "cannot read <path>: <what>", with `what` saying what is missing.
std::string read_run_file(const std::filesystem::path& path, const std::string& what = "the file is missing");

/// Bytes of <remote_run_dir>/engine.log from byte `offset` on, at most `max_bytes`; "" when the
/// log is missing or has nothing new. *shorter is set when the node's log is shorter than
/// `offset` (the run folder was replaced: the caller starts again at 0).
/// Errors: td::Error when the command cannot run (a dropped connection).
std::string fetch_log(td::remote::Session& s, const std::string& remote_run_dir, uint64_t offset, uint64_t max_bytes,
                      bool* shorter = nullptr);

}  // namespace td::gui::remote_ops
