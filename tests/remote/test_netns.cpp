// A second and a third node, each a network namespace with its own address and its own real
// sshd (netns_fixture.h): deploy + detached tiny training run + follow to completion on node2
// (10.77.N.2, not loopback); node3 (10.78.N.2) cannot be reached from here, only with node2 as
// jump host, where a command runs and sees node2's inner address as its client.
// Skips with the reason where namespaces cannot be made (not root, no iproute2, a container).
#include <QtTest>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "netns_fixture.h"
#include "remote/bundle.h"
#include "remote/cluster.h"
#include "remote/deploy.h"
#include "remote/remote_run.h"
#include "remote/session.h"
#include "sshd_fixture.h"
#include "store/store.h"

using namespace td::remote;
using td::remote::testing::NetnsNodes;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
using td::remote::testing::error_message;
using td::remote::testing::SshdFixture;
namespace fs = std::filesystem;

namespace {


// "client-ip client-port server-ip server-port" of $SSH_CONNECTION, as words.
std::vector<std::string> ssh_connection(Session& s) {
  std::istringstream in(s.exec_command("echo $SSH_CONNECTION").out);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

}  // namespace

class TestNetns : public QObject {
  Q_OBJECT
  SshdFixture keys_;  // host key, user key, authorized_keys, known_hosts (its loopback sshd is unused)
  NetnsNodes nodes_;

  ConnectOptions node(const std::string& addr) const {
    ConnectOptions o;
    o.host = addr;
    o.port = 22;
    o.user = keys_.user;
    o.known_hosts = keys_.known_hosts;
    o.timeout_ms = 5000;
    return o;
  }
  Session open_node2() { return Session::open(node(nodes_.node2_addr), Auth::key(keys_.user_key)); }

 private slots:
  void initTestCase() {
    if (!keys_.start(false)) QSKIP(keys_.skip_reason.c_str());
    if (!nodes_.start(keys_)) QSKIP(("second/third node: " + nodes_.skip_reason).c_str());
    // Both nodes use the same host key; known_hosts gets one entry per address.
    for (const std::string& addr : {nodes_.node2_addr}) {
      Session s = Session::connect(node(addr));
      QCOMPARE(s.host_key().host_token, addr);  // port 22: the plain name
      s.accept_host_key();
    }
  }
  void cleanupTestCase() {
    nodes_.stop();
    keys_.stop();
  }

  void deploy_run_and_follow_on_node2() {
    const fs::path local = keys_.dir / "local";
    const fs::path bundle = local / "bundle", corpus = local / "corpus", dataset = local / "dataset";
    make_bundle(TD_ENGINE_EXE, bundle);
    fs::create_directories(corpus);
    {
      std::ofstream f(corpus / "text.txt");
      for (int i = 0; i < 400; ++i) f << "Line " << i << ": the quick brown fox jumps over the lazy dog.\n";
    }
    std::string out;
    QCOMPARE(run_cmd({TD_ENGINE_EXE, "prepare", "--input", corpus.string(), "--out", dataset.string(), "--tokenizer",
                      "byte", "--quiet"}, &out), 0);
    const int steps = 30;
    const nlohmann::json cfg = {
        {"model", {{"vocab_size", 257}, {"seq_len", 32}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 32}}},
        {"train",
         {{"steps", steps}, {"micro_batch", 4}, {"lr", 1e-3}, {"warmup", 2}, {"min_lr", 1e-4}, {"threads", 1},
          {"eval_interval", 50}, {"eval_batches", 1}, {"sample_interval", 0}, {"checkpoint_interval", 0},
          {"keep_checkpoints", 1}}},
        {"data", {{"path", "replaced by deploy"}}}};
    Session s = open_node2();
    // The node really is another address: sshd sees us coming from the host's veth.
    const std::vector<std::string> conn = ssh_connection(s);
    QCOMPARE(conn.size(), size_t(4));
    QCOMPARE(conn[0], nodes_.host_addr);
    QCOMPARE(conn[2], nodes_.node2_addr);
    const std::string work = (keys_.dir / "node2 work").string();
    DeployResult d = deploy(s, bundle, dataset, cfg.dump(), work, "ns-run");
    QVERIFY(d.bytes_sent > 0);
    const int64_t pid = launch_detached(s, d, "ns-run");
    td::store::Store store((local / "store.db").string());
    const std::string mirror = (local / "mirror" / "events.jsonl").string();
    store.note_launch("ns-run", "remote", mirror, pid, nodes_.node2_addr, 0);
    FollowOptions fo;
    fo.backoff_initial_ms = 100;
    RemoteFollower f([this] { return open_node2(); }, store, d.run_dir, "ns-run", pid, mirror, "remote", fo);
    FollowState st;
    for (int waited = 0; waited < 300000 && !st.finished; waited += 100) {  // waits as long as a loaded machine needs
      st = f.poll();
      if (!st.finished) QTest::qWait(100);
    }
    QVERIFY2(st.finished, "the run on node2 did not end within 300 s");
    QVERIFY2(st.status == "completed", (st.status + ": " + st.end_reason + "\nevents: " +
                                        read_text(d.run_dir + "/events.jsonl").substr(0, 2000)).c_str());
    QCOMPARE(read_text(mirror), read_text(d.run_dir + "/events.jsonl"));
    const td::store::MetricSeries loss = store.metric_series("ns-run", "loss");
    QCOMPARE(int64_t(loss.size()), int64_t(steps));
    QCOMPARE(loss.step.back(), int64_t(steps));
  }

