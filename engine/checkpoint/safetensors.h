// safetensors files (https://huggingface.co/docs/safetensors, "Format" section):
//   u64 little-endian N | N bytes of JSON header | raw tensor data.
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
// relative to the data section) and may hold "__metadata__" (string -> string). The header is
// padded with spaces to a multiple of 8 bytes. Only F32 tensors are written here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace td {

struct SafeTensor {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;  // host memory, product(shape) floats
};

/// Writes tensors (in the given order) to path and fsyncs it. Returns the file size in bytes.
/// `on_tensor`, when given, is called after each tensor's data is written (export's progress).
/// Throws td::Error on I/O failure.
uint64_t write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors,
                           const std::map<std::string, std::string>& metadata = {},
                           const std::function<void()>& on_tensor = {});

/// The same file with the data streamed tensor by tensor: data_of(i) returns tensors[i]'s
/// product(shape) floats in host memory, valid until the next call (tensors[i].data is not
/// read). Called once per tensor, in order, after the header is written, so that a state in
/// device memory is written through one tensor-sized buffer instead of a host copy of all of it.
/// Throws td::Error on I/O failure, and what data_of throws.
uint64_t write_safetensors_from(const std::string& path, const std::vector<SafeTensor>& tensors,
                                const std::function<const float*(size_t)>& data_of,
                                const std::map<std::string, std::string>& metadata = {},
                                const std::function<void()>& on_tensor = {});

/// A safetensors file opened for reading: header parsed and checked against the file size.
class SafetensorsFile {
 public:
  /// Throws td::Error ("'<path>' is not a safetensors file: ...") when the header is malformed,
  /// an offset points past the end, or the file is truncated.
  explicit SafetensorsFile(const std::string& path);
  struct Entry {
    std::string dtype;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // byte offsets in the data section
  };
  const std::map<std::string, Entry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  /// Reads tensor `name` (dtype F32) into out, which must hold exactly `count` floats.
  /// Throws td::Error if the tensor is missing, not F32, or has another element count.
  void read_f32(const std::string& name, float* out, size_t count) const;
  /// read_f32's checks without reading: throws the same td::Error.
  void check_f32(const std::string& name, size_t count) const;
  /// The header check of the constructor on the header's JSON text `h`, for a data section of
  /// data_size bytes; fills entries and metadata. Pure (fuzzed); throws as the constructor.
  static void parse_header(std::string_view h, uint64_t data_size, const std::string& path,
                           std::map<std::string, Entry>& entries,
                           std::map<std::string, std::string>& metadata);

 private:
  std::string path_;
  uint64_t data_start_ = 0;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace td
