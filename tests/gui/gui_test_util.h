// Helpers shared by the GUI tests that train real (tiny) models with the engine binary.
#pragma once

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QString>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace tdguitest {

/// Writes `data` to `path`, creating its folder.
inline void writeFile(const QString& path, const QByteArray& data) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  QCOMPARE(f.write(data), data.size());
}

/// `n` bytes of printable text lines (61 characters each, the letters shifted by `seed`).
inline QByteArray text(int n, char seed) {
  QByteArray b;
  b.reserve(n);
  for (int i = 0; b.size() < n; ++i) b += (i % 61 == 60) ? '\n' : static_cast<char>('a' + (seed + i) % 26);
  b.resize(n);
  b[n - 1] = '\n';
  return b;
}

/// Writes ~40 KB of text into dir/corpus and prepares it (byte tokenizer) into dir/dataset.
/// Returns the dataset path ("" on failure, with a test failure recorded).
inline QString prepare_tiny_dataset(const QString& dir) {
  QDir(dir).mkpath("corpus");
  QFile f(dir + "/corpus/text.txt");
  if (!f.open(QIODevice::WriteOnly)) return {};
  for (int i = 0; i < 600; ++i)
    f.write(QStringLiteral("Line %1: the quick brown fox jumps over the lazy dog; pack my box.\n").arg(i).toUtf8());
  f.close();
  QProcess p;
  p.start(TD_ENGINE_EXE, {"prepare", "--input", dir + "/corpus", "--out", dir + "/dataset", "--tokenizer", "byte",
                          "--quiet"});
  if (!p.waitForFinished(60000) || p.exitCode() != 0) {
    qWarning("prepare failed: %s", p.readAllStandardError().constData());
    return {};
  }
  return dir + "/dataset";
}

/// A model small enough that a step takes a fraction of a millisecond on one thread. No
/// periodic checkpoints by default (a stop writes one): at thousands of steps per second,
/// fsynced checkpoints every few steps would flood the disk.
inline nlohmann::json tiny_config(const QString& data, int steps, int checkpoint_interval = 0) {
  return {{"model", {{"vocab_size", 257}, {"seq_len", 32}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 32}}},
          {"train",
           {{"steps", steps}, {"micro_batch", 4}, {"lr", 1e-3}, {"warmup", 2}, {"min_lr", 1e-4}, {"threads", 1},
            {"eval_interval", 10}, {"eval_batches", 2}, {"sample_interval", 0},
            {"checkpoint_interval", checkpoint_interval}, {"keep_checkpoints", 2}}},
          {"data", {{"path", data.toStdString()}}}};
}

/// The limit of a wait for something that takes a deploy, a launch or a short training run
/// (ms): generous, because a loaded machine uploads and trains many times slower than an idle
/// one; a passing test never waits it out. Tests wait for events and states, never for a time.
constexpr int kSlowMs = 300000;

/// Waits for a (run_id, status) signal such as RunController::runEnded for `run_id` and
/// returns its status ("timeout" when none came).
inline QString wait_ended(QSignalSpy& spy, const QString& run_id, int timeout_ms = kSlowMs) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < timeout_ms) {
    for (const auto& args : spy)
      if (args.at(0).toString() == run_id) return args.at(1).toString();
    spy.wait(100);
  }
  return QStringLiteral("timeout");
}

/// Waits until a (run_id, last_step) signal such as RunController::runIngested reports `step`
/// of `run_id`; returns the highest step seen.
inline qint64 wait_step(QSignalSpy& spy, const QString& run_id, qint64 step, int timeout_ms = kSlowMs) {
  QElapsedTimer t;
  t.start();
  qint64 last = 0;
  while (t.elapsed() < timeout_ms) {
    for (const auto& args : spy)
      if (args.at(0).toString() == run_id) last = std::max(last, args.at(1).toLongLong());
    if (last >= step) return last;
    spy.wait(100);
  }
  return last;
}

/// Waits until a (run_id, ...) signal such as RunTarget::runStarted (`started`) or
/// startFailed (`failed`, (run_id, message)) names `run_id`. Returns "" when it started, else
/// what was awaited and what came instead: the failure's message, or "timeout" with the last
/// phase of `progress` (rows run_id, done, total, phase: target_test_util.h StateLog::progress)
/// when nothing came.
inline QString wait_started(QSignalSpy& started, QSignalSpy& failed, const QList<QList<QVariant>>& progress,
                            const QString& run_id,
                            int timeout_ms = kSlowMs) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < timeout_ms) {
    for (const auto& args : started)
      if (args.at(0).toString() == run_id) return {};
    for (const auto& args : failed)
      if (args.at(0).toString() == run_id) return "waited for run " + run_id + " to start: " + args.at(1).toString();
    started.wait(100);
  }
  QString phase = "(no deploy progress)";
  for (const auto& args : progress)
    if (args.at(0).toString() == run_id)
      phase = QStringLiteral("%1 (%2 of %3 bytes)").arg(args.at(3).toString()).arg(args.at(1).toLongLong()).arg(args.at(2).toLongLong());
  return QStringLiteral("timeout: waited %1 s for run %2 to start; last deploy phase: %3")
      .arg(timeout_ms / 1000).arg(run_id, phase);
}

/// (count, first, last) of a run's stored loss rows.
struct Rows {
  int64_t count = 0, first = 0, last = 0;
};
inline Rows loss_rows(const QString& db, const QString& run_id) {
  td::store::Store s(db.toStdString());
  auto series = s.metric_series(run_id.toStdString(), "loss");
  Rows r;
  r.count = (int64_t)series.size();
  if (r.count) {
    r.first = series.step.front();
    r.last = series.step.back();
  }
  return r;
}

}  // namespace tdguitest
