#include "gui/app/run_view.h"

#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QHeaderView>
#include <QSplitter>
#include <QTableWidget>
#include <QTextDocument>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent>

#include <algorithm>
#include <climits>

#include "gui/app/checkpoints_tab.h"
#include "gui/app/run_card_tab.h"
#include "gui/charts/dashboard.h"
#include "gui/core/run_text.h"
#include "gui/core/store_client.h"
#include "gui/look/icons.h"
#include "gui/plan/format.h"
#include "gui/plan/run_plan.h"
#include "gui/runs/alert_watch.h"
#include "gui/runs/rank_logs.h"
#include "gui/runs/run_targets.h"
#include "store/format.h"
#include "store/input_pipeline.h"
#include "store/store.h"
#include "store/straggler.h"

namespace td::gui {

namespace {
constexpr qint64 kLogHistoryBytes = 64 * 1024;  // the log view starts with the log's last 64 KB
constexpr int kLogMaxLines = 5000;

struct LogTail {
  bool exists = false;
  QString text;  // the log's last kLogHistoryBytes
};

LogTail read_tail(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  if (f.size() > kLogHistoryBytes) f.seek(f.size() - kLogHistoryBytes);
  return {true, QString::fromUtf8(f.readAll())};
}

// Progress lines redrawn with '\r' become lines of their own.
QString normalise(QString text) { return text.replace(QLatin1String("\r\n"), QLatin1String("\n")).replace('\r', '\n'); }
}  // namespace

RunView::RunView(StoreClient* store, RunTargets* targets, QWidget* parent) : QWidget(parent), store_(store) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* header = new QHBoxLayout;
  status_ = new QLabel(tr("No run selected. Start one from the Design page, or pick one in the sidebar."), this);
  status_->setObjectName(QStringLiteral("run_status"));
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // A long end reason (an engine error) wraps instead of widening the window.
  status_->setWordWrap(true);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  status_->setMinimumWidth(100);
  header->addWidget(status_, 1);
  stop_ = new QPushButton(icon(QStringLiteral("stop")), QString(), this);
  stop_->setObjectName(QStringLiteral("run_stop"));
  resume_ = new QPushButton(icon(QStringLiteral("resume")), QString(), this);
  resume_->setObjectName(QStringLiteral("run_resume"));
  header->addWidget(stop_);
  header->addWidget(resume_);
  layout->addLayout(header);
  input_ = new QLabel(this);
  input_->setObjectName(QStringLiteral("run_input_bound"));
  input_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  input_->setWordWrap(true);
  input_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  input_->setVisible(false);
  layout->addWidget(input_);

  // Remote runs: node and connection state, deploy/download progress, checkpoint download.
  remote_bar_ = new QWidget(this);
  remote_bar_->setObjectName(QStringLiteral("run_remote"));
  auto* remote_row = new QHBoxLayout(remote_bar_);
  remote_row->setContentsMargins(0, 0, 0, 0);
  node_label_ = new QLabel(remote_bar_);
  node_label_->setObjectName(QStringLiteral("run_node"));
  node_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  node_label_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  progress_ = new QProgressBar(remote_bar_);
  progress_->setObjectName(QStringLiteral("run_progress"));
  progress_->setVisible(false);
  cancel_progress_ = new QPushButton(remote_bar_);
  cancel_progress_->setObjectName(QStringLiteral("run_cancel_progress"));
  cancel_progress_->setVisible(false);
  download_ = new QPushButton(icon(QStringLiteral("import")), QString(), remote_bar_);
  download_->setObjectName(QStringLiteral("run_download_checkpoint"));
  remote_row->addWidget(node_label_, 1);
  remote_row->addWidget(progress_, 1);
  remote_row->addWidget(cancel_progress_);
  remote_row->addWidget(download_);
  remote_bar_->setVisible(false);
  layout->addWidget(remote_bar_);
  // A data-parallel run's slowest rank (the straggler), when it has more than one.
  straggler_ = new QLabel(this);
  straggler_->setObjectName(QStringLiteral("run_straggler"));
  straggler_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  straggler_->setWordWrap(true);
  straggler_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  straggler_->setVisible(false);
  layout->addWidget(straggler_);

