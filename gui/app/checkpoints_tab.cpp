#include "gui/app/checkpoints_tab.h"

#include <QDateTime>
#include <QDir>
#include <QEvent>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QStandardPaths>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent>

#include <map>

#include "engine/checkpoint/keep.h"
#include "gui/app/checkpoint_dialogs.h"
#include "gui/core/store_client.h"
#include "gui/look/icons.h"
#include "gui/runs/checkpoint_jobs.h"
#include "gui/runs/run_targets.h"
#include "store/store.h"

namespace td::gui {

namespace {
enum Column { kStep, kSize, kWritten, kKept, kOnDisk, kColumns };

QString sizeText(qint64 bytes) {
  if (bytes < 0) return QStringLiteral("–");
  if (bytes >= qint64(1e9)) return CheckpointsTab::tr("%1 GB").arg(bytes / 1e9, 0, 'f', 2);
  return CheckpointsTab::tr("%1 MB").arg(bytes / 1e6, 0, 'f', bytes >= qint64(1e8) ? 0 : 2);
}

QString stepName(int step) { return QStringLiteral("step_%1").arg(step, 8, 10, QLatin1Char('0')); }

// What the store job reads for a local run.
struct Loaded {
  bool found = false;
  bool remote = false;
  bool training = false;
  QString run_dir, data_dir;
  QList<CheckpointsTab::Row> rows;
};
}  // namespace

CheckpointsTab::CheckpointsTab(StoreClient* store, QWidget* parent) : QWidget(parent), store_(store) {
  auto* layout = new QVBoxLayout(this);
  table_ = new QTableWidget(0, kColumns, this);
  table_->setObjectName(QStringLiteral("run_checkpoints"));
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(table_, 1);
  auto* buttons = new QHBoxLayout;
  keep_ = new QPushButton(this);
  keep_->setObjectName(QStringLiteral("checkpoint_keep"));
  delete_ = new QPushButton(icon(QStringLiteral("stop")), QString(), this);
  delete_->setObjectName(QStringLiteral("checkpoint_delete"));
  generate_ = new QPushButton(icon(QStringLiteral("notes")), QString(), this);
  generate_->setObjectName(QStringLiteral("checkpoint_generate"));
  export_ = new QPushButton(icon(QStringLiteral("import")), QString(), this);
  export_->setObjectName(QStringLiteral("checkpoint_export"));
  refresh_ = new QPushButton(this);
  refresh_->setObjectName(QStringLiteral("checkpoint_refresh"));
  for (QPushButton* b : {keep_, delete_, generate_, export_}) buttons->addWidget(b);
  buttons->addStretch(1);
  buttons->addWidget(refresh_);
  layout->addLayout(buttons);
  note_ = new QLabel(this);
  note_->setObjectName(QStringLiteral("checkpoint_note"));
  note_->setWordWrap(true);
  note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(note_);
  retranslate();

  connect(table_, &QTableWidget::itemSelectionChanged, this, &CheckpointsTab::updateButtons);
  connect(keep_, &QPushButton::clicked, this, [this] {
    const int r = selectedRow();
    if (r < 0) return;
    QString error;
    if (!setKept(r, !rows_[r].kept, &error)) note_->setText(error);
  });
  connect(delete_, &QPushButton::clicked, this, &CheckpointsTab::confirmDelete);
  connect(generate_, &QPushButton::clicked, this, [this] {
    if (auto* d = openGenerate(selectedRow())) d->show();
  });
  connect(export_, &QPushButton::clicked, this, [this] {
    if (auto* d = openExport(selectedRow())) d->show();
  });
  connect(refresh_, &QPushButton::clicked, this, [this] {
    listed_.invalidate();
    reload();
  });
  connect(this, &CheckpointsTab::deleteFinished, this, [this](const QString& path, const QString& error) {
    note_->setText(error.isEmpty() ? tr("Deleted %1.").arg(path) : error);
    reload();
  });
  updateButtons();
}

QString CheckpointsTab::noteText() const { return note_->text(); }

void CheckpointsTab::retranslate() {
  table_->setHorizontalHeaderLabels({tr("Step"), tr("Size"), tr("Written"), tr("Kept"), tr("On disk")});
  keep_->setToolTip(tr("A kept checkpoint is never deleted when the run prunes old ones (train.keep_checkpoints)"));
  delete_->setText(tr("Delete…"));
  delete_->setToolTip(tr("Delete this checkpoint's folder from the disk"));
  generate_->setText(tr("Generate…"));
  generate_->setToolTip(tr("Generate text from this checkpoint (the engine's sample)"));
  export_->setText(tr("Export for Hugging Face…"));
  export_->setToolTip(tr("Write this checkpoint as a Hugging Face GPT-2 model folder (the engine's export)"));
  refresh_->setText(tr("Refresh"));
  updateButtons();
  showRows();
}

void CheckpointsTab::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

void CheckpointsTab::setStoreClient(StoreClient* store) {
  store_ = store;
  setRun(QString());
}

void CheckpointsTab::setRunTargets(RunTargets* targets) {
  if (remote_) disconnect(remote_, nullptr, this, nullptr);
  remote_ = targets;
  if (!targets) return;
  RunTarget* remote = targets;
  connect(remote, &RunTarget::checkpointsListed, this,
          [this](const QString& id, const QList<RemoteCheckpointEntry>& entries) {
            if (id != run_ || !remote_run_) return;
            rows_.clear();
            for (const RemoteCheckpointEntry& e : entries) {
              Row r;
              r.step = e.step;
              r.name = e.name;
              r.path = e.name;
              r.bytes = e.bytes;
              r.remote = true;
              rows_.push_back(r);
            }
            note_->setText(tr("Checkpoints on the run's node; Generate and Export download the chosen one first."));
            showRows();
            emit reloaded();
          });
  connect(remote, &RunTarget::checkpointProgress, this, [this](const QString& id, qint64 done, qint64 total) {
    if (id != run_ || pending_.isEmpty()) return;
    note_->setText(tr("Downloading %1: %2 of %3 MB").arg(pending_.front().first).arg(done / 1e6, 0, 'f', 1).arg(total / 1e6, 0, 'f', 1));
  });
  connect(remote, &RunTarget::checkpointFetched, this, [this](const QString& id, const QString& path) {
    if (id != run_) return;
    const QString name = QFileInfo(path).fileName();
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->first == name) {
        auto ready = it->second;
        it = pending_.erase(it);
        ready(path, QString());
      } else {
        ++it;
      }
    }
    note_->setText(tr("Downloaded %1.").arg(path));
    // The next waiting checkpoint (one download per run at a time).
    if (!pending_.isEmpty() && remote_) {
      QString err;
      const QString next = pending_.front().first;
      if (!remote_->fetchCheckpoint(run_, QDir(remoteCacheRoot()).filePath(run_), next, &err)) note_->setText(err);
    }
  });
  connect(remote, &RunTarget::error, this, [this](const QString& message) {
    // error() names no run: a failed listing or download of ours is one that is no longer going on.
    if (remote_run_ && remote_ && !remote_->isListing(run_) && rows_.isEmpty()) note_->setText(message);
    if (pending_.isEmpty() || (remote_ && remote_->isFetching(run_))) return;
    auto waiting = pending_;
    pending_.clear();
    note_->setText(message);
    for (auto& [name, ready] : waiting) ready(QString(), message);
  });
}

