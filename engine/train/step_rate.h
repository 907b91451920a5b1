// The progress line's time left: the wall-clock rate of the last steps of this process.
// Header-only; any thread (one owner).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

namespace td {

/// Wall-clock seconds per step over a sliding window of the last `window` step ends (the
/// time between them includes evaluations, samples and checkpoints, as the run's real pace
/// does), and the seconds left from it. The store's ETA (Store::run_progress) uses the same
/// rule over the stored steps.
class StepRate {
 public:
  explicit StepRate(int window = 100) : window_(window < 1 ? 1 : window) {}
  /// Step `step` ended at `t_s` seconds (any monotonic clock). Steps are increasing.
  void add(int64_t step, double t_s) {
    ends_.push_back({step, t_s});
    while (static_cast<int>(ends_.size()) > window_ + 1) ends_.pop_front();
  }
  /// (t_newest - t_oldest) / (step_newest - step_oldest) over the window: seconds per step;
  /// empty before two steps.
  std::optional<double> seconds_per_step() const {
    if (ends_.size() < 2 || ends_.back().step <= ends_.front().step) return std::nullopt;
    return (ends_.back().t - ends_.front().t) / static_cast<double>(ends_.back().step - ends_.front().step);
  }
  /// Seconds until step `total` at the current rate: (total - newest step) * seconds_per_step;
  /// 0 at or past `total`, empty before two steps.
  std::optional<double> seconds_left(int64_t total) const {
    const auto r = seconds_per_step();
    if (!r) return std::nullopt;
    const int64_t left = total - ends_.back().step;
    return left > 0 ? static_cast<double>(left) * *r : 0.0;
  }

 private:
  struct End {
    int64_t step;
    double t;
  };
  int window_;
  std::deque<End> ends_;
};

}  // namespace td
