#include "engine/metrics/sysinfo.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <thread>

namespace td {

uint64_t current_rss_bytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

double process_cpu_seconds() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

uint64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      uint64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown cpu";
}

int cpu_cores() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : (int)n;
}

std::string engine_build() {
#if defined(__clang__)
  std::string compiler = "clang " + std::to_string(__clang_major__) + "." + std::to_string(__clang_minor__) + "." +
                         std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
  std::string compiler = "gcc " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
                         std::to_string(__GNUC_PATCHLEVEL__);
#else
  std::string compiler = "unknown compiler";
#endif
#ifdef TD_BUILD_TYPE
  const std::string type = TD_BUILD_TYPE[0] ? TD_BUILD_TYPE : "no build type";
#else
  const std::string type = "no build type";
#endif
#if defined(__x86_64__)
  const char* arch = "x86_64";
#elif defined(__aarch64__)
  const char* arch = "aarch64";
#else
  const char* arch = "unknown architecture";
#endif
  return compiler + ", " + type + ", " + arch;
}

}  // namespace td
