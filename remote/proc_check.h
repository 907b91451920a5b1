// Shell text shared by the remote/ files that check an engine process on a node (remote_run.cpp,
// multinode.cpp). Internal to remote/.
#pragma once

namespace td::remote::detail {

// A POSIX sh function `td_alive PID RUN_ID`: status 0 when process PID exists, is not a zombie
// (state Z in /proc/PID/stat) and is the run's engine: its command line holds the argument
// RUN_ID. A command line that reads empty or not at all while the process exists counts as
// alive: the engine re-executes itself once at start (engine/ops/blas_kernel.cpp) and
// /proc/<pid>/cmdline is empty inside execve. A non-empty command line without the run id is
// another process that reused the pid: gone. Needs sed, tr and grep on the node.
inline constexpr const char* kAliveFunction =
    "td_alive() {\n"
    "  kill -0 \"$1\" 2>/dev/null || return 1\n"
    "  state=$(sed -n 's/^[0-9]* (.*) \\(.\\).*/\\1/p' \"/proc/$1/stat\" 2>/dev/null)\n"
    "  [ \"$state\" = Z ] && return 1\n"
    "  cmd=$(tr '\\0' '\\n' < \"/proc/$1/cmdline\" 2>/dev/null) || return 0\n"
    "  [ -z \"$cmd\" ] && return 0\n"
    "  printf '%s\\n' \"$cmd\" | grep -qxF -- \"$2\"\n"
    "}\n";

}  // namespace td::remote::detail
