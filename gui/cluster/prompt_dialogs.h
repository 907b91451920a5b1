// The dialogs NodeAccess asks through in the application: HostKeyDialog (an unknown host's key
// type and SHA256 fingerprint: accept or cancel) and SecretDialog (a password or key passphrase,
// with "Remember in the system keyring" when a keyring is available), and WidgetPrompter, the
// Prompter that shows them.
//
// Threading rule: GUI thread only. WidgetPrompter's methods are called by NodeAccess on the GUI
// thread and show the dialog modally (QDialog::exec: the event loop keeps running; the worker
// that asked waits for the answer).
#pragma once

#include <QDialog>
#include <QPointer>

#include "gui/cluster/node_access.h"

class QCheckBox;
class QLineEdit;

namespace td::gui {

class HostKeyDialog : public QDialog {
  Q_OBJECT
 public:
  HostKeyDialog(const td::remote::HostKeyInfo& info, const QString& where, QWidget* parent = nullptr);
};

class SecretDialog : public QDialog {
  Q_OBJECT
 public:
  explicit SecretDialog(const SecretRequest& request, QWidget* parent = nullptr);
  QString secret() const;
  bool remember() const;

 private:
  QLineEdit* edit_ = nullptr;
  QCheckBox* remember_ = nullptr;
};

class WidgetPrompter : public Prompter {
 public:
  /// Dialogs are shown over `parent` (may be nullptr).
  explicit WidgetPrompter(QWidget* parent = nullptr) : parent_(parent) {}
  std::optional<SecretAnswer> askSecret(const SecretRequest& request) override;
  bool acceptHostKey(const td::remote::HostKeyInfo& info, const QString& where) override;

 private:
  QPointer<QWidget> parent_;
};

}  // namespace td::gui
