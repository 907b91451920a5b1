#include "gui/look/theme.h"

#include <QApplication>
#include <QEvent>
#include <QGuiApplication>
#include <QMetaObject>
#include <QObject>
#include <QPointer>
#include <QStyle>
#include <QStyleFactory>
#include <QToolTip>
#include <QWidget>

#include <optional>

namespace td::gui {

namespace {

Theme g_theme = Theme::System;
std::optional<QPalette> g_applied;  // the palette applyTheme() last left on the application
bool g_applying = false;            // inside applyTheme(): our own palette events are ignored

// Re-applies Theme::System when the desktop changes its theme or palette. Installed once on
// qApp; the re-apply is queued so that a burst of ThemeChange events (one per window) costs one.
class SystemThemeWatcher : public QObject {
 public:
  using QObject::QObject;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    const auto type = event->type();
    if ((type == QEvent::ThemeChange || type == QEvent::ApplicationPaletteChange) && !g_applying &&
        g_theme == Theme::System && !pending_) {
      pending_ = true;
      QMetaObject::invokeMethod(
          this,
          [this] {
            pending_ = false;
            if (g_theme == Theme::System)
              if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance()))
                applyTheme(*app, Theme::System);
          },
          Qt::QueuedConnection);
    }
    return QObject::eventFilter(watched, event);
  }

 private:
  bool pending_ = false;
};

QColor blend(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * t),
                          float(a.greenF() + (b.greenF() - a.greenF()) * t),
                          float(a.blueF() + (b.blueF() - a.blueF()) * t));
}

// Link colours readable on the respective window/base colours.
const QColor kDarkLink(0x6c, 0xb4, 0xf5);
const QColor kDarkLinkVisited(0xc0, 0x9c, 0xf0);
const QColor kLightLink(0x1a, 0x5f, 0xb4);
const QColor kLightLinkVisited(0x6e, 0x3f, 0xa8);

}  // namespace

QString themeName(Theme t) {
  switch (t) {
    case Theme::Light: return QStringLiteral("light");
    case Theme::Dark: return QStringLiteral("dark");
    case Theme::System: break;
  }
  return QStringLiteral("system");
}

QString themeDisplayName(Theme t) {
  switch (t) {
    case Theme::Light: return QCoreApplication::translate("td::gui::Theme", "Light");
    case Theme::Dark: return QCoreApplication::translate("td::gui::Theme", "Dark");
    case Theme::System: break;
  }
  return QCoreApplication::translate("td::gui::Theme", "System");
}

Theme themeFromString(const QString& name) {
  const QString n = name.trimmed().toLower();
  if (n == QLatin1String("light")) return Theme::Light;
  if (n == QLatin1String("dark")) return Theme::Dark;
  return Theme::System;
}

bool isDark(const QPalette& palette) {
  return palette.color(QPalette::Active, QPalette::Window).lightness() < 128;
}

QPalette darkPalette() {
  // Neutral greys (no tint) so that chart series colours keep their hue; text at ~90% white
  // (full white on near-black glares); one blue for selection and focus.
  const QColor window(0x2d, 0x2d, 0x30);
  const QColor base(0x1e, 0x1e, 0x1e);
  const QColor alternate_base(0x26, 0x26, 0x28);
  const QColor button(0x3a, 0x3a, 0x3d);
  const QColor text(0xe6, 0xe6, 0xe6);
  const QColor disabled_text(0x80, 0x80, 0x80);
  const QColor highlight(0x2f, 0x6f, 0xc4);
  const QColor inactive_highlight(0x3a, 0x4f, 0x6e);

  QPalette p;
  for (auto group : {QPalette::Active, QPalette::Inactive, QPalette::Disabled}) {
    p.setColor(group, QPalette::Window, window);
    p.setColor(group, QPalette::WindowText, text);
    p.setColor(group, QPalette::Base, base);
    p.setColor(group, QPalette::AlternateBase, alternate_base);
    p.setColor(group, QPalette::ToolTipBase, QColor(0x3f, 0x3f, 0x46));
    p.setColor(group, QPalette::ToolTipText, QColor(0xf0, 0xf0, 0xf0));
    p.setColor(group, QPalette::PlaceholderText, QColor(0x8c, 0x8c, 0x8c));
    p.setColor(group, QPalette::Text, text);
    p.setColor(group, QPalette::Button, button);
    p.setColor(group, QPalette::ButtonText, text);
    p.setColor(group, QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
    // Bevel shades Fusion draws frames, splitters and sliders with: lighter than Button for
    // the lit edge, darker for the shadowed one.
    p.setColor(group, QPalette::Light, QColor(0x55, 0x55, 0x5a));
    p.setColor(group, QPalette::Midlight, QColor(0x46, 0x46, 0x4b));
    p.setColor(group, QPalette::Mid, QColor(0x26, 0x26, 0x28));
    p.setColor(group, QPalette::Dark, QColor(0x1a, 0x1a, 0x1b));
    p.setColor(group, QPalette::Shadow, QColor(0x0a, 0x0a, 0x0a));
    p.setColor(group, QPalette::Highlight, highlight);
    p.setColor(group, QPalette::HighlightedText, QColor(0xff, 0xff, 0xff));
    p.setColor(group, QPalette::Link, kDarkLink);
    p.setColor(group, QPalette::LinkVisited, kDarkLinkVisited);
  }
  p.setColor(QPalette::Inactive, QPalette::Highlight, inactive_highlight);
  p.setColor(QPalette::Inactive, QPalette::HighlightedText, text);

  // Disabled: text and icons greyed, the selection without colour, flat bevels.
  p.setColor(QPalette::Disabled, QPalette::WindowText, disabled_text);
  p.setColor(QPalette::Disabled, QPalette::Text, disabled_text);
  p.setColor(QPalette::Disabled, QPalette::ButtonText, disabled_text);
  p.setColor(QPalette::Disabled, QPalette::PlaceholderText, QColor(0x5c, 0x5c, 0x5c));
  p.setColor(QPalette::Disabled, QPalette::Base, QColor(0x26, 0x26, 0x28));
  p.setColor(QPalette::Disabled, QPalette::Button, QColor(0x33, 0x33, 0x36));
  p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x4a, 0x4a, 0x4e));
  p.setColor(QPalette::Disabled, QPalette::HighlightedText, QColor(0xa0, 0xa0, 0xa0));
  p.setColor(QPalette::Disabled, QPalette::Link, QColor(0x5a, 0x78, 0x96));
  p.setColor(QPalette::Disabled, QPalette::BrightText, QColor(0x9a, 0x5a, 0x5a));
  p.setColor(QPalette::Disabled, QPalette::Light, QColor(0x3a, 0x3a, 0x3d));
  return p;
}

