// look_screenshots OUT_DIR: the main window's pages in the light and dark themes, English and
// German, as PNG files (main_<theme>_<lang>_<page>.png), for reviewing the look and the
// translation. Offscreen: QT_QPA_PLATFORM=offscreen. A fresh store in a temporary folder.
#include <QApplication>
#include <QDir>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "gui/app/main_window.h"
#include "gui/look/i18n.h"
#include "gui/look/icons.h"
#include "gui/look/theme.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  td::gui::initLookResources();
  const QString out = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral(".");
  QDir().mkpath(out);
  QTemporaryDir tmp;
  for (const char* theme : {"light", "dark"})
    for (const char* lang : {"en", "de"}) {
      td::gui::applyTheme(app, td::gui::themeFromString(theme));
      td::gui::installTranslation(app, lang);
      td::gui::MainWindow w(tmp.path() + "/store.db");
      w.setCloseAction(td::gui::MainWindow::CloseAction::LeaveRunning);
      w.resize(1280, 800);
      w.show();
      QTest::qWait(1500);
      for (int page = 0; page < w.pages()->count(); ++page) {
        w.pages()->setCurrentIndex(page);
        QTest::qWait(300);
        w.grab().save(QStringLiteral("%1/main_%2_%3_%4.png").arg(out, theme, lang).arg(page));
      }
    }
  return 0;
}