  auto* split = new QSplitter(Qt::Vertical, this);
  dashboard_ = new Dashboard(store, split);
  bottom_ = new QTabWidget(split);
  samples_ = new QTextBrowser(bottom_);
  samples_->setObjectName(QStringLiteral("run_samples"));
  log_ = new QPlainTextEdit(this);
  log_->setObjectName(QStringLiteral("run_log"));
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(kLogMaxLines);
  log_->setLineWrapMode(QPlainTextEdit::NoWrap);
  QFont mono(QStringLiteral("monospace"));
  mono.setStyleHint(QFont::TypeWriter);
  log_->setFont(mono);
  // The Log tab: for a run of several ranks, which rank's log (rank 0's is live).
  auto* log_page = new QWidget(bottom_);
  auto* log_layout = new QVBoxLayout(log_page);
  log_layout->setContentsMargins(0, 0, 0, 0);
  log_bar_ = new QWidget(log_page);
  auto* log_row = new QHBoxLayout(log_bar_);
  log_row->setContentsMargins(0, 0, 0, 0);
  log_rank_ = new QComboBox(log_bar_);
  log_rank_->setObjectName(QStringLiteral("run_log_rank"));
  log_refresh_ = new QPushButton(log_bar_);
  log_refresh_->setObjectName(QStringLiteral("run_log_refresh"));
  log_where_ = new QLabel(log_bar_);
  log_where_->setObjectName(QStringLiteral("run_log_where"));
  log_where_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  log_row->addWidget(log_rank_);
  log_row->addWidget(log_refresh_);
  log_row->addWidget(log_where_, 1);
  log_bar_->setVisible(false);
  log_layout->addWidget(log_bar_);
  log_layout->addWidget(log_, 1);
  connect(log_rank_, qOverload<int>(&QComboBox::activated), this, [this] { showRankLog(); });
  connect(log_refresh_, &QPushButton::clicked, this, [this] { showRankLog(); });
  // Plan vs measured: the planner's figures for this run's config beside its measurements.
  auto* plan_page = new QWidget(bottom_);
  auto* plan_layout = new QVBoxLayout(plan_page);
  plan_table_ = new QTableWidget(0, 4, plan_page);
  plan_table_->setObjectName(QStringLiteral("run_plan_vs_measured"));
  plan_table_->verticalHeader()->setVisible(false);
  plan_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  plan_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  plan_table_->horizontalHeader()->setStretchLastSection(true);
  plan_basis_ = new QLabel(plan_page);
  plan_basis_->setObjectName(QStringLiteral("run_plan_basis"));
  plan_basis_->setWordWrap(true);
  plan_basis_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  plan_layout->addWidget(plan_table_, 1);
  plan_layout->addWidget(plan_basis_);
  bottom_->addTab(samples_, icon(QStringLiteral("notes")), QString());
  bottom_->addTab(log_page, icon(QStringLiteral("log")), QString());
  bottom_->addTab(plan_page, icon(QStringLiteral("notes")), QString());
  checkpoints_ = new CheckpointsTab(store, bottom_);
  bottom_->addTab(checkpoints_, icon(QStringLiteral("import")), QString());
  card_ = new RunCardTab(store, bottom_);  // the run's card and Run again (gui/app/run_card_tab.h)
  bottom_->addTab(card_, icon(QStringLiteral("start")), QString());
  retranslate();
  split->addWidget(dashboard_);
  split->addWidget(bottom_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);

  refresh_timer_ = new QTimer(this);
  refresh_timer_->setSingleShot(true);
  refresh_timer_->setInterval(250);
  connect(refresh_timer_, &QTimer::timeout, this, [this] {
    dashboard_->refresh();
    updateStatus();
    loadInputPipeline();
    loadSamples();
    checkpoints_->reload();
    loadStraggler();
    // The comparison reads medians over the whole run: at most every 5 s while it grows.
    if (!runActive(run_) || !plan_loaded_.isValid() || plan_loaded_.elapsed() > 5000) loadPlan();
  });
  connect(stop_, &QPushButton::clicked, this, &RunView::requestStop);
  connect(resume_, &QPushButton::clicked, this, &RunView::requestResume);
  connect(download_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Download the newest checkpoint into"));
    if (!dir.isEmpty()) downloadCheckpointTo(dir);
  });
  connect(cancel_progress_, &QPushButton::clicked, this, [this] {
    if (!targets_) return;
    targets_->cancel(run_);  // a deploy (or a queued job)
    targets_->cancelFetch(run_);
  });
  stop_->setEnabled(false);
  resume_->setEnabled(false);
  setRunTargets(targets);
}

