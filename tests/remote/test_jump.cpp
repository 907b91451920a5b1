// Jump hosts (Session::connect_via) over loopback: two real sshds A (jump) and B (target).
// One hop and a chain of two hops (A, then A again through A, then B), commands and SFTP both
// ways through the chain (sha256 equal), the target's host key checked under its own name,
// cancel and timeout of a command through the tunnel, a target the jump cannot reach, and a
// jump connection killed under a live inner session: the next call fails naming the jump host.
#include <QtTest>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <random>
#include <thread>

#include "engine/common/error.h"
#include "remote/cluster.h"
#include "remote/quote.h"
#include "remote/session.h"
#include "remote/sftp.h"
#include "sshd_fixture.h"
#include "user_session.h"

using namespace td::remote;
using td::remote::testing::read_text;
using td::remote::testing::error_message;
using td::remote::testing::SshdFixture;
using td::remote::testing::user_session;
namespace fs = std::filesystem;

class TestJump : public QObject {
  Q_OBJECT
  SshdFixture a_, b_;

  // B as seen from A (both on 127.0.0.1); host keys checked in A's known_hosts file.
  ConnectOptions target(const SshdFixture& f) const {
    ConnectOptions o;
    o.host = "127.0.0.1";
    o.port = f.port;
    o.user = f.user;
    o.known_hosts = a_.known_hosts;
    o.timeout_ms = 5000;
    return o;
  }
  std::unique_ptr<Session> jump() { return std::make_unique<Session>(user_session(a_, 5000)); }
  Session via_a_to_b() {
    Session s = Session::connect_via(jump(), target(b_));
    if (s.host_key().status == HostKeyStatus::Unknown) s.accept_host_key();
    s.authenticate(Auth::key(b_.user_key));
    return s;
  }

 private slots:
  void initTestCase() {
    if (!a_.start(false)) QSKIP(a_.skip_reason.c_str());
    if (!b_.start(false)) QSKIP(b_.skip_reason.c_str());
  }
  void cleanupTestCase() {
    a_.stop();
    b_.stop();
  }

  void one_hop_host_key_and_exec() {
    Session s = Session::connect_via(jump(), target(b_));
    // The target's key, under the target's name, fingerprint as ssh-keygen prints B's key.
    QCOMPARE(s.host_key().host_token, "[127.0.0.1]:" + std::to_string(b_.port));
    QCOMPARE(s.host_key().fingerprint, b_.keygen_fingerprint(b_.host_key + ".pub"));
    if (s.host_key().status == HostKeyStatus::Unknown) {
      const std::string refused = error_message([&] { s.authenticate(Auth::key(b_.user_key)); });
      QVERIFY2(refused.find("unknown host") != std::string::npos, refused.c_str());
      s.accept_host_key();
    }
    s.authenticate(Auth::key(b_.user_key));
    // SSH_CONNECTION on B: "client-ip client-port server-ip server-port"; the server port is B's.
    ExecResult r = s.exec_command("echo $SSH_CONNECTION");
    QCOMPARE(r.exit_status, 0);
    std::istringstream in(r.out);
    std::string cip, cport, sip, sport;
    in >> cip >> cport >> sip >> sport;
    QCOMPARE(sport, std::to_string(b_.port));
    // Cancel and a command timeout work through the tunnel; the session stays usable.
    std::atomic<bool> cancel{false};
    ExecOptions co;
    co.cancel = &cancel;
    std::string first;
    r = s.exec_stream(command_line({"sh", "-c", "echo first; sleep 20"}), [&](Stream, std::string_view d) {
      first += d;
      cancel = true;
    }, co);
    QVERIFY(r.cancelled);
    QCOMPARE(first, std::string("first\n"));
    ExecOptions quick;
    quick.timeout_ms = 400;
    const std::string err = error_message([&] { s.exec({"sleep", "20"}, quick); });
    QVERIFY2(err.find("did not finish within 400 ms") != std::string::npos, err.c_str());
    QCOMPARE(s.exec({"echo", "still here"}).out, std::string("still here\n"));
  }

  void chain_of_two_hops_with_sftp() {
    // Hop 1: A. Hop 2: A again, reached through hop 1. Target: B through hop 2.
    auto hop2 = std::make_unique<Session>(Session::connect_via(jump(), target(a_)));
    QCOMPARE(hop2->host_key().status, HostKeyStatus::Match);  // A's key is known under A's name
    hop2->authenticate(Auth::key(a_.user_key));
    Session s = Session::connect_via(std::move(hop2), target(b_));
    if (s.host_key().status == HostKeyStatus::Unknown) s.accept_host_key();
    s.authenticate(Auth::key(b_.user_key));
    QCOMPARE(s.exec({"printf", "%s", "two hops"}).out, std::string("two hops"));
    // 6 MiB of random bytes up and back down through both tunnels.
    const fs::path local = b_.dir / "chain-up.bin";
    {
      std::mt19937_64 rng(7);
      std::ofstream f(local, std::ios::binary);
      for (int i = 0; i < (6 << 20) / 8; ++i) {
        const uint64_t v = rng();
        f.write(reinterpret_cast<const char*>(&v), 8);
      }
    }
    const std::string remote = (b_.dir / "node" / "chain.bin").string();
    TransferResult up = upload(s, local, remote);
    QCOMPARE(up.bytes_sent, uint64_t(6 << 20));
    QCOMPARE(remote_sha256(s, remote), sha256_file(local));
    TransferOptions no_skip;
    no_skip.skip_same = false;
    TransferResult down = download(s, remote, b_.dir / "chain-down.bin", no_skip);
    QCOMPARE(down.bytes_sent, uint64_t(6 << 20));
    QCOMPARE(sha256_file(b_.dir / "chain-down.bin"), sha256_file(local));
  }

