#include "gui/core/paths.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace td::gui {

QString engineExecutable() {
  const QString env = qEnvironmentVariable("TRAINDECK_ENGINE");
  if (!env.isEmpty()) return QFileInfo(env).isExecutable() ? QFileInfo(env).absoluteFilePath() : QString();
  const QString app_dir = QCoreApplication::applicationDirPath();
  for (const QString& candidate : {app_dir + "/traindeck-engine", app_dir + "/../../engine/cli/traindeck-engine"}) {
    QFileInfo fi(candidate);
    if (fi.isFile() && fi.isExecutable()) return fi.canonicalFilePath();
  }
  return QStandardPaths::findExecutable(QStringLiteral("traindeck-engine"));
}

QString runsRoot(const QString& store_path) {
  const QString env = qEnvironmentVariable("TRAINDECK_RUNS_DIR");
  if (!env.isEmpty()) return QDir(env).absolutePath();
  return QFileInfo(store_path).absoluteDir().filePath(QStringLiteral("runs"));
}

QString datasetsRoot(const QString& store_path) {
  return QFileInfo(store_path).absoluteDir().filePath(QStringLiteral("datasets"));
}

}  // namespace td::gui
