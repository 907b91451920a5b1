// A two-node CPU run through remote/multinode.h across two network namespaces, each a "node"
// with its own address, host name and real sshd (netns_fixture.h): node3 (10.78.N.2, reached
// with node2 as jump host) is the first node and holds rank 0; node2 (10.77.N.2 from here,
// 10.78.N.1 toward node3) holds rank 1. The ranks find each other over the veth between the
// namespaces (the rendezvous at node3's address as node2 reaches it, Gloo on each node's
// interface toward it). Also: a collective stop of every rank, and a launch that fails on the
// second node kills the rank already started on the first.
// Skips with the reason where namespaces cannot be made (not root, no iproute2, a container).
#include <QtTest>

#include <dirent.h>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "netns_fixture.h"
#include "remote/bundle.h"
#include "remote/cluster.h"
#include "remote/multinode.h"
#include "remote/remote_run.h"
#include "remote/session.h"
#include "sshd_fixture.h"
#include "store/store.h"

using namespace td::remote;
using td::remote::testing::error_message;
using td::remote::testing::NetnsNodes;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
using td::remote::testing::processes_with_arg;
using td::remote::testing::SshdFixture;
namespace fs = std::filesystem;

class TestMultinode : public QObject {
  Q_OBJECT
  SshdFixture keys_;  // host key, user key, authorized_keys, known_hosts (its loopback sshd is unused)
  NetnsNodes nodes_;
  fs::path local_, bundle_, dataset_, ssh_config_;
  ClusterSpec cluster_;
  NodeConnector connect_;

