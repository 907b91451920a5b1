// The application's look: Fusion style with a light or dark palette, the dark one chosen to
// follow the desktop (Qt 6.4 has no QStyleHints::colorScheme, so "the desktop is dark" is read
// from the platform palette's window colour), and the colours charts draw with.
//
// Threading rule: every function here touches QApplication's style or palette and must be
// called on the GUI thread (chart colours read the palette: GUI thread too).
#pragma once

#include <QColor>
#include <QList>
#include <QPalette>
#include <QString>

class QApplication;

namespace td::gui {

/// System follows the desktop (dark when the platform palette is dark), Light and Dark force one.
enum class Theme { System, Light, Dark };

/// "system", "light", "dark" (the names settings store). Never translated.
QString themeName(Theme t);
/// The name a settings list shows, translated: "System", "Light", "Dark" ("Hell", "Dunkel").
QString themeDisplayName(Theme t);
/// Inverse of themeName, case-insensitive; anything else (including "") is Theme::System.
Theme themeFromString(const QString& name);

/// True when the palette's Active Window colour is dark: HSL lightness < 128 (0..255 scale).
bool isDark(const QPalette& palette);

/// TrainDeck's dark palette: every role of the Active, Inactive and Disabled groups set (window,
/// base, text, buttons, bevel shades, highlight, links, tooltips, placeholder text).
QPalette darkPalette();
/// The light palette used when the platform's own is dark but Light is asked for: Fusion's
/// standard palette with TrainDeck's link and placeholder colours.
QPalette lightPalette();

/// The palette the desktop gives the application, without TrainDeck's theme: the application
/// palette when it is not one applyTheme() set (the platform's, or one a caller or the desktop
/// set), else the platform's base palette (got by resetting the application palette).
QPalette platformPalette();

/// Sets Fusion style and the palette for `t` on `app`:
///  Dark   -> darkPalette();
///  Light  -> platformPalette() when it is light, else lightPalette();
///  System -> Dark when isDark(platformPalette()), else the platform's own (light) palette.
/// With System, a later desktop theme change (QEvent::ThemeChange) re-applies it. Widgets get
/// QEvent::PaletteChange as usual; widgets with a style sheet (whose palette the style sheet
/// style fixed when it polished them) are polished again, so every page switches at once;
/// charts re-read chartBackground() etc. on it. The tool tip palette (QToolTip::setPalette)
/// follows too.
void applyTheme(QApplication& app, Theme t);
/// The theme last passed to applyTheme() (System before any call).
Theme currentTheme();

/// Chart colours derived from the current application palette (QGuiApplication::palette()):
/// background = Base, foreground (axes, tick labels, text) = Text, grid = Base blended 18%
/// towards Text (a faint line that reads on both light and dark backgrounds).
QColor chartBackground();
QColor chartForeground();
QColor chartGrid();

/// 8 distinguishable colours for run overlays, in the order runs take them (run i gets
/// seriesColors()[i % 8]). A Tableau 10 derived set, adjusted so that each has a WCAG contrast
/// ratio >= 3 against both white and the dark palette's Base (#1e1e1e), and any two differ by
/// CIE76 Delta E >= 20. Same list on light and dark.
QList<QColor> seriesColors();
/// seriesColors()[i mod 8]; negative i count from the end (-1 is the last colour).
QColor seriesColor(int i);

}  // namespace td::gui
