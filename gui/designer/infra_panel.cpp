#include "gui/designer/infra_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QScrollBar>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "gui/designer/memory_bars.h"
#include "gui/plan/format.h"

namespace td::gui {

namespace {

QString count(int n) { return n > 0 ? QString::number(n) : QStringLiteral("–"); }

// Money and device-hours: two decimals, but a tiny budget's 0.0004 is not "0.00".
QString amount(double v) {
  if (v > 0 && v < 0.01) return QString::number(v, 'g', 2);
  return QString::number(v, 'f', 2);
}

// A form that stays inside a narrow tab: a label too long for its value goes above it.
void narrowForm(QFormLayout* form) {
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
}

// A combo as wide as the tab allows, not as its longest entry.
void narrowCombo(QComboBox* c) {
  c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  c->setMinimumContentsLength(12);
}

}  // namespace

std::optional<double> parseTokenCount(const QString& text) {
  QString t = text.trimmed();
  t.remove(QLatin1Char(',')).remove(QLatin1Char('_')).remove(QLatin1Char(' '));
  if (t.isEmpty()) return 0.0;
  double mult = 1;
  const QChar last = t.back();
  if (last == QLatin1Char('k') || last == QLatin1Char('K')) mult = 1e3;
  else if (last == QLatin1Char('M')) mult = 1e6;
  else if (last == QLatin1Char('G')) mult = 1e9;
  else if (last == QLatin1Char('T')) mult = 1e12;
  if (mult != 1) t.chop(1);
  bool ok = false;
  const double v = t.toDouble(&ok);
  if (!ok || !std::isfinite(v) || v < 0) return std::nullopt;
  return v * mult;
}

InfraPanel::InfraPanel(Planner* planner, QWidget* parent) : QWidget(parent), planner_(planner) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);

  auto* in_box = new QGroupBox(tr("Cluster and budget"), this);
  auto* in_form = new QFormLayout(in_box);
  narrowForm(in_form);
  device_ = new QComboBox(in_box);
  narrowCombo(device_);
  device_->setObjectName(QStringLiteral("infra_device"));
  device_->setToolTip(tr("A device of the catalogue: the built-in datasheet figures merged with your "
                         "~/.config/traindeck/devices.json (docs/planner.md)"));
  in_form->addRow(tr("Device"), device_);
  world_ = new QSpinBox(in_box);
  world_->setObjectName(QStringLiteral("infra_world_size"));
  world_->setRange(1, 1000000);
  world_->setValue(8);
  world_->setToolTip(tr("Devices, one engine rank each: data-parallel replicas × the tensor-parallel degree"));
  in_form->addRow(tr("Devices"), world_);
  tokens_ = new QLineEdit(in_box);
  tokens_->setObjectName(QStringLiteral("infra_tokens"));
  tokens_->setPlaceholderText(tr("train.steps × tokens per step"));
  tokens_->setToolTip(tr("Tokens to train on: 1e9, 2.5G, 300M … (empty: train.steps × tokens per step)"));
  in_form->addRow(tr("Token budget"), tokens_);
  mfu_ = new QDoubleSpinBox(in_box);
  mfu_->setObjectName(QStringLiteral("infra_mfu"));
  mfu_->setRange(1, 100);
  mfu_->setDecimals(1);
  mfu_->setSuffix(QStringLiteral(" %"));
  mfu_->setValue(40);
  mfu_->setToolTip(tr("Model FLOPs utilisation assumed: achieved model FLOP/s ÷ the device's dense peak "
                      "(40 % is typical of a well-tuned GPU run; for this machine's CPU, the MFU of the This machine "
                      "estimate, until you set one)"));
  in_form->addRow(tr("MFU"), mfu_);
  deadline_ = new QDoubleSpinBox(in_box);
  deadline_->setObjectName(QStringLiteral("infra_deadline"));
  deadline_->setRange(0, 1e7);
  deadline_->setDecimals(2);
  deadline_->setSuffix(tr(" h"));
  deadline_->setSpecialValueText(tr("none"));
  deadline_->setToolTip(tr("Wall-clock hours the training must finish in (none: no deadline)"));
  in_form->addRow(tr("Deadline"), deadline_);
  price_ = new QDoubleSpinBox(in_box);
  price_->setObjectName(QStringLiteral("infra_price"));
  price_->setRange(0, 1e6);
  price_->setDecimals(2);
  price_->setSpecialValueText(tr("catalogue"));
  price_->setToolTip(tr("Price per device-hour of the chosen device (catalogue: the price in your devices.json, if any)"));
  in_form->addRow(tr("Price per device-hour"), price_);
  zero_ = new QComboBox(in_box);
  narrowCombo(zero_);
  zero_->setObjectName(QStringLiteral("infra_zero"));
  zero_->addItem(tr("0: all-reduce, everything replicated"), 0);
  zero_->addItem(tr("1: optimizer states sharded"), 1);
  zero_->addItem(tr("2: + gradients sharded"), 2);
  zero_->addItem(tr("3: + parameters sharded (fp32 only)"), 3);
  zero_->setToolTip(tr("ZeRO stage (Rajbhandari et al. 2020); the engine trains stages 0 to 3, stage 3 in fp32 only"));
  in_form->addRow(tr("ZeRO stage"), zero_);
  tp_ = new QSpinBox(in_box);
  tp_->setObjectName(QStringLiteral("infra_tensor_parallel"));
  tp_->setRange(1, 64);
  tp_->setValue(1);
  tp_->setToolTip(tr("Devices per tensor-parallel group (Megatron-LM; train.tensor_parallel): each holds 1/N of every layer, "
                     "so Devices must be a multiple of it"));
  in_form->addRow(tr("Tensor parallel"), tp_);
  outer->addWidget(in_box);

  figures_ = new QWidget(this);
  auto* fig_layout = new QVBoxLayout(figures_);
  fig_layout->setContentsMargins(0, 0, 0, 0);
  device_info_ = new QLabel(figures_);
  device_info_->setObjectName(QStringLiteral("infra_device_info"));
  device_info_->setWordWrap(true);
  fig_layout->addWidget(device_info_);

  auto* mem_box = new QGroupBox(tr("Memory per device by ZeRO stage"), figures_);
  auto* mem_layout = new QVBoxLayout(mem_box);
  bars_ = new MemoryBars(mem_box);
  bars_->setObjectName(QStringLiteral("infra_memory_bars"));
  mem_layout->addWidget(bars_);
  auto* mem_form = new QFormLayout;
  narrowForm(mem_form);
  for (int s = 0; s < 4; ++s)
    memory_[s] = addRow(mem_form, tr("ZeRO-%1").arg(s), QStringLiteral("infra_memory_%1").arg(s).toLatin1().constData());
  mem_layout->addLayout(mem_form);
  fig_layout->addWidget(mem_box);

  auto* time_box = new QGroupBox(tr("Compute, time and bandwidth"), figures_);
  auto* time_form = new QFormLayout(time_box);
  narrowForm(time_form);
  budget_ = addRow(time_form, tr("Token budget"), "infra_budget");
  flops_ = addRow(time_form, tr("Training FLOPs"), "infra_flops");
  tokens_s_ = addRow(time_form, tr("Throughput (all devices)"), "infra_tokens_per_s");
  time_ = addRow(time_form, tr("Time to train the budget"), "infra_time");
  step_time_ = addRow(time_form, tr("Compute time per step"), "infra_step_time");
  collective_ = addRow(time_form, tr("Collective bytes per step and device"), "infra_collective");
  network_ = addRow(time_form, tr("Bus bandwidth to hide them"), "infra_network");
  storage_ = addRow(time_form, tr("Storage read bandwidth"), "infra_storage");
  cost_ = addRow(time_form, tr("Cost"), "infra_cost");
  fig_layout->addWidget(time_box);

  auto* needs_box = new QGroupBox(tr("Devices needed per type"), figures_);
  auto* needs_layout = new QVBoxLayout(needs_box);
  needs_ = new QTableWidget(0, 8, needs_box);
  needs_->setObjectName(QStringLiteral("infra_needs"));
  needs_->setHorizontalHeaderLabels({tr("Device"), tr("Precision"), tr("Fit"), tr("Deadline"), tr("Needed"), tr("Time"),
                                     tr("Device-hours"), tr("Cost")});
  needs_->horizontalHeaderItem(2)->setToolTip(tr("Fewest devices whose memory holds the chosen ZeRO stage (– never)"));
  needs_->horizontalHeaderItem(3)->setToolTip(tr("Fewest devices that finish the budget by the deadline at the MFU"));
  needs_->horizontalHeaderItem(4)->setToolTip(tr("The larger of the two (– impossible)"));
  needs_->verticalHeader()->setVisible(false);
  needs_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  needs_->setSelectionMode(QAbstractItemView::NoSelection);
  needs_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  needs_layout->addWidget(needs_);
  fig_layout->addWidget(needs_box);
  outer->addWidget(figures_);

  note_ = new QLabel(this);
  note_->setObjectName(QStringLiteral("infra_note"));
  note_->setWordWrap(true);
  note_->hide();
  outer->addWidget(note_);
  outer->addStretch(1);

  reloadDevices();
  // A calibration or a reloaded catalogue: the designer's revalidation (connected after this)
  // recomputes; the device list is refreshed first.
  connect(planner_, &Planner::estimatesChanged, this, &InfraPanel::reloadDevices);
  auto changed = [this] {
    if (!filling_) recompute();
  };
  connect(device_, &QComboBox::currentIndexChanged, this, changed);
  connect(zero_, &QComboBox::currentIndexChanged, this, changed);
  connect(world_, &QSpinBox::valueChanged, this, changed);
  connect(tp_, &QSpinBox::valueChanged, this, changed);
  connect(tokens_, &QLineEdit::textChanged, this, changed);
  connect(mfu_, &QDoubleSpinBox::valueChanged, this, [this] {
    if (filling_) return;
    mfu_edited_ = true;
    recompute();
  });
  connect(deadline_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(price_, &QDoubleSpinBox::valueChanged, this, changed);
}