void RunView::retranslate() {
  stop_->setText(tr("Stop"));
  stop_->setToolTip(tr("Stop gracefully: finish the step, write a checkpoint, exit (Ctrl+.)"));
  resume_->setText(tr("Resume"));
  resume_->setToolTip(tr("Continue from the newest checkpoint"));
  samples_->setPlaceholderText(tr("Generated samples appear here with their step (train.sample_interval)."));
  bottom_->setTabText(0, tr("Samples"));
  bottom_->setTabText(1, tr("Log"));
  log_refresh_->setText(tr("Refresh"));
  log_refresh_->setToolTip(tr("Read the chosen rank's log again"));
  log_rank_->setToolTip(tr("Whose log: every rank of a run writes its own"));
  bottom_->setTabText(2, tr("Plan vs measured"));
  bottom_->setTabToolTip(2, tr("What the planner says this run's config needs, beside what the run measured"));
  bottom_->setTabText(3, tr("Checkpoints"));
  bottom_->setTabToolTip(3, tr("The run's checkpoints: keep or delete them, generate text, export for Hugging Face"));
  bottom_->setTabText(bottom_->indexOf(card_), tr("Card"));
  bottom_->setTabToolTip(bottom_->indexOf(card_), tr("What reproduces this run (seed, dataset, engine, device) and Run again"));
  plan_table_->setHorizontalHeaderLabels({tr("Quantity"), tr("Planned"), tr("Measured"), tr("Error")});
  cancel_progress_->setText(tr("Cancel"));
  download_->setText(tr("Download checkpoint"));
  download_->setToolTip(tr("Copy the run's newest checkpoint from its node to a folder on this machine"));
}

void RunView::setRunTargets(RunTargets* targets) {
  if (targets_) disconnect(targets_, nullptr, this, nullptr);
  targets_ = targets;
  card_->setRunTargets(targets);
  checkpoints_->setRunTargets(targets);
  if (!targets) return;
  connect(targets, &RunTarget::stateChanged, this, [this](const QString& id) {
    if (id != run_) return;
    const RunTargetState st = targets_->state(id);
    if (st.phase == RunTargetState::Phase::Deploying) {
      showProgress(id, st.done, st.total, st.detail);
    } else if (!targets_->isFetching(id)) {  // a checkpoint download keeps the bar
      progress_->setVisible(false);
      cancel_progress_->setVisible(false);
    }
    updateRemoteBar();
    // The status line and buttons follow the phase; a deploy's byte counts and connection
    // words change only the bar above (no store query per progress report).
    if (st.phase != shown_phase_) {
      shown_phase_ = st.phase;
      updateStatus();
    }
  });
  connect(targets, &RunTarget::runIngested, this, [this](const QString& id, qint64) { onIngested(id); });
  connect(targets, &RunTarget::logAppended, this, &RunView::appendLog);
  // A start, an end or a failed deploy: the progress bar goes, status and buttons are read again.
  auto refresh = [this](const QString& id) {
    if (id != run_) return;
    progress_->setVisible(false);
    cancel_progress_->setVisible(false);
    onIngested(id);
    updateStatus();
  };
  connect(targets, &RunTarget::runStarted, this, refresh);
  connect(targets, &RunTarget::runEnded, this, [refresh](const QString& id, const QString&) { refresh(id); });
  connect(targets, &RunTarget::startFailed, this, [refresh](const QString& id, const QString&) { refresh(id); });
  connect(targets, &RunTarget::checkpointProgress, this, [this](const QString& id, qint64 done, qint64 total) {
    showProgress(id, done, total, tr("downloading the checkpoint"));
  });
  connect(targets, &RunTarget::checkpointFetched, this, [this](const QString& id, const QString& path) {
    if (id != run_) return;
    progress_->setVisible(false);
    cancel_progress_->setVisible(false);
    node_label_->setText(node_label_->text() + QStringLiteral(" · ") + tr("checkpoint saved in %1").arg(path));
    download_->setEnabled(remote_has_checkpoint_);
  });
}

bool RunView::runActive(const QString& run_id) const {
  return !run_id.isEmpty() && targets_ && targets_->isActive(run_id);
}

void RunView::requestStop() {
  if (run_.isEmpty() || !targets_) return;
  QString err;
  if (!targets_->stop(run_, &err)) return emit targets_->error(err);
  emit stopAsked(run_);
}

