// The user-interface language: TrainDeck's own translations (translations/traindeck_<lang>.ts,
// compiled by lrelease at build time and embedded as ":/i18n/traindeck_<lang>.qm") plus Qt's
// own (qtbase_<lang>.qm for standard dialogs and buttons, from Qt's translations folder when
// installed: Debian's qt6-translations-l10n). English is the source language: no translator.
//
// Every page switches at once, without a restart: installTranslation() first re-sets every text
// a widget or action shows that came straight from a tr() call (labels, buttons, group boxes,
// tabs, combo box items, tool tips, placeholders; found through the one translator TrainDeck
// installs, which remembers each text's context and source), then sends QEvent::LanguageChange,
// on which a widget re-builds the texts it made with arguments ("Run %1 · %2") in changeEvent().
// Item models' texts (headers, cells) are asked for when painted and follow by themselves.
//
// Threading rule: GUI thread. The app calls installTranslation() before its windows exist
// (texts created before the first call are not known to it and stay in English).
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

/// Qt's translations folder, where qtbase_<lang>.qm is looked for:
/// QLibraryInfo::path(QLibraryInfo::TranslationsPath) (/usr/share/qt6/translations on Debian).
QString qtTranslationsPath();
/// True when Qt's own translation is active for the current language (its standard buttons,
/// e.g. QPlatformTheme's "Cancel", are translated): false for English and when
/// qt6-translations-l10n is not installed.
bool qtTranslationLoaded();

/// Language codes the UI can be shown in: "en" first, then each embedded traindeck_<lang>.qm
/// (e.g. {"en", "de"}).
QStringList availableLanguages();

/// The language's own name for a settings list: "English", "Deutsch".
QString languageDisplayName(const QString& language);

/// The language installTranslation() last made active ("en" before any call or when the last
/// call found no translation).
QString currentLanguage();

}  // namespace td::gui
