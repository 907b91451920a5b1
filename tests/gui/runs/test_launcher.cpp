// launch_detached: the child runs in its own session with the reported pid, outlives nothing
// of ours, logs where told; a missing program is a clear error; process_alive and request_stop.
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>
#include <unistd.h>

#include "engine/common/error.h"
#include "gui/runs/launcher.h"

using namespace td::gui;

namespace {
QByteArray read_all(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}
}  // namespace

class TestLauncher : public QObject {
  Q_OBJECT
 private slots:
  void detachedWithItsOwnSession() {
    QTemporaryDir dir;
    LaunchSpec spec;
    spec.program = "/bin/sh";
    spec.args = {"-c", "echo $$ > pid.txt; echo to-err >&2; echo to-out; exec sleep 30", "marker-xyz"};
    spec.working_dir = dir.path().toStdString();
    spec.stdout_path = dir.filePath("out.log").toStdString();
    spec.stderr_path = dir.filePath("err.log").toStdString();
    const pid_t pid = launch_detached(spec);
    QTRY_VERIFY(QFile::exists(dir.filePath("pid.txt")) && read_all(dir.filePath("pid.txt")).endsWith('\n'));
    QCOMPARE(read_all(dir.filePath("pid.txt")).trimmed().toInt(), (int)pid);
    // A session of its own (its leader, the intermediate child, is gone: no terminal can come
    // back to it): a closed terminal or GUI does not hang it up.
    QVERIFY(getsid(pid) > 0);
    QVERIFY(getsid(pid) != getsid(0));
    QVERIFY(getpgid(pid) != getpgid(0));
    QTRY_COMPARE(read_all(dir.filePath("err.log")), QByteArray("to-err\n"));
    QTRY_COMPARE(read_all(dir.filePath("out.log")), QByteArray("to-out\n"));
    // The shell execs sleep right after its last echo. While execve runs, /proc/<pid>/cmdline
    // reads empty, which process_alive counts as alive whatever the marks (an engine mid-exec
    // is alive): the marks are checked once sleep is what runs.
    QTRY_VERIFY2(read_all(QStringLiteral("/proc/%1/cmdline").arg(pid)).startsWith("sleep"),
                 "waited for the shell to exec sleep");
    QVERIFY(process_alive(pid));
    QVERIFY(process_alive(pid, {"sleep"}));
    QVERIFY(!process_alive(pid, {"traindeck-engine"}));  // a recycled pid is not our engine
    QVERIFY(request_stop(pid));
    QTRY_VERIFY(!process_alive(pid));
  }

  void missingProgramIsAClearError() {
    LaunchSpec spec;
    spec.program = "/nonexistent/traindeck-engine";
    try {
      launch_detached(spec);
      QFAIL("no error for a missing program");
    } catch (const td::Error& e) {
      const QString m = e.what();
      QVERIFY2(m.contains("cannot start") && m.contains("No such file"), qPrintable(m));
    }
  }

  void unwritableLogIsAClearError() {
    LaunchSpec spec;
    spec.program = "/bin/true";
    spec.stderr_path = "/nonexistent-dir/engine.log";
    QVERIFY_THROWS_EXCEPTION(td::Error, launch_detached(spec));
  }

  void noSuchProcess() {
    QVERIFY(!process_alive(0));
    QVERIFY(!process_alive(999999999));
    QVERIFY(!request_stop(0));
  }
};

QTEST_GUILESS_MAIN(TestLauncher)
#include "test_launcher.moc"