  void target_the_jump_cannot_reach() {
    ConnectOptions o = target(b_);
    o.port = td::remote::testing::free_port();  // nothing listens there
    const std::string err = error_message([&] { Session::connect_via(jump(), o); });
    QVERIFY2(err.find("the jump host cannot open a connection to 127.0.0.1:" + std::to_string(o.port)) !=
                 std::string::npos, err.c_str());
    QVERIFY2(err.find(a_.user + "@127.0.0.1:" + std::to_string(a_.port)) != std::string::npos, err.c_str());
    // A jump session that is not logged in is refused before anything is sent.
    auto not_authed = std::make_unique<Session>(Session::connect(target(a_)));
    const std::string err2 = error_message([&] { Session::connect_via(std::move(not_authed), target(b_)); });
    QVERIFY2(err2.find("must be authenticated") != std::string::npos, err2.c_str());
  }

  void proxyjump_from_ssh_config_through_open_node() {
    // ~/.ssh/config-style aliases: nodeb is reached with ProxyJump jumpa.
    const fs::path cfg = a_.dir / "ssh_config";
    std::ofstream(cfg) << "Host nodeb\n  HostName 127.0.0.1\n  Port " << b_.port << "\n  User " << b_.user
                       << "\n  IdentityFile " << b_.user_key << "\n  ProxyJump jumpa\n"
                       << "Host jumpa\n  HostName 127.0.0.1\n  Port " << a_.port << "\n  User " << a_.user
                       << "\n  IdentityFile " << a_.user_key << "\n";
    NodeSpec n;
    n.host = "nodeb";
    n.auth = AuthMethod::KeyFile;
    const ResolvedNode r = resolve_node(n, cfg);
    QCOMPARE(r.jumps.size(), size_t(1));
    QCOMPARE(r.jumps[0].connect.port, a_.port);
    // A fresh known_hosts: both host keys are unknown and go through the callback, hop first.
    const fs::path kh = a_.dir / "known_hosts_open_node";
    OpenOptions o;
    o.known_hosts = kh.string();
    o.timeout_ms = 5000;
    std::vector<std::string> asked;
    o.accept_unknown_host = [&](const HostKeyInfo& k, const std::string& where) {
      asked.push_back(where + " " + k.fingerprint);
      return true;
    };
    Session s = open_node(r, node_auth(n, r, {}), o);
    QCOMPARE(s.exec_command("echo $SSH_CONNECTION | cut -d' ' -f4").out, std::to_string(b_.port) + "\n");
    QCOMPARE(asked.size(), size_t(2));
    QCOMPARE(asked[0], a_.user + "@127.0.0.1:" + std::to_string(a_.port) + " " +
                           a_.keygen_fingerprint(a_.host_key + ".pub"));
    QCOMPARE(asked[1], b_.user + "@127.0.0.1:" + std::to_string(b_.port) + " " +
                           b_.keygen_fingerprint(b_.host_key + ".pub"));
    // Refusing the hop's key stops before the target is tried.
    std::ofstream(kh, std::ios::trunc).flush();
    asked.clear();
    o.accept_unknown_host = [&](const HostKeyInfo&, const std::string& where) {
      asked.push_back(where);
      return false;
    };
    const std::string err = error_message([&] { open_node(r, node_auth(n, r, {}), o); });
    QVERIFY2(err.find("was not accepted") != std::string::npos, err.c_str());
    QCOMPARE(asked.size(), size_t(1));
  }

  void dropped_jump_connection_fails_cleanly() {
    Session s = via_a_to_b();
    QCOMPARE(s.exec({"echo", "up"}).out, std::string("up\n"));
    QVERIFY(a_.kill_connections() >= 1);  // the jump host's side of the link dies
    const auto t0 = std::chrono::steady_clock::now();
    const std::string err = error_message([&] { s.exec({"echo", "after"}); });
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QVERIFY2(err.find("jump host " + a_.user + "@127.0.0.1:" + std::to_string(a_.port)) != std::string::npos,
             err.c_str());
    QVERIFY2(secs < 15, "a dead jump connection must not hang the caller");  // hang guard only
    qInfo("after the jump connection died: %s (%.2f s)", err.c_str(), secs);
  }
};

QTEST_GUILESS_MAIN(TestJump)
#include "test_jump.moc"
