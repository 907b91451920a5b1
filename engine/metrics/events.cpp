#include "engine/metrics/events.h"

#include <unistd.h>

#include <chrono>
#include <fstream>

#include "engine/common/error.h"
#include "engine/common/fileio.h"

namespace td {

double unix_time_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

EventWriter::EventWriter(const std::string& path, std::string run_id, int attempt, int rank, bool to_stdout)
    : path_(path), run_id_(std::move(run_id)), attempt_(attempt), rank_(rank), to_stdout_(to_stdout) {
  // Never through a link planted at the name, mode 0600 (engine/common/fileio.h).
  const int fd = open_private_file(path, O_RDWR | O_CREAT | O_APPEND, "the run's events file");
  f_ = ::fdopen(fd, "a+b");
  if (!f_) {
    ::close(fd);
    fail_errno("cannot open events file", path);
  }
  // A process killed in the middle of a line left it unterminated: end it, so that the first
  // event of this attempt starts a line of its own (readers skip the fragment as malformed).
  if (std::fseek(f_, 0, SEEK_END) == 0 && std::ftell(f_) > 0 && std::fseek(f_, -1, SEEK_END) == 0) {
    int last = std::fgetc(f_);
    std::fseek(f_, 0, SEEK_END);
    if (last != '\n' && (std::fputc('\n', f_) == EOF || std::fflush(f_) != 0)) fail_errno("cannot write events file", path);
  }
}

EventWriter::~EventWriter() {
  if (f_) std::fclose(f_);
}

void EventWriter::emit(const std::string& type, nlohmann::json fields) {
  nlohmann::json e = {{"type", type}, {"v", kEventSchemaVersion}, {"t", unix_time_s()},
                      {"run_id", run_id_}, {"attempt", attempt_}, {"rank", rank_}};
  for (auto it = fields.begin(); it != fields.end(); ++it) e[it.key()] = it.value();
  // Replace invalid UTF-8 (a sample can cut a multi-byte character) instead of throwing.
  std::string line = e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
    fail_errno("cannot write events file", path_);
  if (to_stdout_) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  }
}

void EventWriter::sync() {
  std::fflush(f_);
  ::fsync(fileno(f_));
}

int last_attempt_in_events(const std::string& path, const std::string& run_id) {
  std::ifstream in(path);
  int best = -1;
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (j.value("run_id", "") != run_id || j.value("type", "") != "run_start") continue;
    const auto a = j.find("attempt");
    if (a == j.end() || !a->is_number_integer() || a->get<int64_t>() < 0 || a->get<int64_t>() > kMaxAttempt) continue;
    best = std::max(best, static_cast<int>(a->get<int64_t>()));
  }
  return best;
}

}  // namespace td