void RunView::requestResume() {
  if (run_.isEmpty() || !targets_) return;
  QString err;
  if (!targets_->resume(run_, &err)) return emit targets_->error(err);  // the store says which target it ran on
  emit resumeAsked(run_);
}

void RunView::downloadCheckpointTo(const QString& dir) {
  if (!targets_ || run_.isEmpty()) return;
  QString err;
  if (!targets_->fetchCheckpoint(run_, dir, QString(), &err)) return emit targets_->error(err);
  download_->setEnabled(false);
  showProgress(run_, 0, 0, tr("connecting to %1").arg(remote_node_));
}

void RunView::showProgress(const QString& run_id, qint64 done, qint64 total, const QString& phase) {
  if (run_id != run_) return;
  remote_bar_->setVisible(true);
  progress_->setVisible(true);
  cancel_progress_->setVisible(true);
  // Byte counts go over int's range: the bar counts KiB; a phase without bytes is "busy".
  progress_->setRange(0, total > 0 ? int(std::max<qint64>(1, total / 1024)) : 0);
  progress_->setValue(total > 0 ? int(done / 1024) : 0);
  progress_->setFormat(total > 0 ? phase + QStringLiteral(" · %p%") : phase);
  progress_->setToolTip(total > 0 ? tr("%1 of %2 MB").arg(done / 1e6, 0, 'f', 1).arg(total / 1e6, 0, 'f', 1) : phase);
  updateRemoteBar();
}

void RunView::updateRemoteBar() {
  // Where the run is: the target following it says (host, state in words); a run followed
  // nowhere, what the store says (remote_kind_, remote_node_).
  const RunTarget* owner = targets_ && !run_.isEmpty() ? targets_->owner(run_) : nullptr;
  const QString kind = owner ? owner->kind() : remote_kind_;
  const bool away = owner ? kind != QLatin1String("local") : remote_run_;
  remote_bar_->setVisible(away || !progress_->isHidden());
  if (!away) return;
  const QString host = owner && !targets_->files(run_).host.isEmpty() ? targets_->files(run_).host : remote_node_;
  QString text = kind == QLatin1String("slurm") ? tr("Cluster %1").arg(host) : tr("Node %1").arg(host);
  if (owner) {
    if (const QString detail = targets_->state(run_).detail; !detail.isEmpty()) text += QStringLiteral(" · ") + detail;
  } else {
    text += QStringLiteral(" · ") + tr("not followed");
  }
  node_label_->setText(text);
  const RunTarget* t = targets_ ? targets_->target(kind) : nullptr;
  download_->setVisible(remote_run_ && t && t->fetchesCheckpoints());
  download_->setEnabled(remote_has_checkpoint_ && !targets_->isFetching(run_));
}

void RunView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) {
    retranslate();
    // The texts built from the run's figures: status line, the samples' "Step N", the plan's rows.
    updateStatus();
    updateRemoteBar();
    samples_shown_ = -1;
    loadSamples();
    loadPlan();
  }
  QWidget::changeEvent(event);
}

void RunView::setStoreClient(StoreClient* store) {
  store_ = store;
  dashboard_->setStoreClient(store);
  checkpoints_->setStoreClient(store);
  card_->setStoreClient(store);
  if (rank_logs_) rank_logs_->setStoreClient(store);
  setRun(QString());
}

void RunView::setRun(const QString& run_id) {
  run_ = run_id;
  shown_phase_ = targets_ && !run_id.isEmpty() ? targets_->state(run_id).phase : RunTargetState::Phase::Unknown;
  remote_run_ = false;
  remote_kind_.clear();
  remote_node_.clear();
  remote_has_checkpoint_ = false;
  progress_->setVisible(false);
  cancel_progress_->setVisible(false);
  updateRemoteBar();
  samples_shown_ = -1;
  samples_->clear();
  log_->clear();
  setWorldSize(1);
  dashboard_->setRuns(run_id.isEmpty() ? QStringList() : QStringList{run_id});
  updateStatus();
  input_->setVisible(false);  // the previous run's line
  loadInputPipeline();
  loadSamples();
  loadLog();
  loadPlan();
  checkpoints_->setRun(run_id);
  card_->setRun(run_id);
  straggler_->setVisible(false);  // the previous run's line
  loadStraggler();
}