QString CheckpointsTab::remoteCacheRoot() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::CacheLocation)).filePath(QStringLiteral("checkpoints"));
}

void CheckpointsTab::setRun(const QString& run_id) {
  if (run_id != run_) pending_.clear();
  listed_.invalidate();
  run_ = run_id;
  rows_.clear();
  root_.clear();
  run_dir_.clear();
  data_dir_.clear();
  remote_run_ = false;
  training_ = false;
  note_->clear();
  showRows();
  reload();
}

void CheckpointsTab::reload() {
  const quint64 generation = ++generation_;
  if (run_.isEmpty() || !store_) return;
  const QString id = run_;
  store_->run<Loaded>(
      this,
      [id = id.toStdString()](td::store::Store& s) {
        Loaded l;
        const auto info = s.find_run(id);
        if (!info) return l;
        l.found = true;
        l.training = info->status == "running";
        l.remote = s.remote_run(id).has_value();
        l.run_dir = QFileInfo(QString::fromStdString(info->events_path)).absolutePath();
        const auto cfg = nlohmann::json::parse(info->config_json, nullptr, /*allow_exceptions=*/false);
        if (cfg.is_object() && cfg.contains("data") && cfg["data"].is_object() && cfg["data"].value("path", nlohmann::json()).is_string())
          l.data_dir = QString::fromStdString(cfg["data"]["path"].get<std::string>());
        if (l.remote || info->events_path.empty()) return l;
        // One row per step: the newest write of a step (a resumed run may write a step again).
        std::map<int64_t, td::store::Checkpoint> by_step;
        for (const auto& c : s.checkpoints(id)) by_step[c.step] = c;
        const QString root = QDir(l.run_dir).filePath(QStringLiteral("checkpoints"));
        for (const auto& [step, c] : by_step) {
          Row r;
          r.step = int(step);
          r.name = stepName(r.step);
          r.path = QDir(root).filePath(r.name);  // where the run's checkpoints are, whatever the event says
          r.t = c.t;
          const qint64 on_disk = checkpointDirBytes(r.path);
          r.on_disk = on_disk >= 0;
          r.bytes = c.bytes ? qint64(*c.bytes) : on_disk;
          r.kept = r.on_disk && td::checkpoint_is_kept(root.toStdString(), r.step);
          l.rows.push_back(r);
        }
        return l;
      },
      [this, id, generation](Loaded l) {
        if (id != run_ || generation != generation_) return;
        remote_run_ = l.remote;
        training_ = l.training;
        run_dir_ = l.run_dir;
        data_dir_ = l.data_dir;
        if (l.remote) {
          root_.clear();
          // One SSH command per listing: at most every 30 s from the ingest refresh.
          if (remote_ && (!listed_.isValid() || listed_.elapsed() > 30000 || rows_.isEmpty())) {
            listed_.start();
            remote_->listCheckpoints(id);
          }
          else note_->setText(tr("This run's checkpoints are on its node, which is not reachable from this window."));
          showRows();
          return;
        }
        root_ = l.found ? QDir(l.run_dir).filePath(QStringLiteral("checkpoints")) : QString();
        rows_ = l.rows;
        // The "none yet" note goes once the first checkpoint is there (other notes stay).
        const QString none = tr("No checkpoint yet: the run writes one every train.checkpoint_interval steps and when it stops.");
        if (rows_.isEmpty())
          note_->setText(none);
        else if (note_->text() == none)
          note_->clear();
        showRows();
        emit reloaded();
      },
      [this](const QString& m) { note_->setText(m); });
}

