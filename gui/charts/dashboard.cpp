#include "gui/charts/dashboard.h"

#include <QCheckBox>
#include <QCoreApplication>
#include <QComboBox>
#include <QEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSlider>
#include <QTextStream>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "engine/metrics/step_fields.h"

namespace td::gui {

Dashboard::Dashboard(StoreClient* store, QWidget* parent)
    : QWidget(parent), store_(store), model_(new MetricsModel(store, this)) {
  auto* top = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  top->addLayout(bar);

  bar->addWidget(new QLabel(tr("X axis:"), this));
  x_combo_ = new QComboBox(this);
  x_combo_->setObjectName(QStringLiteral("xAxis"));
  x_combo_->addItem(tr("Step"));
  x_combo_->addItem(tr("Tokens"));
  x_combo_->addItem(tr("Wall time"));
  bar->addWidget(x_combo_);

  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Smoothing:"), this));
  smooth_ = new QSlider(Qt::Horizontal, this);
  smooth_->setObjectName(QStringLiteral("smoothing"));
  smooth_->setRange(0, 99);
  smooth_->setFixedWidth(140);
  smooth_->setToolTip(tr("Exponential moving average of the noisy lines (loss, gradient norm, throughput; "
                         "weight 0 to 0.99), the unsmoothed line faint behind; learning rate, memory and "
                         "val loss are never smoothed, nor are stored values, the band and exports."));
  bar->addWidget(smooth_);
  smooth_label_ = new QLabel(QStringLiteral("0.00"), this);
  bar->addWidget(smooth_label_);

  bar->addSpacing(12);
  log_ = new QCheckBox(tr("Log scale"), this);
  log_->setObjectName(QStringLiteral("logScale"));
  bar->addWidget(log_);
  bar->addStretch(1);

  error_ = new QLabel(this);
  error_->setObjectName(QStringLiteral("error"));
  error_->setStyleSheet(QStringLiteral("color: palette(highlight)"));
  error_->setWordWrap(true);
  error_->hide();
  bar->addWidget(error_, 1);
  auto* png = new QPushButton(tr("Export PNG..."), this);
  png->setObjectName(QStringLiteral("exportPng"));
  bar->addWidget(png);
  export_csv_ = new QToolButton(this);
  export_csv_->setObjectName(QStringLiteral("exportCsv"));
  export_csv_->setText(tr("Export CSV..."));
  export_csv_->setPopupMode(QToolButton::MenuButtonPopup);
  auto* menu = new QMenu(export_csv_);
  menu->addAction(tr("Points shown..."), this, &Dashboard::onExportCsv);
  menu->addAction(tr("All rows of the runs shown..."), this, &Dashboard::onExportRunCsv);
  export_csv_->setMenu(menu);
  connect(export_csv_, &QToolButton::clicked, this, &Dashboard::onExportCsv);
  bar->addWidget(export_csv_);

  grid_ = new QWidget(this);
  top->addWidget(grid_, 1);
  buildCharts();

  connect(x_combo_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this](int i) { setXAxis(static_cast<XAxis>(i)); });
  connect(smooth_, &QSlider::valueChanged, this, [this](int v) {
    smooth_label_->setText(QString::number(v / 100.0, 'f', 2));
    for (ChartView* c : std::as_const(charts_)) c->setSmoothing(v / 100.0);
  });
  connect(log_, &QCheckBox::toggled, this, [this](bool on) {
    for (ChartView* c : std::as_const(charts_)) c->setLogScale(on);
  });
  connect(png, &QPushButton::clicked, this, &Dashboard::onExportPng);
  connect(model_, &MetricsModel::exportFinished, this, [this](const QString& path, qint64 rows, const QString& error) {
    if (!error.isEmpty() && isVisible())
      QMessageBox::warning(this, tr("Export CSV"), tr("Could not export to %1: %2").arg(path, error));
  });

