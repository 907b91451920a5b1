// SlurmSubmitDialog: what Start run shows before a run goes to a Slurm cluster — where it goes
// (cluster, login node, partition, nodes and ranks, time limit, requeue) and the batch script it
// will submit (remote/slurm.h sbatch_script; the run id and the engine bundle's folder are filled
// in at submit time), with Submit and Cancel. The script submitted is also kept in the run
// folder (docs/slurm.md).
//
// Threading rule: GUI thread only; nothing here touches the network.
#pragma once

#include <QDialog>

#include "remote/cluster.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace td::gui {

class SlurmSubmitDialog : public QDialog {
  Q_OBJECT
 public:
  /// `cluster` must be of kind "slurm" (otherwise the dialog says it cannot submit and Submit is
  /// disabled).
  explicit SlurmSubmitDialog(const td::remote::ClusterSpec& cluster, QWidget* parent = nullptr);

  QLabel* summaryLabel() const { return summary_; }
  QPlainTextEdit* scriptView() const { return script_; }
  QPushButton* submitButton() const { return submit_; }

  /// Shows the dialog for `cluster` and returns whether the person chose Submit.
  static bool confirm(const td::remote::ClusterSpec& cluster, QWidget* parent);

 private:
  QLabel* summary_;
  QPlainTextEdit* script_;
  QPushButton* submit_;
};

}  // namespace td::gui
