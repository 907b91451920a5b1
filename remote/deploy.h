// Deploying an engine bundle, a prepared dataset and a run config to a node, checking the bundle
// runs there, and launching the engine detached (setsid) on it. Plain C++ on a Session.
//
// Node layout under the work directory `work` (absolute, or relative to the remote home):
//   <work>/engine/<bundle hash>/{bin,lib,manifest.json}   one folder per bundle version
//   <work>/datasets/<name>-<manifest hash>/...            the prepared dataset's files (remote_dataset_name)
//   <work>/runs/<run_id>/config.json                      data.path = the remote dataset folder
//   <work>/runs/<run_id>/{events.jsonl,engine.log,...}    written by the engine
//   <work>/cuda/<soname>/<soname>                         a CUDA library the node lacked (uploaded once)
//   <work>/engine/<hash>/node-lib-path                    the folders of the node libraries, one a
//                                                         line (absolute, or relative to the bundle folder),
//                                                         added to LD_LIBRARY_PATH by the launcher
// A node whose engine runs in a container (DeployOptions::container, remote/container.h) gets
// no engine/ folder: the image holds the engine; datasets/ and runs/ are as above, and the work
// directory is mounted into the container at the same path.
// Threading rule: that of the Session (one thread at a time); `cancel` may be set from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "remote/bundle.h"
#include "remote/container.h"
#include "remote/session.h"

