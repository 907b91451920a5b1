// `traindeck-engine launch --nproc N -- train ...`: starts N ranks of this program on this
// machine, like torchrun --standalone.
//
// Each rank gets TRAINDECK_RANK / LOCAL_RANK = r, WORLD_SIZE / LOCAL_WORLD_SIZE = N,
// MASTER_ADDR (default 127.0.0.1) and MASTER_PORT (default: a free port picked here), and
// OMP_NUM_THREADS = max(1, cores / N) unless already set (the trainer's train.threads = 0 means
// cores / local world size). Ranks run in their own process group (a terminal's Ctrl-C reaches
// the launcher only) and die with the launcher (PR_SET_PDEATHSIG).
//
// Signals: SIGINT, SIGTERM, SIGHUP and SIGUSR1 (a scheduler's time-limit warning) to the
// launcher are forwarded to every live rank (the trainer turns one into a collective stop at the
// next step boundary; a second one of the first three exits at once). Exit: 0 when every rank exits 0, else the status of the first rank to fail (a rank
// killed by signal S counts as 128 + S). After the first failure the other ranks get SIGCONT (a
// stopped rank can notice the failure) and, if still alive `grace_s` later, SIGKILL.
#pragma once

#include <string>
#include <vector>

namespace td::dist {

struct LaunchOptions {
  int nproc = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;         // 0: pick a free one
  double grace_s = 90;         // after a rank fails, the others are killed if alive this much later
  std::vector<std::string> command;  // arguments after `--`, e.g. {"train", "--config", "c.json"}
  bool quiet = false;          // no "launch: ..." lines on stderr
};

/// Runs the ranks and waits for them. Returns the exit status described above.
/// Throws td::Error for bad options (nproc < 1, an empty command, no free port).
int run_launch(const LaunchOptions& opt);

/// A TCP port that is free now on this machine (bound to port 0, then released).
int pick_free_port();

}  // namespace td::dist
