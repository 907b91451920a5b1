// traindeck: the desktop workbench. Usage: traindeck [--store FILE] [--demo-dataset DIR]
//   --store         the SQLite experiment store (default: the last one used, else
//                   $TRAINDECK_DB or ~/.local/share/traindeck/traindeck.db)
//   --demo-dataset  a prepared dataset the demo experiment of a first start trains on
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QMessageBox>
#include <QSettings>
#include <QStandardPaths>

#include <cstdio>

#include "gui/app/main_window.h"
#include "gui/core/crash_note.h"
#include "gui/look/i18n.h"
#include "gui/look/icons.h"
#include "gui/look/theme.h"
#include "store/store.h"

int main(int argc, char** argv) {
  // --help and --version answer without a display (QApplication needs one).
  for (int i = 1; i < argc; ++i) {
    const QByteArray a(argv[i]);
    if (a == "--help" || a == "-h" || a == "--version" || a == "-v") {
      QCoreApplication core(argc, argv);
      QCoreApplication::setApplicationVersion(QStringLiteral(TD_VERSION));
      QCommandLineParser cli;
      cli.setApplicationDescription(QStringLiteral("TrainDeck: design, train and compare your own language models."));
      cli.addHelpOption();
      cli.addVersionOption();
      cli.addOption({QStringLiteral("store"), QStringLiteral("SQLite experiment store to open."), QStringLiteral("file")});
      cli.addOption({QStringLiteral("demo-dataset"),
                     QStringLiteral("Prepared dataset for the demo experiment of a first start."), QStringLiteral("dir")});
      cli.process(core);  // prints and exits
    }
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("TrainDeck"));
  QApplication::setApplicationName(QStringLiteral("traindeck"));
  QApplication::setApplicationVersion(QStringLiteral(TD_VERSION));
  QApplication::setApplicationDisplayName(QStringLiteral("TrainDeck"));

  td::gui::initLookResources();
  QApplication::setWindowIcon(td::gui::appIcon());
  // Theme and language before any window exists (View > Theme / Language change them live).
  QSettings settings;
  td::gui::applyTheme(app, td::gui::themeFromString(settings.value(QStringLiteral("look/theme")).toString()));
  td::gui::installTranslation(app, settings.value(QStringLiteral("look/language")).toString());

  QCommandLineParser cli;
  cli.setApplicationDescription(QStringLiteral("TrainDeck: design, train and compare your own language models."));
  cli.addHelpOption();
  cli.addVersionOption();
  QCommandLineOption store_opt(QStringLiteral("store"), QStringLiteral("SQLite experiment store to open."),
                               QStringLiteral("file"));
  QCommandLineOption demo_opt(QStringLiteral("demo-dataset"),
                              QStringLiteral("Prepared dataset for the demo experiment of a first start."),
                              QStringLiteral("dir"));
  cli.addOption(store_opt);
  cli.addOption(demo_opt);
  cli.process(app);

  QString store = cli.value(store_opt);
  if (store.isEmpty()) store = QSettings().value(QStringLiteral("store/last")).toString();
  if (store.isEmpty()) store = QString::fromStdString(td::store::default_db_path());

  // A crash leaves a note (gui/core/crash_note.h); the one the last crash left is shown now.
  const QString data_dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  QDir().mkpath(data_dir);
  const std::string note_path = QDir(data_dir).filePath(QStringLiteral("last-crash.txt")).toStdString();
  const auto last_crash = td::gui::take_crash_note(note_path);
  td::gui::install_crash_note(note_path);

  td::gui::MainWindow window(store, cli.value(demo_opt));
  window.show();
  if (last_crash) {
    std::fprintf(stderr, "traindeck: the last run of the workbench ended unexpectedly:\n%s", last_crash->c_str());
    auto* box = new QMessageBox(QMessageBox::Warning, QObject::tr("TrainDeck"),
                                QObject::tr("TrainDeck stopped unexpectedly the last time it ran. What it noted:\n\n%1\n"
                                            "Everything the store had saved is kept. The note is in %2.seen.")
                                    .arg(QString::fromStdString(*last_crash), QString::fromStdString(note_path)),
                                QMessageBox::Ok, &window);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
  }
  return app.exec();
}
