// NodeAccess, SecretStore and ConnectionTester against a real OpenSSH sshd on 127.0.0.1
// (tests/remote/sshd_fixture.h): unknown host key accepted (known_hosts gets the line, the
// probe reports this machine's CPU count and glibc) or refused (known_hosts unchanged), a
// changed host key refused without a prompt, secrets asked on every open without a keyring
// (D-Bus is removed in main()) and never written to the store, QSettings or the log, a kept
// wrong secret forgotten and asked again, and a blackholed node that fails while the event
// loop keeps running.
#include <gnu/libc-version.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <QCoreApplication>
#include <QDir>
#include <QDirIterator>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "../../remote/sshd_fixture.h"
#include "engine/common/error.h"
#include "fake_prompter.h"
#include "gui/cluster/connection_tester.h"
#include "gui/cluster/node_access.h"
#include "gui/cluster/secret_store.h"
#include "store/store.h"

using namespace td::gui;
using td::remote::AuthMethod;
using td::remote::NodeSpec;
using td::remote::testing::SshdFixture;
using tdclustertest::FakePrompter;
using tdclustertest::onWorker;

namespace {

QStringList g_log;  // every Qt message of the test (also passed on to Qt's handler)
QtMessageHandler g_previous = nullptr;
void captureLog(QtMsgType type, const QMessageLogContext& context, const QString& msg) {
  g_log << msg;
  if (g_previous) g_previous(type, context, msg);
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Every file under `dir` that contains `needle`.
QStringList filesContaining(const QString& dir, const QByteArray& needle) {
  QStringList hits;
  QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString f = it.next();
    if (readAll(f).contains(needle)) hits << f;
  }
  return hits;
}

}  // namespace

class TestNodeAccess : public QObject {
  Q_OBJECT
  SshdFixture sshd_;
  QTemporaryDir tmp_;

  NodeSpec keyNode(const std::string& key) const {
    NodeSpec n;
    n.name = "local";
    n.host = "127.0.0.1";
    n.port = sshd_.port;
    n.user = sshd_.user;
    n.auth = AuthMethod::KeyFile;
    n.key_file = key;
    n.work_dir = (sshd_.dir / "work").string();
    return n;
  }
  NodeSpec passwordNode() const {
    NodeSpec n = keyNode({});
    n.user = sshd_.pw_user;
    n.auth = AuthMethod::Password;
    n.key_file.clear();
    return n;
  }
  // A NodeAccess with `secrets`, the fixture's known_hosts and no ~/.ssh/config.
  void configure(NodeAccess& a) {
    a.setKnownHostsPath(QString::fromStdString(sshd_.known_hosts));
    a.setSshConfigPath(tmp_.filePath("no_ssh_config"));
    a.setTimeoutMs(10000);
  }
  // Marks the fixture's host key as known (what an earlier accepted prompt leaves).
  void knowHost() {
    std::ofstream(sshd_.known_hosts) << "[127.0.0.1]:" << sshd_.port << " "
                                     << td::remote::testing::read_text(sshd_.host_key + ".pub");
  }

 private slots:
  void initTestCase() {
    g_previous = qInstallMessageHandler(captureLog);
    if (!sshd_.start()) QSKIP(sshd_.skip_reason.c_str());
  }
  void init() { std::ofstream(sshd_.known_hosts).flush(); }  // empty known_hosts each time

  void keyFileEncryption() {
    QVERIFY(!keyFileEncrypted(QString::fromStdString(sshd_.user_key)));
    QVERIFY(keyFileEncrypted(QString::fromStdString(sshd_.user_key_pass)));
    QVERIFY(!keyFileEncrypted(tmp_.filePath("missing")));
  }

  void openOnGuiThreadIsRefused() {
    NodeAccess a(nullptr, nullptr);
    configure(a);
    try {
      a.open(keyNode(sshd_.user_key));
      QFAIL("open on the GUI thread must throw");
    } catch (const td::Error& e) {
      QVERIFY2(QString(e.what()).contains("worker thread"), e.what());
    }
  }