void RunView::onIngested(const QString& run_id) {
  if (run_id == run_ && !refresh_timer_->isActive()) refresh_timer_->start();
}

void RunView::appendLog(const QString& run_id, const QString& text) {
  if (run_id != run_ || log_rank_->currentIndex() > 0) return;  // another rank's log is shown
  QScrollBar* bar = log_->verticalScrollBar();
  const bool at_end = bar->value() >= bar->maximum() - 4;
  log_->moveCursor(QTextCursor::End);
  log_->insertPlainText(normalise(text));
  if (at_end) bar->setValue(bar->maximum());
}

void RunView::updateStatus() {
  const bool active = runActive(run_);
  stop_->setEnabled(active);
  if (run_.isEmpty() || !store_) {
    resume_->setEnabled(false);
    status_->setText(tr("No run selected. Start one from the Design page, or pick one in the sidebar."));
    return;
  }
  const QString id = run_;
  using Status = td::store::RunOverview;
  store_->run<Status>(
      this, [id = id.toStdString()](td::store::Store& s) { return s.run_overview(id); },
      [this, id](Status st) {
        if (id != run_) return;
        const auto& info = st.info;
        remote_run_ = st.remote.has_value();
        remote_has_checkpoint_ = remote_run_ && st.has_checkpoint;
        if (st.remote) {
          remote_kind_ = QString::fromStdString(st.remote->target);
          const auto node = nlohmann::json::parse(st.remote->node_json, nullptr, /*allow_exceptions=*/false);
          const std::string name = node.is_object() ? node.value("name", std::string()) : std::string();
          const std::string host = node.is_object() ? node.value("host", std::string()) : std::string();
          // A Slurm run is the cluster's (its login node only carries the commands).
          remote_node_ = QString::fromStdString(st.remote->target == "slurm" ? st.remote->cluster
                                                : name.empty()              ? host
                                                                            : name);
        }
        updateRemoteBar();
        if (info) setWorldSize(int(std::clamp<int64_t>(info->world_size.value_or(1), 1, 65536)));
        if (!info) {
          status_->setText(tr("Run %1 (starting…)").arg(id));
          return;
        }
        const bool active = runActive(id);
        const QString status = QString::fromStdString(info->status);
        QString text = tr("Run %1 · %2 · %3").arg(id, runStatusText(status), progressText(st.progress));
        if (info->best_val_loss) text += tr(" · best val loss %1").arg(*info->best_val_loss, 0, 'f', 4);
        if (info->tokens_per_s) text += QStringLiteral(" · ") + tokensPerSText(info->tokens_per_s);
        if (!info->end_reason.empty() && !active) text += QStringLiteral(" · ") + endReasonText(QString::fromStdString(info->end_reason));
        // Lines of the events file the store could not read (docs/store.md): in the file, not in the charts.
        if (info->skipped_lines > 0)
          text += tr(" · %n malformed event line(s) skipped", nullptr, static_cast<int>(std::min<int64_t>(info->skipped_lines, INT_MAX)));
        // The jobs a Slurm run took (a time limit with requeue, a resume: one more each).
        if (!st.jobs.empty()) {
          QStringList jobs;
          for (const auto& j : st.jobs)
            jobs << (j.state.empty() ? QString::fromStdString(j.job_id)
                                     : QStringLiteral("%1 (%2)").arg(QString::fromStdString(j.job_id),
                                                                     QString::fromStdString(j.state).toLower()));
          text += QStringLiteral(" · ") + tr("%n job(s): %1", nullptr, int(jobs.size())).arg(jobs.join(QStringLiteral(", ")));
        }
        status_->setText(text);
        // The run's alerts (docs/events.md "Alerts"): how many, and the newest, on a line below.
        store_->run<std::vector<td::store::RunAlert>>(
            this, [id = id.toStdString()](td::store::Store& s) { return s.alerts(id); },
            [this, id, text](std::vector<td::store::RunAlert> a) {
              if (id != run_ || a.empty()) return;
              status_->setText(text + QStringLiteral("\n") + alertsText(a));
            },
            [](const QString&) {});
        stop_->setEnabled(active);
        // Resume needs a checkpoint (the engine continues from the newest valid one).
        resume_->setEnabled(!active && status != QLatin1String("running") && status != QLatin1String("completed") &&
                            !info->events_path.empty() && st.has_checkpoint);
        resume_->setToolTip(st.has_checkpoint ? tr("Continue from the newest checkpoint")
                                              : tr("This run wrote no checkpoint: start a new run instead"));
      },
      [this](const QString& m) { status_->setText(m); });
}

