// The Checkpoints tab's two dialogs (non-modal; each runs its engine job itself):
//   GenerateDialog  prompt, tokens, temperature, top-k, seed -> `sample --stream`, the text
//                   growing in a read-only view, Stop, the engine's error shown
//   ExportDialog    the folder -> `export --format hf --progress`, a progress bar, the result
//                   line and "Open folder"
// For a remote run's checkpoint the tab first downloads it; until setCheckpoint() gives the
// local copy the dialog says so and its start button waits.
//
// Threading rule: GUI thread; the engine runs in SampleJob / ExportJob's QProcess.
#pragma once

#include <QDialog>

class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace td::gui {

class ExportJob;
class SampleJob;

class GenerateDialog : public QDialog {
  Q_OBJECT
 public:
  GenerateDialog(const QString& title, QWidget* parent = nullptr);
  /// The local checkpoint directory to sample ("" while a download is going on) and the
  /// dataset whose tokenizer to use ("" = the run's).
  void setCheckpoint(const QString& dir, const QString& data = {});
  /// A download failed: shown, Generate stays off.
  void setCheckpointError(const QString& message);
  void setWaitText(const QString& text);

  QLineEdit* promptEdit() const { return prompt_; }
  QSpinBox* tokensBox() const { return tokens_; }
  QDoubleSpinBox* temperatureBox() const { return temperature_; }
  QSpinBox* topKBox() const { return top_k_; }
  QSpinBox* seedBox() const { return seed_; }
  QPushButton* generateButton() const { return generate_; }
  QPushButton* stopButton() const { return stop_; }
  QPlainTextEdit* output() const { return output_; }
  QLabel* statusLabel() const { return status_; }
  SampleJob* job() const { return job_; }
  /// Starts a generation with the fields' values (what Generate does).
  void generate();

 private:
  QString checkpoint_, data_;
  QLineEdit* prompt_;
  QSpinBox* tokens_;
  QDoubleSpinBox* temperature_;
  QSpinBox* top_k_;
  QSpinBox* seed_;
  QPushButton* generate_;
  QPushButton* stop_;
  QPlainTextEdit* output_;
  QLabel* status_;
  SampleJob* job_;
};

class ExportDialog : public QDialog {
  Q_OBJECT
 public:
  /// `default_dir`: the folder proposed (an export of this step under the run's folder, or ~/).
  ExportDialog(const QString& title, const QString& default_dir, QWidget* parent = nullptr);
  void setCheckpoint(const QString& dir, const QString& data = {});
  void setCheckpointError(const QString& message);
  void setWaitText(const QString& text);

  QLineEdit* folderEdit() const { return folder_; }
  QPushButton* exportButton() const { return export_; }
  QPushButton* openButton() const { return open_; }
  QProgressBar* progressBar() const { return progress_; }
  QLabel* statusLabel() const { return status_; }
  ExportJob* job() const { return job_; }
  /// The folder the last export wrote ("" before one succeeded).
  QString exportedDir() const { return exported_; }
  void startExport();

 private:
  QString checkpoint_, data_, exported_;
  QLineEdit* folder_;
  QPushButton* browse_;
  QPushButton* export_;
  QPushButton* open_;
  QProgressBar* progress_;
  QLabel* status_;
  ExportJob* job_;
};

}  // namespace td::gui
