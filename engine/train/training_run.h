// Internal to engine/train (trainer.cpp, training_run.cpp): the TrainingRun that run_training
// (trainer.h) runs, and the run-directory helpers it uses. Not an interface for other code.
#pragma once

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/checkpoint.h"
#include "engine/common/rng.h"
#include "engine/config.h"
#include "engine/data/loader.h"
#include "engine/dist/communicator.h"
#include "engine/dist/env.h"
#include "engine/dist/groups.h"
#include "engine/export/export.h"
#include "engine/metrics/alerts.h"
#include "engine/metrics/events.h"
#include "engine/metrics/nvml.h"
#include "engine/metrics/prometheus.h"
#include "engine/model/gpt.h"
#include "engine/ops/backend.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/train/parallel_state.h"
#include "engine/train/step_rate.h"
#include "engine/train/tp_run.h"
#include "engine/train/trainer.h"

namespace td::train_detail {

using json = nlohmann::json;

/// Keeps host memory the engine frees out of the process (glibc's mmap threshold fixed at
/// 128 KiB), so that rss_bytes is what the run holds. trainer.cpp says why.
void fix_malloc_mmap_threshold();
/// A SIGINT, SIGTERM or SIGHUP arrived, or request_stop() was called (not the time limit's SIGUSR1).
bool stop_signal_received();

/// Holds an exclusive lock on <dir>/.lock for the life of the run, so that two trainings never
/// write into one run directory (their checkpoints and events would mix). A link planted at
/// .lock is refused before anything is written (open_private_file). Throws td::Error naming
/// the pid holding it.
class RunDirLock {
 public:
  explicit RunDirLock(const std::string& dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;
};

/// v, or JSON null.
json nullable(std::optional<double> v);
/// --resume-from STEP: its checkpoint directory under root, which must exist and verify; the
/// td::Error lists the checkpoints there and whether each verifies.
std::string checkpoint_from_step(const std::string& root, int step);
/// --resume-from: renames the checkpoints newer than `step` to step_NNNNNNNN.set-aside-<attempt>
/// (never deletes them). Returns the new names.
std::vector<std::string> set_aside_newer(const std::string& root, int step, int attempt);
/// The sentence of a failed run's reason naming the newest checkpoint that verifies, or saying
/// that none does ("" when the run has no checkpoint).
std::string newest_verified_note(const std::string& root);
/// run_start's `dataset`: path, manifest_sha256, train_tokens, val_tokens of dataset `dir`.
json dataset_facts(const std::string& dir);

// One training run (run_training), as named phases over the run's state:
//   setup       the device, threads, --init-from source, dataset and loaders, backend, GPU
//               telemetry, the communicator and parallel groups, the model and ParallelState;
//   resume      rank 0 opens the run directory and either resumes a checkpoint or starts fresh;
//               its decision and state reach every rank, then the weights (and moments);
//   run_start   the MFU peak, the events file, Prometheus, the run_start event and start warnings;
//   train       the step loop: the agreed stop check, step(), then evaluate / sample /
//               checkpoint at their intervals; a checkpoint and run_end at the end;
//   step        one optimizer step: micro batches, reduce and clip, AdamW, the step event;
//   checkpoint, evaluate, sample, end_run.
// Members are declared in the order the phases make them: they are destroyed in reverse, so the
// communicator goes before the backend whose stream it uses, the model before the lock.
class TrainingRun {
 public:
  TrainingRun(const RunConfig& cfg, const TrainOptions& opt)
      : cfg_(cfg), opt_(opt), mc_(cfg.model), tc_(cfg.train), denv_(dist::read_dist_env()), alert_ev_(alert_rules(cfg.train)) {}

  /// The process exit code: 0 completed or stopped, 1 failed. Throws td::Error for bad input
  /// found before training starts, and rethrows an error during training after run_end.
  int run() {
    setup();
    resume();
    run_start();
    try {
      return train();
    } catch (const std::exception& e) {
      // Say so in the events before leaving (best effort: the error may be a full disk).
      try {
        if (const auto* lost = dynamic_cast<const dist::CollectiveError*>(&e)) emit_rank_lost(*lost);
      } catch (const std::exception&) {
      }
      try {
        end_run("failed", e.what());
      } catch (const std::exception&) {
      }
      throw;
    }
  }

