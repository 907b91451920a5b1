// "Test connection": what a node offers (OS, CPUs, memory, free disk in the work directory,
// glibc, NVIDIA GPUs), gathered with ONE remote command on an authenticated Session.
//
// probe_node() runs a single fixed `sh -c '<script>' sh <work_dir> <extra_path>`: the work dir
// and the extra PATH entry are positional arguments of a constant script, never interpolated
// into a shell line, so a path with spaces, quotes, `;`, `$()` or newlines is measured and runs
// nothing. The script prints key=value lines that are parsed here; a field the node cannot give
// (no /etc/os-release, a musl libc, no df) stays unknown (empty string / empty optional) and is
// shown as "unknown" by format_report(), never an error.
//
// Threading rule: like every Session call, run it on a worker thread (it waits on the network,
// bounded by ProbeOptions::timeout_ms); the report itself is a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "remote/session.h"

namespace td::remote {

/// One GPU as nvidia-smi lists it.
struct GpuInfo {
  int index = -1;                        ///< nvidia-smi's index (0, 1, ...)
  std::string name;                      ///< "NVIDIA H100 80GB HBM3"
  std::optional<uint64_t> memory_bytes;  ///< memory.total: MiB * 1048576; empty when "[N/A]"
  std::string driver_version;            ///< "550.54.15"
};

struct NodeReport {
  std::string where;                     ///< "user@host:port" (Session::where())
  std::string os;                        ///< PRETTY_NAME from /etc/os-release, e.g. "Debian GNU/Linux 12 (bookworm)"
  std::string kernel;                    ///< uname -r, e.g. "6.1.0-18-amd64"
  std::string arch;                      ///< uname -m, e.g. "x86_64", "aarch64"
  std::optional<int> cpu_count;          ///< online CPUs (nproc, else getconf _NPROCESSORS_ONLN)
  std::string cpu_model;                 ///< "model name" from /proc/cpuinfo (else lscpu's Model name)
  std::optional<uint64_t> mem_total_bytes;      ///< /proc/meminfo MemTotal kB * 1024
  std::optional<uint64_t> mem_available_bytes;  ///< /proc/meminfo MemAvailable kB * 1024
  std::string work_dir;                  ///< the work directory asked about (as given)
  std::string disk_path;                 ///< the path measured: work_dir, or its nearest existing parent
  bool work_dir_exists = false;          ///< disk_path is work_dir itself (it exists on the node)
  std::optional<uint64_t> disk_free_bytes;  ///< df -Pk "Available" on disk_path, kB * 1024 (for non-root users)
  std::string glibc_version;             ///< "2.36" (getconf GNU_LIBC_VERSION); empty: not glibc or unknown
  bool nvidia_smi_found = false;         ///< nvidia-smi is on the node's PATH
  std::string nvidia_smi_error;          ///< its output (stdout+stderr) and exit code when it failed; else empty
  std::vector<GpuInfo> gpus;             ///< empty when nvidia-smi is missing or failed
};

struct ProbeOptions {
  /// Test/packaging hook: a folder put FIRST on the node's PATH for this probe (e.g. where a
  /// node keeps nvidia-smi outside the default sshd PATH, or a test's fake nvidia-smi). Passed
  /// as a positional argument, never interpolated. Empty: the node's PATH unchanged.
  std::string extra_path;
  int timeout_ms = 30000;    ///< whole remote command (nvidia-smi itself is limited to 15 s where `timeout` exists)
};

/// Runs the probe script once on `session` (authenticated) and parses its output.
/// work_dir: absolute, or relative to the login directory; it need not exist yet.
/// Errors: td::Error when the command cannot run (channel, timeout) or the node's shell did not
/// run the script (message with its stderr). Missing fields are not errors (see NodeReport).
NodeReport probe_node(Session& session, const std::string& work_dir, const ProbeOptions& opts = {});

/// Parses the probe script's stdout (exposed for tests). Unknown keys are ignored.
/// Errors: td::Error when the output has no "td_probe=1" line (the script did not run).
NodeReport parse_probe_output(const std::string& out);

/// The report as human text for the GUI, one fact per line (English; units GiB = 2^30 bytes), e.g.
///   OS: Debian GNU/Linux 12 (bookworm) (kernel 6.1.0-18-amd64, x86_64)
///   CPU: 2 × Intel(R) Xeon(R) ...
///   Memory: 15.6 GiB total, 12.1 GiB available
///   Disk: 120.3 GiB free in /work (the work directory /work/runs does not exist yet)
///   glibc: 2.36
///   GPU 0: NVIDIA H100 80GB HBM3, 79.6 GiB, driver 550.54.15
/// Unknown fields read "unknown"; no nvidia-smi reads "GPUs: none (nvidia-smi not found)".
std::string format_report(const NodeReport& report);

}  // namespace td::remote
