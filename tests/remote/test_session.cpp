// remote/ Session against a real OpenSSH sshd (sshd_fixture.h): host keys, every auth method,
// timeouts, remote commands and the quoting attack strings.
#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>

#include "engine/common/error.h"
#include "remote/quote.h"
#include "remote/session.h"
#include "delay_proxy.h"
#include "sshd_fixture.h"

using namespace td::remote;
using td::remote::testing::SshdFixture;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;

class TestSession : public QObject {
  Q_OBJECT
  SshdFixture sshd_;

  ConnectOptions opts(const std::string& user = {}) const {
    ConnectOptions o;
    o.host = "127.0.0.1";
    o.port = sshd_.port;
    o.user = user.empty() ? sshd_.user : user;
    o.known_hosts = sshd_.known_hosts;
    o.timeout_ms = 10000;
    return o;
  }
  void clear_known_hosts() { std::ofstream(sshd_.known_hosts, std::ios::trunc).flush(); }
  // A session that trusts the fixture's host key and is logged in with the user key.
  Session key_session() {
    Session s = Session::connect(opts());
    if (s.host_key().status == HostKeyStatus::Unknown) s.accept_host_key();
    s.authenticate(Auth::key(sshd_.user_key));
    return s;
  }

 private slots:
  void initTestCase() {
    if (!sshd_.start()) QSKIP(sshd_.skip_reason.c_str());
  }
  void cleanupTestCase() { sshd_.stop(); }
  // Every test starts with the fixture's host key trusted (tests about host keys clear it).
  void init() {
    clear_known_hosts();
    Session::connect(opts()).accept_host_key();
  }

  void unknown_host_then_accepted() {
    clear_known_hosts();
    Session s = Session::connect(opts());
    QCOMPARE(s.host_key().status, HostKeyStatus::Unknown);
    QCOMPARE(s.host_key().key_type, std::string("ssh-ed25519"));
    QCOMPARE(s.host_key().fingerprint, sshd_.keygen_fingerprint(sshd_.host_key + ".pub"));
    QVERIFY(QString::fromStdString(s.host_key().fingerprint).startsWith("SHA256:"));
    // Not accepted yet: authentication is refused without sending anything.
    const std::string err = td::remote::testing::error_message([&] { s.authenticate(Auth::key(sshd_.user_key)); });
    QVERIFY2(err.find("unknown host") != std::string::npos, err.c_str());
    QVERIFY(!s.authenticated());
    s.accept_host_key();
    QCOMPARE(s.host_key().status, HostKeyStatus::Match);
    const std::string line = read_text(sshd_.known_hosts);
    const std::string pub = read_text(sshd_.host_key + ".pub");  // "ssh-ed25519 AAAA... comment"
    const std::string key_part = pub.substr(0, pub.find(' ', pub.find(' ') + 1));
    QCOMPARE(line, "[127.0.0.1]:" + std::to_string(sshd_.port) + " " + key_part + "\n");
    // ssh-keygen finds it too.
    std::string out;
    QCOMPARE(run_cmd({"ssh-keygen", "-F", "[127.0.0.1]:" + std::to_string(sshd_.port), "-f", sshd_.known_hosts}, &out), 0);
    Session again = Session::connect(opts());
    QCOMPARE(again.host_key().status, HostKeyStatus::Match);
    again.authenticate(Auth::key(sshd_.user_key));
    QVERIFY(again.authenticated());
  }

  void hashed_entries() {
    // An entry hashed by ssh-keygen -H matches.
    clear_known_hosts();
    {
      Session s = Session::connect(opts());
      s.accept_host_key();
    }
    std::string out;
    QCOMPARE(run_cmd({"ssh-keygen", "-H", "-f", sshd_.known_hosts}, &out), 0);
    QVERIFY(read_text(sshd_.known_hosts).rfind("|1|", 0) == 0);
    QCOMPARE(Session::connect(opts()).host_key().status, HostKeyStatus::Match);
    // An entry we hash ourselves is found by ssh-keygen -F and by libssh2.
    clear_known_hosts();
    {
      Session s = Session::connect(opts());
      s.accept_host_key(/*hashed=*/true);
    }
    QVERIFY(read_text(sshd_.known_hosts).rfind("|1|", 0) == 0);
    QCOMPARE(run_cmd({"ssh-keygen", "-F", "[127.0.0.1]:" + std::to_string(sshd_.port), "-f", sshd_.known_hosts}, &out), 0);
    QCOMPARE(Session::connect(opts()).host_key().status, HostKeyStatus::Match);
  }

