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

}  // namespace td
