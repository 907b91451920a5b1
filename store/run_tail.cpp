// RunTail (run_tail.h): ingest a followed run's events file, end a run whose source is gone.
#include "store/run_tail.h"

#include <chrono>

#include "engine/common/error.h"

namespace td::store {

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

RunTail::RunTail(Store& store, std::string run_id, std::string events_path, std::string experiment)
    : store_(store), run_id_(std::move(run_id)), ingester_(store, std::move(events_path), std::move(experiment), ingest_options_for(run_id_)) {}

void RunTail::check_released() {
  std::string found;
  for (const std::string& p : store_.release_open_state()) found += (found.empty() ? "" : "; ") + p;
  if (!found.empty()) throw Error("store '" + store_.path() + "' after ingesting run " + run_id_ + ": " + found);
}

IngestStats RunTail::ingest(double budget_s) {
  if (budget_s <= 0) {
    IngestStats st = ingester_.poll_all();
    check_released();
    return st;
  }
  const auto t0 = std::chrono::steady_clock::now();
  IngestStats all;
  IngestStats st;
  do {
    st = ingester_.poll();
    all += st;
  } while (!st.at_eof && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < budget_s);
  check_released();
  return all;
}

std::optional<RunInfo> RunTail::run() { return store_.find_run(run_id_); }

bool RunTail::ended() {
  auto info = run();
  return info && info->end_time.has_value();
}

RunTail::End RunTail::finish(const std::string& status, const std::string& reason, double t) {
  End e;
  e.ingest = ingester_.poll_all();
  auto info = run();
  if (!info) {
    e.status = "unknown";
    return e;
  }
  if (!info->end_time) {
    e.marked = store_.mark_run_ended(run_id_, status, reason, t > 0 ? t : now_s());
    info = run();
  }
  e.status = info->status;
  e.end_reason = info->end_reason;
  return e;
}

}  // namespace td::store
