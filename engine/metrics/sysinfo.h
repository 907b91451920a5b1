// Facts about this process and machine, for events and the planner.
#pragma once

#include <cstdint>
#include <string>

namespace td {

/// Resident set size of this process in bytes (/proc/self/statm), 0 when unknown.
uint64_t current_rss_bytes();
/// Peak resident set size (VmHWM) in bytes, 0 when unknown.
uint64_t peak_rss_bytes();
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
