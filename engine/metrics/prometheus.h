// `train --metrics-port`: the run's current figures in the Prometheus text exposition format
// (prometheus.io/docs/instrumenting/exposition_formats, version 0.0.4), served over HTTP by
// cpp-httplib (Debian libcpp-httplib-dev) from rank 0.
//
// What is served follows the events (docs/events.md): every number of the newest `step` event
// becomes a gauge traindeck_<field> (traindeck_loss, traindeck_tokens_per_s, traindeck_mfu,
// traindeck_step, ...), `eval` gives traindeck_val_loss, and each entry of a step's `ranks`
// array gives traindeck_rank_<field> (traindeck_rank_tokens_per_s, traindeck_rank_comm_bytes_sent,
// ...) labelled with that rank and its host. Every series carries run_id, rank and host labels.
// A scrape before the first step sees traindeck_up 1 alone.
// Threading rule: observe() from the training thread, scrapes on the server's own thread; the
// figures are guarded by a mutex, so a scrape never sees half of a step.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace td {

/// One gauge sample: traindeck_<name>{labels} value.
struct PromSample {
  std::string name;                                 ///< without the traindeck_ prefix
  std::vector<std::pair<std::string, std::string>> labels;  ///< in the order written
  double value = 0;
};

/// The exposition text of `samples`: for each name (in first-seen order) one "# TYPE
/// traindeck_<name> gauge" line, then its samples. Names are reduced to [a-zA-Z0-9_] (others
/// become '_'); label values escaped as the format says (\\ for a backslash, \" for a quote, \n
/// for a newline); values printed with 17 significant digits (a double reads back exactly),
/// NaN and infinities as NaN, +Inf, -Inf.
std::string prometheus_text(const std::vector<PromSample>& samples);

/// Serves GET /metrics on address:port from a thread of its own until destroyed.
///
/// One thread serves every connection through poll(), so a slow client never holds a worker:
/// each connection has kRequestDeadlineS seconds in all to send its request (however it
/// dribbles), a request head of at most kMaxRequestBytes, and at most kMaxConnections are open
/// at once (a new one closes the oldest), so a scrape always gets through. (cpp-httplib, used
/// before, reset its read timeout at every header line and gave each connection one of 8
/// workers: 8 clients dribbling headers stopped every scrape.) Each answer closes its connection
/// (HTTP/1.0-style "Connection: close"), as Prometheus expects of a small target.
class MetricsServer {
 public:
  /// Binds address:port (port 0: a free port, see port()). `labels` go on every series (run_id,
  /// host). Throws td::Error when the address cannot be bound, naming it and what to do.
  MetricsServer(const std::string& address, int port, std::vector<std::pair<std::string, std::string>> labels);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  static constexpr double kRequestDeadlineS = 5.0;  ///< a connection's whole request, seconds
  static constexpr size_t kMaxRequestBytes = 8192;  ///< request line and headers
  static constexpr size_t kMaxConnections = 64;     ///< open at once; a new one closes the oldest

  int port() const { return port_; }
  /// "http://<address>:<port>/metrics"
  std::string url() const;
  /// Takes the figures of one event (type and its fields, as EventWriter writes them).
  void observe(const std::string& type, const nlohmann::json& fields);
  /// What a scrape returns now.
  std::string text() const;

 private:
  std::string address_;
  int port_ = 0;
  std::vector<std::pair<std::string, std::string>> labels_;
  mutable std::mutex mu_;
  std::map<std::string, double> global_;                      // rank 0's step and eval figures
  std::map<int, std::pair<std::string, std::map<std::string, double>>> ranks_;  // rank -> host, figures
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: the destructor's word to the serving thread
  std::thread thread_;
  void serve();
};

}  // namespace td
