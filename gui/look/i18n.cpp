#include "gui/look/i18n.h"

#include <QApplication>
#include <QDir>
#include <QLibraryInfo>
#include <QLocale>
#include <QTranslator>

#include "gui/look/icons.h"

namespace td::gui {

namespace {

QTranslator* g_traindeck = nullptr;  // owned by qApp while installed
QTranslator* g_qt = nullptr;
QString g_language = QStringLiteral("en");

void removeTranslators(QApplication& app) {
  for (QTranslator** t : {&g_traindeck, &g_qt}) {
    if (*t) {
      app.removeTranslator(*t);
      delete *t;
      *t = nullptr;
    }
  }
}

// "de_DE" -> "de": TrainDeck's translations are per language, not per country.
QString languageOf(const QString& code) { return QLocale(code).name().section('_', 0, 0); }

}  // namespace

bool installTranslation(QApplication& app, const QString& language) {
  initLookResources();
  removeTranslators(app);
  g_language = QStringLiteral("en");

  // The candidates in order of preference: the one asked for, or the system's UI languages.
  QStringList wanted;
  if (!language.trimmed().isEmpty())
    wanted << languageOf(language.trimmed());
  else
    for (const QString& ui : QLocale::system().uiLanguages()) wanted << languageOf(ui);
  wanted.removeDuplicates();

  for (const QString& lang : wanted) {
    if (lang == QLatin1String("en") || lang == QLatin1String("C")) return false;
    auto* ours = new QTranslator(&app);
    if (!ours->load(QStringLiteral(":/i18n/traindeck_%1.qm").arg(lang))) {
      delete ours;
      continue;
    }
    app.installTranslator(ours);
    g_traindeck = ours;
    g_language = lang;
    auto* qt = new QTranslator(&app);
    if (qt->load(QStringLiteral("qtbase_%1").arg(lang),
                 QLibraryInfo::path(QLibraryInfo::TranslationsPath))) {
      app.installTranslator(qt);
      g_qt = qt;
    } else {
      delete qt;
    }
    return true;
  }
  return false;
}

QStringList availableLanguages() {
  initLookResources();
  QStringList out{QStringLiteral("en")};
  const QStringList files =
      QDir(QStringLiteral(":/i18n")).entryList({QStringLiteral("traindeck_*.qm")}, QDir::Files,
                                                QDir::Name);
  for (const QString& f : files) {
    const QString lang = f.mid(int(qstrlen("traindeck_"))).chopped(3);
    if (!out.contains(lang)) out << lang;
  }
  return out;
}

QString languageDisplayName(const QString& language) {
  const QLocale locale(language);
  QString name = locale.nativeLanguageName();
  if (name.isEmpty()) return language;
  // QLocale gives "American English" for "en"; the list shows the language, capitalised.
  if (locale.language() == QLocale::English) name = QStringLiteral("English");
  name[0] = name[0].toUpper();
  return name;
}

QString currentLanguage() { return g_language; }

}  // namespace td::gui
