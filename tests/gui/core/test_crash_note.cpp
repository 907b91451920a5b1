// The note a crash leaves for the next start (gui/core/crash_note.h, issue 35): a child process
// installs the handlers, begins a "store operation" and dies — by an uncaught exception
// (std::terminate) or by SIGSEGV; the note names the reason and the operation, and is taken
// once.
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "gui/core/crash_note.h"

namespace {

// Forks a child that installs the note at `path`, notes `op`, then runs `die`; returns the
// signal that ended it (0 when it exited instead).
int crash_child(const std::string& path, const char* op, void (*die)()) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    td::gui::install_crash_note(path);
    td::gui::note_store_operation(op);
    die();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

void uncaught() noexcept(false) { throw std::runtime_error("the store thread met a bad row"); }

void terminate_by_exception() {
  // An exception escaping a noexcept function: std::terminate, as one escaping a Qt slot would.
  [&]() noexcept { uncaught(); }();
}

void segfault() { ::raise(SIGSEGV); }

}  // namespace

class TestCrashNote : public QObject {
  Q_OBJECT
 private slots:
  void anUncaughtExceptionLeavesANote() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("last-crash.txt").toStdString();
    QVERIFY(!td::gui::take_crash_note(path));  // nothing yet
    QCOMPARE(crash_child(path, "job 42 for td::gui::AlertWatch", terminate_by_exception), SIGABRT);
    const auto note = td::gui::take_crash_note(path);
    QVERIFY(note);
    QVERIFY2(note->find("Reason: std::terminate: an uncaught exception: the store thread met a bad row\n") != std::string::npos,
             note->c_str());
    QVERIFY2(note->find("Last store operation begun: job 42 for td::gui::AlertWatch\n") != std::string::npos, note->c_str());
    QVERIFY(!td::gui::take_crash_note(path));  // shown once: moved aside
    QVERIFY(QFile::exists(QString::fromStdString(path + ".seen")));
  }

  void aSignalLeavesANote() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("last-crash.txt").toStdString();
    QCOMPARE(crash_child(path, "job 7 for td::gui::RunView", segfault), SIGSEGV);  // the default action still ends it
    const auto note = td::gui::take_crash_note(path);
    QVERIFY(note);
    QVERIFY2(note->find("Reason: signal SIGSEGV (invalid memory access)\n") != std::string::npos, note->c_str());
    QVERIFY2(note->find("job 7 for td::gui::RunView") != std::string::npos, note->c_str());
  }
};

QTEST_GUILESS_MAIN(TestCrashNote)
#include "test_crash_note.moc"
