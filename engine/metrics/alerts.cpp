#include "engine/metrics/alerts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace td::alerts {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

std::string bytes_text(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  while (b >= 1024 && i < 5) b /= 1024, i++;
  return fmt(i ? "%.1f " : "%.0f ", b) + unit[i];
}

}  // namespace

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::NonFinite: return "nonfinite";
    case Kind::LossSpike: return "loss_spike";
    case Kind::ThroughputDrop: return "throughput_drop";
    case Kind::Stall: return "stall";
    case Kind::DiskLow: return "disk_low";
    case Kind::RankLost: return "rank_lost";
    case Kind::ConnectionLost: return "connection_lost";
    case Kind::RunEnded: return "run_end";
  }
  return "";
}

std::optional<Kind> kind_from_name(std::string_view s) {
  for (Kind k : kAllKinds)
    if (kind_name(k) == s) return k;
  return std::nullopt;
}

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Critical: return "critical";
  }
  return "";
}

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  const size_t n = v.size(), h = n / 2;
  std::nth_element(v.begin(), v.begin() + h, v.end());
  const double hi = v[h];
  if (n % 2) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + h);
  return 0.5 * (lo + hi);
}

void WindowMedian::balance() {
  while (lo_.size() > hi_.size() + 1) {
    hi_.insert(*std::prev(lo_.end()));
    lo_.erase(std::prev(lo_.end()));
  }
  while (hi_.size() > lo_.size()) {
    lo_.insert(*hi_.begin());
    hi_.erase(hi_.begin());
  }
}

void WindowMedian::push(double x) {
  if (lo_.empty() || x <= *std::prev(lo_.end())) lo_.insert(x);
  else hi_.insert(x);
  balance();
}

void WindowMedian::erase(double x) {
  if (auto it = lo_.find(x); it != lo_.end()) lo_.erase(it);
  else if (auto jt = hi_.find(x); jt != hi_.end()) hi_.erase(jt);
  balance();
}

double WindowMedian::median() const {
  if (lo_.empty()) return kNaN;
  if (lo_.size() > hi_.size()) return *std::prev(lo_.end());
  return 0.5 * (*std::prev(lo_.end()) + *hi_.begin());
}

AlertEvaluator::AlertEvaluator(AlertRules rules) : rules_(rules) {
  rules_.spike_window = std::max(rules_.spike_window, 1);
  rules_.throughput_window = std::max(rules_.throughput_window, 1);
}

void AlertEvaluator::add_earlier(double tps) {
  if (low_.empty() || tps <= low_.top()) low_.push(tps);
  else high_.push(tps);
  // Balance: low_ holds ceil(n/2), high_ floor(n/2).
  if (low_.size() > high_.size() + 1) high_.push(low_.top()), low_.pop();
  else if (high_.size() > low_.size()) low_.push(high_.top()), high_.pop();
}

double AlertEvaluator::earlier_median() const {
  if (low_.empty()) return kNaN;
  if (low_.size() > high_.size()) return low_.top();
  return 0.5 * (low_.top() + high_.top());
}

std::vector<Alert> AlertEvaluator::on_step(int64_t step, double loss, double grad_norm, double step_s, double tokens_per_s) {
  std::vector<Alert> out;
  last_step_ = step;
  in_stall_ = false;
  if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
    if (!in_nonfinite_) {
      in_nonfinite_ = true;
      const bool l = !std::isfinite(loss);
      out.push_back({Kind::NonFinite, Severity::Critical,
                     "step " + std::to_string(step) + ": the " + (l ? "loss" : "gradient norm") + " is not finite",
                     step, l ? loss : grad_norm, kNaN});
    }
    return out;
  }
  in_nonfinite_ = false;
  if (std::isfinite(step_s) && step_s >= 0) clock_s_ += step_s;

  // Loss spike against the previous window.
  const size_t n = losses_.size();
  if ((int)n >= rules_.spike_min_steps && n > 0) {
    double sum = 0;
    for (double x : losses_) sum += x;
    const double m = sum / n;
    double ss = 0;
    for (double x : losses_) ss += (x - m) * (x - m);
    const double s = std::sqrt(ss / n);
    const double limit = std::max(m + rules_.spike_sigma * s, rules_.spike_factor * m);
    if (loss > limit) {
      if (!in_spike_ && clock_s_ >= next_spike_s_) {
        in_spike_ = true;
        next_spike_s_ = clock_s_ + rules_.alert_interval_s;
        out.push_back({Kind::LossSpike, Severity::Warning,
                       fmt("step %.0f: loss %.4g is far above the last steps' mean %.4g", (double)step, loss, m) +
                           fmt(" (limit %.4g = max(mean + %g std, ", limit, rules_.spike_sigma) +
                           fmt("%g x mean) over the last %.0f steps", rules_.spike_factor, (double)n) +
                           fmt("; at most one such alert per %.0f s)", rules_.alert_interval_s),
                       step, loss, limit});
      }
    } else {
      in_spike_ = false;
    }
  }
  losses_.push_back(loss);
  if ((int)losses_.size() > rules_.spike_window) losses_.pop_front();

  if (std::isfinite(step_s) && step_s >= 0) {
    step_s_.push_back(step_s);
    if ((int)step_s_.size() > rules_.spike_window) step_s_.pop_front();
  }

  // Throughput drop: the recent window against every earlier step (after the warmup).
  steps_seen_++;
  if (steps_seen_ > rules_.throughput_warmup && std::isfinite(tokens_per_s)) {
    const double s = std::isfinite(step_s) && step_s >= 0 ? step_s : 0.0;
    recent_.push_back({tokens_per_s, s});
    recent_median_.push(tokens_per_s);
    recent_s_ += s;
    // The oldest step leaves for the earlier median while the window still holds W steps and
    // throughput_window_s seconds without it.
    while ((int)recent_.size() > rules_.throughput_window && recent_s_ - recent_.front().step_s >= rules_.throughput_window_s) {
      add_earlier(recent_.front().tps);
      recent_median_.erase(recent_.front().tps);
      recent_s_ -= recent_.front().step_s;
      recent_.pop_front();
    }
    const size_t earlier = low_.size() + high_.size();
    if ((int)recent_.size() >= rules_.throughput_window && earlier >= recent_.size()) {
      const double now = recent_median_.median();
      const double before = earlier_median();
      const double limit = rules_.throughput_fraction * before;
      if (now < limit) {
        recovered_steps_ = 0;
        if (!in_drop_ && clock_s_ >= next_drop_s_) {
          in_drop_ = true;
          next_drop_s_ = clock_s_ + rules_.alert_interval_s;
          out.push_back({Kind::ThroughputDrop, Severity::Warning,
                         fmt("step %.0f: throughput fell to %.4g tokens/s (median of the last %.0f steps, ", (double)step, now,
                             (double)recent_.size()) +
                             fmt("%.3g s), below %g of the earlier median ", recent_s_, rules_.throughput_fraction) +
                             fmt("%.4g tokens/s (limit %.4g); it re-arms after a whole window back above the limit", before, limit) +
                             fmt(", at most one such alert per %.0f s", rules_.alert_interval_s),
                         step, now, limit});
        }
      } else if (in_drop_ && ++recovered_steps_ >= recent_.size()) {
        in_drop_ = false;  // hysteresis: a whole window back at or above the limit
        recovered_steps_ = 0;
      }
    }
  }
  return out;
}

