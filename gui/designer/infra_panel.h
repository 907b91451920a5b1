// The designer's Infrastructure panel: the config on a cluster (engine/plan/cluster.h) — memory
// per device for ZeRO stages 0-3, FLOPs and time for a token budget at an MFU, collective bytes
// and the bus bandwidth that hides them, storage read bandwidth, and the devices of each
// catalogue type needed to fit and to finish by a deadline, with the cost.
#pragma once

#include <QWidget>

#include <optional>

#include "engine/plan/cluster.h"
#include "gui/plan/planner.h"

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTableWidget;

namespace td::gui {

class MemoryBars;

/// Inputs (objectNames): infra_device (QComboBox, catalogue names, data = the name),
/// infra_world_size (QSpinBox), infra_tokens (QLineEdit: a token count such as 1e9 or 2.5G;
/// empty = train.steps x tokens per step), infra_mfu (QDoubleSpinBox, percent), infra_deadline
/// (QDoubleSpinBox, hours; 0 = none), infra_price (QDoubleSpinBox, per device-hour; 0 = the
/// catalogue's), infra_zero (QComboBox, stage 0..3), infra_tensor_parallel (QSpinBox, 1..64:
/// devices per tensor-parallel group; infra_world_size counts all devices).
/// Outputs: infra_memory_bars (MemoryBars), labels infra_device_info, infra_memory_0 ..
/// infra_memory_3, infra_budget, infra_flops, infra_tokens_per_s, infra_time, infra_step_time,
/// infra_collective, infra_network, infra_storage, infra_cost, infra_note; the table infra_needs
/// (one row per catalogue device: device, precision, fit at the chosen stage, deadline, needed,
/// time, device-hours, cost).
/// Until the user sets the MFU, it follows the device: for this machine's CPU the MFU the
/// designer's own estimate uses (PlanCheck::mfu: runs here, else the engine's calibrated share),
/// for a catalogue GPU the planner's default 40 %.
/// Every edit and every showCheck() recomputes through Planner::planCluster (arithmetic only).
/// GUI thread only.
class InfraPanel : public QWidget {
  Q_OBJECT
 public:
  explicit InfraPanel(Planner* planner, QWidget* parent = nullptr);

  /// A new check of the designer's config: recomputes (a check without a plan keeps the last
  /// figures, greyed).
  void showCheck(const PlanCheck& check);
  /// The options the inputs describe. `ok` (optional) is false when the token budget is not a
  /// number (the budget is then 0: train.steps x tokens per step).
  td::ClusterOptions options(bool* ok = nullptr) const;
  /// Sets the inputs (device must be a catalogue name; unknown names are ignored) and recomputes;
  /// the MFU given counts as the user's.
  void setOptions(const td::ClusterOptions& o);
  /// The last plan; empty when none could be made.
  const std::optional<td::ClusterPlan>& plan() const { return plan_; }
  MemoryBars* memoryBars() const { return bars_; }
  /// Re-reads the device list from the planner's catalogue (keeps the chosen device).
  void reloadDevices();

 signals:
  /// The figures were recomputed.
  void planChanged();

 private:
  QLabel* addRow(QFormLayout* form, const QString& label, const char* object_name);
  void recompute();
  void showPlan();

  Planner* planner_;
  PlanCheck check_;
  std::optional<td::ClusterPlan> plan_;
  QString error_;
  bool filling_ = false;
  bool mfu_edited_ = false;  // the user chose the MFU: it no longer follows the device
  void followMfu();
  QComboBox *device_, *zero_;
  QSpinBox* tp_ = nullptr;
  QSpinBox* world_;
  QLineEdit* tokens_;
  QDoubleSpinBox *mfu_, *deadline_, *price_;
  QLabel* device_info_;
  MemoryBars* bars_;
  QLabel* memory_[4];
  QLabel *budget_, *flops_, *tokens_s_, *time_, *step_time_, *collective_, *network_, *storage_, *cost_, *note_;
  QWidget* figures_;
  QTableWidget* needs_;
};

/// A token count typed by a user: "1e9", "1000000", "1,000,000", "2.5G", "300M", "10k", "1T"
/// (SI suffixes k, M, G, T; "B" is not a suffix: it would read as bytes or billions). Returns
/// nullopt for anything else or a negative value; "" gives 0.
std::optional<double> parseTokenCount(const QString& text);

}  // namespace td::gui
