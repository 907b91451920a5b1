#include "gui/core/run_text.h"

#include <QCoreApplication>
#include <QRegularExpression>
#include <QStringList>

#include <vector>

namespace td::gui {

namespace {

QString translated(const char* source) { return QCoreApplication::translate("td::gui::RunText", source); }

// One sentence pattern of an end reason and its translation. `english` is the regular
// expression the writer's sentence matches (anchored; the captures are data), `translated`
// the tr() text with %1.. for the captures in order; `rest`: the capture holding the text
// after the sentence, translated again (a note that follows it), or 0.
struct Sentence {
  const char* english;
  const char* translated;
  int rest;
};

// The sentences TrainDeck writes (see run_text.h for their writers). The translated texts
// are QT_TRANSLATE_NOOP so that lupdate finds them; endReasonText() looks them up.
const Sentence kSentences[] = {
    // engine/train/training_run.cpp, end_run(...)
    {R"(reached train\.steps)", QT_TRANSLATE_NOOP("td::gui::RunText", "reached train.steps"), 0},
    {R"(stop requested \(signal\))", QT_TRANSLATE_NOOP("td::gui::RunText", "stop requested (signal)"), 0},
    {R"(time limit)", QT_TRANSLATE_NOOP("td::gui::RunText", "time limit"), 0},
    {R"(3 steps in a row had a non-finite loss or gradient norm; lower train\.lr or check the data\.(.*))",
     QT_TRANSLATE_NOOP("td::gui::RunText",
                       "3 steps in a row had a non-finite loss or gradient norm; lower train.lr or check the data."),
     1},
    // engine/train/trainer.cpp, newest_verified_note() (after the sentence above)
    {R"( The newest checkpoint that verifies is step (\d+) \((.*)\): continue with --resume \(the (\d+) newer do not verify\), or from an older step with --resume-from STEP\.)",
     QT_TRANSLATE_NOOP("td::gui::RunText",
                       " The newest checkpoint that verifies is step %1 (%2): continue with --resume (the %3 newer do "
                       "not verify), or from an older step with --resume-from STEP."),
     0},
    {R"( The newest checkpoint that verifies is step (\d+) \((.*)\): continue with --resume, or from an older step with --resume-from STEP\.)",
     QT_TRANSLATE_NOOP("td::gui::RunText",
                       " The newest checkpoint that verifies is step %1 (%2): continue with --resume, or from an older "
                       "step with --resume-from STEP."),
     0},
    {R"( No checkpoint verifies \((.*)\): start again in a new --out\.)",
     QT_TRANSLATE_NOOP("td::gui::RunText", " No checkpoint verifies (%1): start again in a new --out."), 0},
    // gui/runs/run_follower.cpp
    {R"(the engine process (\d+) ended without a run_end event: (.*))",
     QT_TRANSLATE_NOOP("td::gui::RunText", "the engine process %1 ended without a run_end event: %2"), 0},
    {R"(the engine process (\d+) ended without a run_end event)",
     QT_TRANSLATE_NOOP("td::gui::RunText", "the engine process %1 ended without a run_end event"), 0},
    // gui/runs/slurm_target.cpp: a Slurm job that ended without the engine's run_end
    {R"(job (\d+): (.*))", QT_TRANSLATE_NOOP("td::gui::RunText", "job %1: %2"), 0},
    // remote/remote_run.cpp
    {R"(the engine process \(pid (\d+)\) on the node ended without a run_end event; last lines of (\S+):\n(.*))",
     QT_TRANSLATE_NOOP("td::gui::RunText",
                       "the engine process (pid %1) on the node ended without a run_end event; last lines of %2:\n%3"),
     0},
};

// `text` with %1..%9 replaced by data[0..8] in one pass (a path holding "%2" stays as it is).
QString substitute(const QString& text, const QStringList& data) {
  QString out;
  for (qsizetype i = 0; i < text.size(); ++i) {
    const int k = i + 1 < text.size() ? text[i + 1].digitValue() : -1;
    if (text[i] == QLatin1Char('%') && k >= 1 && k <= data.size()) {
      out += data[k - 1];
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

QString runStatusText(const QString& status) {
  if (status == QLatin1String("unknown")) return QCoreApplication::translate("td::gui::RunText", "unknown");
  if (status == QLatin1String("running")) return QCoreApplication::translate("td::gui::RunText", "running");
  if (status == QLatin1String("completed")) return QCoreApplication::translate("td::gui::RunText", "completed");
  if (status == QLatin1String("stopped")) return QCoreApplication::translate("td::gui::RunText", "stopped");
  if (status == QLatin1String("failed")) return QCoreApplication::translate("td::gui::RunText", "failed");
  return status;
}

QString endReasonText(const QString& reason) {
  // Compiled once per thread (QRegularExpression is reentrant, not shared across threads).
  thread_local const std::vector<QRegularExpression> patterns = [] {
    std::vector<QRegularExpression> out;
    for (const Sentence& s : kSentences)
      out.emplace_back(QRegularExpression::anchoredPattern(QString::fromUtf8(s.english)),
                       QRegularExpression::DotMatchesEverythingOption);
    return out;
  }();
  for (size_t k = 0; k < patterns.size(); ++k) {
    const QRegularExpressionMatch m = patterns[k].match(reason);
    if (!m.hasMatch()) continue;
    const Sentence& s = kSentences[k];
    QStringList data;
    for (int i = 1; i <= patterns[k].captureCount(); ++i)
      if (i != s.rest) data << m.captured(i);
    QString out = substitute(translated(s.translated), data);
    if (s.rest) out += endReasonText(m.captured(s.rest));
    return out;
  }
  return reason;
}

}  // namespace td::gui
