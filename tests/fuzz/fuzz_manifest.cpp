// Fuzz target: a dataset's manifest.json (td::parse_dataset_manifest, engine/data/manifest.h).
// Every file name accepted is a plain name inside the dataset directory and every id is below
// vocab_size.
#include "engine/data/manifest.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const td::DatasetManifest m = td::parse_dataset_manifest(tdfuzz::text(data, size), "fuzz/manifest.json");
    TD_FUZZ_REQUIRE(m.tokenizer_kind == "byte" || m.tokenizer_kind == "bpe");
    TD_FUZZ_REQUIRE(m.vocab_size >= 1 && m.eot_id < m.vocab_size && m.newline_id < m.vocab_size);
    TD_FUZZ_REQUIRE(m.tokenizer_kind == "byte" || tdfuzz::plain_name(m.model_file));
    for (const auto* split : {&m.train, &m.val})
      for (const auto& s : *split) TD_FUZZ_REQUIRE(tdfuzz::plain_name(s.file));
  } catch (const td::Error&) {
  }
  return 0;
}
