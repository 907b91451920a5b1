// Where the GUI finds the engine binary and keeps its files.
#pragma once

#include <QString>
#include <QStringList>

namespace td::gui {

/// The traindeck-engine executable: $TRAINDECK_ENGINE when set, else the one beside the
/// application (installed layout), else the build tree's engine/cli/traindeck-engine (the app
/// is build/gui/app/traindeck), else `traindeck-engine` on PATH. Returns "" when none is found.
QString engineExecutable();

/// Folder new local runs are created in: $TRAINDECK_RUNS_DIR, else <store folder>/runs.
QString runsRoot(const QString& store_path);

/// Where the user guide (docs/guide.md) is looked for, in order: $TRAINDECK_DOCS_DIR/guide.md
/// when set; the installed copy beside the application, <prefix>/share/doc/traindeck/guide.md
/// (the package installs docs/ there, packaging/CMakeLists.txt); the source tree's
/// docs/guide.md (an app run from its build tree).
QStringList userGuideCandidates();
/// The first of userGuideCandidates() that is a file, as an absolute, canonical path; "" when
/// none is.
QString userGuidePath();

/// Folder prepared datasets are written to by default: <store folder>/datasets.
QString datasetsRoot(const QString& store_path);

}  // namespace td::gui
