// Ingest throughput of the store next to a bare prepared-statement insert loop.
//
//   bench_store_ingest [metric_rows] [ingest]   (default 1000000 rows, 8 per step event;
//                                               `ingest`: time only the store ingest, for perf)
//
// bare:   one transaction, one prepared INSERT per row, values already in memory: into a
//         plain rowid table, and into a table keyed like `metrics` (the ceilings SQLite allows).
// parse:  nlohmann-json parsing of the same events.jsonl lines, nothing written.
// ingest: Ingester::poll_all() on the events file (read, parse, upsert, offsets, batches of
//         10000 lines), into a fresh store.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "store/ingest.h"
#include "store/sqlite.h"
#include "store/store.h"

using namespace td::store;
using Clock = std::chrono::steady_clock;

// Process CPU seconds: steadier than wall time on a shared machine.
static double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// A phase's wall and CPU seconds.
struct Timer {
  Clock::time_point w0 = Clock::now();
  double c0 = cpu_now();
  double wall = 0, cpu = 0;
  void stop() {
    wall = std::chrono::duration<double>(Clock::now() - w0).count();
    cpu = cpu_now() - c0;
  }
};

int main(int argc, char** argv) {
  const long rows = argc > 1 ? std::atol(argv[1]) : 1000000;
  const long steps = rows / 8;
  char tmpl[] = "/tmp/td-bench-store-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string events = dir + "/events.jsonl";
  {
    std::ofstream f(events, std::ios::binary);
    f << R"({"type":"run_start","v":1,"t":1764470000.0,"run_id":"bench","attempt":0,"rank":0,"host":"h","config":{}})" << '\n';
    char buf[512];
    for (long s = 1; s <= steps; ++s) {
      std::snprintf(buf, sizeof buf,
                    R"({"type":"step","v":1,"t":%.3f,"run_id":"bench","attempt":0,"rank":0,"step":%ld,"tokens_seen":%ld,"loss":%.6f,"lr":0.0003,"grad_norm":%.5f,"step_ms":812.5,"tokens_per_s":%.1f,"mfu":0.41,"rss_bytes":183500800})",
                    1764470000.0 + s * 0.8125, s, s * 2048, 10.0 / (1.0 + s * 1e-4), 1.0 + (s % 7) * 0.1,
                    2520.0 + (s % 13));
      f << buf << '\n';
    }
  }
  struct stat sb {};
  stat(events.c_str(), &sb);
  std::printf("events: %ld step lines, %.1f MiB, %ld metric rows\n", steps, sb.st_size / 1048576.0, steps * 8);

  // bare: prepared INSERT loop, one transaction; into a plain rowid table (no index), then into
  // a table shaped like the store's metrics (primary key (run, name, rank, step)).
  auto bare = [&](const char* file, const char* table_sql) {
    sqlite3* db = nullptr;
    sqlite3_open((dir + file).c_str(), &db);
    exec_sql(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
    exec_sql(db, table_sql);
    Timer tm;
    {
      Transaction tx(db);
      Stmt ins(db, "INSERT INTO metrics VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
      for (long s = 1; s <= steps; ++s)
        for (int n = 1; n <= 8; ++n) {
          ins.bind(1, int64_t(1)).bind(2, int64_t(n)).bind(3, 0).bind(4, int64_t(s)).bind(5, 0);
          ins.bind(6, 1764470000.0 + s * 0.8125).bind(7, 0.5 * n + s);
          ins.exec();
        }
      tx.commit();
    }
    tm.stop();
    sqlite3_close(db);
    return tm;
  };
  const bool only_ingest = argc > 2 && std::string(argv[2]) == "ingest";
  const Timer plain = only_ingest ? Timer() : bare("/plain.db",
                              "CREATE TABLE metrics (run INTEGER, name INTEGER, rank INTEGER, step INTEGER,"
                              " attempt INTEGER, t REAL, value REAL)");
  const Timer bare_key = only_ingest ? Timer() : bare("/bare.db",
                             "CREATE TABLE metrics (run INTEGER NOT NULL, name INTEGER NOT NULL,"
                             " rank INTEGER NOT NULL, step INTEGER NOT NULL, attempt INTEGER NOT NULL,"
                             " t REAL NOT NULL, value REAL NOT NULL,"
                             " PRIMARY KEY (run, name, rank, step)) WITHOUT ROWID");

  // parse only.
  Timer parse;
  {
    std::ifstream f(events, std::ios::binary);
    std::string line;
    size_t objects = 0;
    parse = Timer();
    while (!only_ingest && std::getline(f, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      objects += j.is_object();
    }
    parse.stop();
    if (!only_ingest && objects != size_t(steps + 1)) std::printf("parse: unexpected count %zu\n", objects);
  }

  // ingest.
  Timer ingest;
  IngestStats stats;
  {
    Store st(dir + "/store.db");
    Ingester ing(st, events);
    ingest = Timer();
    stats = ing.poll_all();
    ingest.stop();
  }

  const double r = static_cast<double>(steps * 8);
  auto row = [&](const char* what, const Timer& tm) {
    std::printf("%-18s %7.3f s wall %9.0f rows/s | %7.3f s CPU %9.0f rows/s\n", what, tm.wall,
                r / tm.wall, tm.cpu, r / tm.cpu);
  };
  row("bare, rowid table", plain);
  row("bare, metrics key", bare_key);
  row("json parse only", parse);
  row("store ingest", ingest);
  std::printf("ingest: %zu rows, %zu lines, %zu batches\n", stats.metric_rows, stats.lines, stats.batches);
  std::printf("ingest / bare (rowid table): %.2fx wall, %.2fx CPU\n", plain.wall / ingest.wall, plain.cpu / ingest.cpu);
  std::printf("ingest / bare (metrics key): %.2fx wall, %.2fx CPU\n", bare_key.wall / ingest.wall, bare_key.cpu / ingest.cpu);
  std::string cmd = "rm -rf '" + dir + "'";
  return std::system(cmd.c_str()) == 0 && stats.metric_rows == size_t(r) ? 0 : 1;
}
