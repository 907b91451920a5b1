// SFTP transfers on an authenticated Session: pipelined upload/download with progress, cancel,
// resume from a "<name>.part" file, skip when the destination already holds the same bytes,
// and an atomic rename at the end (a reader never sees a half-written file under the final name).
//
// Remote paths are absolute or relative to the remote user's home (both SFTP and commands start
// there); '~' is not expanded. The node needs sha256sum, head and mv (coreutils) for hashing,
// resuming and the final rename. Threading rule: that of the Session (one thread at a time);
// the cancel flag may be set from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "remote/session.h"

namespace td::remote {

struct TransferOptions {
  /// Called after each chunk with bytes of the file now at the destination (including a resumed
  /// prefix) and the file size in bytes. On the calling thread.
  std::function<void(uint64_t done_bytes, uint64_t total_bytes)> progress;
  const std::atomic<bool>* cancel = nullptr;  ///< stops at the next chunk; the .part file stays for resume
  bool skip_same = true;   ///< skip when the destination has the same size and sha256
  bool verify = true;      ///< compare the sha256 of the transferred file on both sides before the rename
  /// Bytes handed to libssh2 per call, i.e. how much is in flight (>= 64 KiB). 1 MiB was the
  /// fastest in bench/upload over loopback (256 KiB..4 MiB measured; more only adds latency).
  /// On a far link (Session::greeting_ms() >= kFarLinkMs) uploads keep at least kFarLinkBuffer
  /// in flight: what one round trip can carry is what limits them there.
  size_t buffer_bytes = 1u << 20;
};

/// A link whose SSH greeting took this long (ms) is "far" for the in-flight amount above.
inline constexpr int kFarLinkMs = 20;
/// Bytes in flight on a far link: the node's channel window is the real limit (OpenSSH's sshd
/// grants 2 MiB), so more than that only costs memory; 8 MiB was the fastest at a 200 ms round
/// trip in bench/upload --delay-ms 100 (1, 2, 4, 8 MiB: 3.0, 4.0, 4.2, 4.6 MB/s).
inline constexpr size_t kFarLinkBuffer = 8u << 20;

struct TransferResult {
  enum class Outcome { Transferred, Skipped, Cancelled };
  Outcome outcome = Outcome::Transferred;
  uint64_t size = 0;          ///< file size in bytes
  uint64_t bytes_sent = 0;    ///< payload bytes moved by this call (0 when skipped)
  uint64_t resumed_from = 0;  ///< offset continued from an earlier .part file (0: from scratch)
  std::string sha256;         ///< hex sha256 of the file when verified or skipped; else empty
};

/// Uploads the local file to `remote_path`, creating missing remote folders (mkdir -p).
/// The local file is memory-mapped: it must not shrink while it uploads.
/// Errors: td::Error naming the file and the step (a missing local file, permission denied on
/// the node, a full disk, a lost connection, a hash mismatch after transfer).
TransferResult upload(Session& s, const std::filesystem::path& local_path,
                      const std::string& remote_path, const TransferOptions& opts = {});

/// Downloads `remote_path` to the local file (its folder is created), same rules as upload().
TransferResult download(Session& s, const std::string& remote_path,
                        const std::filesystem::path& local_path, const TransferOptions& opts = {});

/// Creates `remote_dir` and its missing parents over SFTP (mode 0755). Errors: td::Error.
void mkdir_p(Session& s, const std::string& remote_dir);

/// Size in bytes of a remote regular file, or nothing when it does not exist.
std::optional<uint64_t> remote_file_size(Session& s, const std::string& remote_path);

/// Hex sha256 of a remote file (sha256sum on the node; with prefix_bytes, of its first bytes).
/// Errors: td::Error when the file cannot be read or sha256sum is missing.
std::string remote_sha256(Session& s, const std::string& remote_path,
                          std::optional<uint64_t> prefix_bytes = std::nullopt);

/// Hex sha256 of a local file, or of its first prefix_bytes. Errors: td::Error.
std::string sha256_file(const std::filesystem::path& path,
                        std::optional<uint64_t> prefix_bytes = std::nullopt);

}  // namespace td::remote
