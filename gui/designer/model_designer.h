// The model designer: a form for a run config's model and training fields and its dataset,
// with live estimates (parameters, FLOPs, memory per rank, tokens/s on this machine) and the
// infrastructure plan (memory per device for ZeRO 0-3, time, bandwidths, devices needed, cost).
#pragma once

#include <QHash>
#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "gui/plan/planner.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QVBoxLayout;

namespace td::gui {

class EstimatePanel;
class InfraPanel;

/// Edits a run config (engine/config.h). Fields: model.{vocab_size, seq_len, n_layer, n_head,
/// d_model, d_ff, tie_embeddings}, train.{micro_batch, grad_accum, steps, lr, warmup, min_lr,
/// weight_decay, grad_clip, eval_interval, sample_interval, checkpoint_interval, seed, threads}
/// and data.path. Every keystroke re-validates through the Planner (the engine's own parser):
/// an invalid field gets a red frame (dynamic property invalid=true), the engine's message under
/// it and as its tooltip; the estimate panel keeps the last valid plan, greyed, until it is
/// fixed. An empty field means the engine's default (shown as placeholder). Fields the form does
/// not show (beta1, eval_batches, ...) are kept from the last setConfig()/loadFile().
/// Editors have the field path as objectName ("model.n_layer"), error labels "error_<path>".
/// GUI thread only; file reads and writes are of small config files.
class ModelDesigner : public QWidget {
  Q_OBJECT
 public:
  explicit ModelDesigner(QWidget* parent = nullptr);

  /// Shows `doc` (a run config; fields it lacks appear empty, i.e. at the engine's default).
  /// Invalid values are shown and marked, not refused. Emits configChanged().
  void setConfig(const nlohmann::json& doc);
  /// The document the form describes: the last document given, its shown fields replaced by
  /// the form's values (a number where the text is a JSON number, else the text as a string).
  /// Sections model, train and data are always present.
  nlohmann::json config() const;
  /// True when the engine accepts config() as it is.
  bool isValid() const;
  /// The engine's message for a field path ("model.n_head"), "" when the field is valid.
  QString errorFor(const QString& field_path) const;
  /// All current errors: field path -> the engine's message.
  QMap<QString, QString> errors() const { return check_.errors; }
  /// The editor of a field (QLineEdit, QCheckBox for model.tie_embeddings, editable QComboBox
  /// for data.path), nullptr for a field the form does not show.
  QWidget* fieldEditor(const QString& field_path) const;
  /// The last check: errors and, when has_plan, the plan and estimates the panel shows.
  const PlanCheck& lastCheck() const { return check_; }
  Planner* planner() { return planner_; }
  /// The Infrastructure tab beside the estimates (the config on a cluster of catalogue devices).
  InfraPanel* infraPanel() const { return infra_; }

  /// Fills the data.path combo with dataset directories (the text being edited stays).
  void setDatasets(const QStringList& paths);

  /// Presets, in order of size: "tiny", "small", "gpt2-124m", "gpt2-350m", "gpt2-774m".
  QStringList presetIds() const;
  /// Fills the model fields from a preset (train and data stay). False for an unknown id.
  bool applyPreset(const QString& id);

  /// Reads a config file and shows it; a relative data.path is taken from the file's folder
  /// (as the engine does). Returns "" on success, else a message (not readable, not JSON with
  /// line and column, or the engine's validation errors) and leaves the form as it was.
  QString loadFile(const QString& path);
  /// Writes config() to `path` (pretty JSON, atomically). Returns "" on success, else a message;
  /// a config the engine would refuse is not written (the message names its errors).
  QString saveFile(const QString& path);

 signals:
  /// A field changed (typed, preset, setConfig, loadFile).
  void configChanged();
  /// isValid() changed.
  void validityChanged(bool valid);

 private:
  enum class Kind { Text, Bool, Path };
  struct Row {
    QString path;  // "model.n_layer"
    Kind kind = Kind::Text;
    QWidget* editor = nullptr;
    QLabel* error = nullptr;
    QString doc_tip;  // the engine's meaning, range and default
  };
  void addSection(QVBoxLayout* column, const QString& title, const QStringList& paths);
  void fillRow(const Row& row, const nlohmann::json* value);
  void markRow(const Row& row, const QString& message);
  void revalidate();
  void onEdited();
  void loadClicked();
  void saveClicked();
  void presetChosen(int index);

  Planner* planner_;
  EstimatePanel* estimates_;
  InfraPanel* infra_;
  QComboBox* presets_;
  QLabel* other_errors_;
  QList<Row> rows_;
  QHash<QString, int> row_index_;
  nlohmann::json base_ = nlohmann::json::object();
  PlanCheck check_;
  bool valid_ = false;
  bool filling_ = false;
};

}  // namespace td::gui
