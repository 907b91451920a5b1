// traindeck-engine prepare: turns text files into a dataset directory of token shards.
//
// Inputs are files and directories (walked recursively). Files with no extension, .txt and
// .md are text (one document each); .jsonl holds one document per line in its "text" field.
// Symlinks are followed once (no loops) and no file is read twice (dedup by device+inode).
// A binary file named explicitly is an error; one found inside a directory is skipped and listed.
// Documents are separated by the tokenizer's end-of-text token. The corpus is streamed: memory
// does not grow with its size. The last val_fraction of the token stream (in input order) is
// the validation split.
//
// Output directory: train_NNNNNN.bin and val_NNNNNN.bin shards (shard.h), tokenizer.model
// (bpe), manifest.json. Written into "<out>.tmp-XXXX" and renamed at the end, so a failure
// leaves no partial dataset; an existing <out> holding a different dataset is an error.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace td {

struct PrepareOptions {
  std::vector<std::string> inputs;   // files and directories
  std::string out_dir;
  std::string tokenizer = "byte";    // "byte" or "bpe"
  int vocab_size = 0;                // bpe only (default 8000); byte: must be 0 or 257
  double val_fraction = 0.1;         // in [0, 0.5]
  uint64_t shard_tokens = 100'000'000;  // tokens per shard file
  uint64_t bpe_sample_bytes = 100'000'000;  // text sampled for training the BPE model
  int threads = 0;                   // encoding threads (0: all cores)
  bool quiet = false;                // no progress line on stderr
  std::string tokenizer_model;       // bpe only: encode with this sentencepiece model file
                                     // instead of training one (it is copied to tokenizer.model)
};

struct PrepareResult {
  uint64_t train_tokens = 0;
  uint64_t val_tokens = 0;
  uint64_t bytes_read = 0;
  int vocab_size = 0;
  std::vector<std::string> skipped;  // "path: reason"
  std::vector<std::string> warnings; // e.g. a split far from --val-fraction (also on stderr unless quiet)
  bool reused = false;               // <out> already held this dataset; nothing was done
  double train_seconds = 0;          // bpe: sampling + training the tokenizer (wall time)
  double encode_seconds = 0;         // reading, encoding and writing shards (wall time)
};

/// Runs prepare. progress(bytes_done, bytes_total) (input bytes) is called from the calling
/// thread, at most 4 times a second and once at the end. Unless opt.quiet, prepare writes to
/// stderr the BPE training notice and "already prepared"; when no progress callback is given
/// it also draws its own progress line, lists skipped files and prints a summary (with a
/// callback, the caller reports those from the callback and the result).
/// Throws td::Error for every bad input (see above) with no output directory left behind.
PrepareResult prepare_dataset(const PrepareOptions& opt,
                              const std::function<void(uint64_t, uint64_t)>& progress = {});

}  // namespace td