  // A failed query (a run deleted meanwhile, a damaged store) is said once, beside the controls;
  // the next facts that arrive clear it.
  connect(model_, &MetricsModel::failed, this, [this](const QString& message) {
    error_->setText(message);
    error_->setToolTip(message);
    error_->show();
  });
  connect(model_, &MetricsModel::factsReady, this, [this] { error_->hide(); });
  refresh_timer_.setSingleShot(true);
  refresh_timer_.setInterval(0);
  connect(&refresh_timer_, &QTimer::timeout, this, &Dashboard::doRefresh);
  columns_timer_.setSingleShot(true);
  columns_timer_.setInterval(0);
  connect(&columns_timer_, &QTimer::timeout, this, &Dashboard::chooseColumns);
}

Dashboard::~Dashboard() {
  // The charts outlive this body (QWidget deletes its children later): they no longer ask it.
  for (ChartView* c : std::as_const(charts_)) {
    c->setExtentSource({});
    disconnect(c, nullptr, this, nullptr);
  }
}

struct Dashboard::ChartSpec {
  QString name, title, left, right;  // chart() name, title, y axes' titles
  QString secondary;                 // the right axis as a second scale of the line: its title
  QList<MetricSpec> metrics;         // the table's fields of this chart (chartSpecs())
  QString empty;                     // why the chart is empty
  ValueFormat left_format = ValueFormat::Plain;
  int row = 0, col = 0;
};

namespace {

// The field chart `chart` draws as a second scale of its right axis (ChartAxis::RightScale:
// MFU of the throughput chart), or "".
QString rightScaleMetric(const QString& chart) {
  for (const EventField& f : kEventFields)
    if (f.chart.chart && chart == QLatin1String(f.chart.chart) && f.chart.axis == ChartAxis::RightScale)
      return QString::fromLatin1(f.metric);
  return QString();
}

}  // namespace

QList<MetricSpec> Dashboard::chartMetrics(const QString& chart) {
  QList<MetricSpec> out;
  for (const EventField& f : kEventFields) {
    if (!f.chart.chart || chart != QLatin1String(f.chart.chart) || f.chart.axis == ChartAxis::RightScale) continue;
    out.append({QString::fromLatin1(f.metric), QCoreApplication::translate("td::gui::Dashboard", f.chart.label),
                f.chart.style == ChartStyle::Markers ? SeriesStyle::Markers : SeriesStyle::Line,
                f.chart.axis == ChartAxis::Right ? YSide::Right : YSide::Left, f.chart.all_ranks, f.chart.smooth});
  }
  return out;
}

QList<Dashboard::ChartSpec> Dashboard::chartSpecs() {
  // The charts (name, texts, place); the lines each one draws are the fields of the step table
  // (engine/metrics/step_fields.h) that name it.
  QList<ChartSpec> out;
  out.append({QStringLiteral("loss"), tr("Loss"), tr("loss (nats/token)"), QString(), QString(), {},
              tr("No loss yet: the run has not completed its first step."), ValueFormat::Plain, 0, 0});
  // A data-parallel run adds each rank's own tokens/s (docs/events.md "Per-rank figures"). MFU
  // is tokens/s times a constant of the run, so it is the right axis of the same line rather
  // than a second line lying exactly on top of it.
  out.append({QStringLiteral("throughput"), tr("Throughput"), tr("tokens/s"), QString(), tr("MFU (0..1)"), {},
              tr("No throughput yet: the run has not completed its first step."), ValueFormat::Plain, 0, 1});
  // The process on the host: its resident memory (and GPU memory) left, its CPU utilization
  // right in top's % of one core (docs/events.md cpu_util_pct).
  out.append({QStringLiteral("memory"), tr("Memory and CPU"), tr("bytes"), tr("CPU (% of one core)"), QString(), {},
              tr("No memory figures yet: the run reports process RSS at every step (and GPU memory on the "
                 "CUDA backend)."),
              ValueFormat::Bytes, 1, 0});
  // Per rank (and so per node): payload bytes its collectives sent in each step, and the bus
  // bandwidth they achieved (nccl-tests' busbw, GB/s = 10^9 bytes/s; docs/events.md).
  out.append({QStringLiteral("network"), tr("Network"), tr("bytes per step"), tr("bus bandwidth (GB/s)"), QString(), {},
              tr("No network traffic: single-process runs do not communicate; distributed runs report "
                 "collective bytes here."),
              ValueFormat::Bytes, 1, 1});
  out.append({QStringLiteral("optimizer"), tr("Optimizer"), tr("learning rate"), tr("gradient norm"), QString(), {},
              tr("No optimizer figures yet: the run has not completed its first step."), ValueFormat::Plain, 2, 0});
  // The input pipeline: the share of each step spent waiting for the data loader (a run above a
  // few % is input-bound) and the loader's read throughput (MB/s = 10^6 bytes/s).
  out.append({QStringLiteral("input"), tr("Input pipeline"), tr("waiting for data (% of step)"), tr("read throughput (MB/s)"),
              QString(), {}, tr("No input figures yet: the run has not completed its first step."), ValueFormat::Plain, 2, 1});
  // Each checkpoint written: its write throughput and how long training stood still for it.
  out.append({QStringLiteral("checkpoints"), tr("Checkpoints"), tr("write throughput (MB/s)"), tr("training paused (s)"), QString(),
              {}, tr("No checkpoint written yet."), ValueFormat::Plain, 3, 0});
  // GPU telemetry from NVML (docs/cuda.md "GPU telemetry"): utilization and board power of each
  // rank's GPU, sampled after a step at most every 0.1 s.
  out.append({QStringLiteral("gpu"), tr("GPU"), tr("utilization (%)"), tr("power (W)"), QString(), {},
              tr("No GPU figures: the run reports them on NVIDIA GPUs (NVML, from the driver)."), ValueFormat::Plain, 3, 1});
  for (ChartSpec& spec : out) spec.metrics = chartMetrics(spec.name);
  return out;
}

