#include "gui/look/icons.h"

#include <QDebug>
#include <QFile>

// Q_INIT_RESOURCE must be used outside any namespace: it declares the resource's init function.
static void td_init_look_qrc() { Q_INIT_RESOURCE(look); }

namespace td::gui {

void initLookResources() {
  static const bool done = [] {
    td_init_look_qrc();
    return true;
  }();
  (void)done;
}

QStringList iconNames() {
  return {QStringLiteral("traindeck"),  QStringLiteral("new-store"), QStringLiteral("open-store"),
          QStringLiteral("experiment"), QStringLiteral("run"),       QStringLiteral("start"),
          QStringLiteral("stop"),       QStringLiteral("resume"),    QStringLiteral("compare"),
          QStringLiteral("data"),       QStringLiteral("designer"),  QStringLiteral("export"),
          QStringLiteral("settings"),   QStringLiteral("about"),     QStringLiteral("delete"),
          QStringLiteral("search"),     QStringLiteral("rename"),    QStringLiteral("notes"),
          QStringLiteral("import"),     QStringLiteral("refresh"),   QStringLiteral("remote"),
          QStringLiteral("log")};
}

QIcon icon(const QString& name) {
  initLookResources();
  const QString path = QStringLiteral(":/icons/%1.svg").arg(name);
  if (!QFile::exists(path)) {
    qWarning("td::gui::icon: no icon named \"%s\" (%s)", qPrintable(name), qPrintable(path));
    return QIcon();
  }
  return QIcon(path);
}

QIcon appIcon() { return icon(QStringLiteral("traindeck")); }

}  // namespace td::gui