QLabel* InfraPanel::addRow(QFormLayout* form, const QString& label, const char* object_name) {
  auto* value = new QLabel(QStringLiteral("–"));
  value->setObjectName(QString::fromLatin1(object_name));
  value->setTextInteractionFlags(Qt::TextSelectableByMouse);
  value->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  value->setWordWrap(true);  // "1.2 k (2.50 per device-hour)" wraps in a narrow tab
  form->addRow(label, value);
  return value;
}

void InfraPanel::reloadDevices() {
  const QString keep = device_->currentData().toString();
  filling_ = true;
  device_->clear();
  for (const td::Device& d : planner_->devices().devices) {
    const QString name = QString::fromStdString(d.name);
    QString text = name;
    if (d.planning_only) text += tr(" (planning only)");
    if (d.this_machine) text += tr(" (this machine)");
    device_->addItem(text, name);
    device_->setItemData(device_->count() - 1, QString::fromStdString(d.description), Qt::ToolTipRole);
  }
  int at = device_->findData(keep.isEmpty() ? QStringLiteral("H100") : keep);
  device_->setCurrentIndex(at >= 0 ? at : 0);
  filling_ = false;
}

td::ClusterOptions InfraPanel::options(bool* ok) const {
  td::ClusterOptions o;
  o.device = device_->currentData().toString().toStdString();
  o.world_size = world_->value();
  o.zero = zero_->currentData().toInt();
  o.tensor_parallel = tp_->value();
  const std::optional<double> tokens = parseTokenCount(tokens_->text());
  if (ok) *ok = tokens.has_value();
  o.tokens = tokens.value_or(0);
  o.mfu = mfu_->value() / 100.0;
  o.deadline_hours = deadline_->value();
  if (price_->value() > 0) o.price_per_hour = price_->value();
  return o;
}

