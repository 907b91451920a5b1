// AlertWatch (gui/runs/alert_watch.h), the workbench's side of the alerts, with the real local
// target (RunController behind RunTargets) and the real engine: an engine alert written while no
// workbench watched (the disk rule with a limit of the whole disk fires at step 1) is notified at
// reattach, once; a SIGSTOPped engine is reported as a stall with the run's own limit; the run's
// end (Stop) is stored and notified. With a fake remote target: the connection lost (its
// structured RunTargetState::connection) past the config's limit, a rank it reports gone, a
// failed end naming a rank (one rank_lost per loss). The desktop is a recording backend. Waits are for events,
// with generous limits; nothing assumes how fast this machine trains.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>

#include "../gui_test_util.h"
#include "engine/config.h"
#include "engine/metrics/alerts.h"
#include "store/ingest.h"
#include "gui/core/store_client.h"
#include "gui/runs/alert_watch.h"
#include "gui/runs/experiments_model.h"
#include "gui/runs/run_controller.h"
#include "gui/runs/run_targets.h"
#include "store/store.h"

using namespace td::gui;
using td::store::Store;
using tdguitest::wait_ended;
using tdguitest::wait_step;

namespace {

struct Sent {
  QString title, body, severity;
};

std::vector<td::store::RunAlert> alerts_of(const QString& db, const QString& id, const char* kind) {
  Store s(db.toStdString());
  std::vector<td::store::RunAlert> out;
  for (const auto& a : s.alerts(id.toStdString()))
    if (a.kind == kind) out.push_back(a);
  return out;
}

// Waits until the store holds an alert of `kind` for the run; how many there are then.
size_t wait_alert(const QString& db, const QString& id, const char* kind, int timeout_ms = tdguitest::kSlowMs) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < timeout_ms) {
    if (const auto a = alerts_of(db, id, kind); !a.empty()) return a.size();
    QTest::qWait(100);
  }
  return 0;
}

// A remote target as the watch sees it: one run, Running, its connection state (structured, and
// in words in the detail) and the ranks it found gone.
class FakeRemote : public RunTarget {
 public:
  using RunTarget::RunTarget;
  QString kind() const override { return QStringLiteral("fake"); }
  void setStoreClient(StoreClient*) override {}
  QString start(const RunPlacement&, const QString&, const nlohmann::json&, const QString&, QString*) override { return {}; }
  bool stop(const QString&, QString*) override { return false; }
  bool resume(const QString&, QString*) override { return false; }
  void reattach() override {}
  void detachAll() override {}
  QStringList activeRuns() const override { return {QStringLiteral("remote-1")}; }
  RunTargetState state(const QString&) const override {
    RunTargetState st{RunTargetState::Phase::Running, detail, 0, 0};
    st.connection = connection;
    st.reconnect_attempt = connection == RunTargetState::Connection::Reconnecting ? 1 : 0;
    st.lost_ranks = lost;
    return st;
  }
  RunFiles files(const QString&) const override { return {}; }
  void say(RunTargetState::Connection c, const QString& d) {
    connection = c;
    detail = d;
    emit stateChanged(QStringLiteral("remote-1"));
  }
  void lose(const QString& who) {
    lost << who;
    emit stateChanged(QStringLiteral("remote-1"));
  }
  RunTargetState::Connection connection = RunTargetState::Connection::None;
  QString detail;
  QStringList lost;
};

// A remote run "remote-1" in a fresh store `db`: its run_start (config `rc`) and step 1, plus
// `more` lines (JSON objects without the common fields).
void write_remote_run(const QString& dir, const QString& db, const td::RunConfig& rc, const std::vector<nlohmann::json>& more = {}) {
  auto line = [](nlohmann::json j, double t) {
    j.update({{"v", 1}, {"t", t}, {"run_id", "remote-1"}, {"attempt", 0}, {"rank", 0}});
    return j.dump() + "\n";
  };
  std::string text = line({{"type", "run_start"}, {"config", td::to_json(rc)}}, 100.0) +
                     line({{"type", "step"}, {"step", 1}, {"loss", 3.0}, {"step_ms", 100.0}}, 101.0);
  for (size_t i = 0; i < more.size(); ++i) text += line(more[i], 102.0 + double(i));
  const QString file = QDir(dir).filePath(QFileInfo(db).completeBaseName() + ".jsonl");
  tdguitest::writeFile(file, QByteArray::fromStdString(text));
  Store s(db.toStdString());
  td::store::Ingester(s, file.toStdString()).poll_all();
}

}  // namespace

