#include "engine/checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/fileio.h"

namespace td {

using json = nlohmann::json;

uint64_t write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors,
                           const std::map<std::string, std::string>& metadata,
                           const std::function<void()>& on_tensor) {
  return write_safetensors_from(path, tensors, [&](size_t i) { return tensors[i].data; }, metadata, on_tensor);
}

uint64_t write_safetensors_from(const std::string& path, const std::vector<SafeTensor>& tensors,
                                const std::function<const float*(size_t)>& data_of,
                                const std::map<std::string, std::string>& metadata,
                                const std::function<void()>& on_tensor) {
  json header = json::object();
  uint64_t off = 0;
  for (const auto& t : tensors) {
    uint64_t n = 1;
    for (auto s : t.shape) n *= (uint64_t)s;
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {off, off + n * 4}}};
    off += n * 4;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  File f(path, File::kWriteNew);
  uint64_t hn = h.size();  // little-endian on every platform we build for (x86-64, aarch64)
  f.write_all(&hn, 8);
  f.write_all(h.data(), h.size());
  for (size_t i = 0; i < tensors.size(); i++) {
    uint64_t n = 1;
    for (auto s : tensors[i].shape) n *= (uint64_t)s;
    f.write_all(data_of(i), n * 4);
    if (on_tensor) on_tensor();
  }
  f.sync();
  return 8 + h.size() + off;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  auto bad = [&](const std::string& why) -> Error {
    return Error("'" + path + "' is not a safetensors file: " + why);
  };
  File f(path, File::kRead);
  uint64_t size = f.size();
  if (size < 8) throw bad("shorter than its 8-byte header length");
  uint64_t hn = 0;
  f.pread_all(&hn, 8, 0);
  if (hn > size - 8 || hn > (100u << 20)) throw bad("header length " + std::to_string(hn) + " exceeds the file");
  std::string h(hn, '\0');
  f.pread_all(h.data(), hn, 8);
  data_start_ = 8 + hn;
  parse_header(h, size - data_start_, path, entries_, metadata_);
}

void SafetensorsFile::parse_header(std::string_view h, uint64_t data_size, const std::string& path,
                                   std::map<std::string, Entry>& entries,
                                   std::map<std::string, std::string>& metadata) {
  auto bad = [&](const std::string& why) -> Error {
    return Error("'" + path + "' is not a safetensors file: " + why);
  };
  json header;
  try {
    header = json::parse(h);
  } catch (const json::exception& e) {
    throw bad(std::string("header is not JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw bad("header is not a JSON object");
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) throw bad("__metadata__ is not a JSON object");  // (fuzzing)
      for (auto m = it.value().begin(); m != it.value().end(); ++m)
        metadata[m.key()] = m.value().is_string() ? m.value().get<std::string>() : m.value().dump();
      continue;
    }
    try {
      Entry e;
      e.dtype = it.value().at("dtype").get<std::string>();
      // nlohmann's get<> of an integer type casts a float ("1e63", "2.5") unchecked, which is
      // undefined behaviour: whole numbers only (found by fuzzing: an offset of 10^63).
      auto whole = [&](const json& a, const char* field, bool non_negative) {
        if (!a.is_array()) throw bad("tensor '" + it.key() + "' has a " + field + " that is not a list");
        for (const json& x : a)
          if (!x.is_number_integer() || (non_negative && !x.is_number_unsigned()))
            throw bad("tensor '" + it.key() + "' has " + field + " " + a.dump() + ": not whole numbers" +
                      (non_negative ? " >= 0" : ""));
        return a;
      };
      e.shape = whole(it.value().at("shape"), "shape", false).get<std::vector<int64_t>>();
      auto offs = whole(it.value().at("data_offsets"), "data_offsets", true).get<std::vector<uint64_t>>();
      if (offs.size() != 2 || offs[0] > offs[1] || offs[1] > data_size)
        throw bad("tensor '" + it.key() + "' has data offsets outside the file (truncated?)");
      e.begin = offs[0];
      e.end = offs[1];
      entries[it.key()] = e;
    } catch (const json::exception& ex) {
      throw bad("tensor '" + it.key() + "' has a malformed entry (" + ex.what() + ")");
    }
  }
}

void SafetensorsFile::read_f32(const std::string& name, float* out, size_t count) const {
  check_f32(name, count);
  File f(path_, File::kRead);
  f.pread_all(out, count * 4, data_start_ + entries_.at(name).begin);
}

void SafetensorsFile::check_f32(const std::string& name, size_t count) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) fail("'" + path_ + "' has no tensor '" + name + "': the checkpoint was written for another model shape");
  const Entry& e = it->second;
  if (e.dtype != "F32") fail("tensor '" + name + "' in '" + path_ + "' is " + e.dtype + ", expected F32");
  if (e.end - e.begin != count * 4)
    fail("tensor '" + name + "' in '" + path_ + "' has " + std::to_string((e.end - e.begin) / 4) +
         " elements, the model expects " + std::to_string(count) + ": the checkpoint was written for another model shape");
}

}  // namespace td
