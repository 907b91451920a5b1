// The engine's progress line on stderr says how long the run has taken and how long it has left
// (issue 14, "Runs"): StepRate's rate by hand, and the line of a real tiny run (its format, not
// its timings).
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/common/duration.h"
#include "engine/train/step_rate.h"
#include "test_util.h"

using namespace tdtest;

class TestProgressLine : public QObject {
  Q_OBJECT

 private slots:
  void rateOfTheLastSteps() {
    td::StepRate r(2);  // a window of 2 intervals: the last 3 step ends
    QVERIFY(!r.seconds_left(10).has_value());
    r.add(1, 0.0);
    QVERIFY(!r.seconds_per_step().has_value());  // one step is no rate
    r.add(2, 1.0);
    QCOMPARE(*r.seconds_per_step(), 1.0);
    r.add(3, 3.0);
    r.add(4, 6.0);  // step 1 leaves the window: (6 - 1) / (4 - 2) = 2.5 s a step
    QCOMPARE(*r.seconds_per_step(), 2.5);
    QCOMPARE(*r.seconds_left(10), 15.0);  // 6 steps left x 2.5 s
    QCOMPARE(*r.seconds_left(4), 0.0);    // done
    r.add(6, 8.0);  // a skipped step 5: (8 - 3) / (6 - 3) steps
    QCOMPARE(*r.seconds_per_step(), 5.0 / 3.0);
  }

  void cliLineHasElapsedAndTimeLeft() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const TinyRun t = write_tiny_run(dir.path(), generated_text(400));
    QVERIFY2(t.prepare.exit_code == 0, qPrintable(t.prepare.err));
    const ProcResult r = engine({"train", "--config", t.cfg, "--out", dir.filePath("run"), "--no-events-stdout"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    // step N/20 | loss | lr | norm | ms | tok/s | mfu | <elapsed> elapsed | ~<left> left
    const QRegularExpression line(QStringLiteral(
        R"(^step (\d+)/20 \| loss \S+ \| lr \S+ \| norm \S+ \| \d+ ms \| \d+ tok/s \| mfu \S+ \| (\S+) elapsed \| (\S+) left$)"),
        QRegularExpression::MultilineOption);
    QRegularExpressionMatchIterator it = line.globalMatch(r.err);
    int lines = 0;
    const QRegularExpression duration(QStringLiteral(R"(^(\d+\.\ds|\d+m\d\ds|\d+h\d\dm\d\ds)$)"));
    while (it.hasNext()) {
      const QRegularExpressionMatch m = it.next();
      ++lines;
      const int step = m.captured(1).toInt();
      QVERIFY2(duration.match(m.captured(2)).hasMatch(), qPrintable(m.captured(0)));
      // The first step has no rate yet ("?"); every later one an estimate "~<duration>".
      if (step == 1) {
        QCOMPARE(m.captured(3), QStringLiteral("?"));
      } else {
        QVERIFY2(m.captured(3).startsWith('~') && duration.match(m.captured(3).mid(1)).hasMatch(), qPrintable(m.captured(0)));
      }
      if (step == 20) QCOMPARE(m.captured(3), QStringLiteral("~0.0s"));  // nothing left at the last step
    }
    QVERIFY2(lines == 20, qPrintable(r.err));  // log_interval 1: a line per step
  }
};

QTEST_GUILESS_MAIN(TestProgressLine)
#include "test_progress_line.moc"
