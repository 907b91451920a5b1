// The note a crash leaves for the next start (issue 35): when the workbench dies — a signal
// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) or std::terminate (an exception nobody caught) — it
// writes what it knows to one file: the time, the reason (the signal, or the exception's
// what()) and the last store operation it began. The next start reads the note, shows it and
// moves it aside, so a window that vanished never vanishes without a word.
//
// Plain C++ and POSIX, no Qt. The signal handler uses only async-signal-safe calls (open, write,
// close, then the default action again); the store operation is kept in a fixed buffer.
// Threading rule: install once, from the main thread, before other threads start;
// note_store_operation() from any thread (the last writer wins; a torn text is possible, never
// an invalid read).
#pragma once

#include <optional>
#include <string>

namespace td::gui {

/// Installs the handlers: a crash writes its note to `path` (created or replaced, mode 0600;
/// the path's folder must exist). Call once; a later call changes the path.
void install_crash_note(const std::string& path);

/// Remembers what the store thread is about to do (e.g. "job 42 for td::gui::AlertWatch"), at
/// most 255 bytes, for the note.
void note_store_operation(const char* what);

/// The note a crash left at `path` (its text), moved to `path` + ".seen" so that it is shown
/// once; nullopt when there is none. Never throws.
std::optional<std::string> take_crash_note(const std::string& path);

}  // namespace td::gui
