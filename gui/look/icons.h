// TrainDeck's icons: hand-drawn 24x24 SVG line icons (resources/icons/, neutral grey #8a8a8a
// strokes that read on light and dark palettes; the app icon in colour), compiled into
// td_gui_look's resources as ":/icons/<name>.svg" and drawn by Qt SVG's icon engine at any size.
//
// Threading rule: QIcon and QPixmap are GUI-thread objects; call these on the GUI thread.
#pragma once

#include <QIcon>
#include <QString>
#include <QStringList>

namespace td::gui {

/// Registers td_gui_look's compiled resources (icons, translations). td_gui_look is a static
/// library, whose resource object file the linker would otherwise drop: the app calls this once
/// at start; icon(), installTranslation() and the About box call it too, so forgetting it is
/// harmless. Idempotent; any thread before the first use, then read-only.
void initLookResources();

/// Names of all icons, e.g. "traindeck", "new-store", "open-store", "experiment", "run",
/// "start", "stop", "resume", "compare", "data", "designer", "export", "settings", "about",
/// "delete", "search", "rename", "notes", "import", "refresh", "remote", "log".
QStringList iconNames();

/// The icon ":/icons/<name>.svg" (name without ".svg", one of iconNames()). An unknown name
/// gives a null QIcon (isNull()) and a qWarning, so a typo shows in the log, not as a crash.
QIcon icon(const QString& name);

/// The application icon (icon("traindeck")), for QApplication::setWindowIcon.
QIcon appIcon();

}  // namespace td::gui
