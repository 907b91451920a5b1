// The "keep" mark of a checkpoint: <root>/step_NNNNNNNN.keep, an empty regular file beside (not
// inside) the checkpoint directory, so the directory's files and SHA256SUMS stay as written.
// prune_checkpoints() never deletes a kept checkpoint (it does not count towards
// train.keep_checkpoints either); checkpoint_statuses() and latest_checkpoint() ignore markers
// (their names are not step_ + 8 digits). A marker that is a symlink, a directory or anything
// but a plain file does not count. docs/formats.md "Checkpoints".
//
// No OpenSSL, no BLAS: part of td_engine_plan, so the GUI's Checkpoints tab marks and reads
// checkpoints with these same functions. Synchronous file-system calls, no shared state.
#pragma once

#include <string>

namespace td {

/// The step of a checkpoint directory's name: "step_00000120" -> 120; -1 for any other name
/// (exactly "step_" and 8 digits; "step_00000120.tmp" and "step_00000120.keep" are -1).
int checkpoint_step_of_name(const std::string& name);

/// root/step_NNNNNNNN: the directory of the checkpoint of `step` (whether it exists or not).
std::string checkpoint_dir_of(const std::string& root, int step);

/// root/step_NNNNNNNN.keep: the marker of the checkpoint of `step` (whether it exists or not).
std::string checkpoint_keep_marker(const std::string& root, int step);

/// True when the marker of `step` under root is a plain file (lstat: a symlink does not count).
bool checkpoint_is_kept(const std::string& root, int step);

/// Marks (keep = true) or unmarks the checkpoint of `step` under root. Marking needs the
/// checkpoint directory root/step_NNNNNNNN (a real directory, not a symlink) and creates the
/// marker with O_EXCL | O_NOFOLLOW, mode 0600 (an existing plain-file marker is left as is);
/// unmarking removes the marker (a symlink planted there is removed, never followed; nothing
/// happens when there is none). Throws td::Error naming the path: no such checkpoint, a marker
/// path that is a directory or other non-file, or the call's errno.
void set_checkpoint_kept(const std::string& root, int step, bool keep);

}  // namespace td
