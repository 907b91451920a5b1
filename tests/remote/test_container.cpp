// Training inside a real podman container on an SSH "node" (this machine through the real sshd
// fixture): the image is built FROM scratch from the test's own engine bundle by td_engine_image,
// the tool `./traindeck.sh image` runs; a node whose container setting names it gets a run
// deployed without the bundle (dataset and config only), the engine trains inside the container
// to completion with events, checkpoints and its log in the run folder on the node (outside the
// container), followed into a store; a graceful stop ends the run "stopped" with a checkpoint;
// SIGKILL of the podman client leaves the container running and remove_containers() ends it; a
// 2-rank run across two container "nodes" rendezvouses over the host network; an image missing on
// the node gives an error naming it and the runtime before anything is uploaded.
//
// The node's podman settings come from the node's environment, as on a real node: sshd gives
// every session CONTAINERS_CONF=<a containers.conf with runtime runc and no default ulimits>
// (docs/containers.md says why). Needs root, podman and runc (Debian packages), else it skips.
#include <QElapsedTimer>
#include <QtTest>

#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "remote/bundle.h"
#include "remote/cluster.h"
#include "remote/container.h"
#include "remote/deploy.h"
#include "remote/multinode.h"
#include "remote/remote_run.h"
#include "remote/session.h"
#include "sshd_fixture.h"
#include "store/store.h"

using namespace td::remote;
using td::remote::testing::error_message;
using td::remote::testing::random_token;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
using td::remote::testing::SshdFixture;
namespace fs = std::filesystem;

class TestContainer : public QObject {
  Q_OBJECT
  SshdFixture sshd_;
  fs::path local_, bundle_, dataset_, conf_;
  std::string work_, image_, version_;
  ConnectOptions conn_;
  std::unique_ptr<td::store::Store> store_;
  std::vector<std::string> run_ids_;  // containers to remove at the end, should a check fail
  int64_t launched_pid_ = 0;          // the pid launch_detached() returned last

  Session connect() { return Session::open(conn_, Auth::key(sshd_.user_key)); }

  ContainerSpec container(const std::string& image) const {
    ContainerSpec c;
    c.runtime = ContainerRuntime::Podman;
    c.image = image;
    return c;
  }

