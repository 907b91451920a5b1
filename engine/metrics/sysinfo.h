// Facts about this process and machine, for events and the planner.
#pragma once

#include <cstdint>
#include <string>

namespace td {

/// Resident set size of this process in bytes (/proc/self/statm), 0 when unknown.
uint64_t current_rss_bytes();
/// Peak resident set size (VmHWM) in bytes, 0 when unknown.
uint64_t peak_rss_bytes();
/// CPU time this process has used so far, all its threads, user plus system, in seconds
/// (getrusage(RUSAGE_SELF): ru_utime + ru_stime); 0 when unknown. The difference of two calls
/// over the wall time between them is the process's CPU utilization in cores (x 100: top's
/// %CPU, which counts 100 per busy core).
double process_cpu_seconds();
/// This machine's host name.
std::string host_name();
/// The CPU model ("model name" in /proc/cpuinfo), or "unknown cpu".
std::string cpu_model();
/// Logical cores available to this process.
int cpu_cores();
/// How this engine was built, for people and for a run's card: "<compiler> <version>,
/// <CMake build type>, <architecture>", e.g. "gcc 12.2.0, Release, x86_64" (run_start's
/// engine_build; the version itself is TD_VERSION, run_start's engine_version).
std::string engine_build();

}  // namespace td