class TestAlertWatch : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_, db_;

 private slots:
  void initTestCase() {
    qputenv("TRAINDECK_ENGINE", TD_ENGINE_EXE);
    qputenv("TRAINDECK_RUNS_DIR", dir_.filePath("runs").toUtf8());
    QCoreApplication::setOrganizationName(QStringLiteral("TrainDeckTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_alert_watch"));
    qputenv("XDG_CONFIG_HOME", dir_.filePath("config").toUtf8());  // QSettings of this test only
    data_ = tdguitest::prepare_tiny_dataset(dir_.path());
    QVERIFY(!data_.isEmpty());
    db_ = dir_.filePath("td.db");
  }

  void notifier_honours_the_settings() {
    AlertNotifier n;
    QList<Sent> sent;
    td::store::RunAlert a;
    a.kind = "loss_spike";
    a.severity = "warning";
    a.message = "step 25: loss 30 is far above";
    QVERIFY(!n.notify("r", a));  // no backend: nothing, no error
    n.setBackend([&](const QString& t, const QString& b, const QString& s) {
      sent.push_back({t, b, s});
      return true;
    });
    QVERIFY(AlertNotifier::notifies("loss_spike"));  // default on
    QVERIFY(n.notify("my run", a));
    QCOMPARE(sent.size(), 1);
    QCOMPARE(sent[0].title, QStringLiteral("TrainDeck: my run — Loss spike"));
    QCOMPARE(sent[0].body, QStringLiteral("step 25: loss 30 is far above"));
    QCOMPARE(sent[0].severity, QStringLiteral("warning"));
    AlertNotifier::setNotifies("loss_spike", false);
    QVERIFY(!n.notify("my run", a));
    QCOMPARE(sent.size(), 1);
    AlertNotifier::setNotifies("loss_spike", true);
  }

  // Issue 35: 718 throughput drops arriving at once (a reattach) make one notification, not 718;
  // within a minute of it, more of that kind for that run are held and counted into the next.
  void notifications_are_coalesced() {
    AlertNotifier n;
    QList<Sent> sent;
    n.setBackend([&](const QString& t, const QString& b, const QString& s) {
      sent.push_back({t, b, s});
      return true;
    });
    qint64 now = 1000;
    n.setClock([&] { return now; });
    auto alert = [](const char* kind, int step) {
      td::store::RunAlert a;
      a.kind = kind;
      a.severity = "warning";
      a.message = "step " + std::to_string(step);
      return a;
    };
    std::vector<td::store::RunAlert> burst;
    for (int s = 1; s <= 718; ++s) burst.push_back(alert("throughput_drop", s));
    burst.push_back(alert("loss_spike", 719));
    QCOMPARE(n.coalesce("r1", "my run", burst), 2);  // one per kind
    QCOMPARE(sent.size(), 2);
    QCOMPARE(sent[0].title, QStringLiteral("TrainDeck: my run — Throughput drop"));
    QCOMPARE(sent[0].body, QStringLiteral("step 718 (+717 more alerts of this kind)"));  // the newest, and the count
    QCOMPARE(sent[1].body, QStringLiteral("step 719"));
    now += 30 * 1000;  // within the minute: held
    QCOMPARE(n.coalesce("r1", "my run", {alert("throughput_drop", 720), alert("throughput_drop", 721)}), 0);
    QCOMPARE(n.coalesce("r2", "other run", {alert("throughput_drop", 5)}), 1);  // another run is not held
    now += 31 * 1000;  // past the minute: the next one tells of the held two
    QCOMPARE(n.coalesce("r1", "my run", {alert("throughput_drop", 722)}), 1);
    QCOMPARE(sent.size(), 4);
    QCOMPARE(sent[3].body, QStringLiteral("step 722 (+2 more alerts of this kind)"));
  }

  // A remote run whose target reports "reconnecting ..." for longer than the config's
  // alert_connection_lost_s (1 s) gives one connection_lost alert, notified; no stall meanwhile.
  void connection_lost_after_the_configs_limit() {
    const QString db = dir_.filePath("remote.db");
    td::RunConfig rc;
    rc.data.path = "/data/on/the/node";
    rc.train.alert_connection_lost_s = 1.0;
    rc.train.alert_stall_min_s = 0.5;
    write_remote_run(dir_.path(), db, rc);
    StoreClient client(db);
    FakeRemote fake;
    AlertNotifier notifier;
    QList<Sent> sent;
    notifier.setBackend([&](const QString& t, const QString& b, const QString& sev) {
      sent.push_back({t, b, sev});
      return true;
    });
    AlertWatch watch(&fake, &notifier);
    watch.setCheckIntervalMs(100);
    watch.setStoreClient(&client);
    fake.say(RunTargetState::Connection::Connected, QStringLiteral("connected"));
    emit fake.runAttached(QStringLiteral("remote-1"));
    emit fake.runIngested(QStringLiteral("remote-1"), 1);
    // The words are not read (a translation, another target's): the structured state is.
    fake.say(RunTargetState::Connection::Reconnecting, QStringLiteral("Verbindung wird wiederhergestellt"));
    QCOMPARE(wait_alert(db, "remote-1", "connection_lost"), size_t(1));
    const auto a = alerts_of(db, "remote-1", "connection_lost")[0];
    QCOMPARE(a.threshold, std::optional<double>(1.0));
    QVERIFY(a.value && *a.value > 1.0);
    QVERIFY(alerts_of(db, "remote-1", "stall").empty());  // the connection, not a stall
    QTRY_VERIFY_WITH_TIMEOUT(std::any_of(sent.begin(), sent.end(), [](const Sent& s) { return s.title.contains("Connection lost"); }),
                             tdguitest::kSlowMs);
    fake.say(RunTargetState::Connection::Connected, QStringLiteral("connected"));
  }

  // A rank the target reports gone (an SSH cluster node's rank process) while the run goes on:
  // one rank_lost alert naming it, notified, not repeated; the run's failed end that names the
  // same loss adds no second one, only the run_end.
  void rank_lost_from_the_target_once() {
    const QString db = dir_.filePath("lost.db");
    td::RunConfig rc;
    rc.data.path = "/data/on/the/node";
    write_remote_run(dir_.path(), db, rc);
    StoreClient client(db);
    FakeRemote fake;
    AlertNotifier notifier;
    QList<Sent> sent;
    notifier.setBackend([&](const QString& t, const QString& b, const QString& sev) {
      sent.push_back({t, b, sev});
      return true;
    });
    AlertWatch watch(&fake, &notifier);
    watch.setCheckIntervalMs(100);
    watch.setStoreClient(&client);
    fake.say(RunTargetState::Connection::Connected, QStringLiteral("connected"));
    emit fake.runAttached(QStringLiteral("remote-1"));
    emit fake.runIngested(QStringLiteral("remote-1"), 1);
    fake.lose(QStringLiteral("rank 1 on node-b"));
    QCOMPARE(wait_alert(db, "remote-1", "rank_lost"), size_t(1));
    const auto a = alerts_of(db, "remote-1", "rank_lost")[0];
    QCOMPARE(a.source, std::string("workbench"));
    QCOMPARE(a.severity, std::string("critical"));
    QCOMPARE(a.step, int64_t(1));
    QCOMPARE(a.message, std::string("rank 1 on node-b lost: its engine process is gone from the node while rank 0 goes on"));
    QVERIFY(!a.value && !a.threshold);
    QTRY_VERIFY_WITH_TIMEOUT(std::any_of(sent.begin(), sent.end(),
                                         [](const Sent& s) {
                                           return s.title == QStringLiteral("TrainDeck: remote-1 — Rank or node lost") &&
                                                  s.severity == QStringLiteral("critical");
                                         }),
                             tdguitest::kSlowMs);
    fake.say(RunTargetState::Connection::Connected, QStringLiteral("connected"));  // the same list again: nothing new

    // The run ends failed naming rank 1 (as rank 0's failed collective words it).
    const QString more = dir_.filePath("lost.jsonl");
    QFile f(more);
    QVERIFY(f.open(QIODevice::Append));
    f.write(nlohmann::json({{"type", "run_end"}, {"v", 1}, {"t", 110.0}, {"run_id", "remote-1"}, {"attempt", 0}, {"rank", 0},
                            {"status", "failed"}, {"step", 1},
                            {"reason", "all_reduce on rank 0 failed after 0.1 s: rank 1 (host node-b) ended: its connection to the "
                                       "rendezvous store closed [gloo: Connection closed by peer]"}})
                .dump()
                .append("\n")
                .c_str());
    f.close();
    {
      Store s(db.toStdString());
      td::store::Ingester(s, more.toStdString()).poll_all();
    }
    emit fake.runEnded(QStringLiteral("remote-1"), QStringLiteral("failed"));
    QCOMPARE(wait_alert(db, "remote-1", "run_end"), size_t(1));
    QCOMPARE(alerts_of(db, "remote-1", "rank_lost").size(), size_t(1));
    QCOMPARE(alerts_of(db, "remote-1", "run_end")[0].severity, std::string("critical"));
  }

  // A failed run whose end reason names the lost rank, with no rank_lost alert of its own (the
  // engine that wrote it was older, or a target ended it): the workbench's names that rank.
  void rank_lost_named_from_the_end_reason() {
    const QString db = dir_.filePath("ended.db");
    td::RunConfig rc;
    rc.data.path = "/data/on/the/node";
    const std::string reason =
        "all_reduce on rank 0 failed after 3.0 s: rank 2 (host node-c) is not responding: no heartbeat for 4.1 s (frozen, stopped "
        "or cut off) [gloo: Timed out]";
    write_remote_run(dir_.path(), db, rc, {{{"type", "run_end"}, {"status", "failed"}, {"step", 1}, {"reason", reason}}});
    StoreClient client(db);
    FakeRemote fake;
    AlertWatch watch(&fake, nullptr);
    watch.setStoreClient(&client);
    emit fake.runAttached(QStringLiteral("remote-1"));
    emit fake.runEnded(QStringLiteral("remote-1"), QStringLiteral("failed"));
    QCOMPARE(wait_alert(db, "remote-1", "run_end"), size_t(1));
    const auto lost = alerts_of(db, "remote-1", "rank_lost");
    QCOMPARE(lost.size(), size_t(1));
    QCOMPARE(lost[0].message, "rank 2 (host node-c) lost: " + reason);
  }

  void detached_alerts_at_reattach_then_stall_then_end() {
    nlohmann::json cfg = tdguitest::tiny_config(data_, 1000000, 1000000);
    cfg["train"]["alert_disk_min_free_fraction"] = 1.0;  // the disk alert fires at step 1
    cfg["train"]["alert_stall_factor"] = 2.0;
    cfg["train"]["alert_stall_min_s"] = 3.0;
    QString id;
    {
      // A workbench without the watch (as if closed): the engine's alert reaches the store only.
      StoreClient client(db_);
      RunTargets targets;
      targets.add(new RunController(nullptr));
      targets.setStoreClient(&client);
      QSignalSpy ingested(&targets, &RunTarget::runIngested);
      QString error;
      id = targets.start(RunPlacement{}, "exp", cfg, {}, &error);
      QVERIFY2(!id.isEmpty(), qPrintable(error));
      QVERIFY2(wait_step(ingested, id, 60) >= 60, "awaited step 60 of the run in the store");
      QCOMPARE(wait_alert(db_, id, "disk_low"), size_t(1));
      targets.detachAll();
    }
    QVERIFY(!alerts_of(db_, id, "disk_low")[0].notified);
    const auto pid = Store(db_.toStdString()).find_run(id.toStdString())->pid;
    QVERIFY(pid && ::kill(*pid, 0) == 0);

    StoreClient client(db_);
    RunTargets targets;
    targets.add(new RunController(nullptr));
    AlertNotifier notifier;
    QList<Sent> sent;
    notifier.setBackend([&](const QString& t, const QString& b, const QString& s) {
      sent.push_back({t, b, s});
      return true;
    });
    AlertWatch watch(&targets, &notifier);
    watch.setCheckIntervalMs(100);
    watch.setStoreClient(&client);
    QSignalSpy ingested(&targets, &RunTarget::runIngested);
    QSignalSpy ended(&targets, &RunTarget::runEnded);
    targets.setStoreClient(&client);  // reattaches the run
    QTRY_VERIFY_WITH_TIMEOUT(!sent.isEmpty(), tdguitest::kSlowMs);
    QVERIFY2(sent[0].title.contains("Disk nearly full"), qPrintable(sent[0].title));
    QVERIFY(sent[0].body.contains("free"));
    QVERIFY(alerts_of(db_, id, "disk_low")[0].notified);

    // Freeze the engine: no step comes; the stall fires with the run's limit.
    QVERIFY(wait_step(ingested, id, 1) >= 1);
    QCOMPARE(::kill(*pid, SIGSTOP), 0);
    const bool stalled = wait_alert(db_, id, "stall") > 0;
    ::kill(*pid, SIGCONT);
    QVERIFY2(stalled, "awaited a stall alert for the stopped engine");
    const auto st = alerts_of(db_, id, "stall").back();
    QCOMPARE(st.source, std::string("workbench"));
    QVERIFY(st.value && st.threshold && *st.value > *st.threshold);
    QVERIFY(*st.threshold >= 3.0);  // the config's floor
    QTRY_VERIFY_WITH_TIMEOUT(std::any_of(sent.begin(), sent.end(), [](const Sent& s) { return s.title.contains("Stall"); }),
                             tdguitest::kSlowMs);

    QString error;
    QVERIFY2(targets.stop(id, &error), qPrintable(error));
    QCOMPARE(wait_ended(ended, id), QStringLiteral("stopped"));
    QTRY_VERIFY_WITH_TIMEOUT(std::any_of(sent.begin(), sent.end(), [](const Sent& s) { return s.title.contains("Run ended"); }),
                             tdguitest::kSlowMs);
    const auto end = alerts_of(db_, id, "run_end");
    QCOMPARE(end.size(), size_t(1));
    QCOMPARE(end[0].severity, std::string("warning"));  // stopped
    QVERIFY2(QString::fromStdString(end[0].message).startsWith("run stopped at step "), end[0].message.c_str());
    // Every alert notified once: disk, stall(s), end; none twice.
    int disk = 0;
    for (const auto& s : sent) disk += s.title.contains("Disk nearly full");
    QCOMPARE(disk, 1);
  }

  // The sidebar's badge: the previous run's alerts not seen yet, in the status column, gone
  // once the run is marked seen (its page was opened).
  void badge_counts_unseen_alerts_until_seen() {
    StoreClient client(db_);
    const auto runs = Store(db_.toStdString()).list_runs();
    QCOMPARE(runs.size(), size_t(1));
    const QString id = QString::fromStdString(runs[0].run_id);
    const int n = int(Store(db_.toStdString()).alerts(id.toStdString()).size());
    QVERIFY(n >= 3);  // disk, stall, end
    ExperimentsModel model(&client);
    QSignalSpy loaded(&model, &ExperimentsModel::loaded);
    model.reload();
    QVERIFY2(loaded.wait(tdguitest::kSlowMs), "awaited the model's load");
    const QModelIndex status = model.runIndex(id, ExperimentsModel::ColStatus);
    QCOMPARE(status.data(ExperimentsModel::AlertsRole).toInt(), n);
    QCOMPARE(status.data(Qt::DisplayRole).toString(), QStringLiteral("stopped ⚠ %1").arg(n));
    QVERIFY(status.data(Qt::ToolTipRole).toString().contains(QString::number(n)));
    model.markAlertsSeen(id);
    // A reload already under way may deliver first: wait for the one that reads the seen marks.
    QTRY_COMPARE_WITH_TIMEOUT(model.runIndex(id, ExperimentsModel::ColStatus).data(ExperimentsModel::AlertsRole).toInt(), 0,
                              tdguitest::kSlowMs);
    const QModelIndex after = model.runIndex(id, ExperimentsModel::ColStatus);
    QCOMPARE(after.data(Qt::DisplayRole).toString(), QStringLiteral("stopped"));
  }
};

QTEST_GUILESS_MAIN(TestAlertWatch)
#include "test_alert_watch.moc"
