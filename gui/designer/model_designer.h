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
class QFormLayout;
class QLabel;
class QLineEdit;
class QToolButton;
class QVBoxLayout;

namespace td::gui {

class EstimatePanel;
class InfraPanel;

/// A dataset the data.path field offers (the store's registered datasets).
struct DatasetChoice {
  QString path;        // absolute dataset directory
  QString tokenizer;   // "byte" or "bpe"; "" when unknown
  int vocab_size = 0;  // the tokenizer's ids (manifest tokenizer.vocab_size); 0 when unknown
};

/// A train.device the device field offers: "cpu", or a GPU the engine sees ("cuda:0").
struct DeviceChoice {
  QString device;       // the config value: "cpu", "cuda:N"
  QString description;  // what the list shows beside it ("NVIDIA H200, 139.8 GiB"); may be ""
};

/// Edits a run config (engine/config.h). Every field of the engine's config table
/// (td::config_field_docs()) has an editor: the model fields, the main training fields (device
/// and precision as lists, steps, lr, batch ...) and data.path on the page; the rest (beta1,
/// beta2, eps, eval_batches, sample_*, keep_checkpoints, log_interval, zero, dist_*) in the
/// collapsible Advanced section, which opens by itself when a shown document sets one of them
/// or one of them is invalid. A field the engine adds later appears under Advanced.
/// model.family is a list (gpt2, llama, qwen2: engine/model/family.h); a family's own fields
/// (n_kv_head, ffn_multiple_of, rope_theta, rms_norm_eps for llama and qwen2: FieldInfo::families) are shown only while it is chosen and
/// written by config() only then (hidden, they keep what was typed for a switch back).
/// Every keystroke re-validates through the Planner (the engine's own parser):
/// an invalid field gets a red frame (dynamic property invalid=true), the engine's message under
/// it and as its tooltip; the estimate panel keeps the last valid plan, greyed, until it is
/// fixed. An empty field means the engine's default (shown as placeholder); a check box or a
/// list (tie_embeddings, device, precision) at the engine's default writes nothing unless the
/// document had the field, so config() of a shown document is that document.
/// Choosing a registered dataset (setDatasets) sets model.vocab_size to its tokenizer's; a
/// model.vocab_size that differs from the chosen dataset's is an error at model.vocab_size.
/// Editors have the field path as objectName ("model.n_layer"), error labels "error_<path>";
/// the Advanced toggle is "advanced_toggle", its fields' container "advanced_fields".
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
  /// The editor of a field: QLineEdit (numbers and strings), QCheckBox (model.tie_embeddings),
  /// QComboBox (train.device, train.precision: item data = the value; data.path: editable).
  /// nullptr for a path the engine does not know.
  QWidget* fieldEditor(const QString& field_path) const;
  /// Every field path the form edits, in the engine's order (all of td::config_field_docs()).
  QStringList fieldPaths() const;
  /// Whether the Advanced section is open; setAdvancedShown opens or closes it.
  bool advancedShown() const;
  void setAdvancedShown(bool shown);
  /// The last check: errors and, when has_plan, the plan and estimates the panel shows.
  const PlanCheck& lastCheck() const { return check_; }
  Planner* planner() { return planner_; }
  /// The Infrastructure tab beside the estimates (the config on a cluster of catalogue devices).
  InfraPanel* infraPanel() const { return infra_; }

  /// Fills the data.path combo with dataset directories (the text being edited stays); a
  /// dataset's vocab_size (when > 0) is what choosing it sets model.vocab_size to.
  void setDatasets(const QList<DatasetChoice>& datasets);
  /// Uses dataset `path`: data.path = path and, when vocab_size > 0 (else from the registered
  /// dataset of that path, if known), model.vocab_size = vocab_size. Emits configChanged().
  void useDataset(const QString& path, int vocab_size = 0);
  /// Fills the train.device list: "cpu" first, then `devices` (the GPUs the engine sees). A
  /// device the shown config names that is not among them stays listed, marked "not seen here".
  void setDevices(const QList<DeviceChoice>& devices);

  /// Presets, GPT-2 then Llama, each in order of size: "tiny", "small", "gpt2-124m", "gpt2-350m",
  /// "gpt2-774m", "llama-tiny", "smollm2-135m", "llama-3.2-1b", "qwen2.5-0.5b".
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
  enum class Kind { Text, String, Bool, Choice, Path };
  struct Row {
    QString path;  // "model.n_layer"
    Kind kind = Kind::Text;
    QWidget* editor = nullptr;
    QLabel* error = nullptr;
    QString doc_tip;  // the engine's meaning, range and default
    QStringList families;  // empty: every model.family; else the ones whose form shows it
    QFormLayout* form = nullptr;
    QWidget* cell = nullptr;  // the editor and its error label: the form row's field
  };
  void addSection(QVBoxLayout* column, const QString& title, const QStringList& paths);
  QWidget* makeEditor(Row& row, const FieldInfo& doc, QWidget* parent);
  void setChoice(const Row& row, const QString& value);
  void updateAdvancedTitle();
  QString currentFamily() const;
  void updateFamilyRows();
  void onPathEdited(const QString& text);
  const DatasetChoice* datasetAt(const QString& path) const;
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
  QToolButton* advanced_toggle_ = nullptr;
  QWidget* advanced_ = nullptr;
  QStringList advanced_paths_;
  QList<DatasetChoice> datasets_;
  QList<DeviceChoice> devices_;
  QLabel* other_errors_;
  QList<Row> rows_;
  QHash<QString, int> row_index_;
  nlohmann::json base_ = nlohmann::json::object();
  PlanCheck check_;
  bool valid_ = false;
  bool filling_ = false;
};

}  // namespace td::gui