namespace td::remote {

/// Where deploy() looks for the bundle's node libraries (BundleManifest::node_libs: CUDA) and
/// how it checks the NVIDIA driver.
struct DeployOptions {
  /// Folders on the node searched first (the cluster's configured CUDA library path); no ':'
  /// or newline in them.
  std::vector<std::string> node_lib_dirs;
  /// Then: $CUDA_HOME/lib64 (as sshd's non-login shell sees it), /usr/local/cuda/lib64,
  /// /usr/local/cuda-*/lib64, /usr/lib/<arch>-linux-gnu, and pip installs
  /// (python3*/{site,dist}-packages/nvidia/*/lib under $HOME/.local/lib, /usr/local/lib,
  /// /usr/lib, /opt/conda/lib). false: only node_lib_dirs.
  bool search_default_dirs = true;
  /// Test/packaging hook: a folder put FIRST on the node's PATH for nvidia-smi (a positional
  /// argument, never interpolated; see ProbeOptions::extra_path). Empty: the node's PATH.
  std::string extra_path;
  /// The node runs the engine inside this image (NodeSpec::container) when its image is set:
  /// deploy() then checks the runtime and the image on the node (check_container) instead of
  /// the architecture, glibc, driver and node libraries, uploads no bundle (`bundle_dir` may be
  /// empty), and checks `traindeck-engine --version` inside the image.
  ContainerSpec container;
};

/// The oldest NVIDIA Linux driver that runs CUDA runtime major `cuda_major` (minor version
/// compatibility), from the table "CUDA Toolkit and Minimum Required Driver Version for CUDA
/// Minor Version Compatibility" of NVIDIA's CUDA Toolkit release notes
/// (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/, also in
/// https://docs.nvidia.com/deploy/cuda-compatibility/): CUDA 13.x >= 580, 12.x >= 525.60.13,
/// 11.x >= 450.80.02. Empty for a major not in the table.
std::string minimum_nvidia_driver(int cuda_major);

/// The folder name of a local prepared dataset under <work>/datasets/ on a node: its folder name,
/// then "-" and the first 12 hex digits of the sha256 of its manifest.json ("tiny data-3f2a9c01b2d4"),
/// so datasets that share a folder name never overwrite each other there; the folder name alone
/// when there is no manifest.json. Errors: td::Error when the manifest cannot be read.
std::string remote_dataset_name(const std::filesystem::path& dataset_dir);

struct DeployResult {
  std::string engine;        ///< remote path of the bundle's launcher: <work>/engine/<hash>/bin/traindeck-engine
  std::string dataset_dir;   ///< remote dataset folder: <work>/datasets/<remote_dataset_name()>
  std::string run_dir;       ///< <work>/runs/<run_id>
  std::string config_path;   ///< <run_dir>/config.json
  uint64_t bytes_sent = 0;   ///< payload bytes uploaded by this call (0 when everything was there)
  int files_sent = 0;        ///< files uploaded (not skipped)
  int files_skipped = 0;     ///< files already on the node with the same size and sha256
  std::string node_glibc;    ///< the node's glibc version ("2.36")
  std::string engine_version;  ///< `traindeck-engine --version` on the node
  std::string driver_version;  ///< the node's NVIDIA driver (lowest of its GPUs) when the bundle uses CUDA
  std::vector<std::string> node_lib_dirs;  ///< folders of the node libraries (LD_LIBRARY_PATH order),
                                           ///< remote paths; uploaded ones are <work>/cuda/<soname>
  int node_libs_found = 0;     ///< node libraries found on the node
  int node_libs_uploaded = 0;  ///< node libraries the node lacked, uploaded (or already there from before)
  bool gpu_run = false;        ///< the config's train.device is not "cpu"
  ContainerSpec container;     ///< DeployOptions::container: set when the engine runs in an image
  ContainerPaths container_paths;  ///< container runs: the remote home and the absolute work directory
};

/// progress(done_bytes, total_bytes) over all files to check or send (bundle + dataset), on the
/// calling thread; skipped files count as done.
using DeployProgress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

/// For a node with a container (options.container): checks the runtime and image first
/// (check_container: a missing image is a td::Error naming the image and the runtime), uploads
/// the dataset and the config as below, resolves the paths the container mounts and runs the
/// image's `traindeck-engine --version` (engine_version). Otherwise:
/// Checks the node's architecture and glibc first, and for a run on GPUs (the config's
/// train.device is not "cpu") where the bundle uses CUDA the NVIDIA
/// driver (`nvidia-smi --query-gpu=driver_version --format=csv,noheader` >=
/// minimum_nvidia_driver(cuda_major); a node without nvidia-smi is an error) and where its node
/// libraries are (one remote command; see DeployOptions). Nothing is uploaded to a node that
/// cannot run the bundle. Node libraries the node lacks are uploaded to <work>/cuda/<soname>/
/// (skip_same: once). Then it uploads the bundle (skipped as a whole when the node's <work>/engine/<hash>/manifest.json is
/// the same, else file by file with skip_same), the dataset folder (each file skip_same) and
/// the config (`config_json`: a run config; data.path is replaced by the remote dataset folder),
/// then checks that the bundled `traindeck-engine --version` runs there. The node checks:
/// `uname -m` equals the bundle's arch, `getconf GNU_LIBC_VERSION` >= the bundle's glibc.
/// Errors: td::Error for a transfer error, a mismatch (saying node value vs. bundle value), a
/// config that is not JSON, or a cancel ("deploy cancelled").
DeployResult deploy(Session& s, const std::filesystem::path& bundle_dir, const std::filesystem::path& dataset_dir,
                    const std::string& config_json, const std::string& remote_work_dir, const std::string& run_id,
                    const DeployProgress& progress = {}, const std::atomic<bool>* cancel = nullptr,
                    const DeployOptions& options = {});

/// Only the node checks of deploy() for an already uploaded bundle at remote `bundle_dir`
/// (<work>/engine/<hash>): arch, glibc, the NVIDIA driver for a GPU run (gpu_run) where the
/// bundle uses CUDA, and `--version`. Fills node_glibc, driver_version and engine_version.
/// Errors: td::Error per mismatch.
void check_node(Session& s, const BundleManifest& m, const std::string& remote_bundle_dir, DeployResult& r,
                const DeployOptions& options = {}, bool gpu_run = true);

/// Starts `engine train --config <run_dir>/config.json --out <run_dir> --run-id <run_id>
/// --no-events-stdout [--resume]` on the node in its own session (setsid), stdin /dev/null, stdout
/// /dev/null, stderr appended to <run_dir>/engine.log; every value is a positional argument of
/// a fixed sh script (never interpolated). With d.container set it starts the container instead
/// (container_command(): `<runtime> run` named container_name(run_id, 0), GPUs when d.gpu_run),
/// whose client forwards SIGTERM to the engine (podman and docker --sig-proxy, apptainer runs it
/// as a child). Returns the pid on the node of the engine, or of the runtime client that runs
/// it (the same process: setsid, the launcher and the wrapper exec; its command line holds the
/// run id). Errors: td::Error when the command fails.
int64_t launch_detached(Session& s, const DeployResult& d, const std::string& run_id, bool resume = false);

}  // namespace td::remote
