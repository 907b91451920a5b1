// The designer's estimate panel: what a config needs and how fast it runs on this machine.
#pragma once

#include <QWidget>

#include "gui/plan/planner.h"

class QFormLayout;
class QLabel;
class QPushButton;

namespace td::gui {

/// Shows a PlanCheck: parameters, FLOPs per token, tokens per step, the KV cache of one sequence
/// (estimate_kv_cache), memory per rank (weights,
/// gradients, optimizer, activations, total), estimated tokens/s and run time. Labels have the
/// objectNames estimate_params, estimate_params_non_embedding, estimate_flops_per_token,
/// estimate_tokens_per_step, estimate_weights, estimate_grads, estimate_optimizer,
/// estimate_activations, estimate_total, estimate_tokens_per_s, estimate_run_time,
/// estimate_basis and estimate_note; the calibrate button is calibrate_button.
/// When a check has no plan, the last plan stays, greyed, and the note asks to fix the marked
/// fields. GUI thread only.
class EstimatePanel : public QWidget {
  Q_OBJECT
 public:
  explicit EstimatePanel(QWidget* parent = nullptr);

  /// Updates every figure from `check`.
  void showCheck(const PlanCheck& check);
  /// While a calibration runs the button is disabled and the note says so.
  void setCalibrating(bool running);
  /// Shows why a calibration failed (in the note, until the next calibration).
  void setCalibrationError(const QString& message);

 signals:
  /// The user asked to measure this CPU's peak (the calibrate button).
  void calibrateRequested();

 private:
  QLabel* addRow(QFormLayout* form, const QString& label, const char* object_name);
  void updateNote();
  QLabel *params_, *params_ne_, *flops_, *tokens_step_, *kv_cache_;
  QLabel *weights_, *grads_, *optimizer_, *activations_, *total_;
  QLabel *tokens_s_, *run_time_, *basis_, *note_;
  QWidget* figures_;
  QPushButton* calibrate_;
  bool has_plan_ = false, calibrated_ = false, calibrating_ = false;
  bool data_path_error_ = false;
  QString calibration_error_;
};

}  // namespace td::gui
