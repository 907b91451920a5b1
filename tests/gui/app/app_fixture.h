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

using tdguitest::loss_rows;
using tdguitest::Rows;
using tdguitest::wait_ended;
using tdguitest::wait_step;

}  // namespace tdapptest