QString RunView::alertsText(const std::vector<td::store::RunAlert>& alerts) {
  if (alerts.empty()) return {};
  const td::store::RunAlert& newest = alerts.back();
  return QStringLiteral("⚠ ") + tr("%n alert(s), newest: %1: %2", nullptr, int(alerts.size()))
                                     .arg(AlertNotifier::kindLabel(QString::fromStdString(newest.kind)),
                                          QString::fromStdString(newest.message));
}

namespace {
// A duration as a progress line says it: "45 s", "18 min", "3 h 25 min", "2 d 4 h" (whole
// minutes below an hour: the time left is an estimate, its seconds would be noise).
QString roughDuration(double seconds) {
  const long long minutes = std::llround(seconds / 60);
  if (seconds >= 59.5 && minutes < 60) return RunView::tr("%1 min").arg(minutes);
  return formatDuration(seconds);
}
}  // namespace

QString RunView::progressText(const td::store::RunProgress& p) {
  const bool running = p.status == "running";
  QString s = p.total_steps ? tr("step %1 / %2").arg(p.step.value_or(0)).arg(*p.total_steps)
                            : tr("step %1").arg(p.step.value_or(0));
  if (running && p.percent()) s += tr(" (%1 %)").arg(*p.percent());
  if (p.elapsed_s) s += running ? tr(" · %1 elapsed").arg(roughDuration(*p.elapsed_s)) : QStringLiteral(" · ") + roughDuration(*p.elapsed_s);
  if (running && p.eta_s) s += tr(" · ~%1 left").arg(roughDuration(*p.eta_s));
  return s;
}

QString RunView::tokensPerSText(std::optional<double> tokens_per_s) {
  return tr("%1 tokens/s (median of last %2 steps)")
      .arg(QString::fromStdString(td::store::format_tokens_per_s(tokens_per_s)))
      .arg(td::store::Store::kThroughputSteps);
}

QString RunView::logMissingText(const QString& log_path, bool exists, bool followed) {
  if (exists) return tr("(the engine has written nothing to %1 yet)").arg(log_path);
  // Only a run TrainDeck neither started nor follows can have logged somewhere else.
  if (followed) return tr("(no engine log at %1 yet: the engine's output appears here as it arrives)").arg(log_path);
  return tr("(no engine log at %1: runs started outside TrainDeck log to their own terminal)").arg(log_path);
}

void RunView::loadSamples() {
  if (run_.isEmpty() || !store_) return;
  const QString id = run_;
  store_->run<std::vector<td::store::Sample>>(
      this, [id = id.toStdString()](td::store::Store& s) { return s.samples(id); },
      [this, id](std::vector<td::store::Sample> samples) {
        if (id != run_ || static_cast<int>(samples.size()) == samples_shown_) return;
        samples_shown_ = static_cast<int>(samples.size());
        QString html;
        // Newest first: the latest sample is what a person watching a run wants to read.
        for (auto it = samples.rbegin(); it != samples.rend(); ++it) {
          html += QStringLiteral("<p><b>%1</b><br/><span style='white-space:pre-wrap'><i>%2</i>%3</span></p>")
                      .arg(tr("Step %1").arg(it->step), QString::fromStdString(it->prompt).toHtmlEscaped(),
                           QString::fromStdString(it->text).toHtmlEscaped());
        }
        samples_->setHtml(html);
      },
      [](const QString&) {});
}

void RunView::setRankLogs(RankLogs* logs) {
  rank_logs_ = logs;
  if (!logs) return;
  logs->setStoreClient(store_);
  connect(logs, &RankLogs::fetched, this, [this](const QString& run_id, int rank, const QString& text, bool truncated, const QString& where) {
    if (run_id != run_ || rank != log_rank_->currentIndex()) return;
    log_->setPlainText(normalise(text));
    log_->verticalScrollBar()->setValue(log_->verticalScrollBar()->maximum());
    log_where_->setText(truncated ? tr("%1 (its last %2 KiB)").arg(where).arg(RankLogs::kDefaultBytes / 1024) : where);
  });
  connect(logs, &RankLogs::failed, this, [this](const QString& run_id, int rank, const QString& message) {
    if (run_id != run_ || rank != log_rank_->currentIndex()) return;
    log_->clear();
    log_where_->setText(message);
  });
}

