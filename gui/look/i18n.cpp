#include "gui/look/i18n.h"

#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QGroupBox>
#include <QHash>
#include <QLabel>
#include <QLibraryInfo>
#include <QLocale>
#include <QMenu>
#include <QMutex>
#include <QSet>
#include <QTabBar>
#include <QToolBox>
#include <QTranslator>
#include <QWidget>

#include "gui/look/icons.h"

namespace td::gui {

namespace {

// Where a text shown now came from: the tr() call that returned it.
struct Origin {
  QByteArray context, source, disambiguation;
  bool operator==(const Origin& o) const {
    return context == o.context && source == o.source && disambiguation == o.disambiguation;
  }
};

// The one translator installed on the application: it asks TrainDeck's and Qt's translators
// (in that order) and remembers, for every text it hands out (or lets fall back to the
// English source), which context and source it came from, so that retranslateWidgets() can
// find what a label shows now and ask for the same string in the new language.
class RecordingTranslator : public QTranslator {
 public:
  using QTranslator::QTranslator;
  ~RecordingTranslator() override { qDeleteAll(inner_); }

  void setInner(QList<QTranslator*> inner) {
    qDeleteAll(inner_);
    inner_ = std::move(inner);
  }

  QString translate(const char* context, const char* source, const char* disambiguation, int n) const override {
    QString out;
    for (QTranslator* t : inner_) {
      out = t->translate(context, source, disambiguation, n);
      if (!out.isNull()) break;
    }
    // %n texts are completed after the lookup (QCoreApplication::translate): not recordable.
    if (n < 0 && context && source && *source) {
      const QString shown = out.isNull() ? QString::fromUtf8(source) : out;
      const Origin o{context, source, disambiguation};
      QMutexLocker lock(&mutex_);
      QList<Origin>& origins = origins_[shown];
      if (!origins.contains(o)) origins.append(o);
    }
    return out;
  }
  bool isEmpty() const override { return false; }

  QList<Origin> originsOf(const QString& shown) const {
    QMutexLocker lock(&mutex_);
    return origins_.value(shown);
  }

