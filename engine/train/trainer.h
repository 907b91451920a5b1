// The training loop of `traindeck-engine train`: one process, or one rank of a data-parallel run
// (engine/dist, docs/distributed.md) when TRAINDECK_WORLD_SIZE > 1.
//
// Per step: grad_accum micro batches of forward + backward (gradients averaged over the global
// batch), global-norm clipping, AdamW with the warmup + cosine schedule, then a `step` event.
// Evaluation, samples and checkpoints at their intervals; a checkpoint at the end. Stopping:
// SIGINT/SIGTERM/SIGHUP stop at the next step boundary with a checkpoint and run_end "stopped"
// (exit 0); a second signal exits at once. SIGUSR1 (a scheduler's warning before the time
// limit: Slurm's --signal=USR1@S) stops the same way with run_end reason "time limit"; it is
// never the second signal. A non-finite loss or gradient norm skips the step
// with a warning; 3 in a row end the run with run_end "failed", naming the newest checkpoint that
// verifies (engine/checkpoint/checkpoint.h: checksums and finite values).
//
// Data parallel (world size n > 1): rank 0 broadcasts the initial (or resumed) parameters and
// optimizer state, so every rank starts identical; each rank reads its disjoint slice of every
// global batch (DataLoader rank slices) with loss scale 1 / (global batch tokens); gradients are
// summed with one all-reduce over the flat gradient buffer (train.zero = 0), or reduce-scattered,
// clipped with the global norm, updated by AdamW on the rank's shard and all-gathered
// (train.zero = 1). Rank 0 alone writes events and checkpoints (optimizer shards gathered first),
// so a run resumes with any world size whose global batch is the same. A stop request on any
// rank is agreed by an all-reduce at the top of each step: all ranks stop at the same boundary.
// A failed collective (a dead or frozen rank, train.dist_timeout_s) ends every rank with an
// error naming the rank and host (run_end "failed" on rank 0).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "engine/config.h"

namespace td {

struct TrainOptions {
  std::string out_dir;             // run directory: events.jsonl, checkpoints/
  std::string run_id;              // empty: generated (or the checkpoint's on --resume)
  std::string run_name;            // run_start's "name" (td::normalise_run_name'd); "" none
  bool resume = false;             // continue from the newest checkpoint in out_dir that verifies
  std::optional<int> resume_from;  // continue from this step's checkpoint (implies resume); refused when it
                                   // is not there or does not verify. Newer checkpoints are set aside.
  std::string init_from;           // a new run starts from these weights (engine/export/export.h read_init_source)
  std::optional<double> peak_flops;  // overrides the calibrated CPU peak (FLOP/s)
  bool events_to_stdout = true;
  bool quiet = false;              // no progress lines on stderr
  std::vector<int> inject_nonfinite_steps;  // testing: steps (1-based) whose loss is forced to NaN
  std::vector<int> inject_loss_spike_steps; // testing: steps whose reported loss is multiplied by 10 (an alert's loss spike)
  int inject_nonfinite_weights_step = 0;    // testing: after this step's update, the first weight is NaN
  int stop_after_step = 0;         // testing: request a stop once this step is done (as a signal would)
  std::string window_log;          // testing: each rank appends {"step","rank","windows"} lines to <window_log>.<rank>
  std::function<void()> on_event;  // called after each event is written (e.g. live store ingest)
};

/// Runs training. Returns the process exit code: 0 completed or stopped, 1 failed.
/// Throws td::Error for bad input found before training starts (dataset, vocab, out dir).
/// The run is a TrainingRun (engine/train/training_run.h) whose named phases are setup, resume, run_start, the
/// step loop (step, evaluate, sample, checkpoint) and end_run.
int run_training(const RunConfig& cfg, const TrainOptions& opt);

/// Installs the SIGINT/SIGTERM/SIGHUP handlers (first: graceful stop; second: immediate exit
/// 130), the SIGUSR1 handler (graceful stop, run_end reason "time limit") and ignores SIGPIPE
/// (events keep going to the events file when stdout is closed).
void install_stop_handlers();
/// True once a stop was requested (signal, SIGUSR1, or request_stop()).
bool stop_requested();
/// True once SIGUSR1 (the time-limit warning) arrived.
bool time_limit_requested();
void request_stop();

}  // namespace td