  // Unknown host, the person accepts: known_hosts gets "[127.0.0.1]:port ssh-ed25519 <key>",
  // and Test connection reports this machine (same CPUs and glibc as this process sees).
  void unknownHostAcceptedThenProbed() {
    FakePrompter p;
    NodeAccess a(nullptr, &p);
    configure(a);
    ConnectionTester tester(&a);
    QSignalSpy done(&tester, &ConnectionTester::finished), failed(&tester, &ConnectionTester::failed);
    tester.test("n1", keyNode(sshd_.user_key));
    QTRY_VERIFY_WITH_TIMEOUT(done.count() + failed.count() == 1, 30000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.front().at(1).toString()));
    QCOMPARE(done.front().at(0).toString(), QString("n1"));
    QCOMPARE(p.hostKeys.size(), size_t(1));
    QVERIFY(p.onGuiThread);
    QCOMPARE(p.hostKeys[0].key_type, std::string("ssh-ed25519"));
    QCOMPARE(p.hostKeys[0].fingerprint, sshd_.keygen_fingerprint(sshd_.host_key + ".pub"));
    QCOMPARE(p.hostWheres[0], QString("%1@127.0.0.1:%2").arg(QString::fromStdString(sshd_.user)).arg(sshd_.port));
    QVERIFY(p.secretRequests.empty());  // the key has no passphrase
    // known_hosts: one line with the host token and the .pub's type and base64.
    const QStringList pub = QString::fromStdString(td::remote::testing::read_text(sshd_.host_key + ".pub")).split(' ');
    const QString line = QString::fromUtf8(readAll(QString::fromStdString(sshd_.known_hosts))).trimmed();
    QCOMPARE(line, QString("[127.0.0.1]:%1 %2 %3").arg(sshd_.port).arg(pub[0], pub[1].trimmed()));
    // The report: this machine's facts.
    const auto report = done.front().at(2).value<td::remote::NodeReport>();
    QVERIFY(report.cpu_count.has_value());
    QCOMPARE(*report.cpu_count, QThread::idealThreadCount());
    QCOMPARE(report.glibc_version, std::string(gnu_get_libc_version()));
    const QString text = done.front().at(1).toString();
    QVERIFY2(text.contains(QString("glibc: %1").arg(gnu_get_libc_version())), qPrintable(text));
    QVERIFY2(text.contains("CPU: " + QString::number(QThread::idealThreadCount())), qPrintable(text));

