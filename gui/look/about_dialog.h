// Help > About TrainDeck: the app icon, the version, the versions of the libraries the GUI is
// built on (Qt at run time and at build time, QCustomPlot, SQLite), the licence and a link to
// the documentation, with a button that copies the versions as plain text (for bug reports).
//
// Threading rule: GUI thread.
#pragma once

#include <QDialog>
#include <QString>

class QLabel;
class QPushButton;

namespace td::gui {

/// The same information as the About box, as plain text, one item a line:
///   TrainDeck 0.1.0
///   Qt 6.4.2 (built with 6.4.2)
///   QCustomPlot 2.1.0
///   SQLite 3.40.1
///   <platform: QSysInfo::prettyProductName(), CPU architecture>
QString versionsText();

class AboutDialog : public QDialog {
  Q_OBJECT

 public:
  explicit AboutDialog(QWidget* parent = nullptr);

  /// The versions as shown (versionsText()).
  QString versions() const { return versions_; }

 signals:
  /// Emitted after "Copy versions" put versionsText() on the clipboard.
  void versionsCopied();

 private:
  void copyVersions();

  QString versions_;
  QPushButton* copy_button_ = nullptr;
};

/// Shows the About box, modal to `parent` (which may be null), and returns when it is closed.
void showAbout(QWidget* parent);

}  // namespace td::gui
