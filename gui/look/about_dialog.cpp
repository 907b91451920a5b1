#include "gui/look/about_dialog.h"

#include <sqlite3.h>

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QUrl>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSysInfo>
#include <QVBoxLayout>
#include <QtGlobal>

#include "gui/look/icons.h"

#ifndef TD_VERSION
#error "TD_VERSION comes from td_common (the project version)"
#endif
#ifndef TD_SOURCE_DOCS_DIR
#define TD_SOURCE_DOCS_DIR ""
#endif
#ifndef TD_QCUSTOMPLOT_VERSION
#define TD_QCUSTOMPLOT_VERSION "unknown"
#endif

namespace td::gui {

namespace {

// The documentation folder: installed beside the binary (<prefix>/share/doc/traindeck), else
// the source tree's docs/ (a build tree binary), else "" (the link is then left out).
QString docsFolder() {
  const QString app_dir = QCoreApplication::applicationDirPath();
  for (const QString& dir : {app_dir + QStringLiteral("/../share/doc/traindeck"),
                             QStringLiteral(TD_SOURCE_DOCS_DIR)}) {
    if (QFileInfo(dir + QStringLiteral("/config.md")).exists())
      return QFileInfo(dir).canonicalFilePath();
  }
  return QString();
}

QString qtLine() {
  return QStringLiteral("Qt %1 (built with %2)").arg(QString::fromLatin1(qVersion()),
                                                     QStringLiteral(QT_VERSION_STR));
}

}  // namespace

QString versionsText() {
  QStringList lines;
  lines << QStringLiteral("TrainDeck %1").arg(QStringLiteral(TD_VERSION));
  lines << qtLine();
  lines << QStringLiteral("QCustomPlot %1").arg(QStringLiteral(TD_QCUSTOMPLOT_VERSION));
  lines << QStringLiteral("SQLite %1").arg(QString::fromLatin1(sqlite3_libversion()));
  lines << QStringLiteral("%1, %2").arg(QSysInfo::prettyProductName(),
                                        QSysInfo::currentCpuArchitecture());
  return lines.join('\n') + '\n';
}

AboutDialog::AboutDialog(QWidget* parent) : QDialog(parent), versions_(versionsText()) {
  setWindowTitle(tr("About TrainDeck"));
  setWindowIcon(appIcon());

  auto* logo = new QLabel(this);
  logo->setPixmap(appIcon().pixmap(64, 64));
  logo->setAlignment(Qt::AlignTop | Qt::AlignHCenter);

  auto* title = new QLabel(QStringLiteral("<h2>TrainDeck %1</h2>").arg(QStringLiteral(TD_VERSION)),
                           this);
  auto* tagline = new QLabel(tr("A desktop workbench for training your own language models."), this);
  tagline->setWordWrap(true);

  auto* details = new QLabel(this);
  details->setTextFormat(Qt::RichText);
  details->setTextInteractionFlags(Qt::TextBrowserInteraction);
  details->setOpenExternalLinks(true);
  const QString docs = docsFolder();
  const QString docs_link =
      docs.isEmpty() ? QString()
                     : QStringLiteral("<p><a href='%1'>%2</a></p>")
                           .arg(QUrl::fromLocalFile(docs).toString(), tr("Documentation"));
  details->setText(
      QStringLiteral("<table cellspacing='2'>"
                     "<tr><td>%1</td><td>%2</td></tr>"
                     "<tr><td>%3</td><td>%4</td></tr>"
                     "<tr><td>%5</td><td>%6</td></tr>"
                     "<tr><td>%7</td><td>%8</td></tr>"
                     "</table><p>%9</p>%10")
          .arg(tr("Qt:"), tr("%1 (built with %2)").arg(QString::fromLatin1(qVersion()),
                                                       QStringLiteral(QT_VERSION_STR)),
               tr("QCustomPlot:"), QStringLiteral(TD_QCUSTOMPLOT_VERSION), tr("SQLite:"),
               QString::fromLatin1(sqlite3_libversion()), tr("System:"),
               QStringLiteral("%1, %2").arg(QSysInfo::prettyProductName(),
                                            QSysInfo::currentCpuArchitecture()),
               tr("TrainDeck is free software, licensed under the GNU General Public License "
                  "version 3 or later (it links QCustomPlot, GPLv3; Qt is used under the LGPLv3)."),
               docs_link));
  details->setWordWrap(true);

  auto* text = new QVBoxLayout;
  text->addWidget(title);
  text->addWidget(tagline);
  text->addWidget(details);
  text->addStretch(1);

  auto* top = new QHBoxLayout;
  top->addWidget(logo, 0, Qt::AlignTop);
  top->addSpacing(12);
  top->addLayout(text, 1);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  copy_button_ = buttons->addButton(tr("&Copy versions"), QDialogButtonBox::ActionRole);
  copy_button_->setObjectName(QStringLiteral("copyVersions"));
  connect(copy_button_, &QPushButton::clicked, this, &AboutDialog::copyVersions);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(buttons);
  setMinimumWidth(440);
}

void AboutDialog::copyVersions() {
  QApplication::clipboard()->setText(versions_);
  emit versionsCopied();
}

void showAbout(QWidget* parent) {
  AboutDialog dialog(parent);
  dialog.exec();
}

}  // namespace td::gui
