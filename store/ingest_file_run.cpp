// Which run an events file feeds (store/ingest.h, IngestOptions::run_id): the Ingester's file
// run, decided before a batch and by the first valid line of a new file (its row is created by
// Ingester::file_run in ingest.cpp); and the events-file helpers events_path_of() and
// events_run_id().
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "store/ingest.h"

namespace td::store {

using json = nlohmann::json;

// The file's run, as far as the store knows it, before the batch reads a line: the caller's
// (IngestOptions::run_id), else the run the file was recorded for (event_files.run), else the
// newest run recorded from this path; else undecided until the first valid line (claim_line).
void Ingester::resolve_file_run(std::optional<int64_t> recorded) {
  file_run_key_ = -1;
  file_run_id_ = opts_.run_id;
  if (!file_run_id_.empty()) return;
  sqlite3* db = store_.handle();
  if (recorded) {
    Stmt st(db, "SELECT run_id FROM runs WHERE id = ?1");
    st.bind(1, *recorded);
    if (st.step()) {
      file_run_id_ = st.col_text(0);
      file_run_key_ = *recorded;
      return;
    }
  }
  Stmt st(db, "SELECT id, run_id FROM runs WHERE events_path = ?1 ORDER BY id DESC LIMIT 1");
  st.bind(1, path_);
  if (st.step()) {
    file_run_key_ = st.col_int(0);
    file_run_id_ = st.col_text(1);
  }
}

// A valid line naming run `run_id`: throws Foreign unless it is the file's run. While the file's
// run is undecided (a file the store has never seen), the first valid line decides it, unless
// the store records that run from another events file (a hand-written file naming someone
// else's run: every such line is refused).
void Ingester::claim_line(std::string_view run_id) {
  if (!file_run_id_.empty()) {
    if (run_id == file_run_id_) return;
    throw Foreign{"line names run '" + std::string(run_id) + "', but this file is run '" + file_run_id_ +
                  "''s (an events file feeds one run)"};
  }
  find_run_.bind(1, std::string(run_id));
  std::optional<int64_t> key;
  std::string from;
  if (find_run_.step()) {
    key = find_run_.col_int(0);
    from = find_run_.col_text(1);
  }
  find_run_.reset();
  if (!from.empty() && from != path_)
    throw Foreign{"line names run '" + std::string(run_id) + "', which the store records from another events file ('" + from +
                  "'); an events file feeds one run, so this file cannot change it"};
  file_run_id_.assign(run_id);
  file_run_key_ = key.value_or(-1);
}

std::string events_path_of(const std::string& run_dir) {
  namespace fs = std::filesystem;
  return (fs::absolute(fs::path(run_dir)) / "events.jsonl").lexically_normal().string();
}

std::string events_run_id(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) throw Error("events file '" + path + "' is a symbolic link; ingest the run directory that holds the file itself");
    fail_errno("cannot open events file", path);
  }
  std::string head;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || head.size() >= (1u << 20)) break;
    head.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t pos = 0;
  while (pos < head.size()) {
    size_t nl = head.find('\n', pos);
    if (nl == std::string::npos) break;  // an incomplete last line is not read
    const json j = json::parse(head.begin() + static_cast<std::ptrdiff_t>(pos), head.begin() + static_cast<std::ptrdiff_t>(nl),
                               nullptr, /*allow_exceptions=*/false);
    pos = nl + 1;
    if (!j.is_object()) continue;
    const auto id = j.find("run_id");
    if (id != j.end() && id->is_string() && !id->get_ref<const std::string&>().empty()) return id->get<std::string>();
  }
  return "";
}

}  // namespace td::store
