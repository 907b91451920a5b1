// The user-interface language: TrainDeck's own translations (translations/traindeck_<lang>.ts,
// compiled by lrelease at build time and embedded as ":/i18n/traindeck_<lang>.qm") plus Qt's
// own (qtbase_<lang>.qm for standard dialogs and buttons, from Qt's translations folder when
// installed: Debian's qt6-translations-l10n). English is the source language: no translator.
//
// Threading rule: GUI thread. Installing a translator sends QEvent::LanguageChange to every
// widget; a widget that should switch live re-sets its texts in changeEvent(), the others show
// the new language when next created (the app applies the saved language before its windows).
#pragma once

#include <QString>
#include <QStringList>

class QApplication;

namespace td::gui {

/// Switches the application to `language`: a code such as "de", "de_DE" or "en"; "" follows the
/// system locale (QLocale::system().uiLanguages()). Removes the translators a previous call
/// installed, then loads ":/i18n/traindeck_<lang>.qm" and, when present, Qt's
/// qtbase_<lang>.qm from QLibraryInfo::path(QLibraryInfo::TranslationsPath).
/// Returns true when a TrainDeck translation was loaded; false for English (the source
/// strings; nothing to load) and for a language TrainDeck has no translation for (the UI is
/// then English). Does not change QLocale::setDefault (numbers keep their formatting).
bool installTranslation(QApplication& app, const QString& language);

/// Language codes the UI can be shown in: "en" first, then each embedded traindeck_<lang>.qm
/// (e.g. {"en", "de"}).
QStringList availableLanguages();

/// The language's own name for a settings list: "English", "Deutsch".
QString languageDisplayName(const QString& language);

/// The language installTranslation() last made active ("en" before any call or when the last
/// call found no translation).
QString currentLanguage();

}  // namespace td::gui
