// Fuzz target: token shard headers (td::parse_shard_header, engine/data/shard.h). Input: a
// whole shard file. A header accepted describes exactly the file: 64 + count * width bytes.
#include "engine/data/shard.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const td::ShardInfo info = td::parse_shard_header(data, size, size, "fuzz.bin");
    TD_FUZZ_REQUIRE(info.width == 2 || info.width == 4);
    TD_FUZZ_REQUIRE(static_cast<unsigned __int128>(info.count) * info.width + td::kShardHeaderBytes == size);
  } catch (const td::Error&) {
  }
  return 0;
}
