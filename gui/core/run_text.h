// A run's status and end reason as the GUI shows them, in the user's language. The store keeps
// them in English (the engine's run_end event, docs/events.md; the followers' own reasons):
// these functions only translate for display, never what is stored, sorted on or compared.
//
// Threading rule: any thread (QCoreApplication::translate is thread-safe); the result is in
// the language installed when called.
#pragma once

#include <QString>

namespace td::gui {

/// "unknown", "running", "completed", "stopped", "failed" (store/schema.cpp's runs.status) ->
/// the translated word ("unbekannt", "läuft", "abgeschlossen", "gestoppt", "fehlgeschlagen" in
/// German). Any other status is returned unchanged.
QString runStatusText(const QString& status);

/// An end reason (runs.end_reason) translated sentence by sentence, from one table of the
/// sentences TrainDeck writes:
///   engine/train/training_run.cpp  "reached train.steps", "stop requested (signal)", the
///                             non-finite sentence; engine/train/trainer.cpp: its checkpoint
///                             note (newest_verified_note);
///   gui/runs/run_follower.cpp "the engine process N ended without a run_end event[: line]";
///   remote/remote_run.cpp     "the engine process (pid N) on the node ended without ...".
/// The parts that are data (step, pid, paths, the log's last lines) are kept as they are. A
/// reason that is none of these (an engine error's own message) is returned unchanged.
QString endReasonText(const QString& reason);

}  // namespace td::gui
