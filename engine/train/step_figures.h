// The parts of a step event (engine/metrics/step_fields.h, docs/events.md) that the trainer
// fills from other components: a GPU's NVML reading, the collectives' traffic of the step, and
// every rank's own figures gathered to every rank.
#pragma once

#include <vector>

#include "engine/dist/communicator.h"
#include "engine/metrics/nvml.h"
#include "engine/metrics/step_fields.h"

namespace td {

/// Sets the event's own GPU telemetry fields (rank 0's GPU: scope Global) or a `ranks` entry's
/// (scope Rank) from an NVML reading; a figure NVML did not give stays unset (left out of the
/// event). Units as the field table: %, bytes, W, degrees C, MHz, the throttle bit mask.
void set_gpu_figures(StepFigures& f, FieldScope scope, const nvml::GpuSample& g);

/// Sets a `ranks` entry's collective figures of one step from this rank's CommStats before (c0)
/// and after (c1) it: comm_bytes_sent/received (bytes), comm_ms, bytes and ms by kind
/// (all-reduce, reduce-scatter, all-gather: the planner's collective_bytes_by_kind) and
/// busbw_gb_s (NCCL-tests' bus bandwidth, 0 without time in collectives). Returns the seconds
/// spent in collectives (c1.seconds - c0.seconds).
double set_comm_figures(StepFigures& f, const dist::CommStats& c0, const dist::CommStats& c1);

/// Collective over comm: every rank's kRankMetricFields of `mine`, by rank, on every rank. The
/// doubles travel bit for bit (two floats each) through one all-gather.
std::vector<StepFigures> all_gather_rank_figures(dist::Communicator& comm, const StepFigures& mine);

}  // namespace td