QPalette lightPalette() {
  QStyle* fusion = QStyleFactory::create(QStringLiteral("Fusion"));
  QPalette p = fusion ? fusion->standardPalette() : QPalette(QColor(0xef, 0xef, 0xef));
  delete fusion;
  for (auto group : {QPalette::Active, QPalette::Inactive}) {
    p.setColor(group, QPalette::Link, kLightLink);
    p.setColor(group, QPalette::LinkVisited, kLightLinkVisited);
    p.setColor(group, QPalette::PlaceholderText, QColor(0x80, 0x80, 0x80));
  }
  p.setColor(QPalette::Disabled, QPalette::PlaceholderText, QColor(0xb0, 0xb0, 0xb0));
  return p;
}

QPalette platformPalette() {
  const QPalette current = QGuiApplication::palette();
  if (!g_applied || !(current == *g_applied)) return current;
  // The palette on the application is ours: drop it (a palette with no role set resolves to
  // the platform theme's, filled in by the style's standard palette) and read the base back.
  const bool was_applying = g_applying;
  g_applying = true;
  QGuiApplication::setPalette(QPalette());
  QPalette base = QGuiApplication::palette();
  g_applying = was_applying;
  return base;
}

void applyTheme(QApplication& app, Theme t) {
  static QPointer<SystemThemeWatcher> watcher;
  if (!watcher) {
    watcher = new SystemThemeWatcher(&app);
    app.installEventFilter(watcher);
  }
  g_applying = true;
  if (QString::compare(app.style()->name(), QLatin1String("fusion"), Qt::CaseInsensitive) != 0)
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));

  const QPalette before = QGuiApplication::palette();
  const QPalette platform = platformPalette();  // may reset the application's palette
  QPalette wanted;
  switch (t) {
    case Theme::Dark: wanted = darkPalette(); break;
    case Theme::Light: wanted = isDark(platform) ? lightPalette() : platform; break;
    case Theme::System: wanted = isDark(platform) ? darkPalette() : platform; break;
  }
  if (!(QGuiApplication::palette() == wanted)) QApplication::setPalette(wanted);
  if (!(QGuiApplication::palette() == before)) {
    // A widget with a style sheet (and everything under it) keeps the palette the style sheet
    // style gave it when it was polished; setting its style sheet again polishes it (and its
    // children) with the new one. Without this the Design page stayed light in the dark theme.
    for (QWidget* w : QApplication::allWidgets())
      if (!w->styleSheet().isEmpty()) w->setStyleSheet(w->styleSheet());
    if (!app.styleSheet().isEmpty()) app.setStyleSheet(app.styleSheet());
  }
  g_applied = QGuiApplication::palette();
  // Tool tips keep a palette of their own, which a platform theme may have set.
  QToolTip::setPalette(*g_applied);
  g_theme = t;
  g_applying = false;
}

Theme currentTheme() { return g_theme; }

QColor chartBackground() { return QGuiApplication::palette().color(QPalette::Active, QPalette::Base); }

QColor chartForeground() { return QGuiApplication::palette().color(QPalette::Active, QPalette::Text); }

QColor chartGrid() { return blend(chartBackground(), chartForeground(), 0.18); }

QList<QColor> seriesColors() {
  // Tableau 10 (blue, orange, red, teal, green, yellow, purple, pink) with orange, teal,
  // yellow and pink darkened until each sits between luminance 0.15 and 0.30: >= 3:1 against
  // white and against #1e1e1e.
  return {QColor(0x4e, 0x79, 0xa7), QColor(0xdd, 0x7a, 0x18), QColor(0xe1, 0x57, 0x59),
          QColor(0x3e, 0x9e, 0x98), QColor(0x59, 0xa1, 0x4f), QColor(0xad, 0x8c, 0x17),
          QColor(0xb0, 0x7a, 0xa1), QColor(0xdc, 0x6a, 0x88)};
}

QColor seriesColor(int i) {
  const QList<QColor> colours = seriesColors();
  const int n = int(colours.size());
  return colours[((i % n) + n) % n];
}

}  // namespace td::gui
