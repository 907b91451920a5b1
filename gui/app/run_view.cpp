#include "gui/app/run_view.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent>

#include "gui/charts/dashboard.h"
#include "gui/core/store_client.h"
#include "gui/look/icons.h"
#include "gui/runs/run_controller.h"
#include "store/store.h"

namespace td::gui {

namespace {
constexpr qint64 kLogHistoryBytes = 64 * 1024;  // the log view starts with the log's last 64 KB
constexpr int kLogMaxLines = 5000;

QString read_tail(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  if (f.size() > kLogHistoryBytes) f.seek(f.size() - kLogHistoryBytes);
  return QString::fromUtf8(f.readAll());
}

// Progress lines redrawn with '\r' become lines of their own.
QString normalise(QString text) { return text.replace(QLatin1String("\r\n"), QLatin1String("\n")).replace('\r', '\n'); }
}  // namespace

RunView::RunView(StoreClient* store, RunController* runs, QWidget* parent)
    : QWidget(parent), store_(store), runs_(runs) {
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

  auto* split = new QSplitter(Qt::Vertical, this);
  dashboard_ = new Dashboard(store, split);
  bottom_ = new QTabWidget(split);
  samples_ = new QTextBrowser(bottom_);
  samples_->setObjectName(QStringLiteral("run_samples"));
  log_ = new QPlainTextEdit(bottom_);
  log_->setObjectName(QStringLiteral("run_log"));
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(kLogMaxLines);
  log_->setLineWrapMode(QPlainTextEdit::NoWrap);
  QFont mono(QStringLiteral("monospace"));
  mono.setStyleHint(QFont::TypeWriter);
  log_->setFont(mono);
  bottom_->addTab(samples_, icon(QStringLiteral("notes")), QString());
  bottom_->addTab(log_, icon(QStringLiteral("log")), QString());
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
    loadSamples();
  });
  connect(stop_, &QPushButton::clicked, this, [this] { emit stopRequested(run_); });
  connect(resume_, &QPushButton::clicked, this, [this] { emit resumeRequested(run_); });
  stop_->setEnabled(false);
  resume_->setEnabled(false);
}

void RunView::retranslate() {
  stop_->setText(tr("Stop"));
  stop_->setToolTip(tr("Stop gracefully: finish the step, write a checkpoint, exit (Ctrl+.)"));
  resume_->setText(tr("Resume"));
  resume_->setToolTip(tr("Continue from the newest checkpoint"));
  samples_->setPlaceholderText(tr("Generated samples appear here with their step (train.sample_interval)."));
  bottom_->setTabText(0, tr("Samples"));
  bottom_->setTabText(1, tr("Log"));
}

void RunView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) {
    retranslate();
    updateStatus();
  }
  QWidget::changeEvent(event);
}

void RunView::setStoreClient(StoreClient* store) {
  store_ = store;
  dashboard_->setStoreClient(store);
  setRun(QString());
}

void RunView::setRun(const QString& run_id) {
  run_ = run_id;
  samples_shown_ = -1;
  samples_->clear();
  log_->clear();
  dashboard_->setRuns(run_id.isEmpty() ? QStringList() : QStringList{run_id});
  updateStatus();
  loadSamples();
  loadLog();
}

void RunView::onIngested(const QString& run_id) {
  if (run_id == run_ && !refresh_timer_->isActive()) refresh_timer_->start();
}

void RunView::appendLog(const QString& run_id, const QString& text) {
  if (run_id != run_) return;
  QScrollBar* bar = log_->verticalScrollBar();
  const bool at_end = bar->value() >= bar->maximum() - 4;
  log_->moveCursor(QTextCursor::End);
  log_->insertPlainText(normalise(text));
  if (at_end) bar->setValue(bar->maximum());
}

void RunView::updateStatus() {
  const bool active = !run_.isEmpty() && runs_->isActive(run_);
  stop_->setEnabled(active);
  if (run_.isEmpty() || !store_) {
    resume_->setEnabled(false);
    status_->setText(tr("No run selected. Start one from the Design page, or pick one in the sidebar."));
    return;
  }
  const QString id = run_;
  struct Status {
    std::optional<td::store::RunInfo> info;
    bool has_checkpoint = false;
  };
  store_->run<Status>(
      this,
      [id = id.toStdString()](td::store::Store& s) {
        Status st{s.find_run(id), false};
        if (st.info) st.has_checkpoint = !s.checkpoints(id).empty();
        return st;
      },
      [this, id](Status st) {
        if (id != run_) return;
        const auto& info = st.info;
        if (!info) {
          status_->setText(tr("Run %1 (starting…)").arg(id));
          return;
        }
        const bool active = runs_->isActive(id);
        const QString status = QString::fromStdString(info->status);
        QString text = tr("Run %1 · %2 · step %3").arg(id, status).arg(info->last_step.value_or(0));
        if (info->best_val_loss) text += tr(" · best val loss %1").arg(*info->best_val_loss, 0, 'f', 4);
        if (info->last_tokens_per_s) text += tr(" · %1 tokens/s").arg(*info->last_tokens_per_s, 0, 'f', 0);
        if (!info->end_reason.empty() && !active) text += QStringLiteral(" · ") + QString::fromStdString(info->end_reason);
        status_->setText(text);
        stop_->setEnabled(active);
        // Resume needs a checkpoint (the engine continues from the newest valid one).
        resume_->setEnabled(!active && status != QLatin1String("running") && status != QLatin1String("completed") &&
                            !info->events_path.empty() && st.has_checkpoint);
        resume_->setToolTip(st.has_checkpoint ? tr("Continue from the newest checkpoint")
                                              : tr("This run wrote no checkpoint: start a new run instead"));
      },
      [this](const QString& m) { status_->setText(m); });
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
        auto* watcher = new QFutureWatcher<QString>(this);
        connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, generation, log] {
          watcher->deleteLater();
          if (generation != log_generation_) return;
          const QString text = watcher->result();
          log_->setPlainText(text.isEmpty() ? tr("(no engine log at %1: runs started outside TrainDeck log to "
                                                 "their own terminal)")
                                                  .arg(log)
                                            : normalise(text));
          log_->verticalScrollBar()->setValue(log_->verticalScrollBar()->maximum());
        });
        watcher->setFuture(QtConcurrent::run(read_tail, log));
      },
      [](const QString&) {});
}

}  // namespace td::gui
