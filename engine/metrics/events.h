// Run events (docs/events.md): one JSON object per line, flushed as written, to stdout and
// appended to <out>/events.jsonl. The writer adds the common fields (type, v, t, run_id,
// attempt, rank) to every event.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace td {

constexpr int kEventSchemaVersion = 1;
/// The highest `attempt` an event may carry (docs/events.md): a resume per minute for almost two
/// years. A line outside 0..kMaxAttempt is malformed (the store skips it, the trainer ignores it),
/// so a forged number can never make the next attempt wrap around.
constexpr int kMaxAttempt = 1000000;
/// The highest `step` an event may carry (docs/events.md): a trillion optimizer steps, beyond any
/// run (GPT-3 took about 1e5). A step outside 0..kMaxStep is malformed, so a forged number can
/// neither be stored as a run's progress nor overflow a sum of steps.
constexpr int64_t kMaxStep = 1000000000000;
/// The highest `rank` an event may carry: a million processes, beyond any cluster's world size.
constexpr int kMaxRank = 1000000;

class EventWriter {
 public:
  /// Opens path for appending (creates it, mode 0600). to_stdout: also print each line on stdout.
  /// Throws td::Error when the file cannot be opened, or is a symbolic link, has another hard
  /// link or is not a regular file (td::open_private_file: what it points to is left untouched).
  EventWriter(const std::string& path, std::string run_id, int attempt, int rank, bool to_stdout);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;
  /// Writes {"type": type, "v": 1, "t": now, "run_id", "attempt", "rank", ...fields} and flushes.
  void emit(const std::string& type, nlohmann::json fields);
  /// fsyncs the events file (called at every checkpoint).
  void sync();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string run_id_;
  int attempt_, rank_;
  bool to_stdout_;
  std::FILE* f_ = nullptr;
};

/// The highest `attempt` among the run_start events of run_id in an events file (-1 when none /
/// no file). Lines whose attempt is not an integer in 0..kMaxAttempt are ignored (malformed).
int last_attempt_in_events(const std::string& path, const std::string& run_id);

/// Unix time in seconds (fractional).
double unix_time_s();

}  // namespace td
