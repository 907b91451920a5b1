// The note a crash leaves for the next start (crash_note.h).
#include "gui/core/crash_note.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <iterator>

namespace td::gui {
namespace {

char g_path[4096];            // where the note goes ("" = not installed)
char g_operation[256] = "none";  // the last store operation begun

// Appends `s` to buf[0..*n) (at most cap bytes), async-signal-safe.
void put(char* buf, size_t* n, size_t cap, const char* s) {
  while (*s && *n + 1 < cap) buf[(*n)++] = *s++;
}

// A decimal number, async-signal-safe.
void put_num(char* buf, size_t* n, size_t cap, long v) {
  char digits[24];
  int k = 0;
  const bool neg = v < 0;
  unsigned long u = neg ? 0ul - static_cast<unsigned long>(v) : static_cast<unsigned long>(v);
  do digits[k++] = static_cast<char>('0' + u % 10); while ((u /= 10) && k < 23);
  if (neg) put(buf, n, cap, "-");
  while (k > 0 && *n + 1 < cap) buf[(*n)++] = digits[--k];
}

// Writes the note: time, reason, last store operation. Async-signal-safe.
void write_note(const char* reason) {
  if (!g_path[0]) return;
  char text[2048];
  size_t n = 0;
  put(text, &n, sizeof text, "TrainDeck stopped unexpectedly at Unix time ");
  put_num(text, &n, sizeof text, static_cast<long>(::time(nullptr)));
  put(text, &n, sizeof text, ".\nReason: ");
  put(text, &n, sizeof text, reason);
  put(text, &n, sizeof text, "\nLast store operation begun: ");
  put(text, &n, sizeof text, g_operation);
  put(text, &n, sizeof text, "\n");
  const int fd = ::open(g_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  for (size_t off = 0; off < n;) {
    const ssize_t w = ::write(fd, text + off, n - off);
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
  ::close(fd);
}

void on_signal(int sig) {
  const char* what = sig == SIGSEGV ? "signal SIGSEGV (invalid memory access)"
                     : sig == SIGBUS ? "signal SIGBUS (bus error)"
                     : sig == SIGFPE ? "signal SIGFPE (arithmetic error)"
                     : sig == SIGILL ? "signal SIGILL (illegal instruction)"
                                     : "signal SIGABRT (aborted)";
  write_note(what);
  // The default action (a core dump where enabled), as if we had not been here.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void on_terminate() {
  // Not in a signal handler: the exception's text may be formatted freely.
  std::string reason = "std::terminate";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      reason += ": an uncaught exception: " + std::string(x.what());
    } catch (...) {
      reason += ": an uncaught exception of an unknown type";
    }
  }
  if (reason.size() > 1500) reason.resize(1500);
  write_note(reason.c_str());
  ::signal(SIGABRT, SIG_DFL);  // the note is written: abort without a second one
  std::abort();
}

}  // namespace

void install_crash_note(const std::string& path) {
  std::snprintf(g_path, sizeof g_path, "%s", path.c_str());
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
  std::set_terminate(on_terminate);
}

void note_store_operation(const char* what) {
  // Byte by byte, ending with the terminator: a reader in a signal handler sees a text, at worst
  // a mix of two operations, never past the buffer.
  size_t i = 0;
  for (; what[i] && i + 1 < sizeof g_operation; ++i) g_operation[i] = what[i];
  g_operation[i] = '\0';
}

std::optional<std::string> take_crash_note(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  std::rename(path.c_str(), (path + ".seen").c_str());
  if (text.empty()) return std::nullopt;
  return text;
}

}  // namespace td::gui
