// HostKeyDialog, SecretDialog, WidgetPrompter (prompt_dialogs.h).
#include "gui/cluster/prompt_dialogs.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>

namespace td::gui {

HostKeyDialog::HostKeyDialog(const td::remote::HostKeyInfo& info, const QString& where, QWidget* parent)
    : QDialog(parent) {
  setObjectName(QStringLiteral("hostKeyDialog"));
  setWindowTitle(tr("Unknown host key"));
  auto* top = new QVBoxLayout(this);
  auto* intro = new QLabel(tr("TrainDeck has not connected to <b>%1</b> before: its host key is not in %2.<br>"
                              "Compare the fingerprint below with the node's <tt>ssh-keygen -lf "
                              "/etc/ssh/ssh_host_*_key.pub</tt> before you accept it.")
                               .arg(where.toHtmlEscaped(), QString::fromStdString(info.known_hosts).toHtmlEscaped()),
                           this);
  intro->setWordWrap(true);
  top->addWidget(intro);
  auto* form = new QFormLayout;
  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  auto* type = new QLabel(QString::fromStdString(info.key_type), this);
  type->setObjectName(QStringLiteral("keyType"));
  auto* fp = new QLabel(QString::fromStdString(info.fingerprint), this);
  fp->setObjectName(QStringLiteral("fingerprint"));
  fp->setFont(mono);
  fp->setTextInteractionFlags(Qt::TextSelectableByMouse);
  form->addRow(tr("Key type:"), type);
  form->addRow(tr("Fingerprint:"), fp);
  form->addRow(tr("Saved as:"), new QLabel(QString::fromStdString(info.host_token), this));
  top->addLayout(form);
  auto* buttons = new QDialogButtonBox(this);
  QPushButton* accept = buttons->addButton(tr("Accept and connect"), QDialogButtonBox::AcceptRole);
  accept->setObjectName(QStringLiteral("acceptHostKeyButton"));
  QPushButton* cancel = buttons->addButton(QDialogButtonBox::Cancel);
  cancel->setDefault(true);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  top->addWidget(buttons);
}

SecretDialog::SecretDialog(const SecretRequest& request, QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("secretDialog"));
  const bool password = request.kind == QStringLiteral("password");
  setWindowTitle(password ? tr("Password") : tr("Key passphrase"));
  auto* top = new QVBoxLayout(this);
  auto* what = new QLabel(password ? tr("Password of %1:").arg(request.where)
                                   : tr("Passphrase of the key %1 (for %2):").arg(request.keyFile, request.where),
                          this);
  what->setWordWrap(true);
  top->addWidget(what);
  if (request.retry) {
    auto* again = new QLabel(password ? tr("The node refused the previous password; type it again.")
                                      : tr("The previous passphrase did not work; type it again."),
                             this);
    again->setObjectName(QStringLiteral("retryLabel"));
    again->setStyleSheet(QStringLiteral("color: #c62828;"));
    top->addWidget(again);
  }
  edit_ = new QLineEdit(this);
  edit_->setObjectName(QStringLiteral("secretEdit"));
  edit_->setEchoMode(QLineEdit::Password);
  top->addWidget(edit_);
  remember_ = new QCheckBox(tr("Remember in the system keyring"), this);
  remember_->setObjectName(QStringLiteral("rememberCheck"));
  remember_->setVisible(request.canRemember);
  top->addWidget(remember_);
  if (!request.canRemember) {
    auto* note = new QLabel(tr("No system keyring is running: you will be asked again next time."), this);
    note->setWordWrap(true);
    top->addWidget(note);
  }
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  top->addWidget(buttons);
}

QString SecretDialog::secret() const { return edit_->text(); }

bool SecretDialog::remember() const { return !remember_->isHidden() && remember_->isChecked(); }

std::optional<SecretAnswer> WidgetPrompter::askSecret(const SecretRequest& request) {
  SecretDialog dialog(request, parent_);
  if (dialog.exec() != QDialog::Accepted) return std::nullopt;
  return SecretAnswer{dialog.secret(), request.canRemember && dialog.remember()};
}

bool WidgetPrompter::acceptHostKey(const td::remote::HostKeyInfo& info, const QString& where) {
  HostKeyDialog dialog(info, where, parent_);
  return dialog.exec() == QDialog::Accepted;
}

}  // namespace td::gui
