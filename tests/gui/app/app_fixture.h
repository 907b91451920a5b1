// What the app-level tests share: an isolated settings folder, the engine binary, a prepared
// tiny dataset, and waiting helpers for runs driven through the main window.
#pragma once

#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "../gui_test_util.h"
#include "gui/runs/run_controller.h"
#include "store/store.h"

namespace tdapptest {

/// Points QSettings, the runs folder and the engine at test-owned places.
inline void isolate(const QTemporaryDir& dir) {
  QStandardPaths::setTestModeEnabled(true);
  QSettings::setDefaultFormat(QSettings::IniFormat);
  QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, dir.filePath("settings"));
  qputenv("TRAINDECK_ENGINE", TD_ENGINE_EXE);
  qputenv("TRAINDECK_RUNS_DIR", dir.filePath("runs").toUtf8());
  qputenv("XDG_CACHE_HOME", dir.filePath("cache").toUtf8());  // calibration cache of its own
}

/// Waits for runEnded(run_id) and returns its status ("timeout" when none came).
inline QString wait_ended(QSignalSpy& spy, const QString& run_id, int timeout_ms = 120000) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < timeout_ms) {
    for (const auto& args : spy)
      if (args.at(0).toString() == run_id) return args.at(1).toString();
    spy.wait(100);
  }
  return QStringLiteral("timeout");
}

/// Waits until the store has `step` of run_id (through runIngested signals).
inline qint64 wait_step(QSignalSpy& spy, const QString& run_id, qint64 step, int timeout_ms = 60000) {
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

}  // namespace tdapptest
