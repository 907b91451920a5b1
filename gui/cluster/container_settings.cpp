// ContainerSettings (container_settings.h).
#include "gui/cluster/container_settings.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QRegularExpression>

#include <algorithm>

namespace td::gui {

using td::remote::ContainerRuntime;

std::vector<std::string> splitMounts(const QString& text) {
  std::vector<std::string> out;
  static const QRegularExpression sep(QStringLiteral("[\\n,]"));
  for (const QString& piece : text.split(sep)) {
    const QString m = piece.trimmed();
    if (!m.isEmpty()) out.push_back(m.toStdString());
  }
  return out;
}

QString containerSummary(const td::remote::ContainerSpec& c) {
  if (!c.enabled() && c.mounts.empty()) return {};
  const QString runtime = QString::fromLatin1(td::remote::container_runtime_name(c.runtime));
  if (!c.enabled()) return ContainerSettings::tr("%1: (no image)").arg(runtime);
  return QStringLiteral("%1: %2").arg(runtime, QString::fromStdString(c.image));
}

ContainerSettings::ContainerSettings(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("containerSettings"));
  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  runtime_ = new QComboBox(this);
  runtime_->setObjectName(QStringLiteral("containerRuntime"));
  for (ContainerRuntime r : {ContainerRuntime::Podman, ContainerRuntime::Docker, ContainerRuntime::Apptainer})
    runtime_->addItem(QString::fromLatin1(td::remote::container_runtime_name(r)), static_cast<int>(r));
  runtime_->setToolTip(tr("The program on the node that runs the image"));
  image_ = new QLineEdit(this);
  image_->setObjectName(QStringLiteral("containerImage"));
  image_->setPlaceholderText(tr("empty: the engine bundle, no container (e.g. localhost/traindeck-engine:0.1.0)"));
  image_->setToolTip(tr("podman/docker: an image present on the node (never pulled at launch); apptainer: a .sif "
                        "file on the node or a docker:// URI"));
  mounts_ = new QPlainTextEdit(this);
  mounts_->setObjectName(QStringLiteral("containerMounts"));
  mounts_->setPlaceholderText(tr("host:container[:ro], one a line or comma-separated, e.g. /scratch/corpora:/corpora:ro"));
  mounts_->setToolTip(tr("Extra folders of the node inside the container (the work directory is always mounted at "
                         "its own path)"));
  mounts_->setLineWrapMode(QPlainTextEdit::NoWrap);
  mounts_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  mounts_->setFixedHeight(mounts_->fontMetrics().lineSpacing() * 3 + 12);
  form->addRow(tr("Runtime:"), runtime_);
  form->addRow(tr("Image:"), image_);
  form->addRow(tr("Extra mounts:"), mounts_);
  connect(runtime_, &QComboBox::currentIndexChanged, this, &ContainerSettings::changed);
  connect(image_, &QLineEdit::textChanged, this, &ContainerSettings::changed);
  connect(mounts_, &QPlainTextEdit::textChanged, this, &ContainerSettings::changed);
}

void ContainerSettings::setSpec(const td::remote::ContainerSpec& c) {
  loading_ = true;
  runtime_->setCurrentIndex(std::max(0, runtime_->findData(static_cast<int>(c.runtime))));
  image_->setText(QString::fromStdString(c.image));
  QStringList mounts;
  for (const std::string& m : c.mounts) mounts << QString::fromStdString(m);
  const QString text = mounts.join(QLatin1Char('\n'));
  if (mounts_->toPlainText() != text) mounts_->setPlainText(text);
  loading_ = false;
}

td::remote::ContainerSpec ContainerSettings::spec() const {
  td::remote::ContainerSpec c;
  c.runtime = static_cast<ContainerRuntime>(runtime_->currentData().toInt());
  c.image = image_->text().trimmed().toStdString();
  c.mounts = splitMounts(mounts_->toPlainText());
  return c;
}

void ContainerSettings::changed() {
  if (!loading_) emit edited();
}

}  // namespace td::gui