void InfraPanel::setOptions(const td::ClusterOptions& o) {
  filling_ = true;
  const int at = device_->findData(QString::fromStdString(o.device), Qt::UserRole, Qt::MatchFixedString);
  if (at >= 0) device_->setCurrentIndex(at);
  world_->setValue(o.world_size);
  zero_->setCurrentIndex(std::clamp(o.zero, 0, 3));
  tp_->setValue(std::clamp(o.tensor_parallel, 1, 64));
  tokens_->setText(o.tokens > 0 ? QString::number(o.tokens, 'g', 12) : QString());
  mfu_->setValue(o.mfu * 100.0);
  mfu_edited_ = true;
  deadline_->setValue(o.deadline_hours);
  price_->setValue(o.price_per_hour.value_or(0));
  filling_ = false;
  recompute();
}

void InfraPanel::showCheck(const PlanCheck& check) {
  check_ = check;
  recompute();
}

void InfraPanel::followMfu() {
  if (mfu_edited_) return;
  const std::string name = device_->currentData().toString().toStdString();
  bool this_machine = false;
  for (const td::Device& d : planner_->devices().devices)
    if (d.name == name) this_machine = d.this_machine;
  const double want = this_machine && check_.mfu > 0 ? check_.mfu : td::ClusterOptions{}.mfu;
  const bool was = filling_;
  filling_ = true;
  mfu_->setValue(want * 100.0);
  filling_ = was;
}

