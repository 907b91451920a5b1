#include "gui/core/paths.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

// The source tree's docs/ (gui/core/CMakeLists.txt), for an app run from its build tree.
#ifndef TD_SOURCE_DOCS_DIR
#define TD_SOURCE_DOCS_DIR ""
#endif

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

QStringList userGuideCandidates() {
  QStringList out;
  const QString env = qEnvironmentVariable("TRAINDECK_DOCS_DIR");
  if (!env.isEmpty()) out << QDir(env).absoluteFilePath(QStringLiteral("guide.md"));
  out << QDir::cleanPath(QCoreApplication::applicationDirPath() + QStringLiteral("/../share/doc/traindeck/guide.md"));
  out << QStringLiteral(TD_SOURCE_DOCS_DIR "/guide.md");
  return out;
}

QString userGuidePath() {
  for (const QString& candidate : userGuideCandidates()) {
    const QFileInfo fi(candidate);
    if (fi.isFile()) return fi.canonicalFilePath();
  }
  return QString();
}

QString datasetsRoot(const QString& store_path) {
  return QFileInfo(store_path).absoluteDir().filePath(QStringLiteral("datasets"));
}

}  // namespace td::gui
