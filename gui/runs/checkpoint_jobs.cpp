#include "gui/runs/checkpoint_jobs.h"

#include <QDir>
#include <QFileInfo>

#include <filesystem>
#include <system_error>

#include "engine/checkpoint/keep.h"
#include "gui/core/paths.h"

namespace td::gui {

namespace {
// The engine's "error: ..." lines (else its whole stderr) and how it ended.
QString engineError(const QByteArray& err, int exit_code, QProcess::ExitStatus status) {
  QStringList lines;
  for (const QString& l : QString::fromUtf8(err).split('\n', Qt::SkipEmptyParts))
    if (l.startsWith(QLatin1String("error:")) || l.startsWith(QLatin1String("internal error:"))) lines << l;
  QString text = lines.isEmpty() ? QString::fromUtf8(err).trimmed() : lines.join('\n');
  const QString end = status == QProcess::CrashExit ? QObject::tr("the engine crashed")
                                                    : QObject::tr("the engine exited with code %1").arg(exit_code);
  return text.isEmpty() ? end : text + QStringLiteral(" (") + end + QLatin1Char(')');
}
}  // namespace

// Qt 6.4's stateful QStringDecoder is not used: with an invalid lead byte at the end of one
// read it drops the next read's first byte ("\xC3" + "e" gave U+FFFD alone where fromUtf8 of
// the whole gives U+FFFD "e"), so the streamed text differed from the engine's output.
QString Utf8Stream::decode(const QByteArray& bytes) {
  QByteArray b = held_ + bytes;
  held_.clear();
  // A lead byte among the last 3 whose sequence needs more bytes than are there: held back.
  for (qsizetype back = 1; back <= 3 && back <= b.size(); ++back) {
    const unsigned char c = static_cast<unsigned char>(b[b.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const qsizetype need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 1;
    if (need > back) {
      held_ = b.right(back);
      b.chop(back);
    }
    break;
  }
  return QString::fromUtf8(b);
}

QString Utf8Stream::finish() {
  const QString rest = QString::fromUtf8(held_);
  held_.clear();
  return rest;
}

SampleJob::SampleJob(QObject* parent) : QObject(parent) {}

SampleJob::~SampleJob() {
  if (isRunning()) {
    proc_->kill();
    proc_->waitForFinished(1000);  // a killed process: its exit is immediate
  }
}

QStringList SampleJob::arguments(const Options& o, bool stream) {
  QStringList a{QStringLiteral("sample"), QStringLiteral("--checkpoint"), o.checkpoint,
                QStringLiteral("--prompt"), o.prompt,
                QStringLiteral("--tokens"), QString::number(o.tokens),
                QStringLiteral("--temperature"), QString::number(o.temperature, 'g', 17),
                QStringLiteral("--top-k"), QString::number(o.top_k),
                QStringLiteral("--seed"), QString::number(o.seed)};
  if (!o.data.isEmpty()) a << QStringLiteral("--data") << o.data;
  if (stream) a << QStringLiteral("--stream");
  return a;
}

bool SampleJob::start(const Options& opt, QString* error) {
  if (isRunning()) {
    if (error) *error = tr("A generation is already running: stop it first.");
    return false;
  }
  const QString engine = engineExecutable();
  if (engine.isEmpty()) {
    if (error) *error = tr("traindeck-engine was not found (set TRAINDECK_ENGINE to its path).");
    return false;
  }
  if (proc_) proc_->deleteLater();
  proc_ = new QProcess(this);
  decoder_ = Utf8Stream();
  text_.clear();
  stderr_.clear();
  stopped_ = false;
  QProcess* p = proc_;
  connect(p, &QProcess::readyReadStandardOutput, this, [this, p] {
    const QString chunk = decoder_.decode(p->readAllStandardOutput());
    if (chunk.isEmpty()) return;
    text_ += chunk;
    emit textAppended(chunk);
  });
  connect(p, &QProcess::readyReadStandardError, this, [this, p] { stderr_ += p->readAllStandardError(); });
  connect(p, &QProcess::finished, this, [this, p](int code, QProcess::ExitStatus status) {
    if (p != proc_) return;
    const QString rest = decoder_.decode(p->readAllStandardOutput()) + decoder_.finish();
    if (!rest.isEmpty()) {
      text_ += rest;
      emit textAppended(rest);
    }
    stderr_ += p->readAllStandardError();
    const bool ok = !stopped_ && status == QProcess::NormalExit && code == 0;
    emit finished(ok, stopped_, ok || stopped_ ? QString() : engineError(stderr_, code, status));
  });
  connect(p, &QProcess::errorOccurred, this, [this, p, engine](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart || p != proc_) return;
    emit finished(false, false, tr("cannot start %1: %2").arg(engine, p->errorString()));
  });
  p->start(engine, arguments(opt));
  return true;
}

void SampleJob::stop() {
  if (!isRunning()) return;
  stopped_ = true;
  proc_->kill();
}

ExportJob::ExportJob(QObject* parent) : QObject(parent) {}

ExportJob::~ExportJob() {
  if (isRunning()) {
    proc_->kill();
    proc_->waitForFinished(1000);
  }
}

bool isEarlierExport(const QString& dir) {
  const QFileInfo marker(QDir(dir).filePath(QStringLiteral(".traindeck-export")));
  return marker.isFile() && !marker.isSymLink();
}

bool ExportJob::start(const QString& checkpoint, const QString& out, const QString& data, QString* error) {
  if (isRunning()) {
    if (error) *error = tr("An export is already running.");
    return false;
  }
  const QString engine = engineExecutable();
  if (engine.isEmpty()) {
    if (error) *error = tr("traindeck-engine was not found (set TRAINDECK_ENGINE to its path).");
    return false;
  }
  const QFileInfo info(out);
  const bool non_empty = info.isDir() && !QDir(out).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System);
  const bool force = non_empty && isEarlierExport(out);
  if (non_empty && !force) {
    if (error) *error = tr("%1 is not empty and is not an earlier export: choose a new or empty folder.").arg(out);
    return false;
  }
  QStringList args{QStringLiteral("export"), QStringLiteral("--checkpoint"), checkpoint, QStringLiteral("--format"),
                   QStringLiteral("hf"), QStringLiteral("--out"), out, QStringLiteral("--progress")};
  if (force) args << QStringLiteral("--force");
  if (!data.isEmpty()) args << QStringLiteral("--data") << data;
  if (proc_) proc_->deleteLater();
  proc_ = new QProcess(this);
  out_buf_.clear();
  stderr_.clear();
  result_.clear();
  out_dir_ = QFileInfo(out).absoluteFilePath();
  QProcess* p = proc_;
  auto read_lines = [this, p] {
    out_buf_ += p->readAllStandardOutput();
    for (qsizetype nl; (nl = out_buf_.indexOf('\n')) >= 0;) {
      const QString line = QString::fromUtf8(out_buf_.left(nl));
      out_buf_.remove(0, nl + 1);
      const QStringList parts = line.split(QLatin1Char(' '));
      if (parts.size() == 3 && parts[0] == QLatin1String("progress")) {
        emit progress(parts[1].toInt(), parts[2].toInt());
      } else if (line.startsWith(QLatin1String("exported "))) {
        result_ = line;
        const qsizetype to = line.lastIndexOf(QLatin1String(" to "));
        const qsizetype paren = line.lastIndexOf(QLatin1String(" ("));
        if (to > 0 && paren > to) out_dir_ = line.mid(to + 4, paren - to - 4);
      }
    }
  };
  connect(p, &QProcess::readyReadStandardOutput, this, read_lines);
  connect(p, &QProcess::readyReadStandardError, this, [this, p] { stderr_ += p->readAllStandardError(); });
  connect(p, &QProcess::finished, this, [this, p, read_lines](int code, QProcess::ExitStatus status) {
    if (p != proc_) return;
    read_lines();
    stderr_ += p->readAllStandardError();
    const bool ok = status == QProcess::NormalExit && code == 0;
    emit finished(ok, ok ? result_ : engineError(stderr_, code, status), out_dir_);
  });
  connect(p, &QProcess::errorOccurred, this, [this, p, engine](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart || p != proc_) return;
    emit finished(false, tr("cannot start %1: %2").arg(engine, p->errorString()), out_dir_);
  });
  p->start(engine, args);
  return true;
}

