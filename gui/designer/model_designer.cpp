#include "gui/designer/model_designer.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QStyle>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#include "gui/designer/estimate_panel.h"
#include "gui/designer/infra_panel.h"
#include "gui/plan/format.h"

// The presets are compiled into this static library: their initialiser must be called by name.
static void initPresetResources() { Q_INIT_RESOURCE(presets); }

namespace td::gui {
namespace {

using json = nlohmann::json;

const char* const kStyle =
    "QLineEdit[invalid=\"true\"], QComboBox[invalid=\"true\"] { border: 2px solid #d0021b; border-radius: 3px; }"
    "QLabel[fieldError=\"true\"] { color: #d0021b; }";

// Config files are a few KB; anything much larger is not one.
constexpr qint64 kMaxConfigBytes = 1 << 20;

const char* const kPresetIds[] = {"tiny", "small", "gpt2-124m", "gpt2-350m", "gpt2-774m", "llama-tiny", "smollm2-135m", "llama-3.2-1b", "qwen2.5-0.5b"};

std::pair<std::string, std::string> splitPath(const QString& path) {
  const qsizetype dot = path.indexOf('.');
  return {path.left(dot).toStdString(), path.mid(dot + 1).toStdString()};
}

// The value a text field stands for: a JSON number (or true/false/null) when the text is one,
// else the text as a string, so that the engine's message names what the user typed.
json valueOfText(const QString& text) {
  const std::string s = text.toStdString();
  json v = json::parse(s, nullptr, false);
  if (!v.is_discarded() && v.is_primitive() && !v.is_string()) return v;
  return json(s);
}

QString textOfValue(const json& v) { return v.is_string() ? QString::fromStdString(v.get<std::string>()) : QString::fromStdString(v.dump()); }

bool readPreset(const QString& id, json* out, QString* label, QString* description) {
  QFile f(QStringLiteral(":/presets/%1.json").arg(id));
  if (!f.open(QIODevice::ReadOnly)) return false;
  json j = json::parse(f.readAll().toStdString(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("model") || !j["model"].is_object()) return false;
  if (out) *out = j["model"];
  if (label) *label = QString::fromStdString(j.value("label", id.toStdString()));
  if (description) *description = QString::fromStdString(j.value("description", std::string()));
  return true;
}

}  // namespace

ModelDesigner::ModelDesigner(QWidget* parent) : QWidget(parent), planner_(new Planner(this)) {
  initPresetResources();
  setStyleSheet(QString::fromLatin1(kStyle));

  auto* outer = new QVBoxLayout(this);

  // Top bar: presets, load, save.
  auto* bar = new QHBoxLayout;
  presets_ = new QComboBox(this);
  presets_->setObjectName("presets");
  presets_->addItem(tr("Preset…"));
  for (const char* id : kPresetIds) {
    QString label, description;
    if (!readPreset(QString::fromLatin1(id), nullptr, &label, &description)) continue;
    presets_->addItem(label, QString::fromLatin1(id));
    presets_->setItemData(presets_->count() - 1, description, Qt::ToolTipRole);
  }
  presets_->setToolTip(tr("Fills the model fields with a common shape; training and data stay."));
  connect(presets_, &QComboBox::activated, this, &ModelDesigner::presetChosen);
  auto* load = new QPushButton(tr("Load JSON…"), this);
  load->setObjectName("load_button");
  auto* save = new QPushButton(tr("Save JSON…"), this);
  save->setObjectName("save_button");
  connect(load, &QPushButton::clicked, this, &ModelDesigner::loadClicked);
  connect(save, &QPushButton::clicked, this, &ModelDesigner::saveClicked);
  bar->addWidget(new QLabel(tr("Preset:"), this));
  bar->addWidget(presets_);
  bar->addStretch(1);
  bar->addWidget(load);
  bar->addWidget(save);
  outer->addLayout(bar);

  // The form (scrolls) beside the estimates.
  auto* body = new QHBoxLayout;
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* form_widget = new QWidget(scroll);
  auto* column = new QVBoxLayout(form_widget);
  // The model, the main training fields and the dataset on the page; every other field of the
  // engine's table (and any it adds later) under Advanced, collapsed until needed.
  // The families' own fields (FieldInfo::families) are shown only while model.family is one of theirs.
  const QStringList model_paths = {"model.family",    "model.vocab_size", "model.seq_len",         "model.n_layer",
                                   "model.n_head",    "model.n_kv_head",  "model.d_model",         "model.d_ff",
                                   "model.ffn_multiple_of", "model.rope_theta", "model.rms_norm_eps", "model.tie_embeddings"};
  const QStringList train_paths = {"train.device",       "train.precision",   "train.attention",   "train.micro_batch",  "train.grad_accum",
                                   "train.steps",        "train.lr",          "train.warmup",       "train.min_lr",
                                   "train.weight_decay", "train.grad_clip",   "train.eval_interval", "train.sample_interval",
                                   "train.checkpoint_interval", "train.seed", "train.threads"};
  const QStringList data_paths = {"data.path"};
  for (const FieldInfo& f : Planner::fieldDocs())
    if (!model_paths.contains(f.path) && !train_paths.contains(f.path) && !data_paths.contains(f.path))
      advanced_paths_ << f.path;
  addSection(column, tr("Model"), model_paths);
  addSection(column, tr("Training"), train_paths);
  addSection(column, tr("Data"), data_paths);
  advanced_toggle_ = new QToolButton(form_widget);
  advanced_toggle_->setObjectName(QStringLiteral("advanced_toggle"));
  advanced_toggle_->setCheckable(true);
  advanced_toggle_->setAutoRaise(true);
  advanced_toggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  advanced_toggle_->setArrowType(Qt::RightArrow);
  advanced_toggle_->setToolTip(tr("AdamW betas and eps, evaluation and sample settings, checkpoints kept, "
                                  "progress lines, ZeRO and the distributed settings"));
  column->addWidget(advanced_toggle_);
  advanced_ = new QWidget(form_widget);
  advanced_->setObjectName(QStringLiteral("advanced_fields"));
  auto* advanced_column = new QVBoxLayout(advanced_);
  advanced_column->setContentsMargins(0, 0, 0, 0);
  addSection(advanced_column, tr("Advanced"), advanced_paths_);
  advanced_->hide();
  column->addWidget(advanced_);
  connect(advanced_toggle_, &QToolButton::toggled, this, [this](bool on) {
    advanced_->setVisible(on);
    advanced_toggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
  });
  updateAdvancedTitle();
  other_errors_ = new QLabel(form_widget);
  other_errors_->setObjectName("other_errors");
  other_errors_->setProperty("fieldError", true);
  other_errors_->setWordWrap(true);
  other_errors_->hide();
  column->addWidget(other_errors_);
  column->addStretch(1);
  scroll->setWidget(form_widget);
  body->addWidget(scroll, 1);

  // Beside the form: this machine's estimates and the infrastructure plan, one tab each.
  auto* tabs = new QTabWidget(this);
  tabs->setObjectName(QStringLiteral("estimate_tabs"));
  estimates_ = new EstimatePanel(tabs);
  tabs->addTab(estimates_, tr("This machine"));
  auto* infra_scroll = new QScrollArea(tabs);
  infra_scroll->setWidgetResizable(true);
  infra_scroll->setFrameShape(QFrame::NoFrame);
  infra_ = new InfraPanel(planner_, infra_scroll);
  infra_scroll->setWidget(infra_);
  tabs->addTab(infra_scroll, tr("Infrastructure"));
  tabs->setTabToolTip(1, tr("The config on a cluster: memory per device for ZeRO stages 0-3, time and cost of a token "
                            "budget, network and storage bandwidth, devices needed"));
  body->addWidget(tabs, 1);  // half the page: the Infrastructure figures need the room
  outer->addLayout(body, 1);

  connect(estimates_, &EstimatePanel::calibrateRequested, this, [this] {
    estimates_->setCalibrating(true);
    planner_->calibrate(check_.threads);
  });
  connect(planner_, &Planner::calibrationFinished, this, [this] { estimates_->setCalibrating(false); });
  connect(planner_, &Planner::calibrationFailed, this, [this](const QString& message) {
    estimates_->setCalibrating(false);
    estimates_->setCalibrationError(message);
  });
  connect(planner_, &Planner::estimatesChanged, this, &ModelDesigner::revalidate);
  // The GPUs the engine sees (Planner::probeDevices, started by whoever hosts the designer).
  connect(planner_, &Planner::devicesFound, this, [this](const QList<EngineDevice>& found, const QString& cuda_error) {
    QList<DeviceChoice> gpus;
    for (const EngineDevice& d : found)
      if (d.device != QLatin1String("cpu"))
        gpus.append({d.device, d.memory_bytes > 0 ? tr("%1, %2").arg(d.name, formatBytes(d.memory_bytes)) : d.name});
    setDevices(gpus);
    if (QWidget* device = fieldEditor(QStringLiteral("train.device")); device && gpus.isEmpty() && !cuda_error.isEmpty()) {
      auto it = row_index_.constFind(QStringLiteral("train.device"));
      rows_[*it].doc_tip += tr("\n\nNo GPU is listed: %1").arg(cuda_error);
      device->setToolTip(rows_[*it].doc_tip);
    }
  });

  revalidate();
}

void ModelDesigner::addSection(QVBoxLayout* column, const QString& title, const QStringList& paths) {
  auto* box = new QGroupBox(title, column->parentWidget());
  auto* form = new QFormLayout(box);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  for (const QString& path : paths) {
    const FieldInfo doc = Planner::fieldDoc(path);
    if (doc.path.isEmpty()) continue;  // not (or no longer) an engine field
    Row row;
    row.path = path;
    row.families = doc.families;
    row.form = form;
    row.doc_tip = tr("%1\nAllowed: %2\nDefault: %3").arg(doc.meaning, doc.range, doc.default_value);
    auto* cell = new QWidget(box);
    auto* cell_layout = new QVBoxLayout(cell);
    cell_layout->setContentsMargins(0, 0, 0, 0);
    cell_layout->setSpacing(2);
    row.editor = makeEditor(row, doc, cell);
    row.editor->setObjectName(path);
    row.editor->setToolTip(row.doc_tip);
    row.error = new QLabel(cell);
    row.error->setObjectName(QStringLiteral("error_") + path);
    row.error->setProperty("fieldError", true);
    row.error->setWordWrap(true);
    row.error->hide();
    row.cell = cell;
    cell_layout->addWidget(row.editor);
    cell_layout->addWidget(row.error);
    auto* label = new QLabel(path.mid(path.indexOf('.') + 1), box);
    label->setToolTip(row.doc_tip);
    label->setBuddy(row.editor);
    form->addRow(label, cell);
    row_index_.insert(path, rows_.size());
    rows_.append(row);
  }
  column->addWidget(box);
}

namespace {

// The allowed strings of a field whose range is a list: "\"auto\" or \"fp32\" or \"bf16\"".
QStringList allowedStrings(const QString& range) {
  QStringList out;
  for (const QString& part : range.split(QStringLiteral(" or ")))
    if (part.size() >= 2 && part.startsWith('"') && part.endsWith('"')) out << part.mid(1, part.size() - 2);
  return out;
}

// The engine's default of a field as JSON ("6", "\"cpu\"").
json defaultOf(const QString& path) {
  json v = json::parse(Planner::fieldDoc(path).default_value.toStdString(), nullptr, false);
  return v.is_discarded() ? json() : v;
}

}  // namespace

QWidget* ModelDesigner::makeEditor(Row& row, const FieldInfo& doc, QWidget* parent) {
  const QString& path = row.path;
  const QStringList allowed = allowedStrings(doc.range);
  if (doc.range == QLatin1String("true or false")) {
    row.kind = Kind::Bool;
    auto* check = new QCheckBox(parent);
    check->setChecked(doc.default_value == QLatin1String("true"));
    connect(check, &QCheckBox::toggled, this, &ModelDesigner::onEdited);
    return check;
  }
  if (path == QLatin1String("data.path")) {
    row.kind = Kind::Path;
    auto* combo = new QComboBox(parent);
    combo->setEditable(true);
    combo->setInsertPolicy(QComboBox::NoInsert);
    combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    combo->setMinimumContentsLength(16);
    combo->lineEdit()->setPlaceholderText(tr("prepare a dataset first (Data page)"));
    connect(combo, &QComboBox::editTextChanged, this, &ModelDesigner::onPathEdited);
    return combo;
  }
  if (path == QLatin1String("train.device") || !allowed.isEmpty()) {
    row.kind = Kind::Choice;
    auto* combo = new QComboBox(parent);
    combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    combo->setMinimumContentsLength(10);
    const QString def = QString::fromStdString(defaultOf(path).get<std::string>());
    const QStringList items = path == QLatin1String("train.device") ? QStringList{QStringLiteral("cpu")} : allowed;
    for (const QString& v : items) combo->addItem(v == def ? tr("%1 (default)").arg(v) : v, v);
    combo->setCurrentIndex(std::max(0, combo->findData(def)));
    connect(combo, &QComboBox::currentIndexChanged, this, &ModelDesigner::onEdited);
    return combo;
  }
  auto* edit = new QLineEdit(parent);
  row.kind = doc.range == QLatin1String("string") ? Kind::String : Kind::Text;
  edit->setPlaceholderText(path == QLatin1String("model.d_ff") ? tr("0 (4 × d_model)")
                           : row.kind == Kind::String        ? tr("(empty)")
                                                             : doc.default_value);
  edit->setClearButtonEnabled(false);
  connect(edit, &QLineEdit::textEdited, this, &ModelDesigner::onEdited);
  return edit;
}

void ModelDesigner::setChoice(const Row& row, const QString& value) {
  auto* combo = static_cast<QComboBox*>(row.editor);
  int at = combo->findData(value);
  if (at < 0) {
    // A value from a document that the list does not offer stays visible and editable.
    combo->addItem(row.path == QLatin1String("train.device") ? tr("%1 (not seen here)").arg(value) : value, value);
    at = combo->count() - 1;
  }
  combo->setCurrentIndex(at);
}

void ModelDesigner::fillRow(const Row& row, const json* value) {
  switch (row.kind) {
    case Kind::Text:
    case Kind::String:
      static_cast<QLineEdit*>(row.editor)->setText(value ? textOfValue(*value) : QString());
      break;
    case Kind::Choice: {
      const json def = defaultOf(row.path);
      const json& v = value ? *value : def;
      setChoice(row, textOfValue(v));
      break;
    }
    case Kind::Bool: {
      bool on = Planner::fieldDoc(row.path).default_value == QLatin1String("true");
      if (value && value->is_boolean()) on = value->get<bool>();
      static_cast<QCheckBox*>(row.editor)->setChecked(on);
      break;
    }
    case Kind::Path:
      static_cast<QComboBox*>(row.editor)->setEditText(value ? textOfValue(*value) : QString());
      break;
  }
}

json ModelDesigner::config() const {
  json doc = base_.is_object() ? base_ : json::object();
  for (const char* sec : {"model", "train", "data"})
    if (!doc.contains(sec) || !doc[sec].is_object()) doc[sec] = json::object();
  const QString family = currentFamily();
  for (const Row& row : rows_) {
    auto [sec, name] = splitPath(row.path);
    json& section = doc[sec];
    if (!row.families.isEmpty() && !row.families.contains(family)) {
      section.erase(name);  // another family's field: hidden, kept in its editor, not written
      continue;
    }
    switch (row.kind) {
      case Kind::Text: {
        const QString text = static_cast<QLineEdit*>(row.editor)->text().trimmed();
        if (text.isEmpty()) section.erase(name);
        else section[name] = valueOfText(text);
        break;
      }
      case Kind::String: {
        const QString text = static_cast<QLineEdit*>(row.editor)->text();
        if (text.isEmpty()) section.erase(name);
        else section[name] = text.toStdString();
        break;
      }
      case Kind::Bool:
      case Kind::Choice: {
        // The engine's default is written only where the document had the field.
        const json v = row.kind == Kind::Bool ? json(static_cast<QCheckBox*>(row.editor)->isChecked())
                                              : json(static_cast<QComboBox*>(row.editor)->currentData().toString().toStdString());
        const bool had = base_.contains(sec) && base_[sec].is_object() && base_[sec].contains(name);
        if (v == defaultOf(row.path) && !had) section.erase(name);
        else section[name] = v;
        break;
      }
      case Kind::Path: {
        const QString text = static_cast<QComboBox*>(row.editor)->currentText().trimmed();
        if (text.isEmpty()) section.erase(name);
        else section[name] = text.toStdString();
        break;
      }
    }
  }
  return doc;
}

void ModelDesigner::setConfig(const json& doc) {
  base_ = doc.is_object() ? doc : json::object();
  filling_ = true;
  for (const Row& row : rows_) {
    auto [sec, name] = splitPath(row.path);
    const json* value = nullptr;
    if (base_.contains(sec) && base_[sec].is_object() && base_[sec].contains(name)) value = &base_[sec][name];
    fillRow(row, value);
    if (value && advanced_paths_.contains(row.path)) setAdvancedShown(true);  // never hide what a document sets
  }
  filling_ = false;
  revalidate();
  emit configChanged();
}

bool ModelDesigner::isValid() const { return valid_; }

QString ModelDesigner::errorFor(const QString& field_path) const { return check_.errors.value(field_path); }

QWidget* ModelDesigner::fieldEditor(const QString& field_path) const {
  auto it = row_index_.constFind(field_path);
  return it == row_index_.constEnd() ? nullptr : rows_[*it].editor;
}

QStringList ModelDesigner::fieldPaths() const {
  QStringList out;
  for (const FieldInfo& f : Planner::fieldDocs())
    if (row_index_.contains(f.path)) out << f.path;
  return out;
}

bool ModelDesigner::advancedShown() const { return advanced_toggle_->isChecked(); }

void ModelDesigner::setAdvancedShown(bool shown) { advanced_toggle_->setChecked(shown); }

void ModelDesigner::updateAdvancedTitle() {
  const json doc = config();
  int set = 0;
  for (const QString& p : advanced_paths_) {
    auto [sec, name] = splitPath(p);
    if (doc.contains(sec) && doc[sec].is_object() && doc[sec].contains(name)) ++set;
  }
  advanced_toggle_->setText(set > 0 ? tr("Advanced (%n set)", nullptr, set) : tr("Advanced"));
}

void ModelDesigner::setDatasets(const QList<DatasetChoice>& datasets) {
  auto* combo = qobject_cast<QComboBox*>(fieldEditor(QStringLiteral("data.path")));
  if (!combo) return;
  datasets_ = datasets;
  filling_ = true;
  const QString text = combo->currentText();
  combo->clear();
  for (const DatasetChoice& d : datasets) {
    combo->addItem(d.path, d.path);
    if (d.vocab_size > 0)
      combo->setItemData(combo->count() - 1,
                         tr("%1 tokenizer, vocab_size %2").arg(d.tokenizer.isEmpty() ? tr("unknown") : d.tokenizer).arg(d.vocab_size),
                         Qt::ToolTipRole);
  }
  combo->setEditText(text);
  combo->lineEdit()->setPlaceholderText(datasets.isEmpty() ? tr("prepare a dataset first (Data page)")
                                                           : tr("choose a dataset"));
  filling_ = false;
  revalidate();  // the vocab_size rule depends on the known datasets
}

const DatasetChoice* ModelDesigner::datasetAt(const QString& path) const {
  if (path.trimmed().isEmpty()) return nullptr;
  const QString clean = QDir::cleanPath(path.trimmed());
  for (const DatasetChoice& d : datasets_)
    if (QDir::cleanPath(d.path) == clean) return &d;
  return nullptr;
}

void ModelDesigner::useDataset(const QString& path, int vocab_size) {
  auto* combo = qobject_cast<QComboBox*>(fieldEditor(QStringLiteral("data.path")));
  auto* vocab = qobject_cast<QLineEdit*>(fieldEditor(QStringLiteral("model.vocab_size")));
  if (!combo || !vocab) return;
  if (vocab_size <= 0)
    if (const DatasetChoice* d = datasetAt(path)) vocab_size = d->vocab_size;
  filling_ = true;
  combo->setEditText(path);
  if (vocab_size > 0) vocab->setText(QString::number(vocab_size));
  filling_ = false;
  revalidate();
  emit configChanged();
}

void ModelDesigner::onPathEdited(const QString& text) {
  if (filling_) return;
  // Choosing (or typing the path of) a registered dataset sets vocab_size from its tokenizer.
  const DatasetChoice* d = datasetAt(text);
  auto* vocab = qobject_cast<QLineEdit*>(fieldEditor(QStringLiteral("model.vocab_size")));
  if (d && d->vocab_size > 0 && vocab && vocab->text().trimmed() != QString::number(d->vocab_size)) {
    filling_ = true;
    vocab->setText(QString::number(d->vocab_size));
    filling_ = false;
  }
  onEdited();
}

void ModelDesigner::setDevices(const QList<DeviceChoice>& devices) {
  auto it = row_index_.constFind(QStringLiteral("train.device"));
  if (it == row_index_.constEnd()) return;
  const Row& row = rows_[*it];
  auto* combo = static_cast<QComboBox*>(row.editor);
  devices_ = devices;
  filling_ = true;
  const QString keep = combo->currentData().toString();
  combo->clear();
  combo->addItem(tr("cpu (default)"), QStringLiteral("cpu"));
  combo->setItemData(0, tr("This machine's CPU (OpenBLAS, OpenMP)"), Qt::ToolTipRole);
  for (const DeviceChoice& d : devices) {
    if (d.device == QLatin1String("cpu")) continue;
    combo->addItem(d.description.isEmpty() ? d.device : tr("%1 — %2").arg(d.device, d.description), d.device);
  }
  setChoice(row, keep.isEmpty() ? QStringLiteral("cpu") : keep);
  filling_ = false;
}

QStringList ModelDesigner::presetIds() const {
  QStringList ids;
  for (int i = 1; i < presets_->count(); ++i) ids << presets_->itemData(i).toString();
  return ids;
}

bool ModelDesigner::applyPreset(const QString& id) {
  json model;
  if (!readPreset(id, &model, nullptr, nullptr)) return false;
  filling_ = true;
  for (const Row& row : rows_) {
    if (!row.path.startsWith(QLatin1String("model."))) continue;
    const std::string name = splitPath(row.path).second;
    fillRow(row, model.contains(name) ? &model[name] : nullptr);
  }
  filling_ = false;
  revalidate();
  emit configChanged();
  return true;
}

void ModelDesigner::presetChosen(int index) {
  const QString id = presets_->itemData(index).toString();
  if (!id.isEmpty()) applyPreset(id);
  presets_->setCurrentIndex(0);
}

void ModelDesigner::markRow(const Row& row, const QString& message) {
  const bool invalid = !message.isEmpty();
  if (row.editor->property("invalid").toBool() != invalid) {
    row.editor->setProperty("invalid", invalid);
    row.editor->style()->unpolish(row.editor);
    row.editor->style()->polish(row.editor);
    row.editor->update();
  }
  row.error->setText(message);
  row.error->setVisible(invalid);
  row.editor->setToolTip(invalid ? message + QStringLiteral("\n\n") + row.doc_tip : row.doc_tip);
}

QString ModelDesigner::currentFamily() const {
  auto it = row_index_.constFind(QStringLiteral("model.family"));
  if (it == row_index_.constEnd()) return QStringLiteral("gpt2");
  return static_cast<QComboBox*>(rows_[*it].editor)->currentData().toString();
}

void ModelDesigner::updateFamilyRows() {
  const QString family = currentFamily();
  for (const Row& row : rows_)
    if (!row.families.isEmpty() && row.form) row.form->setRowVisible(row.cell, row.families.contains(family));
  // d_ff = 0 follows the Llama rule in the families that have ffn_multiple_of (the Llama block's).
  auto rule = row_index_.constFind(QStringLiteral("model.ffn_multiple_of"));
  const bool llama_rule = rule != row_index_.constEnd() && rows_[*rule].families.contains(family);
  if (auto* d_ff = qobject_cast<QLineEdit*>(fieldEditor(QStringLiteral("model.d_ff"))))
    d_ff->setPlaceholderText(llama_rule ? tr("0 (8/3 × d_model, rounded up to ffn_multiple_of)") : tr("0 (4 × d_model)"));
}

void ModelDesigner::revalidate() {
  updateFamilyRows();
  const json doc = config();
  check_ = planner_->check(doc);
  // No dataset yet: say what to do rather than the engine's "missing".
  if (check_.errors.value(QStringLiteral("data.path")).startsWith(QLatin1String("missing")))
    check_.errors[QStringLiteral("data.path")] = tr("missing: prepare a dataset first (Data page), or choose one here");
  // The model's vocabulary must be the chosen dataset's (the engine refuses the run otherwise).
  const QString data_path = doc["data"].contains("path") && doc["data"]["path"].is_string()
                                ? QString::fromStdString(doc["data"]["path"].get<std::string>())
                                : QString();
  const DatasetChoice* ds = datasetAt(data_path);
  if (ds && ds->vocab_size > 0 && !check_.errors.contains(QStringLiteral("model.vocab_size"))) {
    const json& m = doc["model"];
    const double vocab = m.contains("vocab_size") && m["vocab_size"].is_number() ? m["vocab_size"].get<double>()
                                                                                  : defaultOf(QStringLiteral("model.vocab_size")).get<double>();
    if (vocab != ds->vocab_size) {
      check_.errors.insert(QStringLiteral("model.vocab_size"),
                           tr("value %1 differs from the dataset's %2 tokenizer (%3 ids): set %3, or choose the dataset again")
                               .arg(vocab, 0, 'g', 10)
                               .arg(ds->tokenizer.isEmpty() ? tr("unknown") : ds->tokenizer)
                               .arg(ds->vocab_size));
      check_.valid = false;
    }
  }
  QStringList others;
  for (auto it = check_.errors.constBegin(); it != check_.errors.constEnd(); ++it)
    if (!row_index_.contains(it.key())) others << it.key() + QStringLiteral(": ") + it.value();
  for (const Row& row : rows_) {
    markRow(row, check_.errors.value(row.path));
    if (check_.errors.contains(row.path) && advanced_paths_.contains(row.path)) setAdvancedShown(true);
  }
  updateAdvancedTitle();
  other_errors_->setText(others.join('\n'));
  other_errors_->setVisible(!others.isEmpty());
  estimates_->showCheck(check_);
  infra_->showCheck(check_);
  if (check_.valid != valid_) {
    valid_ = check_.valid;
    emit validityChanged(valid_);
  }
}

void ModelDesigner::onEdited() {
  if (filling_) return;
  revalidate();
  emit configChanged();
}

QString ModelDesigner::loadFile(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return tr("Cannot open '%1': %2").arg(path, f.errorString());
  if (f.size() > kMaxConfigBytes)
    return tr("'%1' is %2 bytes: too large to be a run config.").arg(path).arg(f.size());
  const QByteArray bytes = f.readAll();
  json doc;
  try {
    doc = json::parse(bytes.constData(), bytes.constData() + bytes.size());
  } catch (const json::exception& e) {
    return tr("'%1' is not valid JSON: %2. The form was left as it was.").arg(path, QString::fromUtf8(e.what()));
  }
  // A relative data.path is taken from the config file's folder, as `traindeck-engine train`
  // reads it; the form keeps it absolute so that saving elsewhere keeps its meaning.
  if (doc.is_object() && doc.contains("data") && doc["data"].is_object() && doc["data"].contains("path") &&
      doc["data"]["path"].is_string()) {
    const QString p = QString::fromStdString(doc["data"]["path"].get<std::string>());
    if (!p.isEmpty() && QDir::isRelativePath(p))
      doc["data"]["path"] = QDir::cleanPath(QFileInfo(path).absoluteDir().absoluteFilePath(p)).toStdString();
  }
  const QMap<QString, QString> errors = Planner::fieldErrors(doc);
  if (!errors.isEmpty()) {
    QStringList lines;
    for (auto it = errors.constBegin(); it != errors.constEnd(); ++it) lines << it.key() + QStringLiteral(": ") + it.value();
    return tr("'%1' is not a valid run config; the form was left as it was:\n%2").arg(path, lines.join('\n'));
  }
  setConfig(doc);
  return {};
}

QString ModelDesigner::saveFile(const QString& path) {
  if (!isValid()) {
    QStringList lines;
    for (auto it = check_.errors.constBegin(); it != check_.errors.constEnd(); ++it)
      lines << it.key() + QStringLiteral(": ") + it.value();
    return tr("The config has errors; fix the marked fields before saving:\n%1").arg(lines.join('\n'));
  }
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return tr("Cannot write '%1': %2").arg(path, f.errorString());
  const std::string text = config().dump(2) + "\n";
  f.write(text.data(), (qint64)text.size());
  if (!f.commit()) return tr("Cannot write '%1': %2").arg(path, f.errorString());
  return {};
}

void ModelDesigner::loadClicked() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Load run config"), QString(),
                                                    tr("JSON configs (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  const QString err = loadFile(path);
  if (!err.isEmpty()) QMessageBox::warning(this, tr("Load run config"), err);
}

void ModelDesigner::saveClicked() {
  QString path = QFileDialog::getSaveFileName(this, tr("Save run config"), QString(), tr("JSON configs (*.json)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".json");
  const QString err = saveFile(path);
  if (!err.isEmpty()) QMessageBox::warning(this, tr("Save run config"), err);
}

}  // namespace td::gui