  void node3_only_through_node2() {
    // No route from here: a direct attempt fails (unreachable, timed out, or, where the machine
    // sends unknown destinations to a proxy, no SSH banner from it), never hangs.
    ConnectOptions direct = node(nodes_.node3_addr);
    direct.timeout_ms = 1500;
    const std::string err = error_message([&] { Session::connect(direct); });
    QVERIFY2(err != "(no error)", "node3 must not be reachable without the jump host");
    // Through node2 as jump host.
    auto jump = std::make_unique<Session>(open_node2());
    Session s = Session::connect_via(std::move(jump), node(nodes_.node3_addr));
    QCOMPARE(s.host_key().host_token, nodes_.node3_addr);
    QCOMPARE(s.host_key().fingerprint, keys_.keygen_fingerprint(keys_.host_key + ".pub"));
    if (s.host_key().status == HostKeyStatus::Unknown) s.accept_host_key();
    s.authenticate(Auth::key(keys_.user_key));
    // node3's sshd sees the connection coming from node2's inner address, to its own address.
    const std::vector<std::string> conn = ssh_connection(s);
    QCOMPARE(conn.size(), size_t(4));
    QCOMPARE(conn[0], nodes_.node2_inner_addr);
    QCOMPARE(conn[2], nodes_.node3_addr);
    // The command runs inside node3's namespace: its only addresses are lo and 10.78.N.2.
    ExecResult r = s.exec({"ip", "-4", "-o", "addr", "show"});
    QCOMPARE(r.exit_status, 0);
    QVERIFY2(r.out.find("inet " + nodes_.node3_addr + "/24") != std::string::npos, r.out.c_str());
    QVERIFY2(r.out.find(nodes_.node2_addr) == std::string::npos, r.out.c_str());
    QVERIFY2(r.out.find(nodes_.host_addr) == std::string::npos, r.out.c_str());
  }

  void proxyjump_alias_to_node3() {
    const fs::path cfg = keys_.dir / "ssh_config";
    std::ofstream(cfg) << "Host node3\n  HostName " << nodes_.node3_addr << "\n  User " << keys_.user
                       << "\n  IdentityFile " << keys_.user_key << "\n  ProxyJump node2\n"
                       << "Host node2\n  HostName " << nodes_.node2_addr << "\n  User " << keys_.user
                       << "\n  IdentityFile " << keys_.user_key << "\n";
    NodeSpec n;
    n.host = "node3";
    n.auth = AuthMethod::KeyFile;
    const ResolvedNode r = resolve_node(n, cfg);
    QCOMPARE(r.target.host, nodes_.node3_addr);
    QCOMPARE(r.jumps.size(), size_t(1));
    QCOMPARE(r.jumps[0].connect.host, nodes_.node2_addr);
    OpenOptions o;
    o.known_hosts = keys_.known_hosts;
    o.timeout_ms = 5000;
    o.accept_unknown_host = [](const HostKeyInfo&, const std::string&) { return true; };
    Session s = open_node(r, node_auth(n, r, {}), o);
    const std::vector<std::string> conn = ssh_connection(s);
    QCOMPARE(conn.size(), size_t(4));
    QCOMPARE(conn[0], nodes_.node2_inner_addr);
    QCOMPARE(conn[2], nodes_.node3_addr);
  }
};

QTEST_GUILESS_MAIN(TestNetns)
#include "test_netns.moc"
