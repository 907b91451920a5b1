#include "engine/train/trainer.h"

// The signals a run stops on, and the run-directory helpers of engine/train/training_run.h;
// run_training runs a TrainingRun (training_run.cpp).
#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

#include "engine/checkpoint/checkpoint.h"
#include "engine/common/error.h"
#include "engine/common/fileio.h"
#include "engine/data/manifest.h"
#include "engine/train/training_run.h"

namespace td {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::atomic<int> g_signals{0};
// SIGUSR1: the scheduler's warning before the job's time limit (Slurm `--signal=USR1@S`). A stop
// like SIGTERM's, but run_end says "time limit" and it never counts as the second signal that
// exits at once (the limit's own SIGTERM may follow while the checkpoint is written).
std::atomic<bool> g_time_limit{false};

void on_time_limit(int) { g_time_limit.store(true); }

void on_signal(int) {
  if (g_signals.fetch_add(1) >= 1) {  // second signal: leave at once (only async-signal-safe calls)
    static const char msg[] =
        "\ntraindeck-engine: second signal: exiting now without a checkpoint; --resume continues from the last one\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(130);
  }
}

}  // namespace

namespace train_detail {

// Keeps host memory that the engine frees out of the process (so rss_bytes is what the run holds:
// the planner's memory per rank, docs/planner.md "Accuracy"). glibc raises its mmap threshold to
// the size of each freed mmap'd block (up to 32 MiB; mallopt(3), M_MMAP_THRESHOLD), so after the
// first large free (the model's full-size gradient, ZeRO-2; its parameters, ZeRO-3) later
// temporaries of up to that size come from the heap, and freed heap is only trimmed above twice
// the threshold: rank 0's init_weights copy (4 N) and ZeRO-2/3's per-bucket host copies (since
// then a plain memcpy on the CPU backend, engine/train/zero.cpp) stayed resident, 3 to 20 MiB a
// rank at 6.4 M parameters (tests/engine/test_zero_memory.cpp).
// Setting the threshold to glibc's default, 128 KiB, turns the dynamic adjustment off.
// MALLOC_MMAP_THRESHOLD_ in the environment (glibc's tunable) is left to win.
void fix_malloc_mmap_threshold() {
#if defined(__GLIBC__)
  if (!std::getenv("MALLOC_MMAP_THRESHOLD_") && !std::getenv("GLIBC_TUNABLES")) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
}

bool stop_signal_received() { return g_signals.load() > 0; }

RunDirLock::RunDirLock(const std::string& dir) {
  const std::string path = dir + "/.lock";
  fd_ = open_private_file(path, O_RDWR | O_CREAT, "the run's lock file");
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {0};
    ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fail("the run directory '" + dir + "' is in use by another traindeck-engine" +
         (n > 0 ? std::string(" (pid ") + std::string(buf, (size_t)n) + ")" : std::string()) +
         ": wait for it to end, or choose another --out");
  }
  std::string pid = std::to_string(getpid());
  if (ftruncate(fd_, 0) == 0 && pwrite(fd_, pid.data(), pid.size(), 0) < 0) { /* the pid is only informative */ }
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

json nullable(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

// --resume-from STEP: its checkpoint directory, which must exist and verify. The error lists
// the checkpoints there and whether each verifies.
std::string checkpoint_from_step(const std::string& root, int step) {
  const std::string dir = checkpoint_path(root, step);
  std::error_code ec;
  const bool there = fs::is_directory(fs::symlink_status(dir, ec));
  const std::string problem = there ? checkpoint_problem(dir) : std::string();
  if (there && problem.empty()) return dir;
  std::string have;
  for (const auto& c : checkpoint_statuses(root))
    have += (have.empty() ? "" : ", ") + fs::path(c.path).filename().string() + (c.problem.empty() ? " (verifies)" : " (does not verify)");
  fail("--resume-from " + std::to_string(step) + ": " +
       (there ? "checkpoint '" + dir + "' does not verify: " + problem : "there is no checkpoint of step " + std::to_string(step) + " in '" + root + "'") +
       "; " + (have.empty() ? "the run has no checkpoint" : "its checkpoints: " + have) + "");
}

// --resume-from: the checkpoints newer than `step` belong to the history being abandoned; they
// are renamed to step_NNNNNNNN.set-aside-<attempt> (never deleted), so that the new ones of the
// same steps and the pruning of the resumed run do not mix with them. Returns the new names.
std::vector<std::string> set_aside_newer(const std::string& root, int step, int attempt) {
  std::vector<std::string> out;
  for (const auto& c : checkpoint_statuses(root, false)) {
    if (c.step <= step) continue;
    const std::string to = c.path + ".set-aside-" + std::to_string(attempt);
    fs::rename(c.path, to);
    out.push_back(fs::path(to).filename().string());
  }
  if (!out.empty()) sync_dir(root);
  return out;
}

// The sentence of a failed run's reason that names the newest checkpoint that verifies (the
// resumable one), or says that none does ("" when the run has no checkpoint).
std::string newest_verified_note(const std::string& root) {
  std::vector<std::string> damaged;
  const auto good = latest_checkpoint(root, &damaged);
  if (!good && damaged.empty()) return "";
  if (!good) return " No checkpoint verifies (" + damaged.front() + "): start again in a new --out.";
  int step = 0;
  try {
    step = read_trainer_state(*good).step;
  } catch (const Error&) {
  }
  return " The newest checkpoint that verifies is step " + std::to_string(step) + " (" + *good + "): continue with --resume" +
         (damaged.empty() ? std::string() : " (the " + std::to_string(damaged.size()) + " newer do not verify)") +
         ", or from an older step with --resume-from STEP.";
}

// run_start's `dataset` (docs/events.md): which data the run read, so that a run can be
// reproduced and a changed dataset noticed. Tokens from the manifest's splits.<name>.tokens,
// else the sum of its shards' listed tokens.
json dataset_facts(const std::string& dir) {
  const DatasetManifest m = read_dataset_manifest(dir);
  auto tokens = [&](const char* split) -> uint64_t {
    const json* s = m.doc.contains("splits") && m.doc["splits"].is_object() && m.doc["splits"].contains(split)
                        ? &m.doc["splits"][split] : nullptr;
    if (s && s->is_object() && s->contains("tokens") && (*s)["tokens"].is_number_unsigned()) return (*s)["tokens"].get<uint64_t>();
    uint64_t n = 0;
    for (const auto& sh : m.split(split)) n += sh.tokens;
    return n;
  };
  return {{"path", dir}, {"manifest_sha256", file_sha256((fs::path(dir) / "manifest.json").string())},
          {"train_tokens", tokens("train")}, {"val_tokens", tokens("val")}};
}

}  // namespace train_detail

void install_stop_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);  // the terminal went away: stop with a checkpoint, not mid-step
  struct sigaction tl = {};
  tl.sa_handler = on_time_limit;
  sigemptyset(&tl.sa_mask);
  sigaction(SIGUSR1, &tl, nullptr);
  // A closed stdout (a reader that went away) must not kill the run: the events file is the record.
  signal(SIGPIPE, SIG_IGN);
}
bool stop_requested() { return g_signals.load() > 0 || g_time_limit.load(); }
bool time_limit_requested() { return g_time_limit.load(); }
void request_stop() { g_signals.fetch_add(1); }

int run_training(const RunConfig& cfg, const TrainOptions& opt) { return train_detail::TrainingRun(cfg, opt).run(); }

}  // namespace td