void RunView::setWorldSize(int world) {
  if (world == world_size_ && log_rank_->count() == world) return;
  world_size_ = world;
  const int keep = log_rank_->currentIndex();
  log_rank_->clear();
  for (int r = 0; r < world; ++r)
    log_rank_->addItem(r == 0 ? tr("Rank 0 (engine.log, live)") : tr("Rank %1").arg(r));
  log_rank_->setCurrentIndex(keep >= 0 && keep < world ? keep : 0);
  log_bar_->setVisible(world > 1);
}

void RunView::showRankLog() {
  const int rank = std::max(0, log_rank_->currentIndex());
  log_->clear();
  log_where_->clear();
  if (rank == 0) {
    loadLog();
    return;
  }
  if (!rank_logs_) {
    log_where_->setText(tr("The logs of other ranks cannot be read here."));
    return;
  }
  log_where_->setText(tr("Reading the log of rank %1…").arg(rank));
  rank_logs_->fetch(run_, rank);
}

void RunView::loadLog() {
  if (run_.isEmpty() || !store_) return;
  const QString id = run_;
  const quint64 generation = ++log_generation_;
  store_->run<std::string>(
      this, [id = id.toStdString()](td::store::Store& s) { auto r = s.find_run(id); return r ? r->events_path : std::string(); },
      [this, id, generation](std::string events) {
        if (generation != log_generation_) return;
        if (events.empty()) return;
        const QString log = QFileInfo(QString::fromStdString(events)).absoluteDir().filePath(QStringLiteral("engine.log"));
        auto* watcher = new QFutureWatcher<LogTail>(this);
        connect(watcher, &QFutureWatcher<LogTail>::finished, this, [this, watcher, generation, log, id] {
          watcher->deleteLater();
          if (generation != log_generation_) return;
          const LogTail tail = watcher->result();
          if (!tail.text.isEmpty()) {
            // Lines that arrived while the file was read are in it too: the file wins.
            log_->setPlainText(normalise(tail.text));
          } else if (log_->document()->isEmpty()) {
            log_->setPlainText(logMissingText(log, tail.exists, runActive(id) || remote_run_));
          }
          log_->verticalScrollBar()->setValue(log_->verticalScrollBar()->maximum());
        });
        watcher->setFuture(QtConcurrent::run(read_tail, log));
      },
      [](const QString&) {});
}

QString RunView::inputBoundText(const td::store::InputPipeline& p) {
  if (!p.input_bound || !p.wait_pct) return QString();
  const QString reads = p.read_mb_s ? tr("reads %1 MB/s").arg(*p.read_mb_s, 0, 'f', 1) : tr("no read took measurable time");
  return QStringLiteral("⚠ ") + tr("Input-bound: the steps waited for data %1 % of their time (steps %2–%3)")
                                    .arg(*p.wait_pct, 0, 'f', 1)
                                    .arg(p.first_step)
                                    .arg(p.last_step) +
         QStringLiteral(" · ") + reads;
}

void RunView::loadInputPipeline() {
  if (run_.isEmpty() || !store_) {
    input_->setVisible(false);
    return;
  }
  const QString id = run_;
  store_->run<td::store::InputPipeline>(
      this, [id = id.toStdString()](td::store::Store& s) { return td::store::input_pipeline(s, id); },
      [this, id](td::store::InputPipeline p) {
        if (id != run_) return;
        const QString text = inputBoundText(p);
        input_->setText(text);
        input_->setToolTip(text.isEmpty() ? QString()
                                          : tr("Time waiting for the data loader (data_wait_ms) over the step time (step_ms), summed "
                                               "over %n step(s): %1 ms of %2 ms. A run is input-bound from %3 % (TensorFlow "
                                               "Profiler's limit); the read speed is the median data_read_mb_s of those steps.",
                                               nullptr, p.steps)
                                                .arg(p.wait_ms, 0, 'f', 1)
                                                .arg(p.step_ms, 0, 'f', 1)
                                                .arg(td::store::kInputBoundWaitPct, 0, 'f', 0));
        input_->setVisible(!text.isEmpty());
      },
      [this, id](const QString&) {
        if (id == run_) input_->setVisible(false);
      });
}