void InfraPanel::recompute() {
  followMfu();
  bool tokens_ok = true;
  const td::ClusterOptions o = options(&tokens_ok);
  tokens_->setProperty("invalid", !tokens_ok);
  tokens_->setStyleSheet(tokens_ok ? QString() : QStringLiteral("border: 2px solid #d0021b; border-radius: 3px;"));
  error_.clear();
  if (check_.has_plan) {
    ClusterCheck c = planner_->planCluster(check_, o);
    error_ = c.error;
    if (c.plan) plan_ = std::move(c.plan);
    else plan_.reset();
  }
  QStringList notes;
  if (!check_.has_plan) notes << tr("Fix the marked fields to update the plan (the figures shown are of the last valid config).");
  if (!tokens_ok) notes << tr("The token budget is not a number (e.g. 1e9 or 2.5G): train.steps × tokens per step is used.");
  if (!error_.isEmpty()) notes << error_;
  if (!planner_->devicesError().isEmpty()) notes << planner_->devicesError();
  if (plan_) {
    const td::ClusterPlan& p = *plan_;
    if (p.device.planning_only) notes << tr("%1 is for planning only: the engine does not run on it.").arg(QString::fromStdString(p.device.name));
    if (p.options.zero >= 3 && p.precision != td::Precision::fp32)
      notes << tr("The engine trains ZeRO stage 3 in fp32 only: in mixed precision stage 3 is a planning estimate.");
    if (!p.peak_flops)
      notes << (p.device.this_machine ? tr("This CPU's peak is not measured yet: calibrate it (This machine tab) to estimate time.")
                                      : tr("%1 has no peak in the catalogue at this precision: time and cost are unknown.")
                                            .arg(QString::fromStdString(p.device.name)));
  }
  note_->setText(notes.join('\n'));
  note_->setVisible(!notes.isEmpty());
  figures_->setEnabled(check_.has_plan && plan_.has_value());
  showPlan();
  emit planChanged();
}