void CheckpointsTab::showRows() {
  const int selected_step = selectedRow() >= 0 ? rows_.value(selectedRow()).step : -1;
  table_->setRowCount(int(rows_.size()));
  for (int r = 0; r < int(rows_.size()); ++r) {
    const Row& row = rows_[r];
    const QString written =
        row.t > 0 ? QLocale().toString(QDateTime::fromMSecsSinceEpoch(qint64(row.t * 1000)), QLocale::ShortFormat) : QStringLiteral("–");
    const QString on_disk = row.remote ? tr("on the node") : row.on_disk ? tr("yes") : tr("pruned");
    const QStringList cells = {QString::number(row.step), sizeText(row.bytes), written,
                               row.remote ? QStringLiteral("–") : row.kept ? tr("yes") : tr("no"), on_disk};
    for (int c = 0; c < kColumns; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setTextAlignment(c == kStep || c == kSize ? Qt::AlignRight | Qt::AlignVCenter : Qt::AlignLeft | Qt::AlignVCenter);
      if (!row.on_disk) item->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
      item->setToolTip(row.path);
      table_->setItem(r, c, item);
    }
    if (row.step == selected_step) table_->selectRow(r);
  }
  updateButtons();
}

int CheckpointsTab::selectedRow() const {
  const auto sel = table_->selectionModel() ? table_->selectionModel()->selectedRows() : QModelIndexList();
  return sel.isEmpty() ? -1 : sel.front().row();
}

void CheckpointsTab::updateButtons() {
  const int r = selectedRow();
  const bool usable = r >= 0 && r < int(rows_.size()) && rows_[r].on_disk;
  const bool local = usable && !rows_[r].remote;
  keep_->setText(local && rows_[r].kept ? tr("Unkeep") : tr("Keep"));
  keep_->setEnabled(local);
  delete_->setEnabled(local);
  generate_->setEnabled(usable);
  export_->setEnabled(usable);
}