 private:
  using clk = std::chrono::steady_clock;

  void setup();
  void resume();
  void run_start();
  int train();
  enum class StepResult { kTrained, kSkipped, kFailed };
  // What a step's figures are measured from: taken before the stop check (whose all-reduce is
  // part of the step's time and communication).
  struct StepStart {
    clk::time_point t0;
    double cpu0;
    dist::CommStats c0;
  };
  StepResult step(const StepStart& s);
  void checkpoint();
  void evaluate();
  void sample();
  void end_run(const std::string& status, const std::string& reason);
  std::string agreed_stop();

  void emit(const std::string& type, json fields);
  void warn(const std::string& code, const std::string& message, json step);
  static json alert_json(const alerts::Alert& a);
  void emit_alert(const alerts::Alert& a) { emit("alert", alert_json(a)); }
  void emit_rank_lost(const dist::CollectiveError& e);
  void check_disk();
  std::optional<nvml::GpuSample> read_gpu();

  // The inputs.
  const RunConfig& cfg_;
  const TrainOptions& opt_;
  const ModelConfig& mc_;
  const TrainConfig& tc_;
  const dist::DistEnv denv_;

  // setup
  bool on_gpu_ = false;
  std::string device_;
  int tp_ = 1;
  DType act_dtype_ = DType::kF32;
  int threads_ = 1;
  std::optional<InitSource> init_;  // --init-from, rank 0 only, until the weights are placed
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<DataLoader> train_loader_;
  std::unique_ptr<DataLoader> val_loader_;
  std::string val_problem_;
  std::unique_ptr<Backend> backend_;
  DeviceInfo dev_;
  std::unique_ptr<nvml::Nvml> nvml_lib_;
  std::optional<unsigned> nvml_gpu_;
  std::optional<clk::time_point> last_gpu_read_;
  std::unique_ptr<dist::Communicator> comm_;
  int world_ = 1, rank_ = 0;
  bool rank0_ = true;
  dist::ParallelGroups groups_;
  std::unique_ptr<GroupTensorParallel> tp_model_;
  int dp_ = 1;
  std::string ckpt_root_, events_path_;
  std::unique_ptr<RunDirLock> lock_;
  std::unique_ptr<GPT> model_;
  std::unique_ptr<ParallelState> ps_;

  // resume
  TrainerState st_;
  std::optional<int> resumed_from_;
  std::vector<std::string> damaged_;    // newer checkpoints skipped on resume
  std::string unverified_;              // the resumed (or --init-from) checkpoint has no checksums: checkpoint_note()
  std::vector<std::string> set_aside_;  // --resume-from: newer checkpoints renamed out of the way
  std::vector<std::string> changed_;    // config fields that differ from the checkpoint's

  // run_start
  std::optional<double> peak_;
  std::unique_ptr<EventWriter> ev_;
  std::unique_ptr<MetricsServer> prom_;
  bool quiet_ = true;
  double fpt_ = 0;

  // train
  int B_ = 0, T_ = 0;
  uint64_t tokens_per_step_ = 0;
  float loss_scale_ = 0;
  std::vector<int32_t> inputs_, targets_;
  Rng sample_rng_;
  int nonfinite_streak_ = 0;
  int last_ckpt_step_ = -1;
  std::unique_ptr<std::ofstream> window_log_;
  // Alerts the engine sees (engine/metrics/alerts.h, docs/events.md "Alerts"): non-finite steps,
  // loss spikes, throughput drops, a nearly full disk under the run directory. Rank 0 writes them.
  alerts::AlertEvaluator alert_ev_;
  clk::time_point train_t0_;  // the progress line's "elapsed" (this attempt, since its first step began)
  StepRate rate_{100};
};

}  // namespace td::train_detail
