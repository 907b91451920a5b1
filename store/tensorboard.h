// TensorBoard event files of a run's metrics (`traindeck-engine runs export RUN --tensorboard DIR`).
//
// The file format is TensorFlow's record framing around serialized `Event` protos
// (tensorflow/core/util/event.proto, tensorflow/core/framework/summary.proto; framing from
// tensorflow/core/lib/io/record_writer.cc):
//   uint64 length (little-endian) | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)
// masked_crc = ((crc >> 15) | (crc << 17)) + 0xa282ead8, crc = CRC-32C (Castagnoli, reflected
// polynomial 0x82F63B78). Debian has no CRC-32C or TensorBoard-writer library for C++, and the
// protos used are three small messages, so both are encoded here by hand:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
// The first record is Event{wall_time, file_version: "brain.Event:2"}; then one Event per
// (step, rank) of the store's metric rows, holding every metric of that step and rank as a
// simple_value (float32: TensorBoard's scalar), wall_time the first of those rows' `t`.
// Tags: the metric name for rank 0 ("loss", "val_loss"), "rank<r>/<name>" for rank r > 0.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace td::store {

class Store;

/// CRC-32C (Castagnoli) of `data`, as TFRecord framing uses it (RFC 3720 B.4 test vector:
/// 32 bytes of zeros -> 0x8A9136AA).
uint32_t crc32c(std::string_view data);
/// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8 (record_writer.cc, MaskedCrc).
uint32_t masked_crc32c(std::string_view data);
/// One TFRecord: length, masked CRC of the length, data, masked CRC of the data.
std::string tf_record(std::string_view data);

/// What write_tensorboard() wrote.
struct TensorBoardExport {
  std::string path;    ///< DIR/<run id>/events.out.tfevents.<start unix s>.traindeck
  int64_t events = 0;  ///< Event records after the file_version one (one per step and rank)
  int64_t values = 0;  ///< scalar values (one per metric row of the store)
};

/// Writes run `run_id`'s metric rows as one TensorBoard event file in `dir`/<run id>/ (created;
/// `tensorboard --logdir DIR` then lists the run by its id). The file is written to a temporary
/// name and renamed, so a reader never sees half of it; an earlier export of the run in that
/// folder is replaced. Errors (td::Error, nothing left behind): an unknown run, `dir` not a
/// folder, `dir`/<run id> a symlink or not a folder (never followed), a write failure (disk full).
TensorBoardExport write_tensorboard(Store& st, const std::string& run_id, const std::string& dir);

}  // namespace td::store
