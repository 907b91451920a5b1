// Starting and probing engine processes on this machine, detached from the GUI (POSIX).
//
// A launched engine runs in a session of its own (setsid), reparented away from the GUI (double
// fork), with stdin from /dev/null and stdout/stderr appended to files: closing the window, a
// crash of the GUI or a logout of its terminal never stops training. No Qt here.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "engine/common/process.h"

namespace td::gui {

struct LaunchSpec {
  std::string program;            // absolute path of the executable
  std::vector<std::string> args;  // argv[1..]
  std::string working_dir;        // chdir here before exec ("" = keep)
  std::string stdout_path;        // appended to; "" = /dev/null
  std::string stderr_path;        // appended to; "" = /dev/null
};

/// Starts spec.program detached and returns its process id (the engine's own pid, which the
/// engine also reports in run_start). Throws td::Error when the program cannot be executed
/// (missing, not executable: the exec error is passed back through a close-on-exec pipe), a
/// log file cannot be opened, or fork fails. Never leaves a zombie in the caller.
pid_t launch_detached(const LaunchSpec& spec);

/// td::process_alive (engine/common/process.h): whether the engine's process is still there.
using td::process_alive;

/// Asks process `pid` to stop gracefully (SIGTERM: the engine finishes its step, writes a
/// checkpoint and a run_end "stopped"). Returns false when there is no such process.
bool request_stop(pid_t pid);

/// Kills process `pid` (SIGKILL: no checkpoint, no run_end; the follower marks the run failed).
/// Returns false when there is no such process. Check process_alive() with the run's marks
/// first: the pid may have been recycled.
bool kill_process(pid_t pid);

}  // namespace td::gui
