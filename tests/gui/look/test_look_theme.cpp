// Theme: the dark palette, System following a dark or light platform palette (and a palette
// change while System is on), chart colours and the run-overlay colours' contrast.
#include <QApplication>
#include <QStyle>
#include <QToolTip>
#include <QWidget>
#include <QtTest>

#include <cmath>

#include "gui/look/theme.h"

using namespace td::gui;

namespace {

// WCAG 2 relative luminance and contrast ratio (https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio).
double channel(double c) { return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }
double luminance(const QColor& c) {
  return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
}
double contrast(const QColor& a, const QColor& b) {
  double la = luminance(a), lb = luminance(b);
  if (la < lb) std::swap(la, lb);
  return (la + 0.05) / (lb + 0.05);
}

// CIE L*a*b* (D65) from sRGB, and the CIE76 distance.
struct Lab { double L, a, b; };
Lab lab(const QColor& c) {
  auto lin = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
  const double r = lin(c.redF()), g = lin(c.greenF()), b = lin(c.blueF());
  const double x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
  const double y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  const double z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
  auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116.0; };
  return {116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
}
double deltaE(const QColor& p, const QColor& q) {
  const Lab a = lab(p), b = lab(q);
  return std::sqrt((a.L - b.L) * (a.L - b.L) + (a.a - b.a) * (a.a - b.a) + (a.b - b.b) * (a.b - b.b));
}

QApplication& app() { return *qobject_cast<QApplication*>(QCoreApplication::instance()); }

}  // namespace

class TestLookTheme : public QObject {
  Q_OBJECT

 private slots:
  void names() {
    QCOMPARE(themeName(Theme::Dark), QStringLiteral("dark"));
    QCOMPARE(themeName(Theme::Light), QStringLiteral("light"));
    QCOMPARE(themeName(Theme::System), QStringLiteral("system"));
    QCOMPARE(themeDisplayName(Theme::Dark), QStringLiteral("Dark"));
    QCOMPARE(themeFromString("Dark"), Theme::Dark);
    QCOMPARE(themeFromString(" light "), Theme::Light);
    QCOMPARE(themeFromString("system"), Theme::System);
    QCOMPARE(themeFromString("solarized"), Theme::System);
    QCOMPARE(themeFromString(""), Theme::System);
  }

  void isDarkReadsTheWindowColour() {
    QPalette p;
    p.setColor(QPalette::Window, QColor(127, 127, 127));  // HSL lightness 127
    QVERIFY(isDark(p));
    p.setColor(QPalette::Window, QColor(128, 128, 128));
    QVERIFY(!isDark(p));
    QVERIFY(isDark(darkPalette()));
    QVERIFY(!isDark(lightPalette()));
  }

  void darkGivesDarkWindowAndLightText() {
    applyTheme(app(), Theme::Dark);
    QCOMPARE(QApplication::style()->name().toLower(), QStringLiteral("fusion"));
    QCOMPARE(currentTheme(), Theme::Dark);
    const QPalette p = QApplication::palette();
    QCOMPARE(p.color(QPalette::Window), QColor(0x2d, 0x2d, 0x30));
    QVERIFY(p.color(QPalette::Window).lightness() < 64);
    QVERIFY(p.color(QPalette::Base).lightness() < 64);
    QVERIFY(p.color(QPalette::WindowText).lightness() > 200);
    QVERIFY(p.color(QPalette::Text).lightness() > 200);
    QVERIFY(p.color(QPalette::ButtonText).lightness() > 200);
    QVERIFY(p.color(QPalette::ToolTipText).lightness() > p.color(QPalette::ToolTipBase).lightness() + 100);
    // Readable pairs: body text >= 7:1 (WCAG AAA), links and placeholder text >= 4.5:1 on Base.
    QVERIFY(contrast(p.color(QPalette::Text), p.color(QPalette::Base)) >= 7.0);
    QVERIFY(contrast(p.color(QPalette::Link), p.color(QPalette::Base)) >= 4.5);
    QVERIFY(contrast(p.color(QPalette::PlaceholderText), p.color(QPalette::Base)) >= 4.5);
    QVERIFY(contrast(p.color(QPalette::HighlightedText), p.color(QPalette::Highlight)) >= 4.5);
    // Disabled text is visibly dimmer than active text but still dark-themed.
    QVERIFY(p.color(QPalette::Disabled, QPalette::Text).lightness() <
            p.color(QPalette::Active, QPalette::Text).lightness() - 60);
    QVERIFY(p.color(QPalette::Disabled, QPalette::Window).lightness() < 64);
    QCOMPARE(QToolTip::palette().color(QPalette::ToolTipBase), p.color(QPalette::ToolTipBase));
    QVERIFY(QToolTip::palette().color(QPalette::ToolTipBase).lightness() < 80);
    // A widget created now gets it.
    QWidget w;
    QCOMPARE(w.palette().color(QPalette::Window), QColor(0x2d, 0x2d, 0x30));
  }

