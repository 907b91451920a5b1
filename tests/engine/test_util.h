// Helpers shared by the engine tests: running processes, reading events files.
#pragma once

#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QtTest>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tdtest {

struct ProcResult {
  int exit_code = -1;
  QString out, err;
};

/// Runs program with args (cwd: dir when non-empty), waiting up to timeout_ms.
inline ProcResult run(const QString& program, const QStringList& args, int timeout_ms = 120000,
                      const QString& dir = {}) {
  QProcess p;
  if (!dir.isEmpty()) p.setWorkingDirectory(dir);
  p.start(program, args);
  ProcResult r;
  if (!p.waitForStarted(10000)) {
    r.err = "could not start " + program;
    return r;
  }
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out: " + program + " " + args.join(' ');
  }
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err += QString::fromUtf8(p.readAllStandardError());
  return r;
}

/// Reads p's stdout until it contains `needle` (or p ends, or timeout_ms passes); returns what
/// was read. For waiting on a running engine's first "step" event.
inline QByteArray wait_for_stdout(QProcess& p, const QByteArray& needle, int timeout_ms = 60000) {
  QByteArray seen;
  QElapsedTimer timer;
  timer.start();
  while (!seen.contains(needle) && timer.elapsed() < timeout_ms && p.state() == QProcess::Running) {
    p.waitForReadyRead(500);
    seen += p.readAllStandardOutput();
  }
  return seen;
}

inline ProcResult engine(const QStringList& args, int timeout_ms = 120000) { return run(TD_ENGINE_EXE, args, timeout_ms); }

/// All events of an events.jsonl file (each line parsed).
inline std::vector<nlohmann::json> read_events(const QString& path) {
  std::vector<nlohmann::json> ev;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return ev;
  while (!f.atEnd()) {
    QByteArray line = f.readLine().trimmed();
    if (!line.isEmpty()) ev.push_back(nlohmann::json::parse(line.toStdString()));
  }
  return ev;
}

inline std::vector<nlohmann::json> events_of_type(const std::vector<nlohmann::json>& ev, const std::string& type) {
  std::vector<nlohmann::json> out;
  for (const auto& e : ev)
    if (e.value("type", "") == type) out.push_back(e);
  return out;
}

inline void write_file(const QString& path, const QByteArray& data) {
  QFile f(path);
  QVERIFY2(f.open(QIODevice::WriteOnly), qPrintable(path));
  f.write(data);
}

// A small text corpus: long enough for windows of 32 tokens, varied enough to learn from.
inline QByteArray generated_text(int lines) {
  QByteArray t;
  const char* words[] = {"the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "and", "runs", "far"};
  uint64_t x = 12345;
  for (int i = 0; i < lines; i++) {
    for (int w = 0; w < 8; w++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      t += words[(x >> 33) % 12];
      t += w == 7 ? ".\n" : " ";
    }
  }
  return t;
}

}  // namespace tdtest
