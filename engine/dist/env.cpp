#include "engine/dist/env.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstdlib>

#include "engine/common/error.h"

namespace td::dist {
namespace {

// The integer value of an environment variable, or def when unset.
long env_int(const char* name, long def, long lo, long hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno || *end || x < lo || x > hi)
    fail(std::string(name) + "=" + v + " is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

}  // namespace

DistEnv read_dist_env() {
  DistEnv e;
  e.world_size = (int)env_int("TRAINDECK_WORLD_SIZE", 1, 1, 1 << 20);
  e.rank = (int)env_int("TRAINDECK_RANK", 0, 0, 1 << 20);
  if (e.rank >= e.world_size)
    fail("TRAINDECK_RANK=" + std::to_string(e.rank) + " is not below TRAINDECK_WORLD_SIZE=" + std::to_string(e.world_size) +
         ": ranks are numbered 0 .. world size - 1");
  e.local_rank = (int)env_int("TRAINDECK_LOCAL_RANK", e.rank, 0, 1 << 20);
  e.local_world_size = (int)env_int("TRAINDECK_LOCAL_WORLD_SIZE", e.world_size, 1, 1 << 20);
  if (const char* a = std::getenv("TRAINDECK_MASTER_ADDR"); a && *a) e.master_addr = a;
  e.master_port = (int)env_int("TRAINDECK_MASTER_PORT", 0, 0, 65535);
  if (e.world_size > 1 && e.master_port == 0)
    fail("TRAINDECK_MASTER_PORT is not set: a run with TRAINDECK_WORLD_SIZE=" + std::to_string(e.world_size) +
         " needs the TCP port of rank 0's rendezvous store (or start the ranks with `traindeck-engine launch`)");
  if (const char* i = std::getenv("TRAINDECK_GLOO_IFNAME"); i && *i) e.gloo_ifname = i;
  return e;
}

int default_threads(const DistEnv& env) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  return std::max(1, cores / std::max(1, env.local_world_size));
}

std::string local_host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  return buf;
}

}  // namespace td::dist
