// SlurmSettings (slurm_settings.h).
#include "gui/cluster/slurm_settings.h"

#include "gui/cluster/container_settings.h"

#include <QCheckBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QVBoxLayout>

#include <exception>

namespace td::gui {

namespace {

// Lines of a multi-line field: blank ones dropped, '\r' of pasted Windows text removed;
// `trim`: each line trimmed (an #SBATCH directive), else verbatim (a shell line).
std::vector<std::string> linesOf(const QString& text, bool trim) {
  std::vector<std::string> out;
  for (QString line : text.split(QLatin1Char('\n'))) {
    if (line.endsWith(QLatin1Char('\r'))) line.chop(1);
    if (line.trimmed().isEmpty()) continue;
    out.push_back((trim ? line.trimmed() : line).toStdString());
  }
  return out;
}

QString joined(const std::vector<std::string>& lines) {
  QStringList l;
  for (const std::string& s : lines) l << QString::fromStdString(s);
  return l.join(QLatin1Char('\n'));
}

}  // namespace

SlurmSettings::SlurmSettings(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("slurmSettings"));
  auto* top = new QHBoxLayout(this);
  top->setContentsMargins(0, 0, 0, 0);
  auto* form = new QFormLayout;
  auto line = [this](const char* name, const QString& placeholder, const QString& tip) {
    auto* e = new QLineEdit(this);
    e->setObjectName(QLatin1String(name));
    e->setPlaceholderText(placeholder);
    e->setToolTip(tip);
    connect(e, &QLineEdit::textChanged, this, &SlurmSettings::changed);
    return e;
  };
  auto spin = [this](const char* name, int min, int max, const QString& special, const QString& tip) {
    auto* s = new QSpinBox(this);
    s->setObjectName(QLatin1String(name));
    s->setRange(min, max);
    s->setSpecialValueText(special);
    s->setToolTip(tip);
    connect(s, &QSpinBox::valueChanged, this, &SlurmSettings::changed);
    return s;
  };
  auto text = [this](const char* name, const QString& placeholder, const QString& tip) {
    auto* t = new QPlainTextEdit(this);
    t->setObjectName(QLatin1String(name));
    t->setPlaceholderText(placeholder);
    t->setToolTip(tip);
    t->setLineWrapMode(QPlainTextEdit::NoWrap);
    t->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    t->setFixedHeight(t->fontMetrics().lineSpacing() * 4 + 12);
    connect(t, &QPlainTextEdit::textChanged, this, &SlurmSettings::changed);
    return t;
  };
  partition_ = line("slurmPartition", tr("the cluster's default partition"), tr("sbatch --partition"));
  account_ = line("slurmAccount", tr("your default account"), tr("sbatch --account"));
  qos_ = line("slurmQos", tr("the default QoS"), tr("sbatch --qos"));
  time_limit_ = line("slurmTimeLimit", tr("the partition's default, e.g. 04:00:00 or 1-00:00:00"),
                     tr("sbatch --time: minutes, HH:MM:SS or D-HH:MM:SS"));
  // Nodes 0 and a signal lead of 0 can be typed on purpose: validate() says what is wrong.
  nodes_ = spin("slurmNodes", 0, 100000, QString(), tr("sbatch --nodes: nodes of one job"));
  gpus_ = spin("slurmGpusPerNode", 0, 1024, tr("none (CPU partition)"),
               tr("sbatch --gpus-per-node; one rank per GPU. None: one rank per node on its CPUs"));
  cpus_ = spin("slurmCpusPerTask", 0, 4096, tr("Slurm's default"), tr("sbatch --cpus-per-task: CPUs of each rank"));
  extra_ = text("slurmExtraSbatch", QStringLiteral("#SBATCH --mem=0\n#SBATCH --exclusive"),
                tr("Further sbatch directives, one a line, each starting with #SBATCH"));
  setup_ = text("slurmSetup", QStringLiteral("module load cuda/12.4"),
                tr("Shell lines run on the first node before the ranks start, e.g. module load ... (your own "
                   "commands, run as written)"));
  work_dir_ = line("slurmWorkDir", tr("/scratch/<you>/traindeck"),
                   tr("An absolute folder every node of the cluster sees (the engine, datasets and runs go there)"));
  requeue_ = new QCheckBox(tr("Continue in a new job after the time limit (requeue)"), this);
  requeue_->setObjectName(QStringLiteral("slurmRequeue"));
  requeue_->setToolTip(tr("The run checkpoints before its time limit; the job then submits itself again and the "
                          "run goes on from that checkpoint until its last step"));
  connect(requeue_, &QCheckBox::toggled, this, &SlurmSettings::changed);
  signal_lead_ = spin("slurmSignalLead", 0, 65535, QString(),
                      tr("sbatch --signal=USR1@S: seconds before the time limit the run is asked to checkpoint and stop"));
  signal_lead_->setSuffix(tr(" s"));
  // The image must be on every compute node (podman, docker) or the shared filesystem (a .sif);
  // deploy checks it on the login node (docs/slurm.md "Containers").
  container_ = new ContainerSettings(this);
  container_->setObjectName(QStringLiteral("slurmContainer"));
  container_->setToolTip(tr("Run each rank's engine in this image on the compute nodes instead of the engine bundle; "
                            "empty image: the bundle"));
  connect(container_, &ContainerSettings::edited, this, &SlurmSettings::changed);
  form->addRow(tr("Partition:"), partition_);
  form->addRow(tr("Account:"), account_);
  form->addRow(tr("QoS:"), qos_);
  form->addRow(tr("Time limit:"), time_limit_);
  form->addRow(tr("Nodes:"), nodes_);
  form->addRow(tr("GPUs per node:"), gpus_);
  form->addRow(tr("CPUs per task:"), cpus_);
  form->addRow(tr("Extra #SBATCH lines:"), extra_);
  form->addRow(tr("Set-up lines:"), setup_);
  form->addRow(tr("Work directory:"), work_dir_);
  form->addRow(tr("Signal lead:"), signal_lead_);
  form->addRow(QString(), requeue_);
  form->addRow(tr("Container:"), container_);
  top->addLayout(form, 2);

