#include "store/tensorboard.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/common/error.h"
#include "store/store.h"

namespace td::store {
namespace fs = std::filesystem;

namespace {

// CRC-32C table for the reflected polynomial 0x82F63B78, one byte at a time.
const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> t = [] {
    std::array<uint32_t, 256> a{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      a[i] = c;
    }
    return a;
  }();
  return t;
}

// Protocol buffers wire format (protobuf.dev/programming-guides/encoding): a key is
// (field number << 3) | wire type; 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_fixed(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_key(std::string& out, int field, int wire) { put_varint(out, (uint64_t(field) << 3) | uint64_t(wire)); }
void put_double(std::string& out, int field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  put_key(out, field, 1);
  put_fixed(out, bits, 8);
}
void put_float(std::string& out, int field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  put_key(out, field, 5);
  put_fixed(out, bits, 4);
}
void put_bytes(std::string& out, int field, std::string_view v) {
  put_key(out, field, 2);
  put_varint(out, v.size());
  out.append(v);
}

// Event{wall_time = 1, step = 2, file_version = 3, summary = 5}.
std::string event(double wall_time, int64_t step, std::string_view summary) {
  std::string e;
  put_double(e, 1, wall_time);
  put_key(e, 2, 0);
  put_varint(e, static_cast<uint64_t>(step));
  put_bytes(e, 5, summary);
  return e;
}

// Summary.Value{tag = 1, simple_value = 2}, appended to a Summary as its field 1.
void add_value(std::string& summary, std::string_view tag, double value) {
  std::string v;
  put_bytes(v, 1, tag);
  put_float(v, 2, static_cast<float>(value));
  put_bytes(summary, 1, v);
}

// An fd opened for a new file that never follows a symlink; closed (and the file removed on
// failure) by its owner.
struct NewFile {
  std::string path;
  int fd = -1;
  bool keep = false;
  explicit NewFile(std::string p) : path(std::move(p)) {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    TD_CHECK(fd >= 0, "cannot create '" + path + "': " + std::strerror(errno) + "; check that the folder is writable");
  }
  ~NewFile() {
    if (fd >= 0) ::close(fd);
    if (!keep) ::unlink(path.c_str());
  }
  void write(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      TD_CHECK(n > 0, "writing '" + path + "' failed: " + std::strerror(errno) + "; check disk space");
      done += size_t(n);
    }
  }
  void finish() {
    TD_CHECK(::fsync(fd) == 0, "writing '" + path + "' failed: " + std::strerror(errno) + "; check disk space");
    const int fd_was = fd;
    fd = -1;
    TD_CHECK(::close(fd_was) == 0, "writing '" + path + "' failed: " + std::strerror(errno));
  }
};

}  // namespace

uint32_t crc32c(std::string_view data) {
  const auto& t = crc_table();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = t[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tf_record(std::string_view data) {
  std::string len;
  put_fixed(len, data.size(), 8);
  std::string out = len;
  put_fixed(out, masked_crc32c(len), 4);
  out.append(data);
  put_fixed(out, masked_crc32c(data), 4);
  return out;
}

TensorBoardExport write_tensorboard(Store& st, const std::string& run_id, const std::string& dir) {
  const RunInfo info = st.get_run(run_id);  // an unknown run fails before anything is written
  std::error_code ec;
  TD_CHECK(fs::is_directory(dir, ec), "'" + dir + "' is not a folder: give --tensorboard an existing folder");
  const fs::path run_dir = fs::path(dir) / run_id;  // a valid run id is one path component
  const fs::file_status s = fs::symlink_status(run_dir, ec);
  if (fs::is_symlink(s)) throw Error("'" + run_dir.string() + "' is a symlink: it is never followed; remove it or export into another folder");
  if (fs::exists(s)) {
    TD_CHECK(fs::is_directory(s), "'" + run_dir.string() + "' is not a folder; remove it or export into another folder");
  } else {
    TD_CHECK(fs::create_directory(run_dir, ec) || fs::is_directory(fs::symlink_status(run_dir)),
             "cannot create '" + run_dir.string() + "': " + ec.message());
  }
  const double start = info.start_time.value_or(0);
  const std::string name = "events.out.tfevents." + std::to_string(static_cast<int64_t>(std::floor(start))) + ".traindeck";
  TensorBoardExport r;
  r.path = (run_dir / name).string();
  NewFile f((run_dir / ("." + name + ".tmp-" + std::to_string(::getpid()))).string());

  std::string first;
  put_double(first, 1, start);
  put_bytes(first, 3, "brain.Event:2");
  f.write(tf_record(first));

  // One Event per (step, rank): rows arrive ordered by step, rank, name.
  std::string summary, buffer;
  int64_t step = -1;
  int rank = -1;
  double wall = 0;
  auto flush = [&] {
    if (summary.empty()) return;
    buffer += tf_record(event(wall, step, summary));
    summary.clear();
    ++r.events;
    if (buffer.size() > (1u << 20)) {
      f.write(buffer);
      buffer.clear();
    }
  };
  std::string tag;
  st.for_each_metric_row(run_id, [&](const Store::MetricRow& m) {
    if (m.step != step || m.rank != rank) {
      flush();
      step = m.step;
      rank = m.rank;
      wall = m.t;
    }
    tag = m.rank == 0 ? std::string(m.name) : "rank" + std::to_string(m.rank) + "/" + std::string(m.name);
    add_value(summary, tag, m.value);
    ++r.values;
  });
  flush();
  f.write(buffer);
  f.finish();
  fs::rename(f.path, r.path, ec);
  TD_CHECK(!ec, "cannot move the TensorBoard file to '" + r.path + "': " + ec.message());
  f.keep = true;
  return r;
}

}  // namespace td::store