void ExportJob::cancel() {
  if (isRunning()) proc_->kill();  // the engine writes into a temporary folder: nothing is left
}

QString removeCheckpointDir(const QString& root, const QString& name) {
  namespace fs = std::filesystem;
  const int step = td::checkpoint_step_of_name(name.toStdString());
  if (step < 0) return QObject::tr("'%1' is not a checkpoint folder name (step_ and 8 digits): nothing was deleted").arg(name);
  const fs::path dir = fs::path(root.toStdString()) / name.toStdString();
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(st)) return QObject::tr("%1 does not exist (already deleted or pruned)").arg(QString::fromStdString(dir.string()));
  if (fs::is_symlink(st))
    return QObject::tr("%1 is a symbolic link, not a checkpoint folder: nothing was deleted").arg(QString::fromStdString(dir.string()));
  if (!fs::is_directory(st))
    return QObject::tr("%1 is not a folder: nothing was deleted").arg(QString::fromStdString(dir.string()));
  fs::remove_all(dir, ec);  // removes links inside, never what they point to
  if (ec) return QObject::tr("cannot delete %1: %2").arg(QString::fromStdString(dir.string()), QString::fromStdString(ec.message()));
  try {
    td::set_checkpoint_kept(root.toStdString(), step, false);
  } catch (const std::exception&) {
    // a marker that is a folder stays; the checkpoint itself is gone
  }
  return {};
}

qint64 checkpointDirBytes(const QString& dir) {
  const QFileInfo info(dir);
  if (!info.isDir() || info.isSymLink()) return -1;
  qint64 sum = 0;
  for (const QFileInfo& f : QDir(dir).entryInfoList(QDir::Files | QDir::Hidden | QDir::NoSymLinks)) sum += f.size();
  return sum;
}

}  // namespace td::gui
