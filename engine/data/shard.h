// Token shards: the on-disk format of a prepared dataset (docs/formats.md).
//
// Layout (little-endian):
//   offset  0  char[8]  magic "TDSHARD1"
//   offset  8  u32      format version (1)
//   offset 12  u32      token width in bytes: 2 (uint16) or 4 (uint32)
//   offset 16  u64      token count
//   offset 24  u32      CRC-32 (zlib) of the payload bytes
//   offset 28  u8[36]   zero
//   offset 64  tokens   count * width bytes
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace td {

constexpr uint64_t kShardHeaderBytes = 64;

/// Streams tokens into a new shard file. Writes to "<path>.tmp", then finish() fsyncs and renames
/// to <path>, so a killed writer leaves no file that looks complete. Memory: a fixed buffer.
class ShardWriter {
 public:
  /// width: 2 or 4 bytes per token. Throws td::Error if the file cannot be created.
  ShardWriter(std::string path, int width);
  ~ShardWriter();  // removes the .tmp file if finish() was not called
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  /// Appends tokens. Throws td::Error if a token does not fit the width.
  void write(const uint32_t* tokens, size_t n);
  uint64_t count() const;
  /// Writes the header (count, checksum), fsyncs, renames. Returns bytes on disk.
  uint64_t finish();

 private:
  struct Impl;
  Impl* impl_;
};

/// Header of a shard, as read from disk.
struct ShardInfo {
  std::string path;
  int width = 2;        // bytes per token
  uint64_t count = 0;   // tokens
  uint32_t crc32 = 0;   // of the payload
};

/// Reads and checks a shard header (magic, version, width, size on disk == 64 + count*width).
/// Throws td::Error naming the file and what is wrong ("truncated", "not a shard", ...).
ShardInfo read_shard_header(const std::string& path);

/// The check of read_shard_header on bytes already read: h holds the first n bytes of the file
/// (n < 64: truncated), file_size its size in bytes; path names it in messages. Pure (fuzzed).
ShardInfo parse_shard_header(const unsigned char* h, size_t n, uint64_t file_size, const std::string& path);

/// Recomputes the payload checksum (streaming, bounded memory) and throws td::Error
/// ("checksum mismatch: the shard is corrupted; delete the dataset directory and prepare it again") when it differs.
void verify_shard(const ShardInfo& info);

/// Reads tokens [first, first+n) of a shard with pread (64-bit offsets) into out (uint32).
/// Throws td::Error on a short read.
void read_shard_tokens(const ShardInfo& info, int fd, uint64_t first, size_t n, uint32_t* out);

}  // namespace td
