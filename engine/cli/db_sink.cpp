#include "engine/cli/db_sink.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "engine/common/error.h"
#include "engine/metrics/events.h"
#include "store/ingest.h"
#include "store/store.h"

namespace td::cli {

namespace {

constexpr std::chrono::milliseconds kFirstBackoff{250}, kMaxBackoff{4000};
constexpr size_t kMaxMessages = 5;  // ingest messages printed per run; the count says the rest

std::string run_dir_of(const std::string& events_path) {
  return std::filesystem::path(events_path).parent_path().string();
}

}  // namespace

DbSink::DbSink(const std::string& db_path, const std::string& events_path, const std::string& experiment,
               const std::string& run_id, bool fresh)
    : db_path_(db_path), events_path_(events_path), run_id_(run_id) {
  store_ = std::make_unique<store::Store>(db_path);  // errors here stop the run before it starts
  ingester_ = std::make_unique<store::Ingester>(*store_, events_path, experiment, store::ingest_options_for(run_id));
  if (fresh) {
    std::string other;
    const auto claim = store_->claim_run(run_id, experiment, events_path, static_cast<int64_t>(::getpid()), &other);
    if (claim == store::Store::Claim::other_file)
      fail("run id '" + run_id + "' is already in the store '" + db_path + "' (events " + other +
           "): choose another --run-id, or continue that run with --resume --out <its directory>");
    claimed_ = claim == store::Store::Claim::created;
    std::error_code ec;
    if (std::filesystem::file_size(events_path, ec) == 0 || ec) ingester_->reset();  // a new file: no offset to keep
  }
  // From here on a lock held by someone else costs training at most kBusyMs per poll: the
  // batch rolls back and is retried later, from the same byte offset.
  sqlite3_busy_timeout(store_->handle(), kBusyMs);
}

DbSink::~DbSink() = default;

void DbSink::report(const store::IngestStats& s) {
  skipped_ += s.skipped;
  for (const auto& m : s.messages)
    if (messages_++ < kMaxMessages) std::fprintf(stderr, "warning: store: %s\n", m.c_str());
}

bool DbSink::ingest(bool all) {
  const auto now = std::chrono::steady_clock::now();
  try {
    // A store that failed catches up in full as soon as it can be written again.
    report(all || failing_ ? ingester_->poll_all() : ingester_->poll());
  } catch (const std::exception& e) {
    if (!failing_) {
      std::fprintf(stderr,
                   "warning: the store '%s' cannot be written (%s); the events file keeps everything and the "
                   "store catches up when it can be written again (retrying every few seconds)\n",
                   db_path_.c_str(), e.what());
      failing_ = true;
      failing_since_ = now;
      backoff_ = kFirstBackoff;
    } else {
      backoff_ = std::min(backoff_ * 2, kMaxBackoff);
    }
    last_error_ = e.what();
    next_try_ = now + backoff_;
    return false;
  }
  if (failing_) {
    failing_ = false;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - failing_since_).count();
    std::fprintf(stderr, "note: the store '%s' caught up with the events file (it could not be written for %.1f s)\n",
                 db_path_.c_str(), s);
  }
  return true;
}

void DbSink::poll() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(200) || (failing_ && now < next_try_)) return;
  last_ = now;
  ingest(false);
}

void DbSink::end_without_run_end(const std::string& failure) {
  try {
    const auto run = store_->find_run(run_id_);
    if (!run || run->attempts == 0 || run->end_time) return;  // never started, or its end is recorded
    const std::string reason =
        (failure.empty() ? std::string("the engine ended without a reason") : failure) +
        " (its run_end could not be written to the events file; the store recorded the end directly)";
    if (store_->mark_run_ended(run_id_, "failed", reason, unix_time_s()))
      std::fprintf(stderr, "note: the events file '%s' has no end for run %s; the store records it as failed: %s\n",
                   events_path_.c_str(), run_id_.c_str(), reason.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: the store '%s' could not record the run's end: %s\n", db_path_.c_str(), e.what());
  }
}

bool DbSink::finish(const std::string& failure, std::chrono::milliseconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  bool done = ingest(true);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_until(std::min(next_try_, deadline));
    done = ingest(true);
  }
  if (!done) {
    std::fprintf(stderr,
                 "warning: the store '%s' still cannot be written (%s); the events file keeps the whole run: catch "
                 "the store up with `traindeck-engine runs ingest %s --db %s`\n",
                 db_path_.c_str(), last_error_.c_str(), run_dir_of(events_path_).c_str(), db_path_.c_str());
    return false;
  }
  if (skipped_ > 0)
    std::fprintf(stderr, "warning: %zu malformed line%s of %s %s skipped: not recorded in the store (runs show counts them)\n",
                 skipped_, skipped_ == 1 ? "" : "s", events_path_.c_str(), skipped_ == 1 ? "was" : "were");
  if (claimed_) {
    try {
      store_->release_claim(run_id_, events_path_);  // a run that never started leaves no row
    } catch (const std::exception&) {
    }
  }
  end_without_run_end(failure);
  return true;
}

}  // namespace td::cli