 private:
  QList<QTranslator*> inner_;
  mutable QMutex mutex_;
  mutable QHash<QString, QList<Origin>> origins_;
};

RecordingTranslator* g_recorder = nullptr;  // owned by qApp
QString g_language = QStringLiteral("en");

// The class names a widget's tr() calls may have used, nearest first: its own classes, then its
// parents' (a panel creates its labels; their context is the panel's class).
QList<QByteArray> contextsOf(const QObject* o) {
  QList<QByteArray> out;
  for (; o; o = o->parent())
    for (const QMetaObject* m = o->metaObject(); m; m = m->superClass()) out << QByteArray(m->className());
  return out;
}

// `shown` in the language installed now, or a null QString when `shown` is not a text tr()
// returned (data, or a text built with arguments) or when its origin is ambiguous. An origin
// in one of `contexts` (the widget's classes and its parents') wins; with `any_context`, one
// elsewhere too, when all such origins say the same in the new language.
QString retranslated(const QString& shown, const QList<QByteArray>& contexts, bool any_context = true) {
  if (shown.isEmpty() || !g_recorder) return {};
  const QList<Origin> origins = g_recorder->originsOf(shown);
  if (origins.isEmpty()) return {};
  auto again = [](const Origin& o) {
    return QCoreApplication::translate(o.context.constData(), o.source.constData(),
                                       o.disambiguation.isEmpty() ? nullptr : o.disambiguation.constData());
  };
  for (const QByteArray& c : contexts)
    for (const Origin& o : origins)
      if (o.context == c) return again(o);
  if (!any_context) return {};
  // None of the widget's contexts: fine when every origin says the same in the new language.
  const QString first = again(origins.front());
  for (const Origin& o : origins)
    if (again(o) != first) return {};
  return first;
}

void retranslateProperty(QObject* o, const char* property, const QList<QByteArray>& contexts) {
  if (o->metaObject()->indexOfProperty(property) < 0) return;
  const QString now = o->property(property).toString();
  const QString next = retranslated(now, contexts);
  if (!next.isNull() && next != now) o->setProperty(property, next);
}

// Every text tr() gave a widget or an action, read back and asked for again in the language
// installed now. Texts with arguments filled in are left to the widget's own changeEvent().
void retranslateWidgets() {
  QSet<QAction*> actions;
  for (QWidget* w : QApplication::allWidgets()) {
    const QList<QByteArray> contexts = contextsOf(w);
    for (const char* p : {"toolTip", "statusTip", "whatsThis", "placeholderText", "prefix", "suffix",
                          "specialValueText", "accessibleName", "accessibleDescription"})
      retranslateProperty(w, p, contexts);
    if (w->isWindow()) retranslateProperty(w, "windowTitle", contexts);
    // "text" is the user's input in editors: only labels' and buttons' are ours.
    if (qobject_cast<QLabel*>(w) || qobject_cast<QAbstractButton*>(w)) retranslateProperty(w, "text", contexts);
    if (qobject_cast<QGroupBox*>(w) || qobject_cast<QMenu*>(w)) retranslateProperty(w, "title", contexts);
    if (auto* tabs = qobject_cast<QTabBar*>(w)) {
      for (int i = 0; i < tabs->count(); ++i) {
        const QString text = retranslated(tabs->tabText(i), contexts);
        if (!text.isNull()) tabs->setTabText(i, text);
        const QString tip = retranslated(tabs->tabToolTip(i), contexts);
        if (!tip.isNull()) tabs->setTabToolTip(i, tip);
      }
    }
    if (auto* box = qobject_cast<QToolBox*>(w)) {
      for (int i = 0; i < box->count(); ++i) {
        const QString text = retranslated(box->itemText(i), contexts);
        if (!text.isNull()) box->setItemText(i, text);
      }
    }
    // A combo box's items (an editable one's are the user's), only those its own panel's tr()
    // gave: an item that merely equals some other class's text may be a value (a config's).
    if (auto* combo = qobject_cast<QComboBox*>(w); combo && !combo->isEditable()) {
      for (int i = 0; i < combo->count(); ++i) {
        const QString text = retranslated(combo->itemText(i), contexts, /*any_context=*/false);
        if (!text.isNull()) combo->setItemText(i, text);
        const QString tip = retranslated(combo->itemData(i, Qt::ToolTipRole).toString(), contexts);
        if (!tip.isNull()) combo->setItemData(i, tip, Qt::ToolTipRole);
      }
    }
    for (QAction* a : w->actions()) actions.insert(a);
  }
  for (QAction* a : std::as_const(actions)) {
    const QList<QByteArray> contexts = contextsOf(a);
    retranslateProperty(a, "text", contexts);
    retranslateProperty(a, "statusTip", contexts);
    retranslateProperty(a, "toolTip", contexts);
  }
}

}  // namespace

QString qtTranslationsPath() { return QLibraryInfo::path(QLibraryInfo::TranslationsPath); }

namespace {

// "de_DE" -> "de": TrainDeck's translations are per language, not per country.
QString languageOf(const QString& code) { return QLocale(code).name().section('_', 0, 0); }

}  // namespace

bool installTranslation(QApplication& app, const QString& language) {
  initLookResources();
  if (!g_recorder) {
    g_recorder = new RecordingTranslator(&app);
    app.installTranslator(g_recorder);
  }

  // The candidates in order of preference: the one asked for, or the system's UI languages.
  QStringList wanted;
  if (!language.trimmed().isEmpty())
    wanted << languageOf(language.trimmed());
  else
    for (const QString& ui : QLocale::system().uiLanguages()) wanted << languageOf(ui);
  wanted.removeDuplicates();

  QList<QTranslator*> inner;
  QString found = QStringLiteral("en");
  for (const QString& lang : wanted) {
    if (lang == QLatin1String("en") || lang == QLatin1String("C")) break;
    auto* ours = new QTranslator;
    if (!ours->load(QStringLiteral(":/i18n/traindeck_%1.qm").arg(lang))) {
      delete ours;
      continue;
    }
    inner << ours;
    found = lang;
    // Qt's own: the buttons and texts of QMessageBox, QFileDialog, QDialogButtonBox, ...
    auto* qt = new QTranslator;
    if (qt->load(QStringLiteral("qtbase_%1").arg(lang), qtTranslationsPath()))
      inner << qt;
    else
      delete qt;
    break;
  }
  // Swapped while the recorder is not installed: QCoreApplication::translate() (any thread)
  // asks the installed translators under the application's translator lock, which removing
  // and installing take, so no other thread is inside the old ones when they are deleted.
  app.removeTranslator(g_recorder);
  g_recorder->setInner(inner);
  g_language = found;
  // Installing posts LanguageChange to every window (for the texts widgets build with
  // arguments, in their changeEvent()); the texts tr() gave them are re-set here, now.
  app.installTranslator(g_recorder);
  retranslateWidgets();
  return found != QLatin1String("en");
}

bool qtTranslationLoaded() {
  // Qt's own translation of a button every standard dialog has. The context is not a literal,
  // so lupdate leaves this Qt string out of traindeck_<lang>.ts: a translation there would
  // answer for Qt's (the recorder asks ours first) and say qtbase_<lang>.qm is loaded when not.
  static const char* const kQtContext = "QPlatformTheme";
  return QCoreApplication::translate(kQtContext, "Cancel") != QLatin1String("Cancel");
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
