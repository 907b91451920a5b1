// Whether a process on this machine is alive: the one check behind the workbench's re-attach
// (gui/runs) and `runs list/show` (engine/cli/runs_cmd.cpp), so both say the same of a run.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace td {

/// True when process `pid` exists on this machine, is not a zombie, and its command line
/// contains every one of `must_contain` (guards against a recycled pid: pass e.g.
/// "traindeck-engine" and the run's folder name). A process whose command line reads empty is
/// inside execve (the engine re-executes itself once to pick its BLAS kernel) and counts as
/// alive. A process of another user counts as alive (kill gives EPERM, not ESRCH). Never throws.
inline bool process_alive(pid_t pid, const std::vector<std::string>& must_contain = {}) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream stat(proc + "/stat");
  std::string stat_line((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = stat_line.rfind(')');
  if (paren != std::string::npos && paren + 2 < stat_line.size()) {
    const char state = stat_line[paren + 2];
    if (state == 'Z' || state == 'X') return false;
  }  // an unreadable stat (the process is mid-exec or just leaving): kill(0) said it exists
  if (must_contain.empty()) return true;
  std::ifstream cmd(proc + "/cmdline", std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
  if (cmdline.empty()) return true;
  for (const auto& s : must_contain)
    if (cmdline.find(s) == std::string::npos) return false;
  return true;
}

}  // namespace td
