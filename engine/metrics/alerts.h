// Alert rules (issue 16 section 3): the one evaluator of "something is wrong with this run",
// shared by the engine (which sees every step: non-finite, loss spike, throughput drop, disk) and
// the GUI's follower (which sees time pass: stall, connection lost, rank lost, run ended). Plain
// C++, no Qt, no I/O, no clock: callers pass the figures and the times, so a test can feed a
// hand-computed series and know exactly where each rule fires.
//
// Every rule fires ONCE per episode: the first observation past its threshold gives an Alert,
// later ones in the same state give nothing, and the rule re-arms when an observation is back
// inside the threshold (the throughput drop only after a whole window back inside: hysteresis).
// The step rules (loss spike, throughput drop) also fire at most once per alert_interval_s of
// the run's step time, so a figure that hovers at its limit cannot storm. The formulas (all
// documented in docs/events.md, "Alerts"):
//
//  * non-finite: loss or grad_norm is NaN or +-inf.
//  * loss spike: over the finite losses of the previous N = spike_window steps (at least
//    spike_min_steps of them), mean m and population standard deviation s; step loss L fires when
//        L > m + spike_sigma * s   and   L > spike_factor * m.
//    The first condition is the usual k-sigma outlier test; the second keeps a flat, noise-free
//    curve (s ~ 0) from firing on a tiny wobble. The step's own loss joins the window afterwards.
//  * throughput drop: skipping the first throughput_warmup steps (compilation, caches), the
//    median tokens/s of the recent window is compared with the median of all the run's steps
//    before it (at least as many as the window holds); fires when
//        median(recent) < throughput_fraction * median(earlier).
//    The recent window is the last W = throughput_window steps, extended back until they cover
//    throughput_window_s seconds of step time: with millisecond steps a window of 20 steps is
//    20 ms, where scheduler noise alone halves a median. It re-arms once the recent median has
//    stayed at or above the limit for as many consecutive steps as the window holds.
//  * stall: with M the median step time (seconds) of the last spike_window steps, fires when the
//    time since the last step exceeds max(stall_factor * M, stall_min_s). Before the first step
//    there is no stall (start-up, data loading and compilation may take long).
//  * disk: free bytes of the run directory's filesystem below disk_min_free_bytes, or below
//    disk_min_free_fraction of its size.
//  * connection lost: a remote target's connection down for longer than connection_lost_s.
//  * rank lost and run ended are events, not thresholds: rank_lost() and run_ended() build them.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace td::alerts {

/// What an alert is about. Stored and written as kind_name() ("nonfinite", "loss_spike", ...).
enum class Kind : uint8_t { NonFinite, LossSpike, ThroughputDrop, Stall, DiskLow, RankLost, ConnectionLost, RunEnded };
constexpr Kind kAllKinds[] = {Kind::NonFinite, Kind::LossSpike, Kind::ThroughputDrop, Kind::Stall,
                              Kind::DiskLow,   Kind::RankLost,  Kind::ConnectionLost, Kind::RunEnded};

/// "nonfinite", "loss_spike", "throughput_drop", "stall", "disk_low", "rank_lost",
/// "connection_lost", "run_end".
std::string_view kind_name(Kind k);
/// The Kind of kind_name(k); nullopt for any other text (a newer engine's kind).
std::optional<Kind> kind_from_name(std::string_view s);

/// "info" (a run that completed), "warning" (worth a look), "critical" (the run is failing or lost).
enum class Severity : uint8_t { Info, Warning, Critical };
std::string_view severity_name(Severity s);

/// One alert: the `alert` event's fields (docs/events.md). step: the run's last step when it
/// fired (0 before the first); value and threshold in the rule's unit (loss in nats/token,
/// tokens/s, seconds, bytes); NaN where the rule has none.
struct Alert {
  Kind kind = Kind::NonFinite;
  Severity severity = Severity::Warning;
  std::string message;  // English, one sentence, says what was seen and against what
  int64_t step = 0;
  double value = 0;
  double threshold = 0;
};

/// Thresholds, with the defaults the config (train.alert_*, docs/config.md) starts from.
struct AlertRules {
  int spike_window = 50;        // N: losses the mean and deviation are taken over
  int spike_min_steps = 10;     // no spike test before this many finite losses
  double spike_sigma = 6.0;     // k in m + k*s
  double spike_factor = 1.5;    // and above this multiple of the mean
  int throughput_window = 20;   // W
  double throughput_window_s = 60.0;  // the recent window covers at least this much step time
  int throughput_warmup = 10;   // first steps never counted
  double throughput_fraction = 0.5;
  double alert_interval_s = 600.0;  // at most one spike and one drop alert per this much step time
  double stall_factor = 10.0;   // times the median step time
  double stall_min_s = 120.0;   // never a stall sooner than this (checkpoints, evaluations pause)
  double disk_min_free_bytes = 1024.0 * 1024 * 1024;  // 1 GiB
  double disk_min_free_fraction = 0.02;               // 2 % of the filesystem
  double connection_lost_s = 180.0;
};

