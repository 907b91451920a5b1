#include "engine/cli/db_sink.h"

#include <cstdio>

#include "engine/common/error.h"
#include "store/ingest.h"
#include "store/store.h"

namespace td::cli {

DbSink::DbSink(const std::string& db_path, const std::string& events_path, const std::string& experiment) {
  store_ = std::make_unique<store::Store>(db_path);  // errors here stop the run before it starts
  ingester_ = std::make_unique<store::Ingester>(*store_, events_path, experiment);
}

DbSink::~DbSink() = default;

void DbSink::ingest(bool all) {
  if (failed_) return;
  try {
    if (all) ingester_->poll_all();
    else ingester_->poll();
  } catch (const Error& e) {
    failed_ = true;
    std::fprintf(stderr, "warning: the store stopped recording this run (%s); the events file keeps everything\n", e.what());
  }
}

void DbSink::poll() {
  auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  ingest(false);
}

void DbSink::finish() { ingest(true); }

}  // namespace td::cli
