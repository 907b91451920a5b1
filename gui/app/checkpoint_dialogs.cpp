#include "gui/app/checkpoint_dialogs.h"

#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSpinBox>
#include <QUrl>
#include <QVBoxLayout>

#include "gui/runs/checkpoint_jobs.h"

namespace td::gui {

GenerateDialog::GenerateDialog(const QString& title, QWidget* parent) : QDialog(parent), job_(new SampleJob(this)) {
  setWindowTitle(title);
  setObjectName(QStringLiteral("generate_dialog"));
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  prompt_ = new QLineEdit(this);
  prompt_->setObjectName(QStringLiteral("generate_prompt"));
  prompt_->setPlaceholderText(tr("Text to continue (empty: start a new document)"));
  tokens_ = new QSpinBox(this);
  tokens_->setObjectName(QStringLiteral("generate_tokens"));
  tokens_->setRange(1, 1 << 20);
  tokens_->setValue(200);
  temperature_ = new QDoubleSpinBox(this);
  temperature_->setObjectName(QStringLiteral("generate_temperature"));
  temperature_->setRange(0, 100);
  temperature_->setDecimals(2);
  temperature_->setSingleStep(0.1);
  temperature_->setValue(0.8);
  temperature_->setToolTip(tr("0: greedy (always the most likely token)"));
  top_k_ = new QSpinBox(this);
  top_k_->setObjectName(QStringLiteral("generate_top_k"));
  top_k_->setRange(0, 1 << 24);
  top_k_->setValue(40);
  top_k_->setToolTip(tr("Sample among the k most likely tokens (0: all)"));
  seed_ = new QSpinBox(this);
  seed_->setObjectName(QStringLiteral("generate_seed"));
  seed_->setRange(0, 2147483647);
  seed_->setValue(1);
  form->addRow(tr("Prompt"), prompt_);
  form->addRow(tr("Tokens"), tokens_);
  form->addRow(tr("Temperature"), temperature_);
  form->addRow(tr("Top-k"), top_k_);
  form->addRow(tr("Seed"), seed_);
  layout->addLayout(form);
  auto* buttons = new QHBoxLayout;
  generate_ = new QPushButton(tr("Generate"), this);
  generate_->setObjectName(QStringLiteral("generate_start"));
  generate_->setDefault(true);
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setObjectName(QStringLiteral("generate_stop"));
  stop_->setEnabled(false);
  buttons->addWidget(generate_);
  buttons->addWidget(stop_);
  buttons->addStretch(1);
  layout->addLayout(buttons);
  output_ = new QPlainTextEdit(this);
  output_->setObjectName(QStringLiteral("generate_output"));
  output_->setReadOnly(true);
  QFont mono(QStringLiteral("monospace"));
  mono.setStyleHint(QFont::TypeWriter);
  output_->setFont(mono);
  layout->addWidget(output_, 1);
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("generate_status"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);
  auto* close = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(close, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(close);
  resize(640, 480);

  connect(generate_, &QPushButton::clicked, this, &GenerateDialog::generate);
  connect(stop_, &QPushButton::clicked, job_, &SampleJob::stop);
  connect(job_, &SampleJob::textAppended, this, [this](const QString& text) {
    QScrollBar* bar = output_->verticalScrollBar();
    const bool at_end = bar->value() >= bar->maximum() - 4;
    output_->moveCursor(QTextCursor::End);
    output_->insertPlainText(text);
    if (at_end) bar->setValue(bar->maximum());
  });
  connect(job_, &SampleJob::finished, this, [this](bool ok, bool stopped, const QString& error) {
    generate_->setEnabled(!checkpoint_.isEmpty());
    stop_->setEnabled(false);
    if (ok) status_->setText(tr("Done: %n character(s).", nullptr, int(job_->text().size())));
    else if (stopped) status_->setText(tr("Stopped."));
    else status_->setText(tr("The engine failed: %1").arg(error));
  });
  connect(this, &QDialog::rejected, job_, &SampleJob::stop);
  generate_->setEnabled(false);
}

void GenerateDialog::setCheckpoint(const QString& dir, const QString& data) {
  checkpoint_ = dir;
  data_ = data;
  generate_->setEnabled(!dir.isEmpty() && !job_->isRunning());
  if (!dir.isEmpty()) status_->setText(tr("Checkpoint %1").arg(dir));
}

void GenerateDialog::setCheckpointError(const QString& message) {
  generate_->setEnabled(false);
  status_->setText(message);
}

void GenerateDialog::setWaitText(const QString& text) { status_->setText(text); }

void GenerateDialog::generate() {
  if (checkpoint_.isEmpty()) return;
  SampleJob::Options o;
  o.checkpoint = checkpoint_;
  o.data = data_;
  o.prompt = prompt_->text();
  o.tokens = tokens_->value();
  o.temperature = temperature_->value();
  o.top_k = top_k_->value();
  o.seed = quint64(seed_->value());
  output_->clear();
  QString error;
  if (!job_->start(o, &error)) {
    status_->setText(error);
    return;
  }
  generate_->setEnabled(false);
  stop_->setEnabled(true);
  status_->setText(tr("Generating %n token(s)…", nullptr, o.tokens));
}

ExportDialog::ExportDialog(const QString& title, const QString& default_dir, QWidget* parent)
    : QDialog(parent), job_(new ExportJob(this)) {
  setWindowTitle(title);
  setObjectName(QStringLiteral("export_dialog"));
  auto* layout = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  folder_ = new QLineEdit(default_dir, this);
  folder_->setObjectName(QStringLiteral("export_folder"));
  browse_ = new QPushButton(tr("Browse…"), this);
  row->addWidget(new QLabel(tr("Folder"), this));
  row->addWidget(folder_, 1);
  row->addWidget(browse_);
  layout->addLayout(row);
  auto* note = new QLabel(tr("A Hugging Face GPT-2 model (config.json, model.safetensors, tokenizer). An earlier export in the "
                             "folder is replaced; any other non-empty folder is refused."),
                          this);
  note->setWordWrap(true);
  layout->addWidget(note);
  progress_ = new QProgressBar(this);
  progress_->setObjectName(QStringLiteral("export_progress"));
  progress_->setRange(0, 100);
  progress_->setValue(0);
  layout->addWidget(progress_);
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("export_status"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);
  auto* buttons = new QHBoxLayout;
  export_ = new QPushButton(tr("Export"), this);
  export_->setObjectName(QStringLiteral("export_start"));
  export_->setDefault(true);
  export_->setEnabled(false);
  open_ = new QPushButton(tr("Open folder"), this);
  open_->setObjectName(QStringLiteral("export_open"));
  open_->setEnabled(false);
  auto* close = new QPushButton(tr("Close"), this);
  buttons->addWidget(export_);
  buttons->addWidget(open_);
  buttons->addStretch(1);
  buttons->addWidget(close);
  layout->addLayout(buttons);
  resize(560, 220);

  connect(close, &QPushButton::clicked, this, &QDialog::reject);
  connect(browse_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Export into"), folder_->text());
    if (!dir.isEmpty()) folder_->setText(dir);
  });
  connect(export_, &QPushButton::clicked, this, &ExportDialog::startExport);
  connect(open_, &QPushButton::clicked, this, [this] {
    if (!exported_.isEmpty()) QDesktopServices::openUrl(QUrl::fromLocalFile(exported_));
  });
  connect(job_, &ExportJob::progress, this, [this](int done, int total) {
    progress_->setRange(0, std::max(1, total));
    progress_->setValue(done);
  });
  connect(job_, &ExportJob::finished, this, [this](bool ok, const QString& message, const QString& out) {
    export_->setEnabled(!checkpoint_.isEmpty());
    browse_->setEnabled(true);
    status_->setText(ok ? message : tr("The export failed: %1").arg(message));
    if (ok) exported_ = out;
    open_->setEnabled(ok);
  });
}

void ExportDialog::setCheckpoint(const QString& dir, const QString& data) {
  checkpoint_ = dir;
  data_ = data;
  export_->setEnabled(!dir.isEmpty() && !job_->isRunning());
  if (!dir.isEmpty()) status_->setText(tr("Checkpoint %1").arg(dir));
}

void ExportDialog::setCheckpointError(const QString& message) {
  export_->setEnabled(false);
  status_->setText(message);
}

void ExportDialog::setWaitText(const QString& text) { status_->setText(text); }

void ExportDialog::startExport() {
  if (checkpoint_.isEmpty()) return;
  const QString out = folder_->text().trimmed();
  if (out.isEmpty()) {
    status_->setText(tr("Choose a folder to export into."));
    return;
  }
  QString error;
  exported_.clear();
  open_->setEnabled(false);
  progress_->setRange(0, 100);
  progress_->setValue(0);
  if (!job_->start(checkpoint_, out, data_, &error)) {
    status_->setText(error);
    return;
  }
  export_->setEnabled(false);
  browse_->setEnabled(false);
  status_->setText(tr("Exporting…"));
}

}  // namespace td::gui
