// Plan beside measured: what the planner says a run needs (memory per rank, tokens/s, collective
// bytes and bus bandwidth) next to what the run measured, with the error in percent
// (docs/planner.md "Plan beside measured"). Pure arithmetic on plain values; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/config.h"

namespace td {

/// The MFU the plan-vs-measured comparison assumes for tokens/s: the designer's defaults, never a
/// measured MFU (that would compare a run with itself). CPU runs: 0.5, the designer's "On this
/// machine" estimate (gui/plan/planner.h Planner::kDefaultCpuMfu); GPU runs: 0.4, the
/// Infrastructure panel's and `traindeck-engine plan --mfu` default (ClusterOptions::mfu).
constexpr double kPlanCpuMfu = 0.5;
constexpr double kPlanGpuMfu = 0.4;

/// What the engine's process holds besides the plan's buffers, added to the planned memory of a
/// run before it is compared with a measurement:
///  * CPU (peak RSS): the executable, its libraries, OpenMP and OpenBLAS thread buffers, the
///    tokenizer and the loader: 16 MiB, the peak RSS of a run of a near-empty model (1 layer,
///    d_model 8, seq_len 8) at 2 threads less its plan, 15.0-15.2 MiB (December 2026; 11.3 MiB when
///    first measured), rounded up (docs/planner.md, "Accuracy").
///  * CUDA (gpu_mem_peak_bytes, the backend's cudaMalloc high-water mark): the 32 MiB cuBLAS /
///    cuBLASLt workspace the backend allocates at start (cuda/backend.cu, kWorkspaceBytes). The
///    backend's op scratch (attention, LayerNorm partials) is not counted.
constexpr uint64_t kCpuRuntimeBytes = uint64_t(16) << 20;
constexpr uint64_t kCudaRuntimeBytes = uint64_t(32) << 20;

/// What a run measured (from its events or the store, store/plan_measured.h). Empty: not measured.
struct RunMeasured {
  int world_size = 1;
  std::optional<double> peak_flops;          // run_start.peak_flops, FLOP/s per device
  std::optional<double> peak_rss_bytes;      // max rss_bytes of rank 0's steps
  std::optional<double> gpu_mem_peak_bytes;  // max gpu_mem_peak_bytes of rank 0's steps
  std::optional<double> tokens_per_s;        // median tokens_per_s of the steps (all ranks together)
  std::optional<double> comm_bytes_per_step; // median comm_bytes_sent of rank 0 per step
  std::optional<double> busbw_bytes_per_s;   // median bus bandwidth of rank 0's collectives
  /// Median data_read_mb_s x 1e6 of rank 0's recent steps (store/input_pipeline.h): how fast its
  /// data loader's reads went, bytes/s.
  std::optional<double> storage_read_bytes_per_s;
};

/// One row of the comparison.
struct PlanVsMeasuredRow {
  std::string key;       // "memory", "tokens_per_s", "comm_bytes", "busbw", "storage": stable ids
  std::string quantity;  // "memory per rank (peak RSS)" (English; the GUI translates by key)
  std::string unit;      // "bytes", "tokens/s", "bytes/s"
  std::optional<double> planned;
  std::optional<double> measured;
  std::optional<double> error_pct;  // 100 (planned - measured) / measured: < 0 the plan is low
  std::string basis;                // how `planned` was computed
};

/// Rows for a run trained with config `c` (as run_start.config, validated): memory per rank
/// (CPU: make_plan total + kCpuRuntimeBytes against peak RSS; CUDA: + kCudaRuntimeBytes against
/// the GPU memory high-water mark), tokens/s (world_size x peak_flops x mfu / FLOPs per token),
/// and for world_size > 1 the collective bytes per rank and step (collective_bytes_per_step at
/// train.zero; with train.tensor_parallel, of the rank's shard over the replicas plus
/// tp_collective_bytes; the storage row then divides by the replicas, not the ranks) and the bus bandwidth that hides them behind the planned compute time of a step;
/// last the storage read bandwidth per rank the planned tokens/s need (planned tokens/s /
/// world_size x shard_token_bytes(vocab_size), the planner's storage read bandwidth over the
/// ranks; docs/planner.md) against the speed rank 0's reads reached (storage_read_bytes_per_s).
/// `mfu` <= 0 picks kPlanCpuMfu or kPlanGpuMfu by train.device. A row whose planned or measured
/// value is unknown keeps it empty (and has no error). Never throws for a valid config.
std::vector<PlanVsMeasuredRow> plan_vs_measured(const RunConfig& c, const RunMeasured& m, double mfu = 0);

/// 100 (planned - measured) / measured; empty when measured is 0 or either is missing.
std::optional<double> error_percent(const std::optional<double>& planned, const std::optional<double>& measured);

/// A text table of the rows (for `traindeck-engine runs show`).
std::string plan_vs_measured_table(const std::vector<PlanVsMeasuredRow>& rows);

}  // namespace td
