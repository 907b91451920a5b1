// The data loader: windows of seq_len+1 tokens from a prepared dataset split.
//
// The split's shards are cut into non-overlapping windows (window i of a shard covers tokens
// [i*seq_len, i*seq_len + seq_len], the last token being the target of the previous one); the
// list of all windows is shuffled each epoch with a permutation seeded by (seed, epoch). A
// global batch takes the next `global_batch` windows of the permutation; rank r of world_size w
// takes windows [r*per_rank, (r+1)*per_rank) of it, so ranks read disjoint windows. Tokens are
// read with pread (64-bit offsets; resident memory does not grow with the corpus) and the next
// batch is prefetched on a thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace td {

struct LoaderOptions {
  std::string dataset_dir;
  std::string split = "train";  // "train" or "val"
  int seq_len = 0;              // T
  int micro_batch = 0;          // B: windows per next_batch() call on this rank
  int grad_accum = 1;           // micro batches per step on each rank
  int rank = 0;
  int world_size = 1;
  uint64_t seed = 0;
  bool shuffle = true;          // false: windows in order (evaluation)
  bool verify_checksums = true; // CRC of every shard at open (streaming)
};

/// Position of a loader, saved in checkpoints.
struct LoaderState {
  uint64_t epoch = 0;
  uint64_t cursor = 0;  // index of the next global batch's first window in this epoch's permutation
  uint64_t micro = 0;   // next micro batch within that step (0 at step boundaries); JSON "micro"
  nlohmann::json to_json() const;
  static LoaderState from_json(const nlohmann::json& j);
};

/// What the batches next_batch() has returned so far cost (cumulative since the loader opened;
/// a step's figures are the difference of two readings: the step event's data_* fields).
struct LoaderStats {
  /// Bytes of those batches' windows read from the shards with pread: (seq_len+1) tokens x the
  /// shard's token width per window (the page cache may have served them). Counted when the
  /// batch is returned, so a prefetched batch counts in the step that uses it.
  uint64_t bytes_read = 0;
  double read_seconds = 0;  // wall time of those reads (on the prefetch thread or in next_batch)
  double wait_seconds = 0;  // wall time next_batch() blocked: waiting for the prefetch, or reading itself
};

class DataLoader {
 public:
  /// Opens the split's shards. Throws td::Error when the directory holds no dataset, a shard is
  /// truncated or corrupted, or the split has fewer tokens than one window ("the train split
  /// has N tokens; a window needs seq_len+1 = M: use a bigger corpus or a smaller seq_len").
  explicit DataLoader(const LoaderOptions& opt);
  ~DataLoader();

  /// Fills inputs and targets, each (micro_batch, seq_len) row-major, with the next micro
  /// batch of this rank. Micro batch m of a step is windows [m*B, (m+1)*B) of the rank's part.
  void next_batch(std::vector<int32_t>& inputs, std::vector<int32_t>& targets);
  /// Windows per epoch in this split.
  uint64_t num_windows() const;
  /// Global window indices (into the split's window list) of the micro batch that
  /// next_batch() would return next; for tests of disjointness.
  std::vector<uint64_t> peek_window_ids() const;
  LoaderState state() const;
  LoaderStats stats() const;
  /// Restores a position; the next batch is the one that followed when state() was taken.
  void restore(const LoaderState& s);
  /// Back to the first batch of epoch 0 (evaluation re-reads the same batches each time).
  void reset();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The windows of an epoch in reading order: a Fisher–Yates shuffle of 0..n-1 driven by
/// splitmix64 seeded from (seed, epoch), identical on every platform. n < 2^32.
std::vector<uint32_t> epoch_permutation(uint64_t n, uint64_t seed, uint64_t epoch);

/// The vocabulary size recorded in <dir>/manifest.json. Throws td::Error if there is none.
int dataset_vocab_size(const std::string& dataset_dir);

}  // namespace td
