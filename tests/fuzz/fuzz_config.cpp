// Fuzz target: run config documents (td::parse_config, engine/config.h), as a config file or a
// checkpoint's trainer.json (written on a node) holds them. A config that parses must survive
// to_json and parse again to the same document.
#include <nlohmann/json.hpp>

#include "engine/config.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;  // not JSON: read_json_file's error, not parse_config's
  try {
    const td::RunConfig c = td::parse_config(j);
    const nlohmann::json back = td::to_json(c);
    TD_FUZZ_REQUIRE(td::to_json(td::parse_config(back)) == back);
  } catch (const td::Error&) {
  }
  return 0;
}
