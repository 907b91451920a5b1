// `traindeck-engine profile`: where a training step's time goes, op by op (issue 20's per-op
// breakdown): the config's model on its train.device and precision, a few steps of forward,
// backward, gradient clipping and AdamW on synthetic tokens, every backend op timed by the
// profiling backend (engine/ops/profile.h). One process, no dataset needed.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config.h"

namespace td {

struct OpProfileRow {
  std::string op;         // op_name(), or "zero" / "upload" / "download"
  double calls_per_step;  // calls in one optimizer step (all micro batches)
  double ms_per_step;     // milliseconds in one optimizer step
  double share;           // ms_per_step / the sum over the rows, 0..1
};

struct OpProfileReport {
  std::string device, precision, attention, gelu_fusion;
  int micro_batch = 0, grad_accum = 0, seq_len = 0;
  int steps = 0;           // timed steps (after one untimed warm-up step)
  double step_ms = 0;      // wall milliseconds per timed step, profiled (the ops synchronised)
  double op_ms = 0;        // the rows' sum per step; step_ms - op_ms is the host's own work
  double tokens_per_s = 0; // micro_batch * grad_accum * seq_len / step_ms, profiled
  std::vector<OpProfileRow> rows;  // by ms_per_step, largest first
};

/// Trains 1 + steps optimizer steps of c (validated; its dataset is not read: token ids are a
/// fixed pseudo-random stream below model.vocab_size) and returns the per-op figures of the last
/// `steps`. steps >= 1. Throws td::Error when the device cannot be opened or the model does not
/// fit, and td::ConfigError for train.tensor_parallel > 1 (one process: the TP collectives would
/// need a group).
OpProfileReport profile_training_steps(const RunConfig& c, int steps);

/// The report as JSON: {"device", "precision", "attention", "gelu_fusion", "micro_batch", "grad_accum",
/// "seq_len", "steps", "step_ms", "op_ms", "tokens_per_s", "ops": [{"op", "calls_per_step",
/// "ms_per_step", "share"}...]}.
nlohmann::json to_json(const OpProfileReport& r);
/// A fixed-width table for people: one line per op with calls, ms per step and share.
std::string format_table(const OpProfileReport& r);

}  // namespace td
