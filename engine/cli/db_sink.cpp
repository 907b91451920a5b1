#include "engine/cli/db_sink.h"

#include <cstdio>
#include <filesystem>

#include "engine/common/error.h"
#include "store/ingest.h"
#include "store/store.h"

namespace td::cli {

DbSink::DbSink(const std::string& db_path, const std::string& events_path, const std::string& experiment,
               const std::string& run_id, bool fresh) {
  store_ = std::make_unique<store::Store>(db_path);  // errors here stop the run before it starts
  ingester_ = std::make_unique<store::Ingester>(*store_, events_path, experiment);
  if (!fresh) return;
  if (auto run = store_->find_run(run_id); run && run->events_path != events_path)
    fail("run id '" + run_id + "' is already in the store '" + db_path + "' (events " + run->events_path +
         "): choose another --run-id, or continue that run with --resume --out <its directory>");
  std::error_code ec;
  if (std::filesystem::file_size(events_path, ec) == 0 || ec) ingester_->reset();  // a new file: no offset to keep
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