  void chartColoursFollowThePalette() {
    applyTheme(app(), Theme::Dark);
    QCOMPARE(chartBackground(), QColor(0x1e, 0x1e, 0x1e));
    QCOMPARE(chartForeground(), QColor(0xe6, 0xe6, 0xe6));
    // 18% of the way from 0x1e (30) to 0xe6 (230): 30 + 36 = 66.
    QCOMPARE(chartGrid().red(), 66);
    QCOMPARE(chartGrid().green(), 66);
    applyTheme(app(), Theme::Light);
    QVERIFY(chartBackground().lightness() > 200);
    QVERIFY(chartForeground().lightness() < 60);
    QVERIFY(chartGrid().lightness() < chartBackground().lightness());
    QVERIFY(chartGrid().lightness() > chartForeground().lightness());
  }

  void systemFollowsADarkPlatformPalette() {
    // What a dark desktop hands the application (not TrainDeck's palette).
    QPalette desktop(QColor(0x35, 0x35, 0x35), QColor(0x28, 0x28, 0x28));
    QVERIFY(isDark(desktop));
    QApplication::setPalette(desktop);
    applyTheme(app(), Theme::System);
    QCOMPARE(currentTheme(), Theme::System);
    QCOMPARE(QApplication::palette().color(QPalette::Window), darkPalette().color(QPalette::Window));
    QCOMPARE(QApplication::palette().color(QPalette::Link), darkPalette().color(QPalette::Link));
    // Light on a dark desktop: TrainDeck's light palette.
    applyTheme(app(), Theme::Light);
    QCOMPARE(QApplication::palette().color(QPalette::Window), lightPalette().color(QPalette::Window));
    QVERIFY(!isDark(QApplication::palette()));
  }

  void systemKeepsALightPlatformPalette() {
    QPalette desktop(QColor(0xe8, 0xe4, 0xe0), QColor(0xf2, 0xf0, 0xee));
    QApplication::setPalette(desktop);
    applyTheme(app(), Theme::System);
    QCOMPARE(QApplication::palette().color(QPalette::Window), QColor(0xf2, 0xf0, 0xee));
    applyTheme(app(), Theme::Dark);
    QVERIFY(isDark(QApplication::palette()));
    // Back to System: TrainDeck's dark palette is dropped, the desktop's light one is back.
    applyTheme(app(), Theme::System);
    QVERIFY(!isDark(QApplication::palette()));
  }

  void systemFollowsADesktopSwitchingToDark() {
    QApplication::setPalette(QPalette(QColor(0xe0, 0xe0, 0xe0), QColor(0xf0, 0xf0, 0xf0)));
    applyTheme(app(), Theme::System);
    QVERIFY(!isDark(QApplication::palette()));
    // The desktop turns dark (as a platform theme would, through the application palette).
    QApplication::setPalette(QPalette(QColor(0x30, 0x30, 0x30), QColor(0x22, 0x22, 0x22)));
    QTRY_COMPARE(QApplication::palette().color(QPalette::Window), darkPalette().color(QPalette::Window));
    // With Light forced, the same switch is not followed.
    applyTheme(app(), Theme::Light);
    const QColor light_window = QApplication::palette().color(QPalette::Window);
    QApplication::setPalette(QPalette(QColor(0x30, 0x30, 0x30), QColor(0x22, 0x22, 0x22)));
    QCoreApplication::processEvents();
    QCOMPARE(QApplication::palette().color(QPalette::Window), QColor(0x22, 0x22, 0x22));
    QVERIFY(light_window != QColor(0x22, 0x22, 0x22));
  }

  void seriesColoursReadOnBothAndDiffer() {
    const QList<QColor> colours = seriesColors();
    QCOMPARE(colours.size(), 8);
    QCOMPARE(seriesColor(0), colours[0]);
    QCOMPARE(seriesColor(9), colours[1]);
    QCOMPARE(seriesColor(-1), colours[7]);
    const QColor white(Qt::white), dark_base = darkPalette().color(QPalette::Base);
    for (const QColor& c : colours) {
      QVERIFY2(contrast(c, white) >= 3.0, qPrintable(c.name()));
      QVERIFY2(contrast(c, dark_base) >= 3.0, qPrintable(c.name()));
    }
    for (int i = 0; i < colours.size(); ++i)
      for (int j = i + 1; j < colours.size(); ++j)
        QVERIFY2(deltaE(colours[i], colours[j]) >= 20.0,
                 qPrintable(colours[i].name() + " vs " + colours[j].name()));
  }
};

QTEST_MAIN(TestLookTheme)
#include "test_look_theme.moc"