bool CheckpointsTab::setKept(int row, bool keep, QString* error) {
  if (row < 0 || row >= int(rows_.size()) || rows_[row].remote || !rows_[row].on_disk || root_.isEmpty()) {
    if (error) *error = tr("Only a checkpoint on this machine's disk can be kept.");
    return false;
  }
  try {
    td::set_checkpoint_kept(root_.toStdString(), rows_[row].step, keep);  // one stat and one create or unlink
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  rows_[row].kept = keep;
  showRows();
  reload();
  return true;
}

void CheckpointsTab::confirmDelete() {
  const int r = selectedRow();
  if (r < 0 || rows_[r].remote || !rows_[r].on_disk) return;
  const Row& row = rows_[r];
  int newest = -1;
  for (const Row& x : rows_)
    if (x.on_disk) newest = std::max(newest, x.step);
  QString question = tr("Delete the checkpoint of step %1 (%2)? Its folder is removed from the disk.").arg(row.step).arg(row.path);
  if (training_ && row.step == newest)
    question = tr("The run is still training and step %1 is its newest checkpoint: a resume after a crash would start from an "
                  "older one, or from step 0. Delete it anyway?")
                   .arg(row.step);
  if (QMessageBox::question(this, tr("Delete checkpoint"), question, QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) !=
      QMessageBox::Yes)
    return;
  deleteRow(r);
}

void CheckpointsTab::deleteRow(int row) {
  if (row < 0 || row >= int(rows_.size()) || rows_[row].remote || root_.isEmpty()) return;
  const QString root = root_, name = rows_[row].name, path = rows_[row].path;
  auto* watcher = new QFutureWatcher<QString>(this);
  connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, path] {
    watcher->deleteLater();
    emit deleteFinished(path, watcher->result());
  });
  watcher->setFuture(QtConcurrent::run([root, name] { return removeCheckpointDir(root, name); }));
}

void CheckpointsTab::withLocalCheckpoint(const Row& row, Ready ready) {
  if (!row.remote) return ready(row.path, QString());
  const QString cache = QDir(remoteCacheRoot()).filePath(run_);
  const QString local = QDir(cache).filePath(row.name);
  // Downloaded before (download_checkpoint renames a complete copy into place): used as it is.
  if (QFileInfo(QDir(local).filePath(QStringLiteral("trainer.json"))).isFile()) return ready(local, QString());
  if (!remote_) return ready(QString(), tr("This run's checkpoints are on its node, which is not reachable from this window."));
  const bool first = pending_.isEmpty();
  pending_.push_back({row.name, ready});
  if (!first) return;  // started when the one before it is done
  QString err;
  if (!remote_->fetchCheckpoint(run_, cache, row.name, &err)) {
    pending_.removeLast();
    note_->setText(err);
    ready(QString(), err);
  }
}

// Gives a Generate or Export dialog row's checkpoint once it is on this machine (a remote
// run's is downloaded first; the dialog waits, or shows why the download failed).
template <class Dialog>
void CheckpointsTab::giveCheckpoint(Dialog* d, const Row& r) {
  QPointer<Dialog> dp(d);
  // A remote run's dataset path is the node's: its tokenizer is used when the same folder is here.
  const QString data = r.remote && QFileInfo(QDir(data_dir_).filePath(QStringLiteral("manifest.json"))).isFile() ? data_dir_ : QString();
  if (r.remote) d->setWaitText(tr("Downloading %1 from the node…").arg(r.name));
  withLocalCheckpoint(r, [dp, data](const QString& local, const QString& error) {
    if (!dp) return;
    if (local.isEmpty()) dp->setCheckpointError(tr("The checkpoint could not be downloaded: %1").arg(error));
    else dp->setCheckpoint(local, data);
  });
}

GenerateDialog* CheckpointsTab::openGenerate(int row) {
  if (row < 0 || row >= int(rows_.size()) || !rows_[row].on_disk) return nullptr;
  const Row r = rows_[row];
  auto* d = new GenerateDialog(tr("Generate from %1 · step %2").arg(run_).arg(r.step), this);
  d->setAttribute(Qt::WA_DeleteOnClose);
  giveCheckpoint(d, r);
  return d;
}

ExportDialog* CheckpointsTab::openExport(int row) {
  if (row < 0 || row >= int(rows_.size()) || !rows_[row].on_disk) return nullptr;
  const Row r = rows_[row];
  const QString base = !r.remote && !run_dir_.isEmpty() ? QDir(run_dir_).filePath(QStringLiteral("exports"))
                                                        : QDir::home().filePath(QStringLiteral("traindeck-exports/") + run_);
  auto* d = new ExportDialog(tr("Export %1 · step %2 for Hugging Face").arg(run_).arg(r.step),
                             QDir(base).filePath(r.name + QStringLiteral("-hf")), this);
  d->setAttribute(Qt::WA_DeleteOnClose);
  giveCheckpoint(d, r);
  return d;
}

}  // namespace td::gui