void AlertEvaluator::note_steps(int64_t last_step, const std::vector<double>& recent_step_s) {
  if (last_step > last_step_) in_stall_ = false;
  last_step_ = std::max(last_step_, last_step);
  step_s_.clear();
  const size_t n = recent_step_s.size(), keep = std::min(n, (size_t)rules_.spike_window);
  for (size_t i = n - keep; i < n; ++i)
    if (std::isfinite(recent_step_s[i]) && recent_step_s[i] >= 0) step_s_.push_back(recent_step_s[i]);
}

std::optional<double> AlertEvaluator::stall_limit_s() const {
  if (step_s_.empty()) return std::nullopt;
  return std::max(rules_.stall_factor * median({step_s_.begin(), step_s_.end()}), rules_.stall_min_s);
}

std::optional<Alert> AlertEvaluator::check_stall(double since_last_step_s) {
  const auto limit = stall_limit_s();
  if (!limit || in_stall_ || !(since_last_step_s > *limit)) return std::nullopt;
  in_stall_ = true;
  return Alert{Kind::Stall, Severity::Warning,
               fmt("no step for %.0f s after step %.0f ", since_last_step_s, (double)last_step_) +
                   fmt("(limit %.0f s: %g x the median step time, at least the floor)", *limit, rules_.stall_factor),
               last_step_, since_last_step_s, *limit};
}

std::optional<Alert> AlertEvaluator::check_disk(double free_bytes, double total_bytes) {
  const double limit = std::max(rules_.disk_min_free_bytes, total_bytes > 0 ? rules_.disk_min_free_fraction * total_bytes : 0.0);
  if (!(free_bytes < limit)) {
    in_disk_ = false;
    return std::nullopt;
  }
  if (in_disk_) return std::nullopt;
  in_disk_ = true;
  std::string msg = "the run directory's disk has " + bytes_text(free_bytes) + " free";
  if (total_bytes > 0) msg += fmt(" (%.1f %% of ", 100.0 * free_bytes / total_bytes) + bytes_text(total_bytes) + ")";
  msg += ", below " + bytes_text(limit) + "; free space before the next checkpoint";
  return Alert{Kind::DiskLow, Severity::Warning, msg, last_step_, free_bytes, limit};
}

std::optional<Alert> AlertEvaluator::check_connection(double lost_for_s) {
  if (!(lost_for_s > rules_.connection_lost_s)) {
    if (lost_for_s <= 0) in_connection_ = false;
    return std::nullopt;
  }
  if (in_connection_) return std::nullopt;
  in_connection_ = true;
  return Alert{Kind::ConnectionLost, Severity::Warning,
               fmt("the connection to the run has been lost for %.0f s (limit %.0f s); the run goes on and is followed again when it returns",
                   lost_for_s, rules_.connection_lost_s),
               last_step_, lost_for_s, rules_.connection_lost_s};
}

Alert rank_lost(int64_t step, const std::string& who, const std::string& reason) {
  return {Kind::RankLost, Severity::Critical, who + " lost" + (reason.empty() ? "" : ": " + reason), step, kNaN, kNaN};
}

Alert run_ended(int64_t step, const std::string& status, const std::string& reason) {
  const Severity s = status == "completed" ? Severity::Info : status == "stopped" ? Severity::Warning : Severity::Critical;
  return {Kind::RunEnded, s, "run " + status + " at step " + std::to_string(step) + (reason.empty() ? "" : ": " + reason), step, kNaN, kNaN};
}

}  // namespace td::alerts
