// PrepareJob: the engine's `prepare --progress-json` as a child process (prepare_job.h).
#include "gui/prepare/prepare_job.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QRegularExpression>

#include <nlohmann/json.hpp>

#include "gui/core/paths.h"
#include "gui/core/store_client.h"
#include "store/store.h"

namespace td::gui {

namespace {

QString absoluteClean(const QString& path) {
  QString p = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
  while (p.size() > 1 && p.endsWith(QLatin1Char('/'))) p.chop(1);
  return p;
}

// "<name>.tmp-*" entries beside `out` (the engine's temporary dataset folders).
QStringList tmpSiblings(const QString& out) {
  const QFileInfo fi(out);
  return QDir(fi.absolutePath())
      .entryList({fi.fileName() + QStringLiteral(".tmp-*")},
                 QDir::Dirs | QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot | QDir::System);
}

void removePath(const QString& p) {
  QFileInfo fi(p);
  if (fi.isDir() && !fi.isSymLink())
    QDir(p).removeRecursively();
  else
    QFile::remove(p);
}

}  // namespace

PrepareJob::PrepareJob(QObject* parent) : QObject(parent) {
  kill_timer_.setSingleShot(true);
  connect(&kill_timer_, &QTimer::timeout, this, [this] {
    if (process_ && process_->state() != QProcess::NotRunning) process_->kill();
  });
}

PrepareJob::~PrepareJob() {
  if (process_ && process_->state() != QProcess::NotRunning) {
    process_->disconnect(this);
    process_->terminate();
    if (!process_->waitForFinished(grace_ms_)) {
      process_->kill();
      process_->waitForFinished(5000);
    }
    removePartial(!out_existed_, true);
  }
  if (cleanup_) cleanup_->wait();
}

void PrepareJob::setStoreClient(StoreClient* store) { store_ = store; }

QStringList PrepareJob::arguments(const PrepareRequest& r) {
  QStringList a{QStringLiteral("prepare")};
  // --opt=value: a path that starts with '-' is still a value.
  for (const QString& in : r.inputs) a << QStringLiteral("--input=") + absoluteClean(in);
  a << QStringLiteral("--out=") + absoluteClean(r.out_dir);
  a << QStringLiteral("--tokenizer=") + r.tokenizer;
  if (r.vocab_size > 0) a << QStringLiteral("--vocab-size=") + QString::number(r.vocab_size);
  a << QStringLiteral("--val-fraction=") + QString::number(r.val_fraction, 'g', 17);
  a << QStringLiteral("--progress-json");
  return a;
}

bool PrepareJob::start(const PrepareRequest& request) {
  if (state_ != State::Idle) return false;
  auto refuse = [this](const QString& msg) {
    QMetaObject::invokeMethod(this, [this, msg] { emit failed(msg); }, Qt::QueuedConnection);
    return false;
  };
  if (request.inputs.isEmpty()) return refuse(tr("No input: add files or folders to prepare."));
  if (request.out_dir.trimmed().isEmpty()) return refuse(tr("No output folder: choose where the dataset goes."));
  const QString exe = engineExecutable();
  if (exe.isEmpty())
    return refuse(tr("Cannot find traindeck-engine: install it beside traindeck, or set TRAINDECK_ENGINE "
                     "to its path."));

  request_ = request;
  out_abs_ = absoluteClean(request.out_dir);
  out_existed_ = QFileInfo::exists(out_abs_);
  tmp_before_ = tmpSiblings(out_abs_);
  created_root_.clear();
  for (QString p = QFileInfo(out_abs_).absolutePath(); !QFileInfo::exists(p); p = QFileInfo(p).absolutePath()) {
    created_root_ = p;
    if (p == QFileInfo(p).absolutePath()) break;  // the root
  }
  stdout_buf_.clear();
  stderr_buf_.clear();
  done_seen_ = false;
  reused_ = false;
  manifest_text_.clear();
  manifest_ = {};

  if (process_) process_->deleteLater();
  process_ = new QProcess(this);
  connect(process_, &QProcess::readyReadStandardOutput, this, &PrepareJob::onStdout);
  connect(process_, &QProcess::readyReadStandardError, this, &PrepareJob::onStderr);
  connect(process_, &QProcess::finished, this, &PrepareJob::onFinished);
  connect(process_, &QProcess::errorOccurred, this, &PrepareJob::onError);
  connect(process_, &QProcess::started, this, [this] {
    if (state_ != State::Cancelling) return;  // cancel() came while the process was starting
    process_->terminate();
    kill_timer_.start(grace_ms_);
  });
  state_ = State::Running;
  process_->start(exe, arguments(request));
  return true;
}

void PrepareJob::cancel() {
  if (state_ != State::Running) return;
  state_ = State::Cancelling;
  if (process_->state() == QProcess::NotRunning) return;  // onFinished/onError will clean up
  if (process_->state() == QProcess::Starting) return;    // started() sends the signal
  process_->terminate();  // SIGTERM: the engine stops at its next progress report
  kill_timer_.start(grace_ms_);
}

void PrepareJob::onStdout() {
  stdout_buf_ += process_->readAllStandardOutput();
  qsizetype nl;
  while ((nl = stdout_buf_.indexOf('\n')) >= 0) {
    const QByteArray line = stdout_buf_.left(nl);
    stdout_buf_.remove(0, nl + 1);
    handleLine(line);
  }
}

void PrepareJob::onStderr() {
  stderr_buf_ += process_->readAllStandardError();
  constexpr qsizetype kKeep = 256 * 1024;  // the message is at the end
  if (stderr_buf_.size() > kKeep) stderr_buf_.remove(0, stderr_buf_.size() - kKeep);
}

void PrepareJob::handleLine(const QByteArray& line) {
  if (line.trimmed().isEmpty()) return;
  // nlohmann keeps 64-bit integers exact (QJsonValue holds doubles).
  const nlohmann::json j = nlohmann::json::parse(line.constData(), line.constData() + line.size(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string()) return;
  const std::string type = j["type"].get<std::string>();
  if (type == "progress" && state_ == State::Running) {
    emit progress(j.value("bytes_done", qint64{0}), j.value("bytes_total", qint64{0}));
  } else if (type == "done" && j.contains("manifest") && j["manifest"].is_object()) {
    done_seen_ = true;
    reused_ = j.value("reused", false);
    if (j.contains("out") && j["out"].is_string()) out_abs_ = QString::fromStdString(j["out"].get<std::string>());
    manifest_text_ = QString::fromStdString(j["manifest"].dump());
    manifest_ = QJsonDocument::fromJson(manifest_text_.toUtf8()).object();
  }
}

void PrepareJob::onError(QProcess::ProcessError error) {
  if (error != QProcess::FailedToStart) return;  // crashes arrive through finished()
  kill_timer_.stop();
  if (state_ == State::Cancelling) {
    state_ = State::Idle;
    emit cancelled();
    return;
  }
  finishFailed(tr("Cannot start the engine '%1': %2").arg(process_->program(), process_->errorString()));
}

QString PrepareJob::engineMessage() const {
  const QString text = QString::fromUtf8(stderr_buf_);
  QStringList errors, other;
  for (QString line : text.split(QRegularExpression(QStringLiteral("[\r\n]")), Qt::SkipEmptyParts)) {
    line = line.trimmed();
    if (line.isEmpty()) continue;
    if (line.startsWith(QStringLiteral("error: ")))
      errors << line.mid(7);
    else if (line.startsWith(QStringLiteral("internal error: ")))
      errors << line;
    else
      other << line;
  }
  if (!errors.isEmpty()) return errors.join(QLatin1Char('\n'));
  if (!other.isEmpty()) return other.mid(std::max<qsizetype>(0, other.size() - 10)).join(QLatin1Char('\n'));
  return {};
}

void PrepareJob::onFinished(int exit_code, QProcess::ExitStatus status) {
  kill_timer_.stop();
  onStdout();
  if (!stdout_buf_.isEmpty()) {  // a last line without its newline
    handleLine(stdout_buf_);
    stdout_buf_.clear();
  }
  onStderr();
  if (state_ == State::Cancelling) {
    removePartial(!out_existed_, false);  // emits cancelled() when done
    return;
  }
  if (status == QProcess::NormalExit && exit_code == 0 && done_seen_) {
    if (!store_) {
      state_ = State::Idle;
      emit finished(manifest_, out_abs_);
      return;
    }
    state_ = State::Registering;
    const std::string out = out_abs_.toStdString(), text = manifest_text_.toStdString();
    store_->run<td::store::Dataset>(
        this, [out, text](td::store::Store& s) { return s.register_dataset(out, text); },
        [this](td::store::Dataset) {
          state_ = State::Idle;
          emit finished(manifest_, out_abs_);
        },
        [this](const QString& msg) {
          state_ = State::Idle;
          emit failed(tr("The dataset was prepared in %1, but registering it in the store failed: %2")
                          .arg(out_abs_, msg));
        });
    return;
  }
  QString msg = engineMessage();
  if (status == QProcess::CrashExit)
    msg = tr("The engine stopped unexpectedly (%1).").arg(process_->errorString()) +
          (msg.isEmpty() ? QString() : QStringLiteral("\n") + msg);
  else if (msg.isEmpty())
    msg = exit_code == 0 ? tr("The engine finished without reporting the dataset (is it an older "
                              "traindeck-engine without --progress-json?).")
                         : tr("The engine exited with code %1 and no message.").arg(exit_code);
  removePartial(false, false);  // a crash may leave "<out>.tmp-*"; the engine removes it on errors
  finishFailed(msg);
}

void PrepareJob::finishFailed(const QString& message) {
  state_ = State::Idle;
  emit failed(message);
}

void PrepareJob::removePartial(bool remove_out, bool sync) {
  QStringList paths;
  const QString parent = QFileInfo(out_abs_).absolutePath();
  for (const QString& name : tmpSiblings(out_abs_))
    if (!tmp_before_.contains(name)) paths << parent + QLatin1Char('/') + name;
  if (remove_out && QFileInfo::exists(out_abs_)) paths << out_abs_;
  if (!created_root_.isEmpty() && QFileInfo::exists(created_root_)) paths << created_root_;
  const bool notify = state_ == State::Cancelling;
  if (sync || paths.isEmpty()) {
    for (const QString& p : paths) removePath(p);
    if (notify) {
      state_ = State::Idle;
      emit cancelled();
    }
    return;
  }
  // Removing shards of a large partial dataset is file-system work: off the GUI thread.
  QThread* t = QThread::create([paths] {
    for (const QString& p : paths) removePath(p);
  });
  cleanup_ = t;
  connect(t, &QThread::finished, this, [this, t, notify] {
    t->deleteLater();
    if (notify) {
      state_ = State::Idle;
      emit cancelled();
    }
  });
  t->start();
}

}  // namespace td::gui
