// Checkpoints: <root>/step_NNNNNNNN/ holding
//   model.safetensors      the weights, names and shapes of gpt_param_tensors() (docs/formats.md)
//   optimizer.safetensors  AdamW moments: "<name>.exp_avg" and "<name>.exp_avg_sq" per tensor
//   trainer.json           step, tokens seen, run id, attempt, RNG states, loader position, config
//   SHA256SUMS             the SHA-256 of each file above, coreutils' format (checksums.h)
// A checkpoint is written into step_NNNNNNNN.tmp/, every file fsynced, then renamed; a directory
// without the .tmp suffix is therefore complete. The newest `keep` checkpoints are kept, and
// those marked keep (<root>/step_NNNNNNNN.keep beside the directory, keep.h).
// A checkpoint "verifies" when trainer.json and the safetensors headers parse, every file
// matches SHA256SUMS, and the weights and moments are all finite. One written before checksums
// (no SHA256SUMS, and no "checksums" in trainer.json) verifies on the rest; checkpoint_note()
// says so for a warning. One whose trainer.json says it was written with SHA256SUMS but that
// lacks the file does not verify (the list was deleted: its files cannot be checked).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/safetensors.h"
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
  /// trainer.json's "checksums": "SHA256SUMS": the checkpoint was written with its checksum
  /// list, so a missing list is damage (checkpoint_problem), not an older checkpoint. Always
  /// written; false only for checkpoints written before checksums.
  bool checksums = false;
  nlohmann::json to_json() const;
  static TrainerState from_json(const nlohmann::json& j);
};

struct CheckpointInfo {
  std::string path;     // the step_NNNNNNNN directory
  uint64_t bytes = 0;   // of all its files
  std::string problem;  // "" or why it does not verify: non-finite weights or moments (it is written all the same)
};

/// Writes a checkpoint of model (and optimizer, when non-null: an AdamW over all num_params) at
/// state.step under root, tensor by tensor: the CPU backend's memory read in place, a device's
/// through one host buffer of the largest tensor (no host copy of the whole state), with
/// SHA256SUMS computed from the files as written. Throws td::Error on I/O failure; a failed
/// write leaves no .tmp directory behind (removed).
CheckpointInfo save_checkpoint(const std::string& root, GPT& model, AdamW* opt, const TrainerState& state);

/// A model's full (consolidated) state in host memory, in the layout of model_param_tensors(model)
/// (a state built on the host, e.g. by a tool or test). m, v: AdamW's moments, empty for none.
struct HostCheckpoint {
  ModelConfig model;
  std::vector<float> params, m, v;
};
/// save_checkpoint for a host state: the same files, names and checks.
CheckpointInfo save_checkpoint(const std::string& root, const HostCheckpoint& c, const TrainerState& state);

/// A model state read tensor by tensor while it is written: read(i, which) returns host memory
/// holding tensor i of model_param_tensors(model) (its numel floats) of the weights (which 0) or
/// AdamW's m (1) or v (2), valid until the next call. It may be collective (a tensor-parallel
/// group's gather): the calls come in for_each_state_read's order, which the ranks that take
/// part follow.
using StateReader = std::function<const float*(size_t i, int which)>;
/// The order save_checkpoint calls a StateReader in, for `n_tensors` tensors: each tensor's
/// weights (which 0), then, with moments, each tensor's m (1) and v (2) (the two files' order).
void for_each_state_read(size_t n_tensors, bool moments, const std::function<void(size_t i, int which)>& fn);
/// save_checkpoint of the state `read` gives (with AdamW's moments when `moments`): the same
/// files, names and checks as the others. Throws td::Error on I/O failure and what read throws.
CheckpointInfo save_checkpoint(const std::string& root, const ModelConfig& model, const StateReader& read, bool moments,
                               const TrainerState& state);