void InfraPanel::showPlan() {
  if (!plan_) {
    bars_->clear();
    return;
  }
  const td::ClusterPlan& p = *plan_;
  const QString prec = QString::fromLatin1(td::precision_name(p.precision));
  device_info_->setText(tr("%1 × %2 (%3): %4 memory, %5 precision, peak %6")
                            .arg(p.options.world_size)
                            .arg(QString::fromStdString(p.device.name), QString::fromStdString(p.device.description),
                                 formatBytes(p.device.memory_bytes), prec,
                                 p.peak_flops ? tr("%1FLOP/s").arg(formatSi(*p.peak_flops)) : tr("unknown")));
  std::array<MemoryBar, 4> bars;
  for (int s = 0; s < 4; ++s) {
    const td::ZeroMemory& z = p.memory[s];
    bars[s] = {tr("ZeRO-%1").arg(s), z.params_bytes, z.grads_bytes, z.optimizer_bytes, z.activations_bytes};
    const bool fits = z.total_bytes <= p.device.memory_bytes;
    memory_[s]->setText(fits ? formatBytes(z.total_bytes) : tr("%1 (does not fit)").arg(formatBytes(z.total_bytes)));
    memory_[s]->setToolTip(tr("parameters %1 + gradients %2 + optimizer %3 + activations %4")
                               .arg(formatBytes(z.params_bytes), formatBytes(z.grads_bytes), formatBytes(z.optimizer_bytes),
                                    formatBytes(z.activations_bytes)));
    QFont f = memory_[s]->font();
    f.setBold(s == p.options.zero);
    memory_[s]->setFont(f);
  }
  bars_->setBars(bars, p.device.memory_bytes, tr("%1 memory %2").arg(QString::fromStdString(p.device.name), formatBytes(p.device.memory_bytes)),
                 p.options.zero);

  budget_->setText(tr("%1 tokens").arg(formatSi(p.tokens)));
  budget_->setToolTip(p.options.tokens > 0 ? tr("as entered")
                                           : tr("train.steps %1 × %2 tokens per step")
                                                 .arg(check_.config.train.steps)
                                                 .arg(formatCount(p.model.tokens_per_step)));
  flops_->setText(tr("%1FLOP").arg(formatSi(p.total_flops)));
  flops_->setToolTip(tr("budget × %1 FLOPs per token (6 N + 12 L C T)").arg(formatCount((uint64_t)p.model.flops_per_token)));
  const bool timed = p.peak_flops.has_value();
  const QString unknown = tr("unknown");
  tokens_s_->setText(timed ? tr("%1 tokens/s").arg(formatSi(p.tokens_per_s)) : unknown);
  tokens_s_->setToolTip(timed ? tr("%1 devices × %2FLOP/s × MFU %3 % ÷ FLOPs per token")
                                    .arg(p.options.world_size)
                                    .arg(formatSi(*p.peak_flops))
                                    .arg(p.options.mfu * 100, 0, 'f', 1)
                              : QString());
  time_->setText(timed ? formatDuration(p.train_seconds) : unknown);
  step_time_->setText(timed ? formatDuration(p.step_seconds) : unknown);
  step_time_->setToolTip(tr("micro_batch × grad_accum × seq_len tokens per device"));
  collective_->setText(p.options.world_size > 1 ? tr("%1B").arg(formatSi(p.collective_bytes_per_step)) : tr("none (one device)"));
  collective_->setToolTip(tr("Ring collectives counted as nccl-tests counts bus bytes (docs/planner.md)"));
  network_->setText(!timed ? unknown : p.options.world_size > 1 ? tr("%1B/s").arg(formatSi(p.network_bytes_per_s)) : tr("none (one device)"));
  network_->setToolTip(tr("Collective bytes per step ÷ compute time per step: the bus bandwidth each device needs for "
                          "communication to overlap fully with compute"));
  storage_->setText(timed ? tr("%1B/s").arg(formatSi(p.storage_bytes_per_s)) : unknown);
  storage_->setToolTip(tr("Throughput × %1 bytes per token on disk").arg(p.token_bytes));
  if (p.cost) cost_->setText(tr("%1 (%2 per device-hour)").arg(amount(*p.cost), amount(*p.price_per_hour)));
  else cost_->setText(timed ? tr("unknown: enter a price per device-hour") : unknown);

  needs_->setRowCount(int(p.needs.size()));
  needs_->horizontalHeaderItem(2)->setText(tr("Fit (ZeRO-%1)").arg(p.options.zero));
  for (int r = 0; r < int(p.needs.size()); ++r) {
    const td::DeviceNeed& n = p.needs[size_t(r)];
    const QStringList cells = {QString::fromStdString(n.device),
                               QString::fromLatin1(td::precision_name(n.precision)),
                               count(n.n_fit[size_t(p.options.zero)]),
                               count(n.n_deadline),
                               count(n.n_needed),
                               n.hours > 0 ? formatDuration(n.hours * 3600) : QStringLiteral("–"),
                               n.device_hours > 0 ? (n.device_hours < 0.1 ? QString::number(n.device_hours, 'g', 2)
                                                                           : QString::number(n.device_hours, 'f', 1))
                                                  : QStringLiteral("–"),
                               n.cost ? amount(*n.cost) : QStringLiteral("–")};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setTextAlignment(c < 2 ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignRight | Qt::AlignVCenter);
      if (n.device == p.device.name) {
        QFont f = item->font();
        f.setBold(true);
        item->setFont(f);
      }
      needs_->setItem(r, c, item);
    }
  }
  // Tall enough for every catalogue device: the panel scrolls, not the table.
  needs_->resizeRowsToContents();
  int h = needs_->horizontalHeader()->sizeHint().height() + 2 * needs_->frameWidth();
  for (int r = 0; r < needs_->rowCount(); ++r) h += needs_->rowHeight(r);
  needs_->setMinimumHeight(h + needs_->horizontalScrollBar()->sizeHint().height());
}

}  // namespace td::gui