void Dashboard::buildCharts() {
  auto* grid = new QGridLayout(grid_);
  grid->setContentsMargins(0, 0, 0, 0);
  for (const ChartSpec& spec : chartSpecs()) {
    auto* c = new ChartView(model_, grid_);
    c->setObjectName(spec.name);
    c->setValueFormat(YSide::Left, spec.left_format);
    c->setExtentSource([this] { return pageExtent(); });
    grid->addWidget(c, spec.row, spec.col);
    charts_.insert(spec.name, c);
    names_ << spec.name;
    connect(c, &ChartView::resized, this, [this] { columns_timer_.start(); });
    connect(c, &ChartView::userXRangeChanged, this, [this, c](double lo, double hi) { linkRange(c, lo, hi); });
  }
  applyTexts();
}

void Dashboard::applyTexts() {
  for (const ChartSpec& spec : chartSpecs()) {
    ChartView* c = charts_.value(spec.name);
    c->setTitle(spec.title);
    c->setAxisLabels(spec.left, spec.right);
    c->setMetrics(spec.metrics);
    c->setEmptyText(spec.empty);
    // The right axis as a second scale of the chart's first line (MFU of tokens/s).
    if (const QString scale = rightScaleMetric(spec.name); !spec.secondary.isEmpty() && !scale.isEmpty() && !spec.metrics.isEmpty())
      c->setSecondaryScale(scale, spec.metrics.first().metric, spec.secondary);
  }
}

void Dashboard::changeEvent(QEvent* event) {
  // Before the charts get the event (QWidget sends it on to its children afterwards): each then
  // re-sets the texts it makes itself (x axis title, rank suffixes) over the new labels.
  if (event->type() == QEvent::LanguageChange) applyTexts();
  QWidget::changeEvent(event);
}

void Dashboard::chooseColumns() {
  int cols = 0;
  for (ChartView* c : std::as_const(charts_)) cols = cols == 0 ? c->plotColumns() : std::min(cols, c->plotColumns());
  if (cols == columns_) return;
  columns_ = cols;
  for (ChartView* c : std::as_const(charts_)) c->setColumns(cols);  // each re-queries
}

XExtent Dashboard::pageExtent() const {
  XExtent e;
  for (ChartView* c : std::as_const(charts_)) e.add(c->extentOf(runs_, axis_));
  return e;
}

void Dashboard::linkRange(ChartView* from, double lo, double hi) {
  if (linking_) return;
  linking_ = true;
  chooseColumns();  // before the queries the range change schedules
  for (ChartView* c : std::as_const(charts_))
    if (c != from) c->setXRange(lo, hi);
  linking_ = false;
}

void Dashboard::setStoreClient(StoreClient* store) {
  store_ = store;
  model_->setStoreClient(store);
  setRuns(runs_);
}