  auto* right = new QVBoxLayout;
  auto* title = new QLabel(tr("Batch script of a run called %1 (the engine's folder shown as <bundle>):")
                               .arg(previewRunId()),
                           this);
  title->setTextFormat(Qt::PlainText);
  title->setWordWrap(true);
  preview_ = new QPlainTextEdit(this);
  preview_->setObjectName(QStringLiteral("slurmScriptPreview"));
  preview_->setReadOnly(true);
  preview_->setLineWrapMode(QPlainTextEdit::NoWrap);
  preview_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  right->addWidget(title);
  right->addWidget(preview_, 1);
  top->addLayout(right, 3);

  setSpec({});
}

void SlurmSettings::setSpec(const td::remote::SlurmSpec& s) {
  loading_ = true;
  partition_->setText(QString::fromStdString(s.partition));
  account_->setText(QString::fromStdString(s.account));
  qos_->setText(QString::fromStdString(s.qos));
  time_limit_->setText(QString::fromStdString(s.time_limit));
  nodes_->setValue(s.nodes);
  gpus_->setValue(s.gpus_per_node);
  cpus_->setValue(s.cpus_per_task);
  extra_->setPlainText(joined(s.extra_sbatch));
  setup_->setPlainText(joined(s.setup));
  work_dir_->setText(QString::fromStdString(s.work_dir));
  requeue_->setChecked(s.requeue);
  signal_lead_->setValue(s.signal_lead_s);
  container_->setSpec(s.container);
  loading_ = false;
  refreshPreview();
}

td::remote::SlurmSpec SlurmSettings::spec() const {
  td::remote::SlurmSpec s;
  s.partition = partition_->text().trimmed().toStdString();
  s.account = account_->text().trimmed().toStdString();
  s.qos = qos_->text().trimmed().toStdString();
  s.time_limit = time_limit_->text().trimmed().toStdString();
  s.nodes = nodes_->value();
  s.gpus_per_node = gpus_->value();
  s.cpus_per_task = cpus_->value();
  s.extra_sbatch = linesOf(extra_->toPlainText(), true);
  s.setup = linesOf(setup_->toPlainText(), false);
  s.work_dir = work_dir_->text().trimmed().toStdString();
  s.requeue = requeue_->isChecked();
  s.signal_lead_s = signal_lead_->value();
  s.container = container_->spec();
  return s;
}

QString SlurmSettings::previewRunId() { return QStringLiteral("example-run"); }

QString SlurmSettings::previewScript(const td::remote::SlurmSpec& s, QString* error) {
  try {
    // The paths deploy() gives a run under the work directory (gui/runs SlurmTarget::previewScript).
    td::remote::DeployResult d;
    d.engine = s.work_dir + "/engine/<bundle>/bin/traindeck-engine";
    d.run_dir = s.work_dir + "/runs/" + previewRunId().toStdString();
    d.config_path = d.run_dir + "/config.json";
    return QString::fromStdString(
        td::remote::sbatch_script(s, td::remote::slurm_job_paths(d), previewRunId().toStdString(), false));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return {};
  }
}

QString SlurmSettings::previewText() const { return preview_->toPlainText(); }

void SlurmSettings::changed() {
  if (loading_) return;
  refreshPreview();
  emit edited();
}

void SlurmSettings::refreshPreview() {
  QString error;
  const QString script = previewScript(spec(), &error);
  preview_->setPlainText(script.isEmpty() ? tr("No batch script yet: %1").arg(error) : script);
}

}  // namespace td::gui
