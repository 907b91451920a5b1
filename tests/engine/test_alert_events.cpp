// The engine's alerts (issue 16 section 3, docs/events.md "Alerts"): a real short CPU run with a
// forced non-finite loss (--debug-nonfinite-at) and a reported loss spike (--debug-loss-spike-at:
// ten times the step's loss) writes `alert` events at exactly those steps, with the spike's limit
// equal to the one computed here from the run's own earlier losses; a disk limit of the whole
// filesystem fires the disk alert at the first step with statvfs's numbers; a clean run writes no
// alert.
#include <QTemporaryDir>
#include <QtTest>

#include <sys/statvfs.h>

#include <cmath>

#include "test_util.h"

using json = nlohmann::json;
using namespace tdtest;

class TestAlertEvents : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  TinyRun tiny_;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    tiny_ = write_tiny_run(dir_.path(), generated_text(400));
    QVERIFY2(tiny_.prepare.exit_code == 0, qPrintable(tiny_.prepare.err));
  }

  void nonfinite_spike_and_disk_alerts_at_their_steps() {
    const QString out = dir_.filePath("run");
    auto r = engine({"train", "--config", tiny_.cfg, "--out", out, "--quiet", "--no-events-stdout", "--set", "train.steps=30",
                     "--set", "train.alert_disk_min_free_fraction=1", "--debug-nonfinite-at", "15", "--debug-loss-spike-at", "25"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const auto ev = read_events(out + "/events.jsonl");
    const auto alerts = events_of_type(ev, "alert");
    QStringList seen;
    for (const auto& a : alerts) seen << QString::fromStdString(a["kind"].get<std::string>() + "@" + std::to_string(a["step"].get<int>()));
    // The disk limit is the filesystem's size: free space is always below it, so the disk alert
    // fires at the first step and, one episode, never again.
    QCOMPARE(seen, (QStringList{"disk_low@1", "nonfinite@15", "loss_spike@25"}));

    struct statvfs sv {};
    QCOMPARE(::statvfs(out.toLocal8Bit().constData(), &sv), 0);
    const json& disk = alerts[0];
    QCOMPARE(disk["severity"].get<std::string>(), std::string("warning"));
    QCOMPARE(disk["threshold"].get<double>(), (double)sv.f_blocks * sv.f_frsize);
    QVERIFY(disk["value"].get<double>() < disk["threshold"].get<double>());

    const json& nf = alerts[1];
    QCOMPARE(nf["severity"].get<std::string>(), std::string("critical"));
    QVERIFY(nf["value"].is_null());  // NaN is written as null
    QVERIFY(nf["threshold"].is_null());

    // The spike's limit from the finite losses of steps 1..24 (step 15 was skipped), default
    // rules: max(mean + 6 std, 1.5 mean) over the last 50.
    std::vector<double> before;
    double spiked = 0;
    for (const auto& s : events_of_type(ev, "step")) {
      if (s["step"].get<int>() < 25) before.push_back(s["loss"].get<double>());
      if (s["step"].get<int>() == 25) spiked = s["loss"].get<double>();
    }
    QCOMPARE(before.size(), size_t(23));
    double m = 0, ss = 0;
    for (double x : before) m += x;
    m /= before.size();
    for (double x : before) ss += (x - m) * (x - m);
    const double limit = std::max(m + 6 * std::sqrt(ss / before.size()), 1.5 * m);
    const json& sp = alerts[2];
    QCOMPARE(sp["value"].get<double>(), spiked);
    QVERIFY2(std::abs(sp["threshold"].get<double>() - limit) <= 1e-12 * limit,
             qPrintable(QString("threshold %1, computed %2").arg(sp["threshold"].get<double>(), 0, 'g', 17).arg(limit, 0, 'g', 17)));
    QVERIFY(!sp["message"].get<std::string>().empty());
  }

  void a_clean_run_writes_no_alert() {
    const QString out = dir_.filePath("clean");
    auto r = engine({"train", "--config", tiny_.cfg, "--out", out, "--quiet", "--no-events-stdout", "--set", "train.steps=30"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const auto ev = read_events(out + "/events.jsonl");
    QCOMPARE(events_of_type(ev, "step").size(), size_t(30));
    QCOMPARE(events_of_type(ev, "alert").size(), size_t(0));
  }
};

QTEST_GUILESS_MAIN(TestAlertEvents)
#include "test_alert_events.moc"
