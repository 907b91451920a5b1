// Shell text shared by the remote/ files that check an engine process on a node (remote_run.cpp,
// multinode.cpp). Internal to remote/.
#pragma once

namespace td::remote::detail {

// A POSIX sh function `td_alive PID RUN_ID`: status 0 when process PID exists, is not a zombie
// (state Z in /proc/PID/stat) and is the run's engine: its command line holds the argument
// RUN_ID. A command line that reads empty or not at all while the process exists counts as
// alive: the engine re-executes itself once at start (engine/ops/blas_kernel.cpp) and
// /proc/<pid>/cmdline is empty inside execve. A non-empty command line without the run id is
// another process that reused the pid: gone; so is one whose command line cannot be read because
// it ended between the checks. Needs sed, tr and grep on the node.
inline constexpr const char* kAliveFunction =
    "td_alive() {\n"
    "  kill -0 \"$1\" 2>/dev/null || return 1\n"
    "  state=$(sed -n 's/^[0-9]* (.*) \\(.\\).*/\\1/p' \"/proc/$1/stat\" 2>/dev/null)\n"
    "  [ \"$state\" = Z ] && return 1\n"
    "  cmd=$(tr '\\0' '\\n' < \"/proc/$1/cmdline\" 2>/dev/null) || { kill -0 \"$1\" 2>/dev/null; return; }\n"
    "  [ -z \"$cmd\" ] && return 0\n"
    "  printf '%s\\n' \"$cmd\" | grep -qxF -- \"$2\"\n"
    "}\n";

// A POSIX sh function `td_route_ifname ADDR`: prints the network interface of this machine that
// reaches ADDR (a host name is resolved with getent): the interface holding it when it is one of
// the machine's own addresses, else the one `ip route get` names; nothing when unknown (no
// iproute2, no route). The Slurm task wrapper (slurm.cpp) uses it; it is the logic of
// multinode.cpp's kRouteScript (route_interface), so both choose the collectives' interface the
// same way. Sets td_ri_* variables.
inline constexpr const char* kRouteFunction =
    "td_route_ifname() {\n"
    "  td_ri_a=$1\n"
    "  command -v ip >/dev/null 2>&1 || return 0\n"
    "  td_ri_ip=\n"
    "  if command -v getent >/dev/null 2>&1; then set -- $(getent ahostsv4 \"$td_ri_a\" 2>/dev/null); td_ri_ip=${1-}; fi\n"
    "  [ -n \"$td_ri_ip\" ] || td_ri_ip=$td_ri_a\n"
    "  td_ri_dev=$(ip -o addr show 2>/dev/null | while read -r idx d fam addr rest; do\n"
    "    if [ \"${addr%/*}\" = \"$td_ri_ip\" ]; then echo \"$d\"; break; fi; done)\n"
    "  [ -n \"$td_ri_dev\" ] || td_ri_dev=$(ip -o route get \"$td_ri_ip\" 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p' | head -n 1)\n"
    "  printf '%s\\n' \"$td_ri_dev\"\n"
    "}\n";

}  // namespace td::remote::detail
