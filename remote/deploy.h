// Deploying an engine bundle, a prepared dataset and a run config to a node, checking the bundle
// runs there, and launching the engine detached (setsid) on it. Plain C++ on a Session.
//
// Node layout under the work directory `work` (absolute, or relative to the remote home):
//   <work>/engine/<bundle hash>/{bin,lib,manifest.json}   one folder per bundle version
//   <work>/datasets/<dataset folder name>/...             the prepared dataset's files
//   <work>/runs/<run_id>/config.json                      data.path = the remote dataset folder
//   <work>/runs/<run_id>/{events.jsonl,engine.log,...}    written by the engine
// Threading rule: that of the Session (one thread at a time); `cancel` may be set from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "remote/bundle.h"
#include "remote/session.h"

namespace td::remote {

struct DeployResult {
  std::string engine;        ///< remote path of the bundle's launcher: <work>/engine/<hash>/bin/traindeck-engine
  std::string dataset_dir;   ///< remote dataset folder: <work>/datasets/<name>
  std::string run_dir;       ///< <work>/runs/<run_id>
  std::string config_path;   ///< <run_dir>/config.json
  uint64_t bytes_sent = 0;   ///< payload bytes uploaded by this call (0 when everything was there)
  int files_sent = 0;        ///< files uploaded (not skipped)
  int files_skipped = 0;     ///< files already on the node with the same size and sha256
  std::string node_glibc;    ///< the node's glibc version ("2.36")
  std::string engine_version;  ///< `traindeck-engine --version` on the node
};

/// progress(done_bytes, total_bytes) over all files to check or send (bundle + dataset), on the
/// calling thread; skipped files count as done.
using DeployProgress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

/// Checks the node's architecture and glibc first (nothing is uploaded to a node that cannot
/// run the bundle), then uploads the bundle (skipped as a whole when the node's <work>/engine/<hash>/manifest.json is
/// the same, else file by file with skip_same), the dataset folder (each file skip_same) and
/// the config (`config_json`: a run config; data.path is replaced by the remote dataset folder),
/// then checks that the bundled `traindeck-engine --version` runs there. The node checks:
/// `uname -m` equals the bundle's arch, `getconf GNU_LIBC_VERSION` >= the bundle's glibc.
/// Errors: td::Error for a transfer error, a mismatch (saying node value vs. bundle value), a
/// config that is not JSON, or a cancel ("deploy cancelled").
DeployResult deploy(Session& s, const std::filesystem::path& bundle_dir, const std::filesystem::path& dataset_dir,
                    const std::string& config_json, const std::string& remote_work_dir, const std::string& run_id,
                    const DeployProgress& progress = {}, const std::atomic<bool>* cancel = nullptr);

/// Only the node checks of deploy() for an already uploaded bundle at remote `bundle_dir`
/// (<work>/engine/<hash>). Fills node_glibc and engine_version. Errors: td::Error per mismatch.
void check_node(Session& s, const BundleManifest& m, const std::string& remote_bundle_dir, DeployResult& r);

/// Starts `engine train --config <run_dir>/config.json --out <run_dir> --run-id <run_id>
/// --no-events-stdout` on the node in its own session (setsid), stdin /dev/null, stdout
/// /dev/null, stderr appended to <run_dir>/engine.log; every value is a positional argument of
/// a fixed sh script (never interpolated). Returns the engine's pid on the node (the same
/// process: setsid and the launcher exec). Errors: td::Error when the command fails.
int64_t launch_detached(Session& s, const DeployResult& d, const std::string& run_id);

}  // namespace td::remote
