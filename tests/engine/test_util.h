// Helpers shared by the engine tests: running processes, reading events files.
#pragma once

#include <cmath>

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

/// Runs program with args (cwd: dir when non-empty), waiting up to timeout_ms (a limit for a
/// program that hangs, generous for a loaded machine: never a measure of speed).
inline ProcResult run(const QString& program, const QStringList& args, int timeout_ms = 300000,
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
inline QByteArray wait_for_stdout(QProcess& p, const QByteArray& needle, int timeout_ms = 300000) {
  QByteArray seen;
  QElapsedTimer timer;
  timer.start();
  while (!seen.contains(needle) && timer.elapsed() < timeout_ms && p.state() == QProcess::Running) {
    p.waitForReadyRead(500);
    seen += p.readAllStandardOutput();
  }
  return seen;
}

inline ProcResult engine(const QStringList& args, int timeout_ms = 300000) { return run(TD_ENGINE_EXE, args, timeout_ms); }

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

/// The loss of every step of `ev`'s step events, index step - 1 (NaN for a step without one);
/// a later attempt's value replaces an earlier one (a resumed run repeats steps).
inline std::vector<double> step_losses(const std::vector<nlohmann::json>& ev) {
  std::vector<double> out;
  for (const auto& e : events_of_type(ev, "step")) {
    const size_t s = e["step"].get<size_t>();
    if (out.size() < s) out.resize(s, NAN);
    out[s - 1] = e["loss"].get<double>();
  }
  return out;
}
/// The same for a run directory's events.jsonl.
inline std::vector<double> step_losses(const QString& run_dir) { return step_losses(read_events(run_dir + "/events.jsonl")); }

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

/// The small run most CLI tests train. Writes `text` to <dir>/corpus.txt, prepares it byte-level
/// into <dir>/ds and writes <dir>/cfg.json on it: vocab 257, seq_len 16, 1 layer, 2 heads,
/// d_model 16; 20 steps of micro batch 4 on one thread, no evaluation or samples, a checkpoint
/// every 10 steps, 3 kept. The caller checks `prepare` (exit code 0, else its stderr says why).
struct TinyRun {
  QString data, cfg;
  ProcResult prepare;
};
inline TinyRun write_tiny_run(const QString& dir, const QByteArray& text) {
  TinyRun t;
  write_file(dir + "/corpus.txt", text);
  t.data = dir + "/ds";
  t.prepare = engine({"prepare", "--input", dir + "/corpus.txt", "--out", t.data, "--quiet"});
  const nlohmann::json c = {
      {"model", {{"vocab_size", 257}, {"seq_len", 16}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 16}}},
      {"train", {{"threads", 1}, {"steps", 20}, {"micro_batch", 4}, {"eval_interval", 0}, {"sample_interval", 0},
                 {"checkpoint_interval", 10}, {"keep_checkpoints", 3}}},
      {"data", {{"path", t.data.toStdString()}}}};
  t.cfg = dir + "/cfg.json";
  write_file(t.cfg, QByteArray::fromStdString(c.dump()));
  return t;
}

}  // namespace tdtest
