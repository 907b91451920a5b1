#include "gui/designer/estimate_panel.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "gui/plan/format.h"

namespace td::gui {

EstimatePanel::EstimatePanel(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);

  figures_ = new QWidget(this);
  auto* figures_layout = new QVBoxLayout(figures_);
  figures_layout->setContentsMargins(0, 0, 0, 0);

  auto* model_box = new QGroupBox(tr("Model"), figures_);
  auto* model_form = new QFormLayout(model_box);
  params_ = addRow(model_form, tr("Parameters"), "estimate_params");
  params_ne_ = addRow(model_form, tr("without embeddings"), "estimate_params_non_embedding");
  flops_ = addRow(model_form, tr("Training FLOPs per token"), "estimate_flops_per_token");
  tokens_step_ = addRow(model_form, tr("Tokens per step"), "estimate_tokens_per_step");
  kv_cache_ = addRow(model_form, tr("KV cache per sequence"), "estimate_kv_cache");
  figures_layout->addWidget(model_box);

  auto* mem_box = new QGroupBox(tr("Memory per rank (fp32)"), figures_);
  auto* mem_form = new QFormLayout(mem_box);
  weights_ = addRow(mem_form, tr("Weights"), "estimate_weights");
  grads_ = addRow(mem_form, tr("Gradients"), "estimate_grads");
  optimizer_ = addRow(mem_form, tr("Optimizer (AdamW m, v)"), "estimate_optimizer");
  activations_ = addRow(mem_form, tr("Activations"), "estimate_activations");
  total_ = addRow(mem_form, tr("Total"), "estimate_total");
  figures_layout->addWidget(mem_box);

  auto* speed_box = new QGroupBox(tr("On this machine"), figures_);
  auto* speed_form = new QFormLayout(speed_box);
  tokens_s_ = addRow(speed_form, tr("Tokens per second"), "estimate_tokens_per_s");
  run_time_ = addRow(speed_form, tr("Run time"), "estimate_run_time");
  basis_ = new QLabel(speed_box);
  basis_->setObjectName("estimate_basis");
  basis_->setWordWrap(true);
  speed_form->addRow(basis_);
  figures_layout->addWidget(speed_box);
  outer->addWidget(figures_);

  note_ = new QLabel(this);
  note_->setObjectName("estimate_note");
  note_->setWordWrap(true);
  note_->hide();
  outer->addWidget(note_);

  calibrate_ = new QPushButton(tr("Calibrate this CPU"), this);
  calibrate_->setObjectName("calibrate_button");
  calibrate_->setToolTip(tr("Measures this CPU's sgemm peak (a few seconds) so that tokens/s can be estimated; "
                            "the engine caches it for every later run."));
  calibrate_->hide();
  connect(calibrate_, &QPushButton::clicked, this, &EstimatePanel::calibrateRequested);
  outer->addWidget(calibrate_);
  outer->addStretch(1);
}

QLabel* EstimatePanel::addRow(QFormLayout* form, const QString& label, const char* object_name) {
  auto* value = new QLabel(QStringLiteral("–"));
  value->setObjectName(QString::fromLatin1(object_name));
  value->setTextInteractionFlags(Qt::TextSelectableByMouse);
  value->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  form->addRow(label, value);
  return value;
}

void EstimatePanel::showCheck(const PlanCheck& c) {
  has_plan_ = c.has_plan;
  // A peak without the engine's share (a cache from an older engine) is worth calibrating again.
  calibrated_ = c.peak_flops.has_value() && c.mfu_basis != MfuBasis::Assumed;
  data_path_error_ = c.errors.contains(QStringLiteral("data.path"));
  if (c.has_plan) {
    const Plan& p = c.plan;
    params_->setText(tr("%1 (%2)").arg(formatCount(p.n_params), formatSi((double)p.n_params)));
    params_ne_->setText(formatCount(p.n_params_non_embedding));
    flops_->setText(tr("%1FLOP").arg(formatSi(p.flops_per_token)));
    flops_->setToolTip(tr("6 N + 12 L C T (PaLM, appendix B): %1 FLOPs per token, forward and backward")
                           .arg(formatCount((uint64_t)p.flops_per_token)));
    tokens_step_->setText(formatCount(p.tokens_per_step));
    tokens_step_->setToolTip(tr("micro_batch %1 × grad_accum %2 × seq_len %3 (one rank)")
                              .arg(c.config.train.micro_batch)
                              .arg(c.config.train.grad_accum)
                              .arg(c.config.model.seq_len));
    kv_cache_->setText(formatBytes(p.kv_cache_bytes));
    kv_cache_->setToolTip(tr("Keys and values generation keeps for %1 tokens in bf16: 2 × n_layer × tokens × %2 key/value "
                             "heads × head size × 2 bytes (%3 per token)")
                              .arg(c.config.model.seq_len)
                              .arg(p.kv_heads)
                              .arg(formatBytes(p.kv_cache_bytes_per_token)));
    weights_->setText(formatBytes(p.weights_bytes));
    grads_->setText(formatBytes(p.grads_bytes));
    optimizer_->setText(formatBytes(p.optimizer_bytes));
    activations_->setText(formatBytes(p.activations_bytes));
    activations_->setToolTip(tr("What forward keeps for backward at micro_batch %1, plus backward scratch")
                                 .arg(c.config.train.micro_batch));
    total_->setText(formatBytes(p.total_bytes));
    if (c.peak_flops && c.tokens_per_s > 0) {
      tokens_s_->setText(tr("≈ %1 tokens/s").arg(formatSi(c.tokens_per_s)));
      run_time_->setText(tr("≈ %1 for %2 steps").arg(formatDuration(c.run_seconds)).arg(c.config.train.steps));
      const QString mfu_source = c.mfu_basis == MfuBasis::Runs          ? tr("the median of the last runs here")
                                 : c.mfu_basis == MfuBasis::Calibration ? tr("the engine's measured share of that peak")
                                                                        : tr("assumed: calibrate to measure the engine's share");
      basis_->setText(tr("sgemm peak %1FLOP/s with %2 threads × MFU %3 (%4) ÷ FLOPs per token; training steps only "
                         "(evaluations and samples add to it)")
                          .arg(formatSi(*c.peak_flops))
                          .arg(c.threads)
                          .arg(c.mfu, 0, 'f', 2)
                          .arg(mfu_source));
    } else {
      tokens_s_->setText(tr("not calibrated"));
      run_time_->setText(tr("not calibrated"));
      basis_->setText(tr("This CPU's peak with %1 threads is not measured yet: calibrate it to estimate tokens/s.")
                          .arg(c.threads));
    }
  }
  figures_->setEnabled(c.has_plan);
  updateNote();
}

void EstimatePanel::setCalibrating(bool running) {
  calibrating_ = running;
  if (running) calibration_error_.clear();
  updateNote();
}

void EstimatePanel::setCalibrationError(const QString& message) {
  calibration_error_ = message;
  updateNote();
}

void EstimatePanel::updateNote() {
  QStringList lines;
  if (!has_plan_) lines << tr("Fix the marked fields to update the estimates (the figures shown are of the last valid config).");
  else if (data_path_error_) lines << tr("The estimates are valid; choose a dataset (data.path) before a run.");
  if (calibrating_) lines << tr("Calibrating this CPU (a few seconds)…");
  if (!calibration_error_.isEmpty()) lines << calibration_error_;
  note_->setText(lines.join('\n'));
  note_->setVisible(!lines.isEmpty());
  calibrate_->setVisible(!calibrated_ || calibrating_);
  calibrate_->setEnabled(!calibrating_);
}

}  // namespace td::gui
