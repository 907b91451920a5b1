// Checkpoints: <root>/step_NNNNNNNN/ holding
//   model.safetensors      the weights, names and shapes of gpt_param_tensors() (docs/formats.md)
//   optimizer.safetensors  AdamW moments: "<name>.exp_avg" and "<name>.exp_avg_sq" per tensor
//   trainer.json           step, tokens seen, run id, attempt, RNG states, loader position, config
// A checkpoint is written into step_NNNNNNNN.tmp/, every file fsynced, then renamed; a directory
// without the .tmp suffix is therefore complete. The newest `keep` checkpoints are kept.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/data/loader.h"
#include "engine/model/gpt.h"
#include "engine/optim/adamw.h"

namespace td {

struct TrainerState {
  int step = 0;                 // optimizer steps completed
  uint64_t tokens_seen = 0;     // tokens of all ranks
  int adam_t = 0;               // AdamW updates applied (skipped steps do not count)
  std::string run_id;
  int attempt = 0;
  uint64_t sample_rng = 0;      // state of the sampling RNG
  LoaderState loader;
  nlohmann::json config;        // the run's full config
  nlohmann::json to_json() const;
  static TrainerState from_json(const nlohmann::json& j);
};

struct CheckpointInfo {
  std::string path;  // the step_NNNNNNNN directory
  uint64_t bytes = 0;
};

/// Writes a checkpoint of model (and optimizer, when non-null) at state.step under root.
/// Throws td::Error on I/O failure; a failed write leaves only a .tmp directory behind.
CheckpointInfo save_checkpoint(const std::string& root, GPT& model, AdamW* opt, const TrainerState& state);

/// Why a checkpoint directory cannot be used ("" when it can): a missing or malformed
/// trainer.json, or a weights / optimizer file whose safetensors header does not parse or
/// points past the end of the file.
std::string checkpoint_problem(const std::string& ckpt_dir);

/// The newest usable checkpoint directory under root (by step), or nullopt. Newer ones that are
/// damaged are skipped; if `damaged` is given, "<dir>: <problem>" is appended for each.
std::optional<std::string> latest_checkpoint(const std::string& root, std::vector<std::string>* damaged = nullptr);

/// Reads trainer.json of a checkpoint directory (td::Error when missing or malformed, or when its
/// run_id is not a valid run id: td::valid_run_id, engine/common/run_id.h).
TrainerState read_trainer_state(const std::string& ckpt_dir);

/// Loads weights (and optimizer moments when opt is non-null) into an already constructed model
/// of the same shape. Throws td::Error on a shape mismatch or a damaged file.
void load_checkpoint(const std::string& ckpt_dir, GPT& model, AdamW* opt);

/// Keeps the newest `keep` usable checkpoints under root and deletes the others: older ones,
/// damaged ones, and stale .tmp directories of interrupted writes.
void prune_checkpoints(const std::string& root, int keep);

}  // namespace td
