// Fuzz target: a node's checkpoint listing (td::remote::parse_checkpoint_listing,
// remote/checkpoints.h). Every checkpoint is step_ + 8 digits, every file a plain name in it
// (the download writes <local>/<name>/<file>), oldest step first.
#include <regex>

#include "fuzz_common.h"
#include "remote/checkpoints.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::regex name_re("step_[0-9]{8}");
  try {
    const auto list = td::remote::parse_checkpoint_listing(std::string(tdfuzz::text(data, size)), "node");
    for (size_t i = 0; i < list.size(); ++i) {
      TD_FUZZ_REQUIRE(std::regex_match(list[i].name, name_re));
      TD_FUZZ_REQUIRE(i == 0 || list[i - 1].step <= list[i].step);
      for (const auto& [file, bytes] : list[i].files) TD_FUZZ_REQUIRE(tdfuzz::plain_name(file));
    }
  } catch (const td::Error&) {
  }
  return 0;
}