    // A second test: the key is known now, nobody is asked.
    tester.test("n1", keyNode(sshd_.user_key));
    QTRY_VERIFY_WITH_TIMEOUT(done.count() + failed.count() == 2, 30000);
    QCOMPARE(done.count(), 2);
    QCOMPARE(p.hostKeys.size(), size_t(1));
  }

  void unknownHostRefused() {
    FakePrompter p;
    p.accept = false;
    NodeAccess a(nullptr, &p);
    configure(a);
    const QString err = onWorker([&] { a.open(keyNode(sshd_.user_key)); });
    QVERIFY2(err.contains("was not accepted"), qPrintable(err));
    QVERIFY2(err.contains(QString::fromStdString(sshd_.keygen_fingerprint(sshd_.host_key + ".pub"))), qPrintable(err));
    QCOMPARE(p.hostKeys.size(), size_t(1));
    QCOMPARE(readAll(QString::fromStdString(sshd_.known_hosts)), QByteArray());  // unchanged: empty
  }

  // known_hosts holds ANOTHER ed25519 key for [127.0.0.1]:port: refused, nobody asked, file kept.
  void changedHostKeyRefusedWithoutPrompt() {
    const std::string other = (sshd_.dir / "other_host_key").string();
    std::string out;
    QCOMPARE(td::remote::testing::run_cmd({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other}, &out), 0);
    const std::string entry =
        "[127.0.0.1]:" + std::to_string(sshd_.port) + " " + td::remote::testing::read_text(other + ".pub");
    std::ofstream(sshd_.known_hosts) << entry;
    FakePrompter p;
    NodeAccess a(nullptr, &p);
    configure(a);
    const QString err = onWorker([&] { a.open(keyNode(sshd_.user_key)); });
    QVERIFY2(err.contains("CHANGED") && err.contains("refuses to connect"), qPrintable(err));
    QVERIFY2(err.contains(QString::fromStdString(sshd_.keygen_fingerprint(sshd_.host_key + ".pub"))), qPrintable(err));
    QVERIFY(p.hostKeys.empty());
    QVERIFY(p.secretRequests.empty());
    QCOMPARE(td::remote::testing::read_text(sshd_.known_hosts), entry);
  }

  // No keyring (no D-Bus session bus in this process): every open asks, the answer logs in,
  // and the secret is in no file of the store, QSettings, nor the log.
  void secretsWithoutKeyringAskedEveryTime() {
    knowHost();
    auto secrets = SecretStore::system();
    QVERIFY(!secrets->canRemember());
    FakePrompter p;
    p.remember = true;  // ticked, but there is nothing to keep it in
    NodeAccess a(secrets, &p);
    configure(a);
    std::vector<std::pair<NodeSpec, QString>> cases;
    cases.push_back({keyNode(sshd_.user_key_pass), QString::fromStdString(sshd_.passphrase)});
    if (!sshd_.pw_user.empty()) cases.push_back({passwordNode(), QString::fromStdString(sshd_.password)});
    else qWarning("password part skipped: %s", sshd_.pw_user_problem.empty() ? "not root" : sshd_.pw_user_problem.c_str());

    QTemporaryDir dir;
    const QString db = dir.filePath("store/td.db");
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.filePath("settings"));
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, dir.filePath("settings"));
    for (const auto& [node, secret] : cases) {
      p.secret = secret;
      p.secretRequests.clear();
      for (int i = 0; i < 2; ++i) {
        std::string who;
        const QString err = onWorker([&] {
          td::remote::Session s = a.open(node);
          who = s.exec({"id", "-un"}).out;
        });
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QCOMPARE(QString::fromStdString(who).trimmed(), QString::fromStdString(node.user));
      }
      QCOMPARE(p.secretRequests.size(), size_t(2));  // asked on each open
      QCOMPARE(p.secretRequests[0].kind, QString(node.auth == AuthMethod::Password ? "password" : "passphrase"));
      QVERIFY(!p.secretRequests[0].canRemember);
      QVERIFY(!p.secretRequests[0].retry);
      // The cluster is saved as the designer saves it (spec JSON), and settings are written.
      td::store::Store store(db.toStdString());
      td::remote::ClusterSpec c{"lab", {node}};
      store.save_cluster("lab", td::remote::to_json(c).dump());
      QSettings settings(QSettings::IniFormat, QSettings::UserScope, "TrainDeckTest", "cluster");
      settings.setValue("cluster/last", "lab");
      settings.sync();
    }
    for (const auto& [node, secret] : cases) {
      const QByteArray bytes = secret.toUtf8();
      QVERIFY(!filesContaining(dir.filePath("store"), "lab").isEmpty());  // the search does see the files
      QVERIFY(!filesContaining(dir.filePath("settings"), "lab").isEmpty());
      QVERIFY2(filesContaining(dir.path(), bytes).isEmpty(), qPrintable(filesContaining(dir.path(), bytes).join(", ")));
      QVERIFY(!g_log.join('\n').contains(secret));
    }
  }

  // A kept secret the node refuses is forgotten; the person is asked once more (retry) and the
  // new answer is kept.
  void keptWrongSecretForgottenAndAskedAgain() {
    knowHost();
    auto backend = std::make_unique<MemorySecretBackend>();
    MemorySecretBackend* mem = backend.get();
    auto secrets = std::make_shared<SecretStore>(std::move(backend));
    FakePrompter p;
    p.remember = true;
    NodeAccess a(secrets, &p);
    configure(a);
    std::vector<std::pair<NodeSpec, QString>> cases;
    cases.push_back({keyNode(sshd_.user_key_pass), QString::fromStdString(sshd_.passphrase)});
    if (!sshd_.pw_user.empty()) cases.push_back({passwordNode(), QString::fromStdString(sshd_.password)});
    for (const auto& [node, secret] : cases) {
      const QString kind = node.auth == AuthMethod::Password ? "password" : "passphrase";
      const QString where = QString("%1@127.0.0.1:%2").arg(QString::fromStdString(node.user)).arg(sshd_.port);
      const QString key = SecretStore::key(where, kind);
      QVERIFY(mem->write(key, "wrong " + secret));
      p.secret = secret;
      p.secretRequests.clear();
      const int removes = mem->removes();
      QString err = onWorker([&] { a.open(node); });
      QVERIFY2(err.isEmpty(), qPrintable(err));
      QCOMPARE(p.secretRequests.size(), size_t(1));
      QVERIFY(p.secretRequests[0].retry);
      QVERIFY(p.secretRequests[0].canRemember);
      QCOMPARE(p.secretRequests[0].where, where);
      QCOMPARE(mem->removes(), removes + 1);
      QCOMPARE(mem->read(key), std::optional<QString>(secret));  // the answer that worked is kept
      // Next open: the kept secret, nobody asked.
      err = onWorker([&] { a.open(node); });
      QVERIFY2(err.isEmpty(), qPrintable(err));
      QCOMPARE(p.secretRequests.size(), size_t(1));
      // A wrong answer twice: an error, not a third question.
      QVERIFY(mem->write(key, "wrong"));
      p.secret = "still wrong";
      err = onWorker([&] { a.open(node); });
      QVERIFY(!err.isEmpty());
      QVERIFY2(!err.contains("still wrong") && !err.contains(secret), qPrintable(err));
      QCOMPARE(p.secretRequests.size(), size_t(2));
      QVERIFY(!mem->contains(key));
    }
  }

  // The same through a jump host (ProxyJump alias in ~/.ssh/config; here the fixture's sshd is
  // both the hop and the target): a kept passphrase the target refuses is forgotten and asked for
  // once more (it used to fail at every connection, leaving no way to replace it from the GUI).
  void keptWrongSecretThroughJumpHost() {
    knowHost();
    auto backend = std::make_unique<MemorySecretBackend>();
    MemorySecretBackend* mem = backend.get();
    auto secrets = std::make_shared<SecretStore>(std::move(backend));
    FakePrompter p;
    p.remember = true;
    NodeAccess a(secrets, &p);
    configure(a);
    const QString cfg = tmp_.filePath("jump_ssh_config");
    std::ofstream(cfg.toStdString()) << "Host tdjump\n  HostName 127.0.0.1\n  Port " << sshd_.port << "\n  User "
                                     << sshd_.user << "\n  IdentityFile " << sshd_.user_key << "\n";
    a.setSshConfigPath(cfg);
    NodeSpec node = keyNode(sshd_.user_key_pass);
    node.jump = "tdjump";
    QCOMPARE(int(a.resolve(node).jumps.size()), 1);
    const QString where = QString("%1@127.0.0.1:%2").arg(QString::fromStdString(node.user)).arg(sshd_.port);
    const QString key = SecretStore::key(where, "passphrase");
    QVERIFY(mem->write(key, "wrong passphrase"));
    p.secret = QString::fromStdString(sshd_.passphrase);
    QString err = onWorker([&] {
      td::remote::Session s = a.open(node);
      const auto r = s.exec({"sh", "-c", "echo $SSH_CONNECTION"});
      if (r.exit_status != 0 || r.out.find("127.0.0.1") == std::string::npos) throw td::Error("no shell: " + r.out);
    });
    QVERIFY2(err.isEmpty(), qPrintable(err));
    QCOMPARE(p.secretRequests.size(), size_t(1));
    QVERIFY(p.secretRequests[0].retry);
    QCOMPARE(p.secretRequests[0].where, where);
    QCOMPARE(mem->read(key), std::optional<QString>(QString::fromStdString(sshd_.passphrase)));
    err = onWorker([&] { a.open(node); });  // the kept one now: nobody asked
    QVERIFY2(err.isEmpty(), qPrintable(err));
    QCOMPARE(p.secretRequests.size(), size_t(1));
  }

  void cancelledSecretPromptIsAnError() {
    knowHost();
    FakePrompter p;  // secret nullopt: the person pressed Cancel
    NodeAccess a(nullptr, &p);
    configure(a);
    const QString err = onWorker([&] { a.open(keyNode(sshd_.user_key_pass)); });
    QVERIFY2(err.contains("no passphrase was given"), qPrintable(err));
  }

  // A node that never answers (SYN blackhole: a listen(fd, 0) queue kept full): the test fails
  // after the per-node timeout while a QTimer keeps firing on the GUI thread.
  void blackholedNodeDoesNotBlockTheGuiThread() {
    int srv = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    QCOMPARE(bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    QCOMPARE(listen(srv, 0), 0);
    socklen_t len = sizeof addr;
    getsockname(srv, reinterpret_cast<sockaddr*>(&addr), &len);
    std::vector<int> fillers;
    for (int i = 0; i < 3; ++i) {
      int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      fillers.push_back(c);
    }
    QTest::qWait(100);
    FakePrompter p;
    NodeAccess a(nullptr, &p);
    configure(a);
    ConnectionTester tester(&a);
    tester.setTimeoutMs(1500);
    NodeSpec n = keyNode(sshd_.user_key);
    n.port = ntohs(addr.sin_port);
    QSignalSpy done(&tester, &ConnectionTester::finished), failed(&tester, &ConnectionTester::failed);
    int ticks = 0;
    QTimer timer;
    connect(&timer, &QTimer::timeout, [&] { ++ticks; });
    timer.start(20);
    tester.test("dead", n);
    QVERIFY(tester.isRunning("dead"));
    QTRY_VERIFY_WITH_TIMEOUT(done.count() + failed.count() == 1, 20000);
    for (int c : fillers) ::close(c);
    ::close(srv);
    QCOMPARE(failed.count(), 1);
    const QString err = failed.front().at(1).toString();
    QVERIFY2(err.contains("timed out") && err.contains(QString::number(n.port)), qPrintable(err));
    QVERIFY2(ticks >= 10, qPrintable(QString("the event loop ran %1 timer ticks while waiting").arg(ticks)));
    QVERIFY(!tester.isRunning("dead"));
  }

  void cancelDropsTheResult() {
    FakePrompter p;
    p.accept = true;
    NodeAccess a(nullptr, &p);
    configure(a);
    ConnectionTester tester(&a);
    QSignalSpy done(&tester, &ConnectionTester::finished), failed(&tester, &ConnectionTester::failed),
        cancelled(&tester, &ConnectionTester::cancelled);
    tester.test("n", keyNode(sshd_.user_key));
    tester.cancel("n");
    QCOMPARE(cancelled.count(), 1);
    QVERIFY(!tester.isRunning("n"));
    QTest::qWait(1500);  // the worker ends on its own; its result is dropped
    QCOMPARE(done.count() + failed.count(), 0);
  }
};

int main(int argc, char** argv) {
  // No desktop keyring here: without a session bus the keychain backend must say so.
  qunsetenv("DBUS_SESSION_BUS_ADDRESS");
  qunsetenv("XDG_RUNTIME_DIR");
  QCoreApplication app(argc, argv);
  TestNodeAccess t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_node_access.moc"
