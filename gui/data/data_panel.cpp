// DataPanel: sources, tokenizer, prepare with progress and cancel, manifest, registered
// datasets (data_panel.h).
#include "gui/data/data_panel.h"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "gui/core/paths.h"
#include "gui/core/store_client.h"
#include "gui/data/manifest_view.h"
#include "gui/prepare/prepare_job.h"
#include "store/store.h"

namespace td::gui {

namespace {

enum DatasetColumn { kName, kTokenizer, kVocab, kTrain, kVal, kFolder, kColumns };

QJsonObject parseManifest(const std::string& text) {
  return QJsonDocument::fromJson(QByteArray::fromStdString(text)).object();
}

}  // namespace

DataPanel::DataPanel(StoreClient* store, QWidget* parent) : QWidget(parent) {
  job_ = new PrepareJob(this);
  connect(job_, &PrepareJob::progress, this, &DataPanel::onProgress);
  connect(job_, &PrepareJob::finished, this, &DataPanel::onFinished);
  connect(job_, &PrepareJob::failed, this, &DataPanel::onFailed);
  connect(job_, &PrepareJob::cancelled, this, &DataPanel::onCancelled);
  buildUi();
  setStoreClient(store);
}

DataPanel::~DataPanel() = default;

void DataPanel::buildUi() {
  setObjectName(QStringLiteral("dataPanel"));
  auto* top = new QVBoxLayout(this);

  // -- what to prepare
  auto* form_box = new QGroupBox(tr("Prepare a dataset"), this);
  auto* form_layout = new QVBoxLayout(form_box);
  sources_ = new QListWidget(form_box);
  sources_->setObjectName(QStringLiteral("sourceList"));
  sources_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  sources_->setToolTip(tr("Text files (.txt, .md, no extension), JSON Lines (.jsonl) and folders (walked recursively)"));
  add_files_ = new QPushButton(tr("Add files…"), form_box);
  add_files_->setObjectName(QStringLiteral("addFilesButton"));
  add_folder_ = new QPushButton(tr("Add folder…"), form_box);
  add_folder_->setObjectName(QStringLiteral("addFolderButton"));
  remove_ = new QPushButton(tr("Remove"), form_box);
  remove_->setObjectName(QStringLiteral("removeSourceButton"));
  auto* src_buttons = new QHBoxLayout;
  src_buttons->addWidget(add_files_);
  src_buttons->addWidget(add_folder_);
  src_buttons->addWidget(remove_);
  src_buttons->addStretch(1);
  form_layout->addWidget(new QLabel(tr("Sources:"), form_box));
  form_layout->addWidget(sources_, 1);
  form_layout->addLayout(src_buttons);

  auto* form = new QFormLayout;
  tokenizer_ = new QComboBox(form_box);
  tokenizer_->setObjectName(QStringLiteral("tokenizerCombo"));
  tokenizer_->addItem(tr("Byte (257 ids: 256 bytes + end of text)"), QStringLiteral("byte"));
  tokenizer_->addItem(tr("BPE (sentencepiece, trained on the corpus)"), QStringLiteral("bpe"));
  vocab_ = new QSpinBox(form_box);
  vocab_->setObjectName(QStringLiteral("vocabSpin"));
  vocab_->setRange(300, 1 << 20);
  vocab_->setValue(8000);
  vocab_->setToolTip(tr("BPE vocabulary size: ids in all (256 byte pieces, 3 special tokens, merges)"));
  val_fraction_ = new QDoubleSpinBox(form_box);
  val_fraction_->setObjectName(QStringLiteral("valFractionSpin"));
  val_fraction_->setRange(0.0, 0.5);
  val_fraction_->setDecimals(3);
  val_fraction_->setSingleStep(0.01);
  val_fraction_->setValue(0.1);
  val_fraction_->setToolTip(tr("The last fraction of the token stream is kept for validation"));
  output_ = new QLineEdit(form_box);
  output_->setObjectName(QStringLiteral("outputEdit"));
  output_->setPlaceholderText(tr("dataset folder to write"));
  browse_ = new QPushButton(tr("Browse…"), form_box);
  browse_->setObjectName(QStringLiteral("browseOutputButton"));
  auto* out_row = new QHBoxLayout;
  out_row->addWidget(output_, 1);
  out_row->addWidget(browse_);
  form->addRow(tr("Tokenizer:"), tokenizer_);
  form->addRow(tr("vocab_size:"), vocab_);
  form->addRow(tr("val_fraction:"), val_fraction_);
  form->addRow(tr("Output folder:"), out_row);
  form_layout->addLayout(form);

  prepare_ = new QPushButton(tr("Prepare"), form_box);
  prepare_->setObjectName(QStringLiteral("prepareButton"));
  prepare_->setDefault(true);
  cancel_ = new QPushButton(tr("Cancel"), form_box);
  cancel_->setObjectName(QStringLiteral("cancelButton"));
  progress_ = new QProgressBar(form_box);
  progress_->setObjectName(QStringLiteral("progressBar"));
  progress_->setRange(0, 100);
  progress_->setValue(0);
  auto* run_row = new QHBoxLayout;
  run_row->addWidget(prepare_);
  run_row->addWidget(cancel_);
  run_row->addWidget(progress_, 1);
  form_layout->addLayout(run_row);
  status_ = new QLabel(form_box);
  status_->setObjectName(QStringLiteral("statusLabel"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  form_layout->addWidget(status_);

  // -- registered datasets and the manifest
  auto* list_box = new QGroupBox(tr("Registered datasets"), this);
  auto* list_layout = new QVBoxLayout(list_box);
  dataset_list_ = new QTreeWidget(list_box);
  dataset_list_->setObjectName(QStringLiteral("datasetList"));
  dataset_list_->setColumnCount(kColumns);
  dataset_list_->setHeaderLabels({tr("Name"), tr("Tokenizer"), tr("vocab_size"), tr("Train tokens"), tr("Val tokens"),
                                  tr("Folder")});
  dataset_list_->setRootIsDecorated(false);
  dataset_list_->setSelectionMode(QAbstractItemView::SingleSelection);
  dataset_list_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  forget_ = new QPushButton(tr("Forget…"), list_box);
  forget_->setObjectName(QStringLiteral("forgetButton"));
  forget_->setToolTip(tr("Remove the dataset from this store's list; its files stay on disk"));
  use_ = new QPushButton(tr("Use in design"), list_box);
  use_->setObjectName(QStringLiteral("useDatasetButton"));
  use_->setToolTip(tr("Train the design on this dataset: sets data.path and model.vocab_size to its tokenizer's"));
  auto* list_buttons = new QHBoxLayout;
  list_buttons->addWidget(use_);
  list_buttons->addStretch(1);
  list_buttons->addWidget(forget_);
  list_layout->addWidget(dataset_list_, 1);
  list_layout->addLayout(list_buttons);

  manifest_ = new ManifestView(this);
  auto* right = new QSplitter(Qt::Vertical, this);
  right->addWidget(list_box);
  right->addWidget(manifest_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(form_box);
  split->addWidget(right);
  split->setStretchFactor(1, 1);
  top->addWidget(split);

  // -- wiring
  connect(add_files_, &QPushButton::clicked, this, [this] {
    const QStringList files = QFileDialog::getOpenFileNames(
        this, tr("Add text files"), QString(), tr("Text (*.txt *.md *.jsonl);;All files (*)"));
    for (const QString& f : files) addSource(f);
  });
  connect(add_folder_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Add a folder of text files"));
    if (!dir.isEmpty()) addSource(dir);
  });
  connect(remove_, &QPushButton::clicked, this, [this] {
    qDeleteAll(sources_->selectedItems());
    updateDefaultOutput();
    updateEnabled();
  });
  connect(sources_, &QListWidget::itemSelectionChanged, this, &DataPanel::updateEnabled);
  connect(tokenizer_, &QComboBox::currentIndexChanged, this, [this] {
    updateDefaultOutput();
    updateEnabled();
  });
  connect(vocab_, &QSpinBox::valueChanged, this, &DataPanel::updateDefaultOutput);
  connect(output_, &QLineEdit::textEdited, this, [this] { output_custom_ = !output_->text().isEmpty(); });
  connect(browse_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder to write the dataset in"));
    if (!dir.isEmpty()) setOutputDir(QDir(dir).filePath(QFileInfo(output_->text()).fileName()));
  });
  connect(prepare_, &QPushButton::clicked, this, &DataPanel::startPrepare);
  connect(cancel_, &QPushButton::clicked, this, &DataPanel::cancelPrepare);
  connect(dataset_list_, &QTreeWidget::itemSelectionChanged, this, &DataPanel::onDatasetSelected);
  connect(use_, &QPushButton::clicked, this, [this] {
    const QList<QTreeWidgetItem*> sel = dataset_list_->selectedItems();
    if (!sel.isEmpty()) useDataset(sel.front()->data(kName, Qt::UserRole).toString());
  });
  connect(dataset_list_, &QTreeWidget::itemDoubleClicked, this,
          [this](QTreeWidgetItem* it) { useDataset(it->data(kName, Qt::UserRole).toString()); });
  connect(forget_, &QPushButton::clicked, this, [this] {
    const QList<QTreeWidgetItem*> sel = dataset_list_->selectedItems();
    if (!sel.isEmpty()) forgetDataset(sel.front()->data(kName, Qt::UserRole).toString());
  });
  updateEnabled();
}

void DataPanel::setStoreClient(StoreClient* store) {
  store_ = store;
  job_->setStoreClient(store);
  updateDefaultOutput();
  reloadDatasets();
}

// ---- sources and options ---------------------------------------------------------------------

void DataPanel::addSource(const QString& path) {
  const QString abs = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
  if (path.isEmpty() || !sources_->findItems(abs, Qt::MatchExactly).isEmpty()) return;
  auto* it = new QListWidgetItem(abs, sources_);
  it->setToolTip(abs);
  it->setIcon(style()->standardIcon(QFileInfo(abs).isDir() ? QStyle::SP_DirIcon : QStyle::SP_FileIcon));
  updateDefaultOutput();
  updateEnabled();
}

QStringList DataPanel::sources() const {
  QStringList out;
  for (int i = 0; i < sources_->count(); ++i) out << sources_->item(i)->text();
  return out;
}

void DataPanel::setTokenizer(const QString& kind, int vocab) {
  const int i = tokenizer_->findData(kind.toLower());
  if (i >= 0) tokenizer_->setCurrentIndex(i);
  if (kind.toLower() == QStringLiteral("bpe")) vocab_->setValue(vocab);
}

void DataPanel::setValFraction(double f) { val_fraction_->setValue(f); }

void DataPanel::setOutputDir(const QString& path) {
  output_->setText(path);
  output_custom_ = !path.isEmpty();
  updateEnabled();
}

QString DataPanel::outputDir() const { return output_->text().trimmed(); }

QString DataPanel::tokenizerKind() const { return tokenizer_->currentData().toString(); }

// <store folder>/datasets/<first source's name>-<tokenizer>, unless the person chose a folder.
void DataPanel::updateDefaultOutput() {
  if (output_custom_) return;
  if (!store_ || sources_->count() == 0) {
    output_->clear();
    return;
  }
  const QFileInfo first(sources_->item(0)->text());
  QString base = first.isDir() ? first.fileName() : first.completeBaseName();
  base.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]+")), QStringLiteral("_"));
  if (base.isEmpty() || base.startsWith(QLatin1Char('.'))) base.prepend(QStringLiteral("corpus"));
  const QString suffix =
      tokenizerKind() == QStringLiteral("bpe") ? QStringLiteral("bpe%1").arg(vocab_->value()) : QStringLiteral("byte");
  output_->setText(QDir(datasetsRoot(store_->path())).filePath(base + QLatin1Char('-') + suffix));
}

void DataPanel::updateEnabled() {
  const bool busy = job_->isRunning();
  for (QWidget* w : std::initializer_list<QWidget*>{sources_, add_files_, add_folder_, tokenizer_, val_fraction_, output_,
                                                    browse_})
    w->setEnabled(!busy);
  remove_->setEnabled(!busy && !sources_->selectedItems().isEmpty());
  vocab_->setEnabled(!busy && tokenizerKind() == QStringLiteral("bpe"));
  prepare_->setEnabled(!busy && sources_->count() > 0 && !outputDir().isEmpty());
  cancel_->setEnabled(job_->state() == PrepareJob::State::Running);
  forget_->setEnabled(store_ && !dataset_list_->selectedItems().isEmpty());
  use_->setEnabled(!dataset_list_->selectedItems().isEmpty());
}

void DataPanel::setStatus(const QString& text, bool error) {
  status_->setText(text);
  status_->setStyleSheet(error ? QStringLiteral("color: #c62828;") : QString());
}

// ---- prepare -----------------------------------------------------------------------------------

bool DataPanel::startPrepare() {
  if (job_->isRunning()) return false;
  if (sources_->count() == 0) {
    setStatus(tr("Add files or folders to prepare first."), true);
    return false;
  }
  if (outputDir().isEmpty()) {
    setStatus(tr("Choose the output folder first."), true);
    return false;
  }
  PrepareRequest r;
  r.inputs = sources();
  r.out_dir = outputDir();
  r.tokenizer = tokenizerKind();
  r.vocab_size = r.tokenizer == QStringLiteral("bpe") ? vocab_->value() : 0;
  r.val_fraction = val_fraction_->value();
  if (!job_->start(r)) return false;  // failed() follows with the reason
  progress_->setRange(0, 0);  // busy until the first report (BPE training reports none)
  setStatus(r.tokenizer == QStringLiteral("bpe") ? tr("Training the BPE tokenizer and encoding…")
                                                 : tr("Encoding…"));
  updateEnabled();
  return true;
}

void DataPanel::cancelPrepare() {
  if (job_->state() != PrepareJob::State::Running) return;
  job_->cancel();
  setStatus(tr("Cancelling…"));
  updateEnabled();
}

bool DataPanel::isPreparing() const { return job_->isRunning(); }

void DataPanel::onProgress(qint64 done, qint64 total) {
  progress_->setRange(0, 100);
  progress_->setValue(total > 0 ? static_cast<int>(done * 100 / total) : 100);
  progress_->setFormat(tr("%p% (%1 of %2)").arg(QLocale().formattedDataSize(done), QLocale().formattedDataSize(total)));
}

void DataPanel::onFinished(const QJsonObject& manifest, const QString& out) {
  progress_->setRange(0, 100);
  progress_->setValue(100);
  progress_->setFormat(QStringLiteral("%p%"));
  manifest_->showManifest(manifest, out);
  const QJsonObject splits = manifest.value(QStringLiteral("splits")).toObject();
  const auto tokens = [&](const char* split) {
    return QLocale().toString(static_cast<qlonglong>(
        splits.value(QLatin1String(split)).toObject().value(QStringLiteral("tokens")).toDouble()));
  };
  setStatus(job_->reused() ? tr("Already prepared from the same files and options: reusing %1.").arg(out)
                           : tr("Prepared %1: %2 train + %3 val tokens.").arg(out, tokens("train"), tokens("val")));
  updateEnabled();
  if (store_) {
    store_->run<std::vector<td::store::Dataset>>(
        this, [](td::store::Store& s) { return s.list_datasets(); },
        [this, out](std::vector<td::store::Dataset> rows) { showDatasets(std::move(rows), out); },
        [this](const QString& msg) { setStatus(msg, true); });
  }
  emit datasetReady(out, manifest.value(QStringLiteral("tokenizer")).toObject().value(QStringLiteral("vocab_size")).toInt());
}

void DataPanel::onFailed(const QString& message) {
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_->setFormat(QStringLiteral("%p%"));
  setStatus(message, true);
  updateEnabled();
}

void DataPanel::onCancelled() {
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_->setFormat(QStringLiteral("%p%"));
  setStatus(tr("Cancelled: nothing was kept."));
  updateEnabled();
}

// ---- registered datasets ---------------------------------------------------------------------

void DataPanel::reloadDatasets() {
  if (!store_) {
    showDatasets({}, QString());
    return;
  }
  store_->run<std::vector<td::store::Dataset>>(
      this, [](td::store::Store& s) { return s.list_datasets(); },
      [this](std::vector<td::store::Dataset> rows) { showDatasets(std::move(rows), QString()); },
      [this](const QString& msg) { setStatus(msg, true); });
}

void DataPanel::registerDataset(const QString& path) {
  if (!store_) return;
  const QString dataset = QFileInfo(path).absoluteFilePath();
  store_->exec(
      this,
      [dataset](td::store::Store& s) {
        QFile f(dataset + QStringLiteral("/manifest.json"));
        if (!f.open(QIODevice::ReadOnly)) return;
        s.register_dataset(dataset.toStdString(), f.readAll().toStdString());
      },
      [this] { reloadDatasets(); }, [this](const QString& msg) { setStatus(msg, true); });
}

void DataPanel::showDatasets(std::vector<td::store::Dataset> rows, const QString& select) {
  QString keep = select;
  if (keep.isEmpty() && !dataset_list_->selectedItems().isEmpty())
    keep = dataset_list_->selectedItems().front()->data(kName, Qt::UserRole).toString();
  datasets_ = std::move(rows);
  const QSignalBlocker block(dataset_list_);
  dataset_list_->clear();
  QStringList paths;
  QTreeWidgetItem* selected = nullptr;
  const QLocale loc;
  for (const td::store::Dataset& d : datasets_) {
    const QString path = QString::fromStdString(d.path);
    paths << path;
    auto* it = new QTreeWidgetItem(dataset_list_);
    it->setText(kName, QString::fromStdString(d.name));
    it->setData(kName, Qt::UserRole, path);
    it->setText(kTokenizer, QString::fromStdString(d.tokenizer));
    it->setText(kVocab, loc.toString(static_cast<qlonglong>(d.vocab_size)));
    it->setText(kTrain, loc.toString(static_cast<qlonglong>(d.train_tokens)));
    it->setText(kVal, loc.toString(static_cast<qlonglong>(d.val_tokens)));
    it->setText(kFolder, path);
    it->setToolTip(kFolder, path);
    for (int c : {kVocab, kTrain, kVal}) it->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
    if (path == keep) selected = it;
  }
  if (selected) {
    selected->setSelected(true);
    dataset_list_->setCurrentItem(selected);
  }
  updateEnabled();
  emit datasetsChanged(paths);
}

QStringList DataPanel::datasets() const {
  QStringList out;
  for (const td::store::Dataset& d : datasets_) out << QString::fromStdString(d.path);
  return out;
}

int DataPanel::datasetVocabSize(const QString& path) const {
  for (const td::store::Dataset& d : datasets_)
    if (QString::fromStdString(d.path) == path) return static_cast<int>(d.vocab_size);
  return 0;
}

QString DataPanel::datasetTokenizer(const QString& path) const {
  for (const td::store::Dataset& d : datasets_)
    if (QString::fromStdString(d.path) == path) return QString::fromStdString(d.tokenizer);
  return {};
}

bool DataPanel::useDataset(const QString& path) {
  const int vocab = datasetVocabSize(path);
  if (vocab <= 0) return false;
  setStatus(tr("The design now trains on %1 (vocab_size %2).").arg(path).arg(vocab));
  emit datasetChosen(path, vocab);
  return true;
}

bool DataPanel::selectDataset(const QString& path) {
  for (int i = 0; i < dataset_list_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* it = dataset_list_->topLevelItem(i);
    if (it->data(kName, Qt::UserRole).toString() == path) {
      dataset_list_->setCurrentItem(it);
      it->setSelected(true);
      return true;
    }
  }
  return false;
}

void DataPanel::onDatasetSelected() {
  updateEnabled();
  const QList<QTreeWidgetItem*> sel = dataset_list_->selectedItems();
  if (sel.isEmpty()) return;
  const QString path = sel.front()->data(kName, Qt::UserRole).toString();
  for (const td::store::Dataset& d : datasets_)
    if (QString::fromStdString(d.path) == path) manifest_->showManifest(parseManifest(d.manifest_json), path);
}

void DataPanel::forgetDataset(const QString& path) {
  if (!store_ || path.isEmpty()) return;
  auto* box = new QMessageBox(QMessageBox::Question, tr("Forget dataset"),
                              tr("Remove %1 from this store's list of datasets?\n\nIts files stay on disk.").arg(path),
                              QMessageBox::Yes | QMessageBox::Cancel, this);
  box->setObjectName(QStringLiteral("forgetConfirm"));
  box->setDefaultButton(QMessageBox::Cancel);
  box->setAttribute(Qt::WA_DeleteOnClose);
  connect(box, &QMessageBox::buttonClicked, this, [this, box, path](QAbstractButton* b) {
    if (box->standardButton(b) != QMessageBox::Yes || !store_) return;
    const std::string p = path.toStdString();
    store_->exec(
        this, [p](td::store::Store& s) { s.forget_dataset(p); },
        [this, path] {
          manifest_->clearManifest();
          setStatus(tr("Forgot %1 (its files are still on disk).").arg(path));
          reloadDatasets();
        },
        [this](const QString& msg) { setStatus(msg, true); });
  });
  box->open();  // window-modal, no nested event loop
}

}  // namespace td::gui
