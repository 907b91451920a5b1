// Helpers shared by the GUI tests that train real (tiny) models with the engine binary.
#pragma once

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QtTest>

#include <nlohmann/json.hpp>

namespace tdguitest {

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

/// A model small enough that a step takes milliseconds on one thread.
inline nlohmann::json tiny_config(const QString& data, int steps, int checkpoint_interval = 10) {
  return {{"model", {{"vocab_size", 257}, {"seq_len", 32}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 32}}},
          {"train",
           {{"steps", steps}, {"micro_batch", 4}, {"lr", 1e-3}, {"warmup", 2}, {"min_lr", 1e-4}, {"threads", 1},
            {"eval_interval", 10}, {"eval_batches", 2}, {"sample_interval", 0},
            {"checkpoint_interval", checkpoint_interval}, {"keep_checkpoints", 2}}},
          {"data", {{"path", data.toStdString()}}}};
}

}  // namespace tdguitest
