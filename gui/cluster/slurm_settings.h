// SlurmSettings: the Slurm part of a "Slurm cluster" on the Clusters page (the login node is the
// designer's node table): partition, account, QoS, time limit, nodes, GPUs per node, CPUs per
// task, extra #SBATCH lines and set-up lines (one a line), the work directory on the shared
// filesystem, requeue, the signal lead and the container the ranks' engines run in
// (ContainerSettings: runtime, image, extra mounts; no image = the bare bundle), each field as
// td::remote::SlurmSpec documents it (remote/slurm.h). Beside them, read-only, the batch script a run would submit with these
// settings (previewScript()), redrawn on every edit; while the settings are invalid it says why.
// Values are kept as typed (nodes 0, a relative work directory): td::remote::validate() reports
// them in the designer, so the person sees the message.
//
// Threading rule: GUI thread only; nothing here touches the network.
#pragma once

#include <QString>
#include <QWidget>

#include "remote/slurm.h"

class QCheckBox;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;

namespace td::gui {

class ContainerSettings;

class SlurmSettings : public QWidget {
  Q_OBJECT
 public:
  explicit SlurmSettings(QWidget* parent = nullptr);

  /// Shows `s` (no edited()).
  void setSpec(const td::remote::SlurmSpec& s);
  /// The settings as edited: names, time limit and work directory trimmed; extra #SBATCH lines
  /// trimmed, set-up lines verbatim; blank lines of both dropped.
  td::remote::SlurmSpec spec() const;

  /// The run id the preview uses ("example-run").
  static QString previewRunId();
  /// The batch script (remote/slurm.h sbatch_script) of a run previewRunId() on `s`, with the
  /// paths it would have under s.work_dir (the engine bundle's folder named "<bundle>"), as
  /// gui/runs SlurmTarget::previewScript() builds them. "" with *error (td::Error's text, e.g.
  /// "the Slurm settings cannot be used: nodes must be 1 or more (got 0)") when it cannot be made.
  static QString previewScript(const td::remote::SlurmSpec& s, QString* error);
  /// The preview as shown (the script, or the reason there is none).
  QString previewText() const;

 signals:
  /// The person changed a field.
  void edited();

 private:
  void changed();
  void refreshPreview();

  bool loading_ = false;
  QLineEdit* partition_ = nullptr;
  QLineEdit* account_ = nullptr;
  QLineEdit* qos_ = nullptr;
  QLineEdit* time_limit_ = nullptr;
  QSpinBox* nodes_ = nullptr;
  QSpinBox* gpus_ = nullptr;
  QSpinBox* cpus_ = nullptr;
  QPlainTextEdit* extra_ = nullptr;
  QPlainTextEdit* setup_ = nullptr;
  QLineEdit* work_dir_ = nullptr;
  QCheckBox* requeue_ = nullptr;
  QSpinBox* signal_lead_ = nullptr;
  ContainerSettings* container_ = nullptr;
  QPlainTextEdit* preview_ = nullptr;
};

}  // namespace td::gui