void Dashboard::setRuns(const QStringList& run_ids) {
  runs_ = run_ids;
  chooseColumns();
  for (const QString& r : runs_) model_->requestFacts(r);
  for (ChartView* c : std::as_const(charts_)) c->setRuns(runs_);
}

void Dashboard::refresh() {
  if (!refresh_timer_.isActive()) refresh_timer_.start();
}

void Dashboard::doRefresh() {
  // Facts first (new last step, new series); each chart re-queries when they arrive, at the
  // columns the plots have now (their y tick labels may have grown).
  chooseColumns();
  for (const QString& r : std::as_const(runs_)) model_->requestFacts(r);
}

QString Dashboard::errorText() const { return error_->isVisible() ? error_->text() : QString(); }

ChartView* Dashboard::chart(const QString& name) const { return charts_.value(name, nullptr); }

void Dashboard::setXAxis(XAxis axis) {
  axis_ = axis;
  if (x_combo_->currentIndex() != static_cast<int>(axis)) x_combo_->setCurrentIndex(static_cast<int>(axis));
  for (ChartView* c : std::as_const(charts_)) c->setXAxis(axis);
}

void Dashboard::setSmoothing(double weight) { smooth_->setValue(static_cast<int>(std::lround(weight * 100))); }

double Dashboard::smoothing() const { return smooth_->value() / 100.0; }

void Dashboard::setLogScale(bool on) { log_->setChecked(on); }

bool Dashboard::exportPng(const QString& path) { return grid_->grab().save(path, "PNG"); }

bool Dashboard::exportCsv(const QString& path) const {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) return false;
  QTextStream out(&f);
  bool header = true;
  for (const QString& name : names_) {
    charts_.value(name)->writeCsv(out, name, header);
    header = false;
  }
  out.flush();
  return out.status() == QTextStream::Ok && f.error() == QFile::NoError;
}

void Dashboard::exportRunCsv(const QString& path) {
  if (runs_.isEmpty()) return;
  model_->exportRunCsv(runs_, path);
}

QString Dashboard::suggestedFileName(const QString& what, const QString& suffix) const {
  QString base = runs_.isEmpty() ? QStringLiteral("traindeck") : runs_.join(QLatin1Char('+'));
  if (base.size() > 80) base = base.left(80);
  return base + QLatin1Char('-') + what + QLatin1Char('.') + suffix;
}

static QString withSuffix(const QString& path, const QString& suffix) {
  if (path.isEmpty() || QFileInfo(path).suffix().compare(suffix, Qt::CaseInsensitive) == 0) return path;
  return path + QLatin1Char('.') + suffix;
}

void Dashboard::onExportPng() {
  const QString path = withSuffix(QFileDialog::getSaveFileName(this, tr("Export charts as PNG"),
                                                               suggestedFileName(QStringLiteral("charts"), QStringLiteral("png")),
                                                               tr("PNG image (*.png)")),
                                  QStringLiteral("png"));
  if (!path.isEmpty() && !exportPng(path))
    QMessageBox::warning(this, tr("Export PNG"), tr("Could not write %1: check the folder is writable.").arg(path));
}

void Dashboard::onExportCsv() {
  const QString path = withSuffix(
      QFileDialog::getSaveFileName(this, tr("Export the points shown as CSV"),
                                   suggestedFileName(QStringLiteral("points"), QStringLiteral("csv")), tr("CSV file (*.csv)")),
      QStringLiteral("csv"));
  if (!path.isEmpty() && !exportCsv(path))
    QMessageBox::warning(this, tr("Export CSV"), tr("Could not write %1: check the folder is writable.").arg(path));
}

void Dashboard::onExportRunCsv() {
  if (runs_.isEmpty()) return;
  const QString path = withSuffix(
      QFileDialog::getSaveFileName(this, tr("Export all metric rows of %1 as CSV").arg(runs_.join(QStringLiteral(", "))),
                                   suggestedFileName(QStringLiteral("metrics"), QStringLiteral("csv")), tr("CSV file (*.csv)")),
      QStringLiteral("csv"));
  if (!path.isEmpty()) exportRunCsv(path);
}

}  // namespace td::gui
