// Where the GUI finds the engine binary and keeps its files.
#pragma once

#include <QString>

namespace td::gui {

/// The traindeck-engine executable: $TRAINDECK_ENGINE when set, else the one beside the
/// application (installed layout), else the build tree's engine/cli/traindeck-engine (the app
/// is build/gui/app/traindeck), else `traindeck-engine` on PATH. Returns "" when none is found.
QString engineExecutable();

/// Folder new local runs are created in: $TRAINDECK_RUNS_DIR, else <store folder>/runs.
QString runsRoot(const QString& store_path);

/// Folder prepared datasets are written to by default: <store folder>/datasets.
QString datasetsRoot(const QString& store_path);

}  // namespace td::gui