  static nlohmann::json tiny_config(int steps) {
    return {{"model", {{"vocab_size", 257}, {"seq_len", 32}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 32}}},
            {"train",
             {{"steps", steps}, {"micro_batch", 4}, {"lr", 1e-3}, {"warmup", 2}, {"min_lr", 1e-4}, {"threads", 1},
              {"eval_interval", 50}, {"eval_batches", 1}, {"sample_interval", 0}, {"checkpoint_interval", 10},
              {"keep_checkpoints", 1}}},
            {"data", {{"path", "replaced by deploy"}}}};
  }

  // podman on this machine (the node), with the test's containers.conf; returns its exit status.
  static int podman(const std::vector<std::string>& args, std::string* out = nullptr) {
    std::vector<std::string> argv{"podman"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_cmd(argv, out);
  }

  // Deploys run `id` into the container node and launches it; returns its follower.
  std::unique_ptr<RemoteFollower> start(const std::string& id, int steps, DeployResult* out) {
    run_ids_.push_back(id);
    Session s = connect();
    DeployOptions o;
    o.container = container(image_);
    DeployResult d = deploy(s, bundle_, dataset_, tiny_config(steps).dump(), work_, id, {}, nullptr, o);
    const int64_t pid = launch_detached(s, d, id);
    launched_pid_ = pid;
    *out = d;
    const std::string mirror = (local_ / "mirror" / id / "events.jsonl").string();
    store_->note_launch(id, "container", mirror, pid, "127.0.0.1", 0);
    FollowOptions fo;
    fo.backoff_initial_ms = 100;
    fo.container = o.container;
    return std::make_unique<RemoteFollower>([this] { return connect(); }, *store_, d.run_dir, id, pid, mirror,
                                            "container", fo);
  }

  // Polls every 100 ms until `until` holds or the run ends, at most timeout_ms (generous: a
  // loaded machine starts containers and trains slowly). Callers say what they waited for.
  static FollowState poll_until(RemoteFollower& f, const std::function<bool()>& until, int timeout_ms = 240000) {
    FollowState st;
    QElapsedTimer t;
    t.start();
    while (true) {
      st = f.poll();
      if (st.finished || until() || t.elapsed() > timeout_ms) return st;
      QTest::qWait(100);
    }
  }

  int64_t steps_in_store(const std::string& id) { return int64_t(store_->metric_series(id, "loss").size()); }

  // Waits up to 120 s until podman has no container `name`; true when it is gone.
  static bool container_gone(const std::string& name) {
    QElapsedTimer t;
    t.start();
    while (podman({"container", "exists", name}) == 0) {
      if (t.elapsed() > 120000) return false;
      QTest::qWait(200);
    }
    return true;
  }

  // arg0 of process `pid` on this machine (the node).
  static std::string arg0(int64_t pid) {
    const std::string cmd = read_text("/proc/" + std::to_string(pid) + "/cmdline");
    return cmd.substr(0, cmd.find('\0'));
  }

 private slots:
  void initTestCase() {
    if (geteuid() != 0) QSKIP("needs root: the test runs rootful podman as the node's container runtime");
    std::string out;
    if (run_cmd({"podman", "--version"}, &out) != 0) QSKIP("podman is missing: install the Debian package podman");
    if (run_cmd({"sh", "-c", "command -v runc"}, &out) != 0) QSKIP("runc is missing: install the Debian package runc");
    if (!sshd_.start(/*with_password_user=*/false)) QSKIP(sshd_.skip_reason.c_str());
    // What this machine's podman needs (docs/containers.md): runc instead of crun (crun fails
    // on cgroups in hybrid mode) and no default ulimits (raising RLIMIT_NOFILE is not permitted).
    conf_ = sshd_.dir / "containers.conf";
    std::ofstream(conf_) << "[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = \"runc\"\n";
    setenv("CONTAINERS_CONF", conf_.c_str(), 1);  // for the image build and the checks here
    if (!sshd_.launch({}, "PasswordAuthentication yes\nKbdInteractiveAuthentication no\nUsePAM no\n",
                      "CONTAINERS_CONF=" + conf_.string()))
      QSKIP(sshd_.skip_reason.c_str());
    local_ = sshd_.dir / "local";
    bundle_ = local_ / "bundle";
    make_bundle(TD_ENGINE_EXE, bundle_);
    // The image, as ./traindeck.sh image builds it (the same tool), from this test's bundle.
    image_ = "localhost/td-test-" + random_token(8) + ":1";
    std::transform(image_.begin(), image_.end(), image_.begin(), [](char c) { return char(std::tolower(c)); });
    QElapsedTimer t;
    t.start();
    if (run_cmd({TD_ENGINE_IMAGE_EXE, "--bundle", bundle_.string(), "--work", (local_ / "image").string(), "--tag",
                 image_}, &out) != 0)
      QSKIP(("the engine image cannot be built here with podman: " + out).c_str());
    QVERIFY2(out.find("image=" + image_ + "\n") != std::string::npos, out.c_str());
    qInfo("image %s built in %.1f s", image_.c_str(), t.elapsed() / 1000.0);
    std::string bundle_version;
    QCOMPARE(run_cmd({(bundle_ / "bin/traindeck-engine").string(), "--version"}, &bundle_version), 0);
    // The engine inside runs through the bundle's sh launcher (no distribution in the image).
    QCOMPARE(podman({"run", "--rm", "--network", "none", image_, "--version"}, &version_), 0);
    QCOMPARE(version_, bundle_version);
    while (!version_.empty() && version_.back() == '\n') version_.pop_back();
    std::string size;
    podman({"image", "inspect", "--format", "{{.Size}}", image_}, &size);
    qInfo("image size %.1f MB", std::atof(size.c_str()) / 1e6);

    const fs::path corpus = local_ / "corpus";
    fs::create_directories(corpus);
    {
      std::ofstream f(corpus / "text.txt");
      for (int i = 0; i < 600; ++i) f << "Line " << i << ": the quick brown fox jumps over the lazy dog; pack my box.\n";
    }
    dataset_ = local_ / "dataset";
    QCOMPARE(run_cmd({TD_ENGINE_EXE, "prepare", "--input", corpus.string(), "--out", dataset_.string(), "--tokenizer",
                      "byte", "--quiet"}, &out), 0);
    // Every value reaches podman as one argument: nothing in this path may run, and the mount
    // `-v <work>:<work>` keeps it whole (':' and ',' are what a mount cannot carry).
    work_ = (sshd_.dir / "node work; $(touch td-pwned) `touch td-pwned` 'q\" & x").string();
    conn_.host = "127.0.0.1";
    conn_.port = sshd_.port;
    conn_.user = sshd_.user;
    conn_.known_hosts = sshd_.known_hosts;
    conn_.timeout_ms = 5000;
    Session::connect(conn_).accept_host_key();
    store_ = std::make_unique<td::store::Store>((local_ / "store.db").string());
  }

  void cleanupTestCase() {
    if (image_.empty()) return;
    for (const std::string& id : run_ids_)
      for (int rank : {0, 1}) podman({"rm", "-f", container_name(id, rank)});
    podman({"rmi", "-f", image_});
    const char* home = getenv("HOME");
    QVERIFY(!fs::exists(fs::path(home ? home : "/") / "td-pwned"));
    QVERIFY(!fs::exists("td-pwned"));
    store_.reset();
    sshd_.stop();
  }

  void trains_in_the_container_to_completion() {
    DeployResult d;
    QElapsedTimer t;
    t.start();
    auto f = start("ctr-run", 30, &d);
    QCOMPARE(d.engine_version, version_);     // checked inside the image on the node
    QCOMPARE(d.engine, std::string("traindeck-engine"));
    QVERIFY(!fs::exists(work_ + "/engine"));  // no bundle was uploaded for a container node
    QCOMPARE(d.container_paths.work_dir, work_);
    QVERIFY(d.files_sent > 0);                // the dataset and nothing else
    FollowState st = poll_until(*f, [] { return false; });
    const std::string log = read_text(d.run_dir + "/engine.log");
    QVERIFY2(st.finished, ("waited for the run to end; engine.log:\n" + log).c_str());
    QVERIFY2(st.status == "completed", (st.status + ": " + st.end_reason + "\n" + log).c_str());
    qInfo("deploy + 30 steps in the container: %.1f s", t.elapsed() / 1000.0);
    // Events, checkpoints and the log are in the run folder on the node, outside the container.
    QCOMPARE(steps_in_store("ctr-run"), int64_t(30));
    QCOMPARE(read_text(f->mirror_path()), read_text(d.run_dir + "/events.jsonl"));
    QVERIFY(fs::is_regular_file(d.run_dir + "/checkpoints/step_00000030/model.safetensors"));
    QVERIFY2(log.find("step 30/30") != std::string::npos, log.c_str());
    // The engine read the dataset deploy uploaded (config.json's data.path, the same path inside).
    const nlohmann::json cfg = nlohmann::json::parse(read_text(d.config_path));
    QCOMPARE(cfg["data"]["path"].get<std::string>(), d.dataset_dir);
    // --rm: no container is left once podman's client is done (it removes the container after
    // the engine's exit, which can come a moment after the run_end the follower saw).
    QVERIFY2(container_gone(container_name("ctr-run", 0)), "waited 120 s for podman to remove the ended container");
  }

  void graceful_stop_reaches_the_engine_inside() {
    DeployResult d;
    auto f = start("ctr-stop", 1000000, &d);
    FollowState st = poll_until(*f, [&] { return steps_in_store("ctr-stop") >= 5; });
    QVERIFY2(!st.finished && steps_in_store("ctr-stop") >= 5,
             ("waited for step 5 of the million-step run: " + st.status + " " + st.end_reason).c_str());
    // It runs in the container: the launched pid is podman's client; the engine's own pid (from
    // run_start, --pid host) runs the image's binary, a path this machine does not have.
    QCOMPARE(fs::path(arg0(launched_pid_)).filename().string(), std::string("podman"));
    const int64_t pid = *store_->get_run("ctr-stop").pid;
    QVERIFY(pid != launched_pid_);
    QCOMPARE(arg0(pid), std::string("/opt/traindeck/bin/traindeck-engine.bin"));
    QVERIFY(!fs::exists("/opt/traindeck/bin/traindeck-engine.bin"));
    QCOMPARE(podman({"container", "exists", container_name("ctr-stop", 0)}), 0);
    QVERIFY(f->stop(120000));  // SIGTERM to podman, forwarded to the engine: no SIGKILL needed
    st = poll_until(*f, [] { return false; });
    QVERIFY2(st.finished, "waited for the run_end after the stop");
    QVERIFY(!st.marked_failed);
    QCOMPARE(st.status, std::string("stopped"));
    const int64_t last = store_->get_run("ctr-stop").last_step.value_or(-1);
    QVERIFY(last >= 5);
    char name[32];
    std::snprintf(name, sizeof name, "step_%08lld", static_cast<long long>(last));
    QVERIFY2(fs::is_regular_file(d.run_dir + "/checkpoints/" + name + "/model.safetensors"),
             ("the stop's checkpoint " + std::string(name) + " is missing").c_str());
    QCOMPARE(read_text(f->mirror_path()), read_text(d.run_dir + "/events.jsonl"));
    QVERIFY(podman({"container", "exists", container_name("ctr-stop", 0)}) != 0);
  }

  void killed_client_takes_its_container_with_it() {
    // podman's container outlives a killed `podman run` client (conmon keeps it): the task
    // wrapper's watcher removes it, killing it at once, so nothing trains outside the workbench
    // and the run ends failed (no run_end), every time.
    DeployResult d;
    auto f = start("ctr-kill", 1000000, &d);
    FollowState st = poll_until(*f, [&] { return steps_in_store("ctr-kill") >= 3; });
    QVERIFY2(!st.finished && steps_in_store("ctr-kill") >= 3, "waited for step 3 of the million-step run");
    QCOMPARE(::kill(pid_t(launched_pid_), SIGKILL), 0);  // podman's client
    QVERIFY2(QTest::qWaitFor([&] { return podman({"container", "exists", container_name("ctr-kill", 0)}) != 0; }, 60000),
             "waited 60 s for the wrapper's watcher to remove the container of the killed client");
    st = poll_until(*f, [] { return false; });
    QVERIFY(st.finished);
    QCOMPARE(st.status, std::string("failed"));  // no run_end: the engine was killed
  }

  void two_ranks_in_two_container_nodes() {
    const int steps = 12;
    ClusterSpec c;
    c.name = "containers";
    for (const char* name : {"c0", "c1"}) {
      NodeSpec n;
      n.name = name;
      n.host = "127.0.0.1";
      n.port = sshd_.port;
      n.user = sshd_.user;
      n.auth = AuthMethod::KeyFile;
      n.key_file = sshd_.user_key;
      n.work_dir = work_ + " " + name;
      n.container = container(image_);
      c.nodes.push_back(n);
    }
    QVERIFY(validate(c).empty());
    NodeConnector connect = [this](const NodeSpec& n) {
      const ResolvedNode r = resolve_node(n, sshd_.dir / "no-ssh-config");
      OpenOptions o;
      o.known_hosts = sshd_.known_hosts;
      o.timeout_ms = 5000;
      return open_node(r, node_auth(n, r, {}), o);
    };
    ClusterLaunchOptions lo;
    lo.ssh_config = sshd_.dir / "no-ssh-config";
    run_ids_.push_back("ctr-mn");
    ClusterRun run;
    const std::string err = error_message(
        [&] { run = launch_cluster_run(c, connect, bundle_, dataset_, tiny_config(steps).dump(), "ctr-mn", lo); });
    QVERIFY2(err == "(no error)", err.c_str());
    QCOMPARE(run.world_size, 2);
    QCOMPARE(run.master_addr, std::string("127.0.0.1"));
    // The layout keeps each node's container (stop and reattach read it from the store).
    QVERIFY(cluster_run_from_json(nlohmann::json::parse(to_json(run).dump())).nodes[1].node.container == c.nodes[1].container);
    const std::string mirror = (local_ / "mirror" / "ctr-mn" / "events.jsonl").string();
    store_->note_launch(run.run_id, "container", mirror, run.rank0_pid(), "c0", 0);
    RemoteFollower f([&] { return connect(c.nodes[0]); }, *store_, run.first().run_dir, run.run_id, run.rank0_pid(),
                     mirror, "container");
    const FollowState st = poll_until(f, [] { return false; }, 300000);
    const std::string log1 = read_text(run.nodes[1].run_dir + "/engine.rank1.log");
    QVERIFY2(st.finished && st.status == "completed",
             (st.status + ": " + st.end_reason + "\nrank 1: " + log1).c_str());
    QCOMPARE(steps_in_store("ctr-mn"), int64_t(steps));
    for (int rank : {0, 1}) {
      const auto tps = store_->metric_series(run.run_id, "rank_tokens_per_s", rank);
      QCOMPARE(int64_t(tps.size()), int64_t(steps));
    }
    QCOMPARE(store_->chart_run(run.run_id).world_size.value_or(0), int64_t(2));
    QVERIFY(end_leftover_ranks(run, connect, 180000).empty());
    for (int rank : {0, 1}) QVERIFY(podman({"container", "exists", container_name("ctr-mn", rank)}) != 0);
  }

  // The default kind of work directory, relative to the remote home: config.json's data.path is
  // then ../../datasets/<name> (from the config's folder) and the container gets absolute paths.
  void relative_work_dir() {
    const char* home = getenv("HOME");
    QVERIFY(home && *home);
    const std::string rel = "td-container-test-" + random_token(6);
    run_ids_.push_back("ctr-rel");
    Session s = connect();
    DeployOptions o;
    o.container = container(image_);
    const DeployResult d = deploy(s, bundle_, dataset_, tiny_config(10).dump(), rel, "ctr-rel", {}, nullptr, o);
    QCOMPARE(d.run_dir, rel + "/runs/ctr-rel");
    QCOMPARE(d.container_paths.work_dir, (fs::path(home) / rel).string());
    QCOMPARE(nlohmann::json::parse(read_text(fs::path(home) / d.config_path))["data"]["path"].get<std::string>(),
             "../../datasets/" + remote_dataset_name(dataset_));
    const int64_t pid = launch_detached(s, d, "ctr-rel");
    const std::string mirror = (local_ / "mirror" / "ctr-rel" / "events.jsonl").string();
    store_->note_launch("ctr-rel", "container", mirror, pid, "127.0.0.1", 0);
    RemoteFollower f([this] { return connect(); }, *store_, d.run_dir, "ctr-rel", pid, mirror, "container");
    const FollowState st = poll_until(f, [] { return false; });
    const std::string log = read_text(fs::path(home) / d.run_dir / "engine.log");
    std::error_code ec;
    fs::remove_all(fs::path(home) / rel, ec);
    QVERIFY2(st.finished && st.status == "completed", (st.status + ": " + st.end_reason + "\n" + log).c_str());
    QCOMPARE(steps_in_store("ctr-rel"), int64_t(10));
  }

  void missing_image_is_named_before_any_upload() {
    Session s = connect();
    DeployOptions o;
    o.container = container("localhost/td-no-such-image:0");
    const std::string err = error_message(
        [&] { deploy(s, bundle_, dataset_, tiny_config(5).dump(), work_, "ctr-missing", {}, nullptr, o); });
    QVERIFY2(err.find("podman on the node has no image localhost/td-no-such-image:0") != std::string::npos, err.c_str());
    QVERIFY2(err.find("podman load -i image.tar") != std::string::npos, err.c_str());
    QVERIFY(!fs::exists(work_ + "/runs/ctr-missing"));
    // A runtime the node lacks is named too.
    o.container.runtime = ContainerRuntime::Apptainer;
    const std::string err2 = error_message(
        [&] { deploy(s, bundle_, dataset_, tiny_config(5).dump(), work_, "ctr-missing", {}, nullptr, o); });
    if (run_cmd({"sh", "-c", "command -v apptainer"}) != 0)
      QVERIFY2(err2.find("the node has no apptainer on its PATH") != std::string::npos, err2.c_str());
  }
};

QTEST_GUILESS_MAIN(TestContainer)
#include "test_container.moc"
