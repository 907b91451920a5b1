// Token shards: writer (streaming, fixed buffer), header reader, checksum verification, pread.
#include "engine/data/shard.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <vector>

#include "engine/common/error.h"

static_assert(std::endian::native == std::endian::little,
              "shards are little-endian; a big-endian host needs byte swaps in shard.cpp");

namespace td {
namespace {

constexpr char kMagic[8] = {'T', 'D', 'S', 'H', 'A', 'R', 'D', '1'};
constexpr uint32_t kVersion = 1;
constexpr size_t kBufBytes = 1 << 20;  // writer buffer and verification chunk

void put_u32(unsigned char* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put_u64(unsigned char* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t get_u32(const unsigned char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
uint64_t get_u64(const unsigned char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

// zlib's crc32 takes a uInt length: feed large buffers in pieces.
uint32_t crc_update(uint32_t crc, const unsigned char* p, size_t n) {
  while (n > 0) {
    uInt k = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = static_cast<uint32_t>(::crc32(crc, p, k));
    p += k;
    n -= k;
  }
  return crc;
}

void write_all(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail_errno("cannot write shard (is the disk full?)", path);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

struct ShardWriter::Impl {
  std::string path, tmp_path;
  int width = 2;
  int fd = -1;
  uint64_t count = 0;
  uint32_t crc = 0;
  std::vector<unsigned char> buf;  // payload bytes not yet written
  size_t used = 0;
  bool finished = false;

  void flush() {
    if (used == 0) return;
    crc = crc_update(crc, buf.data(), used);
    write_all(fd, buf.data(), used, tmp_path);
    used = 0;
  }
};

ShardWriter::ShardWriter(std::string path, int width) : impl_(new Impl) {
  TD_ASSERT(width == 2 || width == 4);
  impl_->path = std::move(path);
  impl_->tmp_path = impl_->path + ".tmp";
  impl_->width = width;
  impl_->buf.resize(kBufBytes);
  impl_->crc = static_cast<uint32_t>(::crc32(0L, Z_NULL, 0));
  impl_->fd = ::open(impl_->tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (impl_->fd < 0) {
    int err = errno;
    std::string p = impl_->path;
    delete impl_;
    impl_ = nullptr;
    errno = err;
    fail_errno("cannot create shard", p);
  }
  unsigned char zero[kShardHeaderBytes] = {};
  write_all(impl_->fd, zero, sizeof zero, impl_->tmp_path);  // header placeholder
}

ShardWriter::~ShardWriter() {
  if (!impl_) return;
  if (impl_->fd >= 0) ::close(impl_->fd);
  if (!impl_->finished) ::unlink(impl_->tmp_path.c_str());
  delete impl_;
}

void ShardWriter::write(const uint32_t* tokens, size_t n) {
  Impl& s = *impl_;
  TD_ASSERT(!s.finished);
  if (s.width == 2) {
    uint32_t hi = 0;  // OR of all tokens: one branch per call, vectorisable
    for (size_t i = 0; i < n; ++i) hi |= tokens[i];
    if (hi > 0xFFFF) {
      for (size_t i = 0; i < n; ++i)
        if (tokens[i] > 0xFFFF)
          fail("token id " + std::to_string(tokens[i]) + " does not fit a uint16 shard '" +
               s.path + "': the vocabulary has more than 65536 ids, write uint32 shards");
    }
  }
  const size_t per_buf = kBufBytes / s.width;
  while (n > 0) {
    size_t room = per_buf - s.used / s.width;
    size_t k = std::min(n, room);
    unsigned char* dst = s.buf.data() + s.used;
    if (s.width == 2) {
      uint16_t* d = reinterpret_cast<uint16_t*>(dst);
      for (size_t i = 0; i < k; ++i) d[i] = static_cast<uint16_t>(tokens[i]);
    } else {
      std::memcpy(dst, tokens, k * 4);
    }
    s.used += k * s.width;
    s.count += k;
    tokens += k;
    n -= k;
    if (s.used == kBufBytes) s.flush();
  }
}

uint64_t ShardWriter::count() const { return impl_->count; }

uint64_t ShardWriter::finish() {
  Impl& s = *impl_;
  TD_ASSERT(!s.finished);
  s.flush();
  unsigned char h[kShardHeaderBytes] = {};
  std::memcpy(h, kMagic, 8);
  put_u32(h + 8, kVersion);
  put_u32(h + 12, static_cast<uint32_t>(s.width));
  put_u64(h + 16, s.count);
  put_u32(h + 24, s.crc);
  if (::pwrite(s.fd, h, sizeof h, 0) != static_cast<ssize_t>(sizeof h))
    fail_errno("cannot write shard header", s.tmp_path);
  if (::fsync(s.fd) != 0) fail_errno("cannot fsync shard", s.tmp_path);
  ::close(s.fd);
  s.fd = -1;
  if (::rename(s.tmp_path.c_str(), s.path.c_str()) != 0) fail_errno("cannot rename shard", s.path);
  s.finished = true;
  return kShardHeaderBytes + s.count * static_cast<uint64_t>(s.width);
}

ShardInfo read_shard_header(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno("cannot open shard (delete the dataset directory and prepare it again)", path);
  struct stat st {};
  unsigned char h[kShardHeaderBytes];
  ssize_t got = ::fstat(fd, &st) == 0 ? ::pread(fd, h, sizeof h, 0) : -1;
  ::close(fd);
  if (got < 0) fail_errno("cannot read shard", path);
  return parse_shard_header(h, static_cast<size_t>(got), static_cast<uint64_t>(st.st_size), path);
}

ShardInfo parse_shard_header(const unsigned char* h, size_t n, uint64_t file_size, const std::string& path) {
  if (n < kShardHeaderBytes)
    fail("shard '" + path + "' is truncated: " + std::to_string(n) +
         " bytes, shorter than its 64-byte header; delete the dataset directory and prepare it again");
  if (std::memcmp(h, kMagic, 8) != 0)
    fail("'" + path + "' is not a TrainDeck token shard (bad magic); delete the dataset directory and prepare it again");
  ShardInfo info;
  info.path = path;
  uint32_t version = get_u32(h + 8);
  if (version != kVersion)
    fail("shard '" + path + "' has format version " + std::to_string(version) +
         ", this build reads version 1; delete the dataset directory and prepare it again with this build");
  uint32_t width = get_u32(h + 12);
  if (width != 2 && width != 4)
    fail("shard '" + path + "' has token width " + std::to_string(width) +
         " (must be 2 or 4): the file is corrupted; delete the dataset directory and prepare it again");
  info.width = static_cast<int>(width);
  info.count = get_u64(h + 16);
  info.crc32 = get_u32(h + 24);
  // count * width wraps for a count near 2^64: such a header once passed the size check below.
  if (info.count > (UINT64_MAX - kShardHeaderBytes) / width)
    fail("shard '" + path + "' has a header that says " + std::to_string(info.count) +
         " tokens, more than any file holds: the file is corrupted; delete the dataset directory and prepare it again");
  uint64_t want = kShardHeaderBytes + info.count * width;
  uint64_t have = file_size;
  if (have < want)
    fail("shard '" + path + "' is truncated: " + std::to_string(have) + " bytes on disk, the header says " +
         std::to_string(want) + " (" + std::to_string(info.count) +
         " tokens); delete the dataset directory and prepare it again");
  if (have > want)
    fail("shard '" + path + "' has " + std::to_string(have - want) +
         " bytes after its last token: the file is corrupted; delete the dataset directory and prepare it again");
  return info;
}

void verify_shard(const ShardInfo& info) {
  int fd = ::open(info.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno("cannot open shard", info.path);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::vector<unsigned char> buf(kBufBytes);
  uint32_t crc = static_cast<uint32_t>(::crc32(0L, Z_NULL, 0));
  uint64_t left = info.count * static_cast<uint64_t>(info.width);
  uint64_t off = kShardHeaderBytes;
  while (left > 0) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    ssize_t got = ::pread(fd, buf.data(), want, static_cast<off_t>(off));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      ::close(fd);
      fail("shard '" + info.path + "' is truncated (short read at byte " + std::to_string(off) +
           "); delete the dataset directory and prepare it again");
    }
    crc = crc_update(crc, buf.data(), static_cast<size_t>(got));
    off += static_cast<uint64_t>(got);
    left -= static_cast<uint64_t>(got);
  }
  ::close(fd);
  if (crc != info.crc32) {
    char msg[64];
    std::snprintf(msg, sizeof msg, " (crc32 %08x, header says %08x)", crc, info.crc32);
    fail("shard '" + info.path + "': checksum mismatch" + msg +
         ": the shard is corrupted; delete the dataset directory and prepare it again");
  }
}

void read_shard_tokens(const ShardInfo& info, int fd, uint64_t first, size_t n, uint32_t* out) {
  TD_ASSERT(first + n <= info.count);
  const size_t bytes = n * static_cast<size_t>(info.width);
  // Read the raw payload into the front of `out`, then widen in place from the back.
  char* dst = reinterpret_cast<char*>(out);
  uint64_t off = kShardHeaderBytes + first * static_cast<uint64_t>(info.width);
  size_t done = 0;
  while (done < bytes) {
    ssize_t got = ::pread(fd, dst + done, bytes - done, static_cast<off_t>(off + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail_errno("cannot read shard", info.path);
    if (got == 0)
      fail("shard '" + info.path + "' is truncated (short read at byte " +
           std::to_string(off + done) + "); delete the dataset directory and prepare it again");
    done += static_cast<size_t>(got);
  }
  if (info.width == 2) {
    const uint16_t* src = reinterpret_cast<const uint16_t*>(out);
    for (size_t i = n; i-- > 0;) {
      uint16_t v;
      std::memcpy(&v, src + i, 2);
      out[i] = v;
    }
  }
}

}  // namespace td