void RunView::loadPlan() {
  if (run_.isEmpty() || !store_) {
    plan_table_->setRowCount(0);
    plan_basis_->clear();
    return;
  }
  plan_loaded_.start();
  const QString id = run_;
  store_->run<RunPlanComparison>(
      this, [id = id.toStdString()](td::store::Store& s) { return comparePlanWithRun(s, id); },
      [this, id](RunPlanComparison c) {
        if (id != run_) return;
        plan_table_->setRowCount(int(c.rows.size()));
        for (int r = 0; r < int(c.rows.size()); ++r) {
          const td::PlanVsMeasuredRow& row = c.rows[size_t(r)];
          const QStringList cells = {planRowLabel(row), formatPlanValue(row.planned, row.unit),
                                     formatPlanValue(row.measured, row.unit), formatErrorPercent(row.error_pct)};
          for (int col = 0; col < cells.size(); ++col) {
            auto* item = new QTableWidgetItem(cells[col]);
            item->setTextAlignment(col == 0 ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignRight | Qt::AlignVCenter);
            item->setToolTip(QString::fromStdString(row.basis));
            plan_table_->setItem(r, col, item);
          }
        }
        if (!c.error.isEmpty()) {
          plan_basis_->setText(c.error);
          return;
        }
        plan_basis_->setText(
            (c.gpu ? tr("Planned tokens/s assume MFU %1 % (the Infrastructure panel's default); memory is the plan plus the "
                        "32 MiB cuBLAS workspace, against the GPU memory high-water mark.")
                   : tr("Planned tokens/s assume MFU %1 % (the designer's default for this machine); memory is the plan plus "
                        "a 16 MiB process baseline, against the peak RSS."))
                .arg(c.mfu * 100, 0, 'f', 0) +
            QLatin1Char(' ') + tr("Error = (planned − measured) ÷ measured. Hover a row for its formula (docs/planner.md)."));
      },
      [this, id](const QString& m) {
        if (id == run_) plan_basis_->setText(m);
      });
}

QString RunView::stragglerText(const td::store::Straggler& s) {
  const QString host = s.host.empty() ? QString() : QStringLiteral(" (%1)").arg(QString::fromStdString(s.host));
  const QString pct = QLocale().toString(s.slower_pct, 'f', 0);
  // For 2 ranks the other ranks' median is the other rank. One multi-arg QString::arg: a "%1" in
  // the host name (the run's own text) stays as it is.
  const QString text = s.world_size == 2
                           ? tr("Slowest rank: %1%2, %3 % slower than rank %4 over the last %n step(s) (the slowest in %5 of them)",
                                nullptr, s.steps)
                                 .arg(QString::number(s.rank), host, pct, QString::number(s.rank == 0 ? 1 : 0),
                                      QString::number(s.slowest_steps))
                           : tr("Slowest rank: %1%2, %3 % slower than the median of the other ranks over the last %n step(s) (the "
                                "slowest in %4 of them)",
                                nullptr, s.steps)
                                 .arg(QString::number(s.rank), host, pct, QString::number(s.slowest_steps));
  return text;
}

void RunView::loadStraggler() {
  if (run_.isEmpty() || !store_) {
    straggler_->setVisible(false);
    return;
  }
  // A query of the last 100 steps of every rank: on the store thread.
  const QString id = run_;
  store_->run<std::optional<td::store::Straggler>>(
      this, [id = id.toStdString()](td::store::Store& s) { return td::store::run_straggler(s, id, td::store::Store::kThroughputSteps); },
      [this, id](std::optional<td::store::Straggler> s) {
        if (id != run_) return;
        if (s) {
          straggler_->setText(stragglerText(*s));
          straggler_->setToolTip(tr("Each rank's compute time is its step time outside collectives (ranks[].compute_ms = step_ms - "
                                    "comm_ms): the ranks wait for the slowest one in the gradient all-reduce. Medians over the "
                                    "steps: rank %1 %2 ms, the other ranks %3 ms.")
                                     .arg(s->rank)
                                     .arg(QLocale().toString(s->median_ms, 'f', 2), QLocale().toString(s->others_median_ms, 'f', 2)));
        }
        straggler_->setVisible(s.has_value());
      },
      [this, id](const QString&) {
        if (id == run_) straggler_->setVisible(false);
      });
}

}  // namespace td::gui
