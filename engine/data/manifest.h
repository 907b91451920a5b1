// A dataset directory's manifest.json, read and checked in one place (docs/formats.md,
// "manifest.json"): the loader, Tokenizer::load, dataset_vocab_size and export read it here.
// A dataset may come from elsewhere (copied, downloaded, edited): every field used is checked,
// and file names must be plain names inside the dataset directory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace td {

struct DatasetManifest {
  struct Shard {
    std::string file;     // a plain file name in the dataset directory ("train_000000.bin")
    uint64_t tokens = 0;  // as listed (0 when absent); the shard's header is authoritative
  };
  std::string tokenizer_kind;  // "byte" or "bpe"
  std::string model_file;      // bpe: a plain file name (default "tokenizer.model"); byte: ""
  int vocab_size = 0;          // in [1, 2^24]
  int eot_id = -1;             // in [0, vocab_size); -1 when absent
  int newline_id = -1;         // bpe: in [0, vocab_size); -1 when absent
  std::vector<Shard> train, val;
  nlohmann::json doc;          // the whole document (an object)

  /// The shards of "train" or "val". Throws td::Error for another name.
  const std::vector<Shard>& split(const std::string& name) const;
};

/// Parses and checks manifest text; `where` names it in messages (its path). Pure (fuzzed).
/// Throws td::Error "'<where>' is damaged: <what is wrong>; delete the dataset directory and
/// prepare it again" for bad JSON, a missing or mistyped tokenizer field, a vocab_size or id out
/// of range, a shard list that is not a list of {"file": name}, or a file name that is not a
/// plain name (empty, ".", "..", holding "/" or a NUL).
DatasetManifest parse_dataset_manifest(std::string_view text, const std::string& where);

/// Reads <dataset_dir>/manifest.json (at most 64 MiB, not through a symlink). Throws td::Error
/// "'<dir>' holds no dataset (no manifest.json): run traindeck-engine prepare --out <dir>
/// first" when it is missing, and parse_dataset_manifest's errors.
DatasetManifest read_dataset_manifest(const std::string& dataset_dir);

}  // namespace td
