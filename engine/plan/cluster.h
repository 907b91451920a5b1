// The infrastructure planner: a model + a device type + a world size + a token budget ->
// memory per device for ZeRO stages 0-3, time at a chosen MFU, collective bytes and the
// network bandwidth that hides them behind compute, storage read bandwidth, the devices of each
// catalogue type needed to fit and to meet a deadline, and the cost (docs/planner.md has every
// formula with its source). Pure arithmetic on plain values; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config.h"
#include "engine/plan/devices.h"
#include "engine/plan/plan.h"

namespace td {

/// Model-state and activation bytes on one device (the largest shard), ZeRO paper accounting
/// (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
/// Models", sections 3.1 and 5.1) for Ψ parameters and n data-parallel devices:
///   mixed: params 2Ψ (bf16/fp16), grads 2Ψ, optimizer 12Ψ (fp32 master 4Ψ + AdamW m 4Ψ + v 4Ψ)
///   fp32:  params 4Ψ, grads 4Ψ, optimizer 8Ψ (m, v; the weights are the master copy)
/// Stage 1 shards the optimizer states over n, stage 2 also the gradients, stage 3 also the
/// parameters (each shard is ceil(bytes / n)). Activations are the engine's estimate
/// (gpt_activation_floats at micro_batch; make_cluster_plan adds the CPU backend's attention
/// scratch, cpu_backend_scratch_bytes, for a "cpu" device) at 4 bytes (fp32) or 2 bytes (mixed),
/// not sharded.
struct ZeroMemory {
  int stage = 0;
  uint64_t params_bytes = 0;
  uint64_t grads_bytes = 0;
  uint64_t optimizer_bytes = 0;
  uint64_t activations_bytes = 0;
  uint64_t total_bytes = 0;
};
ZeroMemory zero_memory(uint64_t n_params, uint64_t activation_floats, Precision p, int stage, int world_size);

/// Bytes one device sends (= receives) per optimizer step for data parallelism with ZeRO stage
/// `stage` over n devices, ring algorithms (nccl-tests' bus bandwidth convention: a ring
/// all-reduce of S bytes moves 2 (n-1)/n S per rank, reduce-scatter and all-gather (n-1)/n S):
///   stage 0: all-reduce of the gradients once per step           2 (n-1)/n G
///   stage 1: reduce-scatter of G + all-gather of the parameters P   (n-1)/n (G + P)
///   stage 2: reduce-scatter of G at each of the a micro-batches     (n-1)/n (a G + P)
///   stage 3: per micro-batch all-gather P (forward), all-gather P (backward), reduce-scatter G
///                                                                   (n-1)/n a (2 P + G)
/// with G, P = Ψ x 2 bytes (mixed) or Ψ x 4 bytes (fp32), a = train.grad_accum. 0 for n = 1.
double collective_bytes_per_step(uint64_t n_params, Precision p, int stage, int world_size, int grad_accum);

/// collective_bytes_per_step split by collective kind (the step event's per-rank
/// all_reduce_bytes, reduce_scatter_bytes, all_gather_bytes, docs/events.md): bytes one device
/// sends per step, same formulas and conventions:
///   stage 0: all_reduce 2 (n-1)/n G
///   stage 1: reduce_scatter (n-1)/n G, all_gather (n-1)/n P
///   stage 2: reduce_scatter (n-1)/n a G, all_gather (n-1)/n P
///   stage 3: reduce_scatter (n-1)/n a G, all_gather (n-1)/n 2 a P (forward and backward of
///            each micro-batch, Rajbhandari et al. 2020 section 7.2: 1.5x stage 2's volume)
/// The trainer's own small exchanges (stop flags, losses, norms: a few bytes) are not in it.
/// Throws td::Error for a stage outside 0..3. All zero for n = 1.
struct CollectiveBytes {
  double all_reduce = 0, reduce_scatter = 0, all_gather = 0;
  double total() const { return all_reduce + reduce_scatter + all_gather; }
};
CollectiveBytes collective_bytes_by_kind(uint64_t n_params, Precision p, int stage, int world_size, int grad_accum);

/// Bytes one device sends per optimizer step in its tensor-parallel group's collectives
/// (Megatron-LM, Shoeybi et al. 2019, arXiv:1909.08053, section 3; ring conventions as above),
/// for tp devices a group, micro batch b, a = grad_accum micro batches:
///   all_reduce: a x 2 (1 + 2 L) all-reduces of the b T C activations (forward: after the
///               vocabulary-parallel embedding and each row-parallel layer; backward: the
///               conjugate at each column-parallel input), each 2 (tp-1)/tp S, S = b T C x 4
///               bytes in either precision: the engine sums bf16 activations in fp32 too
///               (Megatron-LM sends bf16, half of it; `p` is kept for that)
///   all_gather: a x the parallel cross-entropy's [lse | target logit] of each rank, 2 b T fp32:
///               (tp-1)/tp x tp 2 b T x 4 = 8 (tp-1) b T
/// Both families (GPT-2, Llama: the same count). All zero for tp = 1. Checkpoints and samples
/// add their own gathers, not per step.
CollectiveBytes tp_collective_bytes(const ModelConfig& m, int micro_batch, int grad_accum, int tp, Precision p);

/// Bytes of one token in a dataset's shards (docs/formats.md): 2 (uint16) when `vocab_size` <=
/// 65536, else 4 (uint32). The storage read bandwidth is tokens/s x this.
inline int shard_token_bytes(int vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

/// What the user asks the planner.
struct ClusterOptions {
  std::string device = "cpu";        // a catalogue name
  int world_size = 1;                 // devices: data-parallel replicas x tensor_parallel
  int tensor_parallel = 1;            // devices per tensor-parallel group (train.tensor_parallel); divides world_size
  int zero = 0;                       // ZeRO stage 0..3 (the engine trains 0 to 3; 3 in fp32 only)
  std::optional<Precision> precision; // default: the device's (mixed where it has bf16/fp16)
  double tokens = 0;                  // token budget; 0: train.steps x tokens per step
  double mfu = 0.4;                   // model FLOPs utilisation assumed, (0, 1]
  double deadline_hours = 0;          // 0: no deadline
  std::optional<double> price_per_hour;  // overrides the catalogue's price of `device`
};

/// Devices of one catalogue type needed for the budget (the "devices needed" table).
struct DeviceNeed {
  std::string device;
  Precision precision = Precision::fp32;  // the options' precision, else the device's default
  std::optional<double> peak_flops;       // at `precision`; empty: no time estimate
  std::array<int, 4> n_fit{};             // fewest devices whose memory holds ZeRO stage s (a multiple of tensor_parallel); 0: never
  int n_deadline = 0;                     // fewest devices that finish by the deadline; 0: no deadline/peak
  int n_needed = 0;                       // max(n_fit[zero], n_deadline); 0: impossible
  double hours = 0;                       // wall-clock hours on n_needed devices (0: unknown)
  double device_hours = 0;                // n_needed x hours = total FLOPs / (peak x MFU) / 3600
  std::optional<double> cost;             // device_hours x price per hour, when a price is known
};

struct ClusterPlan {
  Plan model;                 // make_plan(config, world_size)
  Device device;              // the chosen device
  ClusterOptions options;     // as given, precision resolved
  Precision precision = Precision::fp32;
  std::array<ZeroMemory, 4> memory{};  // per device at world_size, stages 0..3 (tensor parallelism: of a TP rank's shard, ZeRO over the replicas)
  bool fits = false;          // memory[zero].total_bytes <= device.memory_bytes
  double tokens = 0;          // the budget used
  double total_flops = 0;     // tokens x FLOPs per token
  std::optional<double> peak_flops;  // the device's at `precision`
  double tokens_per_s = 0;    // all devices: n x peak x MFU / FLOPs per token (0: no peak)
  double train_seconds = 0;   // total_flops / (n x peak x MFU)
  double step_seconds = 0;    // compute time of one optimizer step (tokens per device per step)
  double collective_bytes_per_step = 0;   // per device, at the chosen stage
  CollectiveBytes collective_bytes_by_kind;  // the same, by kind (all-reduce, reduce-scatter, all-gather): ZeRO's over the replicas + the TP group's
  CollectiveBytes tp_collective_bytes;       // the TP group's part of it (tp_collective_bytes)
  double network_bytes_per_s = 0;         // bus bandwidth that hides it: bytes / step_seconds
  int token_bytes = 2;                    // on-disk token width: 2 when vocab <= 65536, else 4
  double storage_bytes_per_s = 0;         // tokens_per_s x token_bytes (all devices)
  std::optional<double> price_per_hour;
  std::optional<double> cost;             // n x train_seconds / 3600 x price
  std::vector<DeviceNeed> needs;          // every catalogue device, catalogue order
};

/// Plans `c` on the catalogue's `o.device`. Throws td::Error for an unknown device (listing the
/// known ones), a ZeRO stage outside 0..3, an MFU outside (0, 1], a negative budget/deadline, an
/// explicit precision the device has no peak for, or a tensor-parallel degree that does not
/// divide the world size or the model (tp_problem). Tensor parallelism: the plan is of a TP
/// rank (make_plan with train.tensor_parallel = o.tensor_parallel), ZeRO over world_size / tp
/// replicas, and each step's compute shared by the tp devices of a group.
ClusterPlan make_cluster_plan(const RunConfig& c, const DeviceCatalogue& cat, const ClusterOptions& o);
std::string cluster_table(const ClusterPlan& p);
nlohmann::json cluster_json(const ClusterPlan& p);

}  // namespace td
