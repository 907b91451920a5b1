// Per-op timing of a backend: a Backend that forwards every call to another one and, around each
// op, synchronises the device and reads the host clock. What `traindeck-engine profile` prints
// (engine/metrics/op_profile.h) so that the op family taking a step's time is visible on the CPU
// and on a GPU alike.
//
// The synchronisation makes each figure the op's own time with its launch overhead, and removes
// any overlap of consecutive kernels (the CUDA backend runs one stream, so there is little to
// remove; a GPU's per-op figures then add up to a little more than an unprofiled step, by about
// the synchronisation latency per op, ~10 us). Memory calls (zero, upload, download) are counted
// under their own names.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "engine/ops/ops.h"

namespace td {

/// Calls and seconds per op name (op_name(), or "zero", "upload", "download").
struct OpTimes {
  struct Entry {
    uint64_t calls = 0;
    double seconds = 0;
  };
  std::map<std::string, Entry> by_op;
  void clear() { by_op.clear(); }
  double total_seconds() const;
};

/// A backend that times every op of `inner` into *times (both outlive it). alloc, free,
/// synchronize, supports and device_info pass through untimed. Thread-compatible like inner.
std::unique_ptr<Backend> make_profiling_backend(Backend& inner, OpTimes* times);

}  // namespace td