/// A checkpoint's weights (and, with optimizer, AdamW moments) read one tensor at a time in the
/// layout of model_param_tensors(model), so that a resume needs no host copy of the whole state
/// (a tensor-parallel resume hands each rank its pieces tensor by tensor). Opening checks every
/// tensor's presence, dtype and size in the files' headers, so read() fails only on I/O. Throws
/// td::Error as load_checkpoint (a missing tensor, another shape, a damaged header).
class CheckpointTensorReader {
 public:
  CheckpointTensorReader(const std::string& dir, const ModelConfig& model, bool optimizer);
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  bool optimizer() const { return moments_.has_value(); }
  /// Tensor i's weights (which 0) or m (1) or v (2, with optimizer) into out (host,
  /// tensors()[i].numel floats).
  void read(size_t i, int which, float* out) const;

 private:
  std::vector<ParamTensor> tensors_;
  SafetensorsFile weights_;
  std::optional<SafetensorsFile> moments_;
};

/// Why a checkpoint directory does not verify ("" when it does): a missing or malformed
/// trainer.json; a weights / optimizer file whose safetensors header does not parse or points
/// past the end; a file that does not match SHA256SUMS (or a malformed SHA256SUMS); non-finite
/// values in the weights or moments. Reads every file once (SHA-256, ~1.5 GB/s with SHA-NI);
/// a checkpoint that verified (or was written) in this process is not read again unless a
/// file's inode, size or mtime changed. Symlinks inside the checkpoint are refused.
std::string checkpoint_problem(const std::string& ckpt_dir);

/// "" for a checkpoint with SHA256SUMS, else a warning that it was written before checksums
/// and only its structure and finite values were checked.
std::string checkpoint_note(const std::string& ckpt_dir);

/// The SHA-256 of a regular file's bytes (64 lowercase hex digits, as sha256sum prints it),
/// read once with O_NOFOLLOW. Used for checkpoint files and for a dataset's manifest.json
/// (run_start's dataset.manifest_sha256, docs/events.md). Throws td::Error naming the file when
/// it is a symlink, not a regular file, or cannot be read.
std::string file_sha256(const std::string& path);

/// root/step_NNNNNNNN: the directory of the checkpoint of `step` (whether it exists or not).
std::string checkpoint_path(const std::string& root, int step);

/// A complete checkpoint under a root and whether it verifies.
struct CheckpointStatus {
  int step = 0;
  std::string path;     // the step_NNNNNNNN directory
  std::string problem;  // checkpoint_problem(): "" when it verifies
};
/// Every complete (renamed) checkpoint under root, oldest first, each verified (verify false:
/// problem left empty, nothing read). Empty when none.
std::vector<CheckpointStatus> checkpoint_statuses(const std::string& root, bool verify = true);

/// The newest checkpoint directory under root (by step) that verifies, or nullopt. Newer ones
/// that do not are skipped; if `damaged` is given, "<dir>: <problem>" is appended for each.
std::optional<std::string> latest_checkpoint(const std::string& root, std::vector<std::string>* damaged = nullptr);

/// Throws td::Error saying what to do when the checkpoint folder `root` (<run>/checkpoints) is a
/// symbolic link: the trainer refuses it before anything is read or written, and the writer
/// before each checkpoint (a link planted while the run trains). A missing folder is fine.
/// Step folders that are links are not listed as checkpoints (checkpoint_statuses).
void refuse_linked_checkpoint_root(const std::string& root);

/// Reads trainer.json of a checkpoint directory (td::Error when missing or malformed, or when its
/// run_id is not a valid run id: td::valid_run_id, engine/common/run_id.h).
TrainerState read_trainer_state(const std::string& ckpt_dir);

/// Loads weights (and optimizer moments when opt is non-null) into an already constructed model
/// of the same shape. Throws td::Error on a shape mismatch or a damaged file.
void load_checkpoint(const std::string& ckpt_dir, GPT& model, AdamW* opt);

/// Keeps the newest `keep` checkpoints under root that verify and deletes the others: older
/// ones, ones that do not verify, and stale .tmp directories of interrupted writes. A checkpoint
/// the user marked keep (a plain file <root>/step_NNNNNNNN.keep, keep.h) is never deleted and
/// does not count towards `keep`.
void prune_checkpoints(const std::string& root, int keep);

}  // namespace td
