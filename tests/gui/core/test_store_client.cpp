// StoreClient: jobs run off the calling thread, in order, results come back on it; errors,
// cancel and a destroyed receiver.
#include <QTemporaryDir>
#include <QtTest>

#include <thread>

#include <QSignalSpy>

#include "gui/core/store_client.h"
#include "store/sqlite.h"

using td::gui::StoreClient;
using td::store::Store;

class TestStoreClient : public QObject {
  Q_OBJECT
 private slots:
  void runsOnItsThreadInOrder() {
    QTemporaryDir dir;
    StoreClient client(dir.filePath("td.db"));
    const auto gui = std::this_thread::get_id();
    std::vector<int> order;
    std::thread::id job_thread;
    client.exec(this, [&](Store& s) { job_thread = std::this_thread::get_id(); s.ensure_experiment("a"); },
                [&]() { order.push_back(1); });
    client.run<int>(this, [](Store& s) { return (int)s.list_experiments().size(); },
                    [&](int n) { order.push_back(10 + n); QCOMPARE(std::this_thread::get_id(), gui); });
    QVERIFY(client.waitIdle());
    QVERIFY(job_thread != gui);
    QCOMPARE(order, (std::vector<int>{1, 11}));
  }

  void errorsGoToFailOrSignal() {
    QTemporaryDir dir;
    StoreClient client(dir.filePath("td.db"));
    QString failed;
    client.exec(this, [](Store& s) { s.get_run("nope"); }, [] { QFAIL("done after a throw"); },
                [&](const QString& m) { failed = m; });
    QSignalSpy spy(&client, &StoreClient::error);
    client.exec(this, [](Store& s) { s.rename_experiment("x", "y"); });
    QVERIFY(client.waitIdle());
    QVERIFY2(failed.contains("nope"), qPrintable(failed));
    QCOMPARE(spy.count(), 1);
  }

  // Issue 35 ("the workbench lost what it had shown as saved"): a job that leaves a transaction
  // open would keep every later write of this connection uncommitted (a killed app loses them),
  // and one that leaves a statement stepped keeps the connection on an old snapshot (another
  // process's run is "not in the store"). After each job both are closed and reported: stderr
  // and problem() (the status bar); a failure a page handles itself is reported there too.
  void openStateAfterAJobIsClosedAndReported() {
    QTemporaryDir dir;
    const QString path = dir.filePath("td.db");
    StoreClient client(path);
    QSignalSpy problems(&client, &StoreClient::problem);
    // A job that forgets its transaction; the next job writes: that write must be committed.
    client.exec(this, [](Store& s) {
      td::store::exec_sql(s.handle(), "BEGIN");
      s.ensure_experiment("lost-if-left-open");
    });
    client.exec(this, [](Store& s) { s.ensure_experiment("saved"); });
    // A job that leaves a statement stepped (a row read, never reset).
    auto held = std::make_shared<std::unique_ptr<td::store::Stmt>>();
    client.exec(this, [held](Store& s) {
      *held = std::make_unique<td::store::Stmt>(s.handle(), "SELECT name FROM experiments");
      (*held)->step();
    });
    QVERIFY(client.waitIdle());
    // Another process (connection) adds an experiment; the client's connection must see it.
    Store(path.toStdString()).ensure_experiment("from-the-cli");
    int seen = 0;
    client.run<int>(this, [](Store& s) { return (int)s.list_experiments().size(); }, [&](int n) { seen = n; });
    QString handled;
    client.exec(this, [](Store& s) { s.get_run("nope"); }, {}, [&](const QString& m) { handled = m; });
    QVERIFY(client.waitIdle());
    QCoreApplication::processEvents();
    QCOMPARE(seen, 2);  // "saved" and "from-the-cli"; the rolled-back one is gone
    const QStringList got = [&] {
      QStringList l;
      for (const auto& args : problems) l << args.at(0).toString();
      return l;
    }();
    QVERIFY2(got.size() == 3, qPrintable(got.join(" | ")));
    QVERIFY2(got[0].contains("a transaction was left open"), qPrintable(got[0]));
    QVERIFY2(got[1].contains("a statement was left unfinished") && got[1].contains("SELECT name FROM experiments"), qPrintable(got[1]));
    QVERIFY2(got[2].contains("nope") && handled.contains("nope"), qPrintable(got[2]));
    Store other(path.toStdString());
    QCOMPARE(other.list_experiments().size(), size_t(2));
    client.exec(this, [held](Store&) { held->reset(); });  // finalized on its own thread
    QVERIFY(client.waitIdle());
  }

  void notAStoreFileFails() {
    QTemporaryDir dir;
    QFile f(dir.filePath("bad.db"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(4096, 'x'));
    f.close();
    StoreClient client(dir.filePath("bad.db"));
    QString failed;
    client.exec(this, [](Store&) {}, {}, [&](const QString& m) { failed = m; });
    QVERIFY(client.waitIdle());
    QVERIFY2(!failed.isEmpty(), "opening a non-SQLite file must fail");
  }

  void cancelAndDeadReceiver() {
    QTemporaryDir dir;
    StoreClient client(dir.filePath("td.db"));
    std::atomic<bool> release{false};
    client.exec(this, [&](Store&) { while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1)); });
    bool ran = false, delivered = false;
    const quint64 id = client.exec(this, [&](Store&) { ran = true; }, [&] { delivered = true; });
    client.cancel(id);
    auto* receiver = new QObject;
    bool to_dead = false;
    client.exec(receiver, [](Store&) {}, [&] { to_dead = true; });
    delete receiver;
    release = true;
    QVERIFY(client.waitIdle());
    QVERIFY(!ran);
    QVERIFY(!delivered);
    QVERIFY(!to_dead);
  }
};

QTEST_GUILESS_MAIN(TestStoreClient)
#include "test_store_client.moc"
