// Fuzz target: safetensors headers (SafetensorsFile::parse_header), as checkpoints copied from a
// node or made by another program hold them. Input: u64 little-endian data-section size, then
// the header's JSON text. Every entry accepted lies inside the data section.
#include <cstring>
#include <map>

#include "engine/checkpoint/safetensors.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t data_size = 0;
  std::memcpy(&data_size, data, 8);
  std::map<std::string, td::SafetensorsFile::Entry> entries;
  std::map<std::string, std::string> metadata;
  try {
    td::SafetensorsFile::parse_header(tdfuzz::text(data + 8, size - 8), data_size, "fuzz.safetensors", entries,
                                      metadata);
    for (const auto& [name, e] : entries) TD_FUZZ_REQUIRE(e.begin <= e.end && e.end <= data_size);
  } catch (const td::Error&) {
  }
  return 0;
}
