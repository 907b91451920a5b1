// SlurmSubmitDialog (slurm_submit_dialog.h).
#include "gui/cluster/slurm_submit_dialog.h"

#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "gui/cluster/slurm_settings.h"
#include "remote/slurm.h"

namespace td::gui {

namespace {
QString q(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

SlurmSubmitDialog::SlurmSubmitDialog(const td::remote::ClusterSpec& cluster, QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("slurm_submit_dialog"));
  setWindowTitle(tr("Submit to %1").arg(q(cluster.name)));
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("slurm_submit_summary"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  script_ = new QPlainTextEdit(this);
  script_->setObjectName(QStringLiteral("slurm_submit_script"));
  script_->setReadOnly(true);
  script_->setLineWrapMode(QPlainTextEdit::NoWrap);
  script_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  script_->setMinimumSize(640, 360);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
  submit_ = buttons->addButton(tr("Submit job"), QDialogButtonBox::AcceptRole);
  submit_->setObjectName(QStringLiteral("slurm_submit_button"));
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(summary_);
  layout->addWidget(script_, 1);
  layout->addWidget(buttons);

  QString error;
  const QString script = cluster.is_slurm() ? SlurmSettings::previewScript(cluster.slurm, &error)
                                            : tr("%1 is not a Slurm cluster.").arg(q(cluster.name));
  if (!cluster.is_slurm() || script.isEmpty()) {
    summary_->setText(tr("This run cannot be submitted: %1").arg(script.isEmpty() ? error : script));
    script_->clear();
    submit_->setEnabled(false);
    return;
  }
  const td::remote::SlurmSpec& s = cluster.slurm;
  const QString login = cluster.nodes.empty() ? tr("(no login node)") : q(cluster.nodes.front().display_name());
  const int world = td::remote::slurm_world_size(s);
  QString where = tr("Cluster %1 through the login node %2 · partition %3 · %n node(s)", nullptr, s.nodes)
                      .arg(q(cluster.name), login, s.partition.empty() ? tr("(default)") : q(s.partition));
  where += QStringLiteral(" · ") + tr("%n rank(s)", nullptr, world);
  where += QStringLiteral(" · ") + (s.time_limit.empty() ? tr("the partition's time limit")
                                                         : tr("time limit %1").arg(q(s.time_limit)));
  if (s.requeue) where += QStringLiteral(" · ") + tr("continues in a new job after a time limit");
  summary_->setText(where + QStringLiteral("\n") +
                    tr("The batch script below is submitted with sbatch once the engine, the dataset and the config "
                       "are in %1 (the run id and the engine's folder, shown as %2 and <bundle>, are filled in then). "
                       "It is kept in the run folder.")
                        .arg(q(s.work_dir), SlurmSettings::previewRunId()));
  script_->setPlainText(script);
}

bool SlurmSubmitDialog::confirm(const td::remote::ClusterSpec& cluster, QWidget* parent) {
  SlurmSubmitDialog d(cluster, parent);
  return d.exec() == QDialog::Accepted;
}

}  // namespace td::gui