  void changed_host_key_refused() {
    // known_hosts holds another ed25519 key for this host:port.
    const std::string other = (sshd_.dir / "other_host").string();
    QCOMPARE(run_cmd({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other}), 0);
    const std::string pub = read_text(other + ".pub");
    std::ofstream(sshd_.known_hosts, std::ios::trunc)
        << "[127.0.0.1]:" << sshd_.port << " " << pub.substr(0, pub.find(' ', pub.find(' ') + 1)) << "\n";
    Session s = Session::connect(opts());
    QCOMPARE(s.host_key().status, HostKeyStatus::Mismatch);
    const std::string err = td::remote::testing::error_message([&] { s.authenticate(Auth::key(sshd_.user_key)); });
    QVERIFY2(err.find("CHANGED") != std::string::npos, err.c_str());
    QVERIFY2(err.find("man-in-the-middle") != std::string::npos, err.c_str());
    QVERIFY2(err.find("ssh-keygen -R '[127.0.0.1]:" + std::to_string(sshd_.port) + "'") != std::string::npos, err.c_str());
    QVERIFY(!s.authenticated());
    QVERIFY_THROWS_EXCEPTION(td::Error, s.accept_host_key());
    const std::string open_err = td::remote::testing::error_message([&] { Session::open(opts(), Auth::key(sshd_.user_key)); });
    QVERIFY2(open_err.find("CHANGED") != std::string::npos, open_err.c_str());
  }

