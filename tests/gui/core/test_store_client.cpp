// StoreClient: jobs run off the calling thread, in order, results come back on it; errors,
// cancel and a destroyed receiver.
#include <QTemporaryDir>
#include <QtTest>

#include <thread>

#include "gui/core/store_client.h"

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