  nlohmann::json config(int steps) const {
    return {{"model", {{"vocab_size", 257}, {"seq_len", 32}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 32}}},
            {"train",
             {{"steps", steps}, {"micro_batch", 2}, {"lr", 1e-3}, {"warmup", 2}, {"min_lr", 1e-4}, {"threads", 1},
              {"eval_interval", 0}, {"sample_interval", 0}, {"checkpoint_interval", 0}, {"keep_checkpoints", 1},
              {"dist_timeout_s", 20}}},
            {"data", {{"path", dataset_.string()}}}};
  }

  // Follows rank 0 on the first node until the run ends (limit in ms).
  FollowState follow(td::store::Store& store, const ClusterRun& run, const std::string& mirror, int limit_ms,
                     const std::function<void(const FollowState&)>& each = {}) {
    FollowOptions fo;
    fo.backoff_initial_ms = 100;
    const NodeSpec first = run.first().node;
    RemoteFollower f([this, first] { return connect_(first); }, store, run.first().run_dir, run.run_id,
                     run.rank0_pid(), mirror, "multinode", fo);
    FollowState st;
    for (int waited = 0; waited < limit_ms && !st.finished; waited += 200) {
      st = f.poll();
      if (each) each(st);
      if (!st.finished) QTest::qWait(200);
    }
    return st;
  }

  // The ranks alive, from a check that reached every node; {-1} when a node did not answer (an
  // SSH connect failing under load leaves that node's ranks out of `alive`, which read as ended).
  std::vector<int> alive_ranks(const ClusterRun& run) {
    const RankSignalReport rep = signal_cluster_run(run, connect_, "");
    return rep.errors.empty() ? rep.alive : std::vector<int>{-1};
  }

  // Polls alive_ranks() until it equals `expected` (limit in ms); returns the last answer, so the
  // caller compares what was seen instead of asking the nodes again.
  std::vector<int> wait_alive(const ClusterRun& run, const std::vector<int>& expected, int limit_ms) {
    std::vector<int> seen = alive_ranks(run);
    for (int waited = 0; waited < limit_ms && seen != expected; waited += 200) {
      QTest::qWait(200);
      seen = alive_ranks(run);
    }
    return seen;
  }

 private slots:
  void initTestCase() {
    if (!keys_.start(false)) QSKIP(keys_.skip_reason.c_str());
    if (!nodes_.start(keys_)) QSKIP(("network-namespace nodes: " + nodes_.skip_reason).c_str());
    local_ = keys_.dir / "local";
    bundle_ = local_ / "bundle";
    dataset_ = local_ / "dataset";
    const fs::path corpus = local_ / "corpus";
    make_bundle(TD_ENGINE_EXE, bundle_);
    fs::create_directories(corpus);
    {
      std::ofstream f(corpus / "text.txt");
      for (int i = 0; i < 400; ++i) f << "Line " << i << ": the quick brown fox jumps over the lazy dog.\n";
    }
    std::string out;
    QCOMPARE(run_cmd({TD_ENGINE_EXE, "prepare", "--input", corpus.string(), "--out", dataset_.string(), "--tokenizer",
                      "byte", "--quiet"}, &out), 0);
    // The jump host logs in with the key its ~/.ssh/config entry names.
    ssh_config_ = keys_.dir / "ssh_config";
    std::ofstream(ssh_config_) << "Host " << nodes_.node2_addr << "\n  User " << keys_.user << "\n  IdentityFile "
                               << keys_.user_key << "\n";
    NodeSpec n3, n2;
    n3.name = "node3";
    n3.host = nodes_.node3_addr;
    n3.jump = nodes_.node2_addr;  // no route from here to node3
    n2.name = "node2";
    n2.host = nodes_.node2_addr;
    for (NodeSpec* n : {&n3, &n2}) {
      n->port = 22;
      n->user = keys_.user;
      n->auth = AuthMethod::KeyFile;
      n->key_file = keys_.user_key;
      n->work_dir = (keys_.dir / (n->name + " work")).string();  // separate disks, as on real nodes
    }
    cluster_.name = "netns";
    cluster_.nodes = {n3, n2};  // node3 first: rank 0 and the rendezvous there
    connect_ = [this](const NodeSpec& n) {
      const ResolvedNode r = resolve_node(n, ssh_config_);
      OpenOptions o;
      o.known_hosts = keys_.known_hosts;
      o.timeout_ms = 5000;
      o.accept_unknown_host = [](const HostKeyInfo&, const std::string&) { return true; };
      return open_node(r, node_auth(n, r, {}), o);
    };
  }
  void cleanupTestCase() {
    nodes_.stop();
    keys_.stop();
  }

  void layout_and_rules() {
    QCOMPARE(cluster_world_size(cluster_), 2);
    QVERIFY(is_multi_rank(cluster_));
    QCOMPARE(cluster_device(cluster_), std::string("cpu"));
    ClusterSpec mixed = cluster_;
    mixed.nodes[1].gpus = 8;
    QVERIFY(error_message([&] { cluster_device(mixed); }).find("mixes GPU nodes and CPU nodes (node3)") !=
            std::string::npos);
    mixed.nodes[0].gpus = 4;
    QCOMPARE(cluster_world_size(mixed), 12);
    QCOMPARE(cluster_device(mixed), std::string("cuda"));
    // The rendezvous address: the first node's host as SSH reaches it, or its address override.
    NodeSpec n = cluster_.nodes[1];
    QCOMPARE(master_address(n, resolve_node(n, ssh_config_)), nodes_.node2_addr);
    n.address = nodes_.node2_inner_addr;
    QCOMPARE(master_address(n, resolve_node(n, ssh_config_)), nodes_.node2_inner_addr);
    QVERIFY(to_json(n).dump().find("\"address\":\"" + nodes_.node2_inner_addr + "\"") != std::string::npos);
    QCOMPARE(node_from_json(to_json(n)).address, nodes_.node2_inner_addr);
    // The interface toward an address, found on the node; a free port there.
    Session s2 = connect_(cluster_.nodes[1]);
    QCOMPARE(route_interface(s2, nodes_.node3_addr), nodes_.node2_ifname);        // a route
    QCOMPARE(route_interface(s2, nodes_.node2_inner_addr), nodes_.node2_ifname);  // its own address
    QCOMPARE(route_interface(s2, "127.0.0.1"), std::string());                    // loopback: the default
    const int port = pick_free_port(s2);
    QVERIFY(port >= 20000 && port < 65000);
  }

  void two_node_cpu_run() {
    const int steps = 12;
    std::vector<std::pair<ClusterLaunchOptions::Step, size_t>> phases;
    ClusterLaunchOptions lo;
    lo.ssh_config = ssh_config_;
    lo.phase = [&](ClusterLaunchOptions::Step step, size_t node) { phases.emplace_back(step, node); };
    ClusterRun run;
    const std::string err = error_message(
        [&] { run = launch_cluster_run(cluster_, connect_, bundle_, dataset_, config(steps).dump(), "mn-run", lo); });
    QVERIFY2(err == "(no error)", err.c_str());
    QCOMPARE(run.world_size, 2);
    QCOMPARE(run.master_addr, nodes_.node3_addr);  // node3's host, which node2 reaches directly
    QVERIFY(run.master_port >= 20000);
    QCOMPARE(run.nodes.size(), size_t(2));
    QCOMPARE(run.nodes[0].ifname, nodes_.node3_ifname);
    QCOMPARE(run.nodes[1].ifname, nodes_.node2_ifname);
    QCOMPARE(run.nodes[0].ranks[0].rank, 0);
    QCOMPARE(run.nodes[1].ranks[0].rank, 1);
    QVERIFY(run.rank0_pid() > 0 && run.nodes[1].ranks[0].pid > 0);
    using Step = ClusterLaunchOptions::Step;
    const std::vector<std::pair<Step, size_t>> expect{{Step::Connecting, 0}, {Step::Deploying, 0}, {Step::Connecting, 1},
                                                      {Step::Deploying, 1}, {Step::Starting, 0},   {Step::Starting, 1}};
    QVERIFY(phases == expect);
    // The layout round-trips through JSON (the store keeps it for reattach and stop).
    const ClusterRun back = cluster_run_from_json(nlohmann::json::parse(to_json(run).dump()));
    QCOMPARE(to_json(back), to_json(run));
    // A layout whose run_id is not a run id (the store's copy tampered with) is refused: it names
    // the run's folders on every node.
    nlohmann::json bad = to_json(run);
    bad["run_id"] = "../../../tmp/x";
    try {
      cluster_run_from_json(bad);
      QFAIL("a layout with run_id '../../../tmp/x' must be refused");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("is not a run id") != std::string::npos, e.what());
    }

    td::store::Store store((local_ / "store.db").string());
    const std::string mirror = (local_ / "mirror" / "events.jsonl").string();
    store.note_launch(run.run_id, "multinode", mirror, run.rank0_pid(), "node3", 0);
    const FollowState st = follow(store, run, mirror, 300000);
    const std::string log0 = read_text(run.nodes[0].run_dir + "/engine.log");
    const std::string log1 = read_text(run.nodes[1].run_dir + "/engine.rank1.log");
    QVERIFY2(st.finished, ("the 2-node run did not end within 300 s\nrank 0: " + log0 + "\nrank 1: " + log1).c_str());
    QVERIFY2(st.status == "completed", (st.status + ": " + st.end_reason + "\nrank 1: " + log1).c_str());
    // Rank 0's node holds the events, node2 only rank 1's log.
    QCOMPARE(read_text(mirror), read_text(run.nodes[0].run_dir + "/events.jsonl"));
    QVERIFY(!fs::exists(run.nodes[1].run_dir + "/events.jsonl"));
    QCOMPARE(int64_t(store.metric_series(run.run_id, "loss").size()), int64_t(steps));
    // Every rank's network and throughput figures, per step, under its rank.
    for (int rank : {0, 1}) {
      const auto sent = store.metric_series(run.run_id, "comm_bytes_sent", rank);
      const auto recv = store.metric_series(run.run_id, "comm_bytes_received", rank);
      const auto tps = store.metric_series(run.run_id, "rank_tokens_per_s", rank);
      QCOMPARE(int64_t(sent.size()), int64_t(steps));
      QCOMPARE(int64_t(recv.size()), int64_t(steps));
      QCOMPARE(int64_t(tps.size()), int64_t(steps));
      for (size_t i = 0; i < sent.size(); ++i) {
        QVERIFY(sent.value[i] > 0);
        QVERIFY(recv.value[i] > 0);
        QVERIFY(tps.value[i] > 0);
      }
    }
    // Two hosts: the ranks ran in different namespaces (different host names where unshare is).
    const auto chart = store.chart_run(run.run_id);
    QCOMPARE(chart.world_size.value_or(0), int64_t(2));
    QCOMPARE(chart.hosts.size(), size_t(2));
    if (!nodes_.hostname2.empty()) {
      QCOMPARE(chart.hosts[0], nodes_.hostname3);
      QCOMPARE(chart.hosts[1], nodes_.hostname2);
    }
    // Nothing is left running on either node: every rank exits on its own (none had to be
    // killed). The wait is generous: under load (CI) rank 1's exit after run_end took over the
    // product's 10 s, and a node that could not be reached then kept its rank unchecked.
    QVERIFY(end_leftover_ranks(run, connect_, 180000).empty());
    const RankSignalReport after = signal_cluster_run(run, connect_, "");
    QVERIFY2(after.errors.empty(), after.errors.empty() ? "" : after.errors.front().c_str());
    QVERIFY(after.alive.empty());
  }

  void stop_stops_every_rank() {
    ClusterLaunchOptions lo;
    lo.ssh_config = ssh_config_;
    ClusterRun run;
    const std::string err = error_message(
        [&] { run = launch_cluster_run(cluster_, connect_, bundle_, dataset_, config(100000).dump(), "mn-stop", lo); });
    QVERIFY2(err == "(no error)", err.c_str());
    td::store::Store store((local_ / "store.db").string());
    const std::string mirror = (local_ / "mirror-stop" / "events.jsonl").string();
    store.note_launch(run.run_id, "multinode", mirror, run.rank0_pid(), "node3", 0);
    // Train a few steps, then stop.
    bool stopped = false;
    const FollowState st = follow(store, run, mirror, 300000, [&](const FollowState&) {
      const auto info = store.find_run(run.run_id);
      if (!stopped && info && info->last_step.value_or(0) >= 3) {
        QCOMPARE(wait_alive(run, {0, 1}, 300000), (std::vector<int>{0, 1}));
        stopped = true;
        QVERIFY(stop_cluster_run(run, connect_, 20000));  // both ended after SIGTERM
      }
    });
    QVERIFY2(stopped, ("the run never reached step 3: " + st.status + " " + st.end_reason).c_str());
    QVERIFY2(st.finished && st.status == "stopped", (st.status + ": " + st.end_reason).c_str());
    QCOMPARE(wait_alive(run, {}, 300000), std::vector<int>{});
  }

  // A rank left on a node that does not answer at first (an SSH connect failing under load) is
  // not taken for gone: end_leftover_ranks asks again and kills it (it reported "none left"
  // after one failed connect, and a rank outlived the run; seen in the suite under a CPU hog).
  void leftover_rank_on_a_node_that_fails_to_answer_is_killed() {
    ClusterLaunchOptions lo;
    lo.ssh_config = ssh_config_;
    ClusterRun run;
    const std::string err = error_message(
        [&] { run = launch_cluster_run(cluster_, connect_, bundle_, dataset_, config(100000).dump(), "mn-left", lo); });
    QVERIFY2(err == "(no error)", err.c_str());
    // Waits are generous: each check opens an SSH session per node, seconds each beside a CPU
    // hog (the 60 s wait for rank 0's end ran out there, with both processes long gone).
    QCOMPARE(wait_alive(run, {0, 1}, 300000), (std::vector<int>{0, 1}));
    // Rank 0 gone; rank 1 stopped (SIGSTOP), so it cannot notice and exit on its own.
    const pid_t r1 = static_cast<pid_t>(run.nodes[1].ranks[0].pid);
    QCOMPARE(::kill(r1, SIGSTOP), 0);
    QCOMPARE(::kill(static_cast<pid_t>(run.rank0_pid()), SIGKILL), 0);
    QCOMPARE(wait_alive(run, {1}, 300000), (std::vector<int>{1}));
    // node2 (rank 1's) refuses the first two connections.
    int refused = 0;
    NodeConnector flaky = [&](const NodeSpec& n) {
      if (n.name == cluster_.nodes[1].name && refused < 2) {
        ++refused;
        throw td::Error("connection refused (test)");
      }
      return connect_(n);
    };
    QCOMPARE(end_leftover_ranks(run, flaky, 3000), (std::vector<int>{1}));
    QCOMPARE(refused, 2);
    QCOMPARE(wait_alive(run, {}, 300000), std::vector<int>{});
  }

  void failed_launch_kills_started_ranks() {
    ClusterLaunchOptions lo;
    lo.ssh_config = ssh_config_;
    // Just before node2 starts its rank, its run folder becomes a file: rank 1's log cannot be
    // opened and nothing starts there. Rank 0 already runs on node3 and must be killed.
    const fs::path node2_run = fs::path(cluster_.nodes[1].work_dir) / "runs" / "mn-fail";
    size_t running_before = 0;
    lo.phase = [&](ClusterLaunchOptions::Step step, size_t node) {
      if (step != ClusterLaunchOptions::Step::Starting || node != 1) return;
      running_before = processes_with_arg("mn-fail").size();  // rank 0 on node3
      fs::rename(node2_run, node2_run.string() + ".moved");
      std::ofstream(node2_run).flush();
    };
    const std::string err = error_message(
        [&] { launch_cluster_run(cluster_, connect_, bundle_, dataset_, config(100000).dump(), "mn-fail", lo); });
    QVERIFY2(err.find("starting the ranks on node2 failed, the ranks already started were killed") != std::string::npos,
             err.c_str());
    QVERIFY2(err.find("engine.rank1.log") != std::string::npos, err.c_str());
    QCOMPARE(running_before, size_t(1));
    for (int i = 0; i < 50 && !processes_with_arg("mn-fail").empty(); ++i) QTest::qWait(100);
    QVERIFY(processes_with_arg("mn-fail").empty());
  }

  void bad_cluster_is_refused_before_any_connection() {
    int connects = 0;
    NodeConnector counting = [&](const NodeSpec& n) {
      ++connects;
      return connect_(n);
    };
    ClusterSpec none;
    none.name = "empty";
    QVERIFY(error_message([&] { launch_cluster_run(none, counting, bundle_, dataset_, "{}", "x"); })
                .find("has no nodes") != std::string::npos);
    ClusterSpec bad = cluster_;
    bad.nodes[1].ifname = "eth 0";
    QVERIFY(error_message([&] { launch_cluster_run(bad, counting, bundle_, dataset_, "{}", "x"); })
                .find("is not a network interface name") != std::string::npos);
    QCOMPARE(connects, 0);
  }
};

QTEST_GUILESS_MAIN(TestMultinode)
#include "test_multinode.moc"
