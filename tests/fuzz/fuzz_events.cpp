// Fuzz target: events lines (docs/events.md) through the store's ingest (store/ingest.h), as a
// node's events.jsonl mirror brings them. Input: the events file. The ingest promises that a
// malformed line is skipped and counted, never thrown: so here every exception is a finding.
// One store (in /dev/shm when there is one) for the whole session; each input is a new file
// content read from its start (Ingester::reset).
#include <unistd.h>

#include <fstream>
#include <memory>

#include "fuzz_common.h"
#include "store/ingest.h"
#include "store/store.h"

namespace {

struct Env {
  std::string dir, events;
  std::unique_ptr<td::store::Store> store;
  Env() {
    std::string tmpl = (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") + std::string("/td-fuzz-events-XXXXXX");
    if (!mkdtemp(tmpl.data())) std::abort();
    dir = tmpl;
    events = dir + "/events.jsonl";
    store = std::make_unique<td::store::Store>(dir + "/store.db");
  }
  ~Env() {
    store.reset();
    for (const char* f : {"/events.jsonl", "/store.db", "/store.db-wal", "/store.db-shm", "/store.db-journal"})
      unlink((dir + f).c_str());
    rmdir(dir.c_str());
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Env env;
  {
    std::ofstream out(env.events, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  td::store::Ingester ing(*env.store, env.events, "fuzz");
  ing.reset();
  const td::store::IngestStats st = ing.poll_all();
  TD_FUZZ_REQUIRE(st.bytes <= size);
  TD_FUZZ_REQUIRE(st.skipped + st.ignored <= st.lines);
  return 0;
}
