// remote/: shell quoting and ~/.ssh/config resolution (no network). Expected values are
// written out by hand from POSIX sh quoting rules and ssh_config(5).
#include <QtTest>

#include "engine/common/error.h"
#include "remote/quote.h"
#include "remote/ssh_config.h"

using namespace td::remote;

class TestQuoteConfig : public QObject {
  Q_OBJECT
 private slots:
  void quoting() {
    QCOMPARE(shell_quote("plain-word_1.txt"), std::string("plain-word_1.txt"));
    QCOMPARE(shell_quote(""), std::string("''"));
    QCOMPARE(shell_quote("a b"), std::string("'a b'"));
    QCOMPARE(shell_quote("it's"), std::string("'it'\\''s'"));
    QCOMPARE(shell_quote("$(touch x)"), std::string("'$(touch x)'"));
    QCOMPARE(shell_quote("`id`;rm"), std::string("'`id`;rm'"));
    QCOMPARE(shell_quote("*"), std::string("'*'"));
    QCOMPARE(shell_quote("~"), std::string("'~'"));
    QCOMPARE(shell_quote("a=b"), std::string("'a=b'"));
    QCOMPARE(shell_quote("line1\nline2"), std::string("'line1\nline2'"));
    QCOMPARE(shell_quote("-rf"), std::string("-rf"));
    QCOMPARE(command_line({"ls", "-l", "a b", "it's"}), std::string("ls -l 'a b' 'it'\\''s'"));
    QVERIFY_THROWS_EXCEPTION(td::Error, shell_quote(std::string("a\0b", 3)));
    QVERIFY_THROWS_EXCEPTION(td::Error, command_line({}));
  }

  void quoting_through_local_sh() {
    // The same strings through the local /bin/sh: printf '%s\n' gets each back unchanged.
    std::vector<std::string> args = {"a b", "it's", "\"dq\"", ";", "$(echo hi)", "`echo hi`", "*", "-n", "", "naïve ✓"};
    std::vector<std::string> argv = {"printf", "%s|"};
    argv.insert(argv.end(), args.begin(), args.end());
    QProcess p;
    p.start("/bin/sh", {"-c", QString::fromStdString(command_line(argv))});
    QVERIFY(p.waitForFinished(10000));
    std::string expect;
    for (const auto& a : args) expect += a + "|";
    QCOMPARE(p.readAllStandardOutput().toStdString(), expect);
  }

  void patterns() {
    QVERIFY(host_pattern_match("*", "anything"));
    QVERIFY(host_pattern_match("gpu?", "gpu1"));
    QVERIFY(!host_pattern_match("gpu?", "gpu12"));
    QVERIFY(host_pattern_match("gpu*.lab", "gpu12.lab"));
    QVERIFY(host_pattern_match("GPU*", "gpu7"));
    QVERIFY(!host_pattern_match("gpu*.lab", "gpu12.lab.org"));
    QVERIFY(host_pattern_match("*a*b", "xxaybyb"));
  }

  void config_resolution() {
    const std::string cfg = R"(# global defaults come after specific blocks, as in OpenSSH
Host gpu1 gpu2
    HostName %h.cluster.example.org
    User alice
    Port 2222
    IdentityFile ~/.ssh/id_%r_%h

Host gpu* !gpu9
    User bob
    IdentityFile "~/keys/second key"
    ProxyJump jump@bastion:2200,inner

Match host gpu1
    User mallory

Host *
    User carol
    Port = 22
    HostName fallback
)";
    LocalEnv env{"localuser", "/home/localuser"};
    HostSpec h = resolve_host_text("gpu1", cfg, env);
    QCOMPARE(h.hostname, std::string("gpu1.cluster.example.org"));
    QCOMPARE(h.user, std::string("alice"));  // first obtained value wins
    QCOMPARE(h.port, 2222);
    QCOMPARE(h.identity_files.size(), size_t(2));
    QCOMPARE(h.identity_files[0], std::string("/home/localuser/.ssh/id_alice_gpu1.cluster.example.org"));
    QCOMPARE(h.identity_files[1], std::string("/home/localuser/keys/second key"));
    QCOMPARE(h.proxy_jump, (std::vector<std::string>{"jump@bastion:2200", "inner"}));
    QVERIFY(h.matched);

    HostSpec g5 = resolve_host_text("gpu5", cfg, env);
    QCOMPARE(g5.user, std::string("bob"));
    QCOMPARE(g5.hostname, std::string("fallback"));
    QCOMPARE(g5.port, 22);

    HostSpec g9 = resolve_host_text("gpu9", cfg, env);  // negated: only Host * applies
    QCOMPARE(g9.user, std::string("carol"));
    QVERIFY(g9.proxy_jump.empty());
    QVERIFY(!g9.matched);

    HostSpec none = resolve_host_text("box", "", env);
    QCOMPARE(none.hostname, std::string("box"));
    QCOMPARE(none.user, std::string("localuser"));
    QCOMPARE(none.port, 22);

    HostSpec pj = resolve_host_text("x", "Host x\n ProxyJump none\n", env);
    QVERIFY(pj.proxy_jump.empty());

    QVERIFY_THROWS_EXCEPTION(td::Error, resolve_host_text("x", "Port 70000\n", env));

    // ConnectTimeout (seconds): the first value wins, as for every keyword; nonsense is refused
    // naming the line.
    QCOMPARE(resolve_host_text("x", "Host x\n ConnectTimeout 90\nHost *\n ConnectTimeout 5\n", env).connect_timeout_s, 90);
    QCOMPARE(resolve_host_text("y", "Host x\n ConnectTimeout 90\nHost *\n ConnectTimeout 5\n", env).connect_timeout_s, 5);
    QCOMPARE(none.connect_timeout_s, 0);
    try {
      resolve_host_text("x", "Host x\n\n ConnectTimeout 1m\n", env);
      QFAIL("ConnectTimeout 1m was accepted");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("line 3: ConnectTimeout '1m'") != std::string::npos, e.what());
    }

    QTemporaryDir tmp;
    const QString path = tmp.filePath("config");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("Host file-alias\n  HostName 10.0.0.7\n  User dave\n");
    f.close();
    HostSpec fh = resolve_host("file-alias", path.toStdString(), env);
    QCOMPARE(fh.hostname, std::string("10.0.0.7"));
    QCOMPARE(fh.user, std::string("dave"));
    HostSpec missing = resolve_host("file-alias", tmp.filePath("nope").toStdString(), env);
    QCOMPARE(missing.hostname, std::string("file-alias"));
  }
};

QTEST_GUILESS_MAIN(TestQuoteConfig)
#include "test_quote_config.moc"