  void key_auth_and_passphrase() {
    Session s = key_session();
    QVERIFY(s.authenticated());
    ExecResult r = s.exec({"id", "-un"});
    QCOMPARE(r.exit_status, 0);
    QCOMPARE(r.out, sshd_.user + "\n");

    Session p = Session::open(opts(), Auth::key(sshd_.user_key_pass, sshd_.passphrase));
    QCOMPARE(p.exec({"true"}).exit_status, 0);

    const std::string no_pass = td::remote::testing::error_message([&] { Session::open(opts(), Auth::key(sshd_.user_key_pass)); });
    QVERIFY2(no_pass.find("passphrase") != std::string::npos, no_pass.c_str());
    const std::string wrong = td::remote::testing::error_message([&] { Session::open(opts(), Auth::key(sshd_.user_key_pass, "wrong")); });
    QVERIFY2(wrong.find("passphrase may be wrong") != std::string::npos, wrong.c_str());
    QVERIFY(wrong.find(sshd_.passphrase) == std::string::npos);
    // A valid key that is not in authorized_keys.
    const std::string stranger = (sshd_.dir / "stranger").string();
    QCOMPARE(run_cmd({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", stranger}), 0);
    const std::string refused = td::remote::testing::error_message([&] { Session::open(opts(), Auth::key(stranger)); });
    QVERIFY2(refused.find("refused the key") != std::string::npos, refused.c_str());
    const std::string missing = td::remote::testing::error_message([&] { Session::open(opts(), Auth::key("/nonexistent/key")); });
    QVERIFY2(missing.find("does not exist") != std::string::npos, missing.c_str());
  }

  void alias_from_ssh_config() {
    const std::string cfg = "Host node-a\n  HostName 127.0.0.1\n  Port " + std::to_string(sshd_.port) +
                            "\n  User " + sshd_.user + "\n  IdentityFile " + sshd_.user_key + "\n";
    HostSpec h = resolve_host_text("node-a", cfg);
    ConnectOptions o = connect_options(h);
    o.known_hosts = sshd_.known_hosts;
    QCOMPARE(o.port, sshd_.port);
    Session s = Session::open(o, Auth::key(h.identity_files.at(0)));
    QCOMPARE(s.exec({"echo", "via alias"}).out, std::string("via alias\n"));
    QCOMPARE(s.where(), sshd_.user + "@127.0.0.1:" + std::to_string(sshd_.port));
  }

  void pem_keys() {
    // ECDSA in PEM format works.
    const std::string ecdsa = (sshd_.dir / "id_ecdsa_pem").string();
    QCOMPARE(run_cmd({"ssh-keygen", "-q", "-t", "ecdsa", "-b", "256", "-m", "PEM", "-N", "", "-f", ecdsa}), 0);
    std::ofstream(sshd_.dir / "authorized_keys", std::ios::app) << read_text(ecdsa + ".pub");
    Session s = Session::open(opts(), Auth::key(ecdsa));
    QCOMPARE(s.exec({"true"}).exit_status, 0);
    // RSA: libssh2 1.10 signs with SHA-1, which OpenSSH 9 refuses; the error says what to do.
    const std::string rsa = (sshd_.dir / "id_rsa_pem").string();
    QCOMPARE(run_cmd({"ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "", "-f", rsa}), 0);
    std::ofstream(sshd_.dir / "authorized_keys", std::ios::app) << read_text(rsa + ".pub");
    const std::string err = td::remote::testing::error_message([&] { Session::open(opts(), Auth::key(rsa)); });
    QVERIFY2(err.find("ssh-keygen -t ed25519") != std::string::npos, err.c_str());
  }

  void password_auth() {
    if (sshd_.pw_user.empty())
      QSKIP(("password auth needs a throwaway user: " +
             (sshd_.pw_user_problem.empty() ? std::string("run the test as root") : sshd_.pw_user_problem))
                .c_str());
    Session s = Session::open(opts(sshd_.pw_user), Auth::pass(sshd_.password));
    ExecResult r = s.exec({"id", "-un"});
    const std::string seen = "exit " + std::to_string(r.exit_status) + ", out '" + r.out + "', err '" + r.err + "'";
    QVERIFY2(r.out == sshd_.pw_user + "\n", seen.c_str());
    const std::string err = td::remote::testing::error_message([&] { Session::open(opts(sshd_.pw_user), Auth::pass("not-the-password")); });
    QVERIFY2(err.find("wrong password") != std::string::npos, err.c_str());
    QVERIFY2(err.find(sshd_.pw_user) != std::string::npos, err.c_str());
    QVERIFY(err.find("not-the-password") == std::string::npos);
  }

  void keyboard_interactive_fallback() {
    if (sshd_.pw_user.empty())
      QSKIP(("password auth needs a throwaway user: " +
             (sshd_.pw_user_problem.empty() ? std::string("run the test as root") : sshd_.pw_user_problem))
                .c_str());
    if (access("/etc/pam.d/sshd", R_OK) != 0) QSKIP("no PAM config for sshd: keyboard-interactive needs it");
    // A server that offers only keyboard-interactive (PAM asks "Password:").
    SshdFixture kbd;
    kbd.dir = sshd_.dir;  // share keys and the user; only a second sshd on another port
    kbd.host_key = sshd_.host_key;
    const bool up = kbd.launch({}, "PasswordAuthentication no\nKbdInteractiveAuthentication yes\nUsePAM yes\n");
    kbd.dir.clear();  // not this object's folder to remove
    if (!up) QSKIP(("sshd with PAM did not start: " + kbd.skip_reason).c_str());
    ConnectOptions o = opts(sshd_.pw_user);
    o.port = kbd.port;
    Session s = Session::connect(o);
    s.accept_host_key();
    s.authenticate(Auth::pass(sshd_.password));
    ExecResult r = s.exec({"id", "-un"});
    const std::string seen = "exit " + std::to_string(r.exit_status) + ", out '" + r.out + "', err '" + r.err + "'";
    QVERIFY2(r.out == sshd_.pw_user + "\n", seen.c_str());
    Session bad = Session::connect(o);
    const std::string err = td::remote::testing::error_message([&] { bad.authenticate(Auth::pass("wrong-one")); });
    QVERIFY2(err.find("wrong password") != std::string::npos, err.c_str());
  }

  void agent_auth() {
    const std::string sock = sshd_.start_agent();
    if (sock.empty()) QSKIP("ssh-agent/ssh-add could not run here");
    const char* old = getenv("SSH_AUTH_SOCK");
    const std::string saved = old ? old : "";
    setenv("SSH_AUTH_SOCK", sock.c_str(), 1);
    Session s = Session::open(opts(), Auth::agent());
    QCOMPARE(s.exec({"true"}).exit_status, 0);
    setenv("SSH_AUTH_SOCK", (sshd_.dir / "no-agent").c_str(), 1);
    const std::string err = td::remote::testing::error_message([&] { Session::open(opts(), Auth::agent()); });
    QVERIFY2(err.find("ssh-agent") != std::string::npos, err.c_str());
    if (old) setenv("SSH_AUTH_SOCK", saved.c_str(), 1);
    else unsetenv("SSH_AUTH_SOCK");
  }

  void silent_server_times_out() {
    // A TCP server that accepts (the kernel does, into the backlog) and never says anything.
    int srv = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    QCOMPARE(bind(srv, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    QCOMPARE(listen(srv, 4), 0);
    socklen_t len = sizeof a;
    getsockname(srv, reinterpret_cast<sockaddr*>(&a), &len);
    ConnectOptions o = opts();
    o.port = ntohs(a.sin_port);
    o.timeout_ms = 700;
    const auto t0 = std::chrono::steady_clock::now();
    const std::string err = td::remote::testing::error_message([&] { Session::connect(o); });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ::close(srv);
    QVERIFY2(err.find("handshake") != std::string::npos, err.c_str());
    QVERIFY2(err.find("timed out") != std::string::npos, err.c_str());
    QVERIFY2(s < 30, "a silent server must not hang the caller");  // a hang guard, not a timing test
    // Nothing listening: a refused connection says so.
    o.port = td::remote::testing::free_port();
    const std::string refused = td::remote::testing::error_message([&] { Session::connect(o); });
    QVERIFY2(refused.find("Connection refused") != std::string::npos, refused.c_str());
  }

  void slow_link_scales_timeouts_and_says_so() {
    // A far link: every byte held 400 ms each way (an 800 ms round trip). The connect timeout
    // of 1500 ms covers the greeting (one way: about 400 ms here) but not the handshake's three
    // round trips (2.4 s): every call after the greeting gets 10 greeting times instead.
    td::remote::testing::DelayProxy far;
    QVERIFY2(far.start(sshd_.port, 400), far.error.c_str());
    ConnectOptions o = opts();
    o.port = far.port;
    o.timeout_ms = 1500;
    {
      Session s = Session::connect(o);
      QCOMPARE(s.host_key().status, HostKeyStatus::Unknown);  // "[127.0.0.1]:<proxy port>" is a new name
      s.accept_host_key();
      QVERIFY2(s.greeting_ms() >= 400, std::to_string(s.greeting_ms()).c_str());  // the proxy holds it 400 ms
      QVERIFY(s.slow_link());
      QCOMPARE(s.options().timeout_ms, td::remote::kRoundTripsPerCall * s.greeting_ms());
      s.authenticate(Auth::key(sshd_.user_key));
      const ExecResult r = s.exec({"echo", "far"});
      QCOMPARE(r.out, std::string("far\n"));
      // A whole command's limit scales too: 1 s is less than the round trips a command costs.
      td::remote::ExecOptions eo;
      eo.timeout_ms = 1000;
      QCOMPARE(s.exec({"echo", "again"}, eo).out, std::string("again\n"));
    }
    // Against the same link a connect timeout shorter than the greeting fails, naming the
    // setting that fixes it.
    o.timeout_ms = 200;
    const std::string err = td::remote::testing::error_message([&] { Session::connect(o); });
    QVERIFY2(err.find("no SSH greeting within 200 ms") != std::string::npos, err.c_str());
    QVERIFY2(err.find("slow link") != std::string::npos, err.c_str());
    QVERIFY2(err.find("connect_timeout_s") != std::string::npos, err.c_str());
    QVERIFY2(err.find("ConnectTimeout") != std::string::npos, err.c_str());
    // A near link keeps the timeout it was given (unless this machine is so busy that sshd took
    // over a second to answer: the rule, not a speed, is what is checked).
    Session near = Session::connect(opts());
    QCOMPARE(near.options().timeout_ms, std::max(10000, td::remote::kRoundTripsPerCall * near.greeting_ms()));
  }

  void connect_timeout_against_syn_blackhole() {
    // A listening socket with listen(fd, 0) whose accept queue is full and never accepted:
    // Linux then drops every further SYN (tcp_conn_request, "listen queue overflow"), so a
    // connect gets no answer at all, as with a firewall that DROPs.
    int srv = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    QCOMPARE(bind(srv, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    QCOMPARE(listen(srv, 0), 0);
    socklen_t len = sizeof a;
    getsockname(srv, reinterpret_cast<sockaddr*>(&a), &len);
    std::vector<int> fillers;
    for (int i = 0; i < 3; ++i) {
      int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
      fillers.push_back(c);
    }
    QTest::qWait(100);
    ConnectOptions o = opts();
    o.port = ntohs(a.sin_port);
    o.timeout_ms = 1500;
    const auto t0 = std::chrono::steady_clock::now();
    const std::string err = td::remote::testing::error_message([&] { Session::connect(o); });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int c : fillers) ::close(c);
    ::close(srv);
    QVERIFY2(err.find("cannot connect: timed out after 1500 ms") != std::string::npos, err.c_str());
    QVERIFY2(err.find(std::to_string(o.port)) != std::string::npos, err.c_str());
    QVERIFY2(s < 15, "a blackholed connect must not hang the caller");  // a hang guard, not a timing test
  }

  void exec_output_status_and_limits() {
    Session s = key_session();
    ExecResult r = s.exec_command("echo out; echo err >&2; exit 3");
    QCOMPARE(r.exit_status, 3);
    QCOMPARE(r.out, std::string("out\n"));
    QCOMPARE(r.err, std::string("err\n"));
    ExecOptions cap;
    cap.max_output = 1000;
    r = s.exec({"head", "-c", "5000", "/dev/zero"}, cap);
    QCOMPARE(r.out.size(), size_t(1000));
    QVERIFY(r.truncated);
    ExecOptions in;
    in.stdin_data = "line one\nline two\n";
    r = s.exec({"wc", "-l"}, in);
    QCOMPARE(r.out, std::string("2\n"));
    r = s.exec_command("kill -KILL $$");
    QCOMPARE(r.exit_signal, std::string("KILL"));
    QCOMPARE(r.exit_status, -1);
    ExecOptions quick;
    quick.timeout_ms = 500;
    const std::string err = td::remote::testing::error_message([&] { s.exec({"sleep", "5"}, quick); });
    QVERIFY2(err.find("did not finish within 500 ms") != std::string::npos, err.c_str());
    // The session stays usable after a timeout.
    QCOMPARE(s.exec({"echo", "ok"}).out, std::string("ok\n"));
  }

  void exec_stream_and_cancel() {
    Session s = key_session();
    std::string got;
    int chunks = 0;
    ExecResult r = s.exec_stream(command_line({"sh", "-c", "for i in 1 2 3; do echo $i; sleep 0.1; done"}),
                                 [&](Stream st, std::string_view d) {
                                   if (st == Stream::Out) got += d;
                                   ++chunks;
                                 });
    QCOMPARE(got, std::string("1\n2\n3\n"));
    QVERIFY(chunks >= 2);  // lines arrive while the command runs
    QCOMPARE(r.exit_status, 0);
    std::atomic<bool> cancel{false};
    ExecOptions o;
    o.cancel = &cancel;
    std::string tail;
    r = s.exec_stream(command_line({"sh", "-c", "echo first; sleep 5"}), [&](Stream, std::string_view d) {
      tail += d;
      cancel = true;
    }, o);
    QVERIFY(r.cancelled);
    QCOMPARE(tail, std::string("first\n"));
  }

  void quoting_attacks_reach_the_node_unchanged() {
    Session s = key_session();
    const std::string marker = (sshd_.dir / "pwned").string();
    const std::vector<std::string> attacks = {
        "plain", "with space", "it's", "\"double\"", "a;touch " + marker, "$(touch " + marker + ")",
        "`touch " + marker + "`", "line1\nline2", "*", "-n", "--help", "", "naïve ✓ 名前",
        "'; touch " + marker + "; echo '", "$HOME", "a\\b", "|touch " + marker, "&& touch " + marker,
        "> " + marker, "~"};
    std::vector<std::string> argv = {"printf", "%s\\0"};
    argv.insert(argv.end(), attacks.begin(), attacks.end());
    ExecResult r = s.exec(argv);
    QCOMPARE(r.exit_status, 0);
    std::string expect;
    for (const auto& a : attacks) expect += a + '\0';
    QCOMPARE(r.out, expect);
    QVERIFY(!std::filesystem::exists(marker));
    // Also as a file name: created, listed and removed with exactly that name.
    const std::string odd = (sshd_.dir / "run 'x'; $(id)\nname").string();
    QCOMPARE(s.exec({"touch", "--", odd}).exit_status, 0);
    QVERIFY(std::filesystem::exists(odd));
    QCOMPARE(s.exec({"rm", "--", odd}).exit_status, 0);
    QVERIFY(!std::filesystem::exists(odd));
    QVERIFY(!std::filesystem::exists(marker));
  }
};

QTEST_GUILESS_MAIN(TestSession)
#include "test_session.moc"