/// The median of a window of values added at the back and removed from the front, in
/// O(log n) per change (two balanced multisets), for windows of many thousand steps.
class WindowMedian {
 public:
  void push(double x);
  void erase(double x);  // x must be in the window
  double median() const;  // NaN when empty
  size_t size() const { return lo_.size() + hi_.size(); }

 private:
  std::multiset<double> lo_, hi_;  // lower half (ceil(n/2) values), upper half
  void balance();
};

/// Keeps the recent history of one run and answers each rule. Not thread-safe (one owner).
class AlertEvaluator {
 public:
  explicit AlertEvaluator(AlertRules rules = {});
  const AlertRules& rules() const { return rules_; }

  /// One optimizer step: loss (nats/token), grad_norm, step_s (its wall time, seconds),
  /// tokens_per_s. Returns the alerts it fires (non-finite, spike, throughput drop), in that
  /// order; a non-finite step adds nothing to the histories. A step also ends a stall episode.
  std::vector<Alert> on_step(int64_t step, double loss, double grad_norm, double step_s, double tokens_per_s);

  /// What a follower knows of the steps without their losses (gui/runs/alert_watch.h): the
  /// run's last step and the wall times (seconds) of its most recent steps, newest last, which
  /// replace the stall's window. A step beyond the last one seen ends a stall episode.
  void note_steps(int64_t last_step, const std::vector<double>& recent_step_s);

  /// Stall test: since_last_step_s = seconds since the last step (or since it was last seen).
  /// Fires once per episode; needs at least one step seen (else nullopt). Re-arms at on_step().
  std::optional<Alert> check_stall(double since_last_step_s);
  /// The stall limit now: max(stall_factor * median step time, stall_min_s); nullopt before any step.
  std::optional<double> stall_limit_s() const;

  /// Disk test of the run directory's filesystem: free and total bytes (statvfs f_bavail*f_frsize,
  /// f_blocks*f_frsize). total == 0: only the byte threshold counts.
  std::optional<Alert> check_disk(double free_bytes, double total_bytes);

  /// Connection test: lost_for_s = seconds the target's connection has been down (0 when up:
  /// re-arms).
  std::optional<Alert> check_connection(double lost_for_s);

  int64_t last_step() const { return last_step_; }

 private:
  AlertRules rules_;
  int64_t last_step_ = 0;
  std::deque<double> losses_;       // last spike_window finite losses
  std::deque<double> step_s_;       // last spike_window step times
  struct Timed {
    double tps, step_s;
  };
  std::deque<Timed> recent_;        // the recent window's tokens/s and step times, oldest first
  WindowMedian recent_median_;      // of recent_'s tokens/s
  double recent_s_ = 0;             // step time the recent window covers (seconds)
  double clock_s_ = 0;              // the run's step time so far (seconds): the rate limit's clock
  double next_spike_s_ = 0, next_drop_s_ = 0;  // no spike / drop alert before these clock_s_
  size_t recovered_steps_ = 0;      // consecutive steps back at or above the drop limit
  // All earlier tokens/s (after the warmup, before the window): a streaming median in two heaps,
  // low_ a max-heap of the lower half, high_ a min-heap of the upper half.
  std::priority_queue<double> low_;
  std::priority_queue<double, std::vector<double>, std::greater<double>> high_;
  int64_t steps_seen_ = 0;          // finite steps, for the warmup
  bool in_nonfinite_ = false, in_spike_ = false, in_drop_ = false, in_stall_ = false, in_disk_ = false,
       in_connection_ = false;
  void add_earlier(double tps);
  double earlier_median() const;
};

/// Median of v (the mean of the two middle values for an even count); NaN for an empty v.
double median(std::vector<double> v);

/// A rank or node lost: who (e.g. "rank 1 on node-b", "node node-b") and the reason given.
Alert rank_lost(int64_t step, const std::string& who, const std::string& reason);
/// A run that ended: status "completed" (info), "stopped" (warning), "failed" or other (critical).
Alert run_ended(int64_t step, const std::string& status, const std::string& reason);

}  // namespace td::alerts
