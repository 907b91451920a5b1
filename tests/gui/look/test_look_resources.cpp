// Resources compiled into the static td_gui_look: every SVG icon renders (Qt SVG's icon
// engine), the German translation switches on and off, and the About box's versions.
#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLibraryInfo>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

#include "gui/look/about_dialog.h"
#include "gui/look/i18n.h"
#include "gui/look/icons.h"

using namespace td::gui;

namespace {

QApplication& app() { return *qobject_cast<QApplication*>(QCoreApplication::instance()); }

struct PixelCount { int visible = 0; int total = 0; QColor typical; };

// Pixels with alpha > 0, and the colour of a fully opaque one (the stroke colour).
PixelCount count(const QImage& image) {
  PixelCount c;
  const QImage img = image.convertToFormat(QImage::Format_ARGB32);
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x) {
      ++c.total;
      const QColor px = img.pixelColor(x, y);
      if (px.alpha() > 0) ++c.visible;
      if (px.alpha() == 255) c.typical = px;
    }
  return c;
}

}  // namespace

class TestLookResources : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initLookResources(); }

  void everyIconIsInTheResourcesAndRenders() {
    const QStringList names = iconNames();
    QCOMPARE(names.size(), 22);
    for (const QString& name : names) {
      QVERIFY2(QFile::exists(":/icons/" + name + ".svg"), qPrintable(name));
      const QIcon i = icon(name);
      QVERIFY2(!i.isNull(), qPrintable(name));
      const QPixmap pm = i.pixmap(48, 48);
      QVERIFY2(!pm.isNull(), qPrintable(name));
      QCOMPARE(pm.size(), QSize(48, 48));
      const PixelCount c = count(pm.toImage());
      // A line icon covers a few percent of its square and leaves most of it transparent.
      QVERIFY2(c.visible > c.total / 50, qPrintable(name + ": " + QString::number(c.visible)));
      if (name != QLatin1String("traindeck")) {
        QVERIFY2(c.visible < c.total * 3 / 4, qPrintable(name + ": " + QString::number(c.visible)));
        // Strokes are the neutral grey #8a8a8a.
        QCOMPARE(c.typical, QColor(0x8a, 0x8a, 0x8a));
      }
    }
    // The app icon is a filled square: nearly every pixel is painted.
    const PixelCount app_icon = count(appIcon().pixmap(64, 64).toImage());
    QVERIFY(app_icon.visible > app_icon.total * 3 / 4);
  }

  void unknownIconIsNull() {
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression("no icon named \"no-such-icon\""));
    QVERIFY(icon("no-such-icon").isNull());
  }

  void germanIsAvailable() {
    QCOMPARE(availableLanguages(), (QStringList{"en", "de"}));
    QVERIFY(QFile::exists(":/i18n/traindeck_de.qm"));
    QCOMPARE(languageDisplayName("de"), QStringLiteral("Deutsch"));
    QCOMPARE(languageDisplayName("en"), QStringLiteral("English"));
  }

  void switchToGermanAndBack() {
    const char* context = "td::gui::AboutDialog";
    QCOMPARE(QCoreApplication::translate(context, "About TrainDeck"), QStringLiteral("About TrainDeck"));

    QVERIFY(installTranslation(app(), "de"));
    QCOMPARE(currentLanguage(), QStringLiteral("de"));
    QCOMPARE(QCoreApplication::translate(context, "About TrainDeck"), QStringLiteral("Über TrainDeck"));
    QCOMPARE(QCoreApplication::translate(context, "&Copy versions"), QStringLiteral("Versionen &kopieren"));
    // The main window's menus (gui/app), from translations/traindeck_de.ts.
    QCOMPARE(QCoreApplication::translate("td::gui::MainWindow", "&File"), QStringLiteral("&Datei"));
    {
      AboutDialog dialog;
      QCOMPARE(dialog.windowTitle(), QStringLiteral("Über TrainDeck"));
      auto* copy = dialog.findChild<QPushButton*>("copyVersions");
      QVERIFY(copy);
      QCOMPARE(copy->text(), QStringLiteral("Versionen &kopieren"));
    }
    // Qt's own strings follow when Debian's qt6-translations-l10n is installed.
    if (QFile::exists(QLibraryInfo::path(QLibraryInfo::TranslationsPath) + "/qtbase_de.qm"))
      QCOMPARE(QCoreApplication::translate("QPlatformTheme", "Cancel"), QStringLiteral("Abbrechen"));

    // "de_DE" is German too.
    QVERIFY(installTranslation(app(), "de_DE"));
    QCOMPARE(QCoreApplication::translate(context, "About TrainDeck"), QStringLiteral("Über TrainDeck"));

    QVERIFY(!installTranslation(app(), "en"));  // English: the source strings, no translator
    QCOMPARE(currentLanguage(), QStringLiteral("en"));
    QCOMPARE(QCoreApplication::translate(context, "About TrainDeck"), QStringLiteral("About TrainDeck"));
    QCOMPARE(QCoreApplication::translate("QPlatformTheme", "Cancel"), QStringLiteral("Cancel"));
    QCOMPARE(QCoreApplication::translate("td::gui::MainWindow", "&File"), QStringLiteral("&File"));
    AboutDialog dialog;
    QCOMPARE(dialog.windowTitle(), QStringLiteral("About TrainDeck"));

    // A language without a TrainDeck translation leaves English.
    QVERIFY(installTranslation(app(), "de"));
    QVERIFY(!installTranslation(app(), "ja"));
    QCOMPARE(QCoreApplication::translate(context, "About TrainDeck"), QStringLiteral("About TrainDeck"));
  }

  void versionsText_() {
    const QString text = versionsText();
    QVERIFY2(text.startsWith(QStringLiteral("TrainDeck " TD_VERSION "\n")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("Qt %1 (built with %2)").arg(qVersion(), QT_VERSION_STR)),
             qPrintable(text));
    QVERIFY2(text.contains(QRegularExpression("\nQCustomPlot 2\\.\\d+\\.\\d+\n")), qPrintable(text));
    QVERIFY2(text.contains(QRegularExpression("\nSQLite 3\\.\\d+\\.\\d+\n")), qPrintable(text));
  }

  void copyVersionsPutsThemOnTheClipboard() {
    AboutDialog dialog;
    QCOMPARE(dialog.versions(), versionsText());
    QSignalSpy copied(&dialog, &AboutDialog::versionsCopied);
    auto* copy = dialog.findChild<QPushButton*>("copyVersions");
    QVERIFY(copy);
    QTest::mouseClick(copy, Qt::LeftButton);
    QCOMPARE(copied.count(), 1);
    QCOMPARE(QApplication::clipboard()->text(), versionsText());
  }
};

QTEST_MAIN(TestLookResources)
#include "test_look_resources.moc"
