// Slurm runs whose engine runs in a podman container (SlurmSpec::container) on a real Slurm
// started by the test (slurm_fixture.h: two slurmd "nodes" in network namespaces), submitted
// through the login node's real sshd (sshd_fixture.h). The image is built FROM scratch from the
// test's own bundle by td_engine_image, the tool `./traindeck.sh image` runs (as
// test_remote_container does). Checked: a 2-node run trains in containers to completion, every
// step stored once, events, checkpoints and both ranks' logs in the run folder outside the
// containers, no bundle uploaded; SIGUSR1 (the time-limit warning) and SIGTERM (a graceful stop)
// reach the engines through podman's client; SIGKILL to one rank's client leaves no container
// of the run behind and the run resumes in a new job; a missing image is an error naming it and
// the runtime before the run folder exists.
//
// podman's settings come from the login node's environment as on a real cluster: sshd gives every
// session SLURM_CONF and CONTAINERS_CONF (runc, no default ulimits: docs/containers.md), and
// sbatch carries them into the job's tasks. Needs root, podman, runc, slurm-wlm and munge, else
// it skips with the reason.
#include <QtTest>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "remote/bundle.h"
#include "remote/sftp.h"
#include "remote/slurm.h"
#include "slurm_fixture.h"
#include "sshd_fixture.h"
#include "store/ingest.h"
#include "store/store.h"

using namespace td::remote;
using td::remote::testing::error_message;
using td::remote::testing::random_token;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
using td::remote::testing::SlurmCluster;
using td::remote::testing::SshdFixture;
namespace fs = std::filesystem;
using json = nlohmann::json;

class TestSlurmContainer : public QObject {
  Q_OBJECT
  SshdFixture keys_;
  SlurmCluster slurm_;
  fs::path local_, bundle_, dataset_;
  std::string image_;
  ConnectOptions conn_;
  SlurmSpec spec_;
  std::vector<std::string> run_ids_;  // containers to remove at the end, should a check fail

  Session login() { return Session::open(conn_, Auth::key(keys_.user_key)); }

  json config(int steps, int checkpoint_interval) const {
    return {{"model", {{"vocab_size", 257}, {"seq_len", 32}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 32}}},
            {"train",
             {{"steps", steps}, {"micro_batch", 2}, {"lr", 1e-3}, {"warmup", 2}, {"min_lr", 1e-4}, {"threads", 1},
              {"eval_interval", 0}, {"sample_interval", 0}, {"checkpoint_interval", checkpoint_interval},
              {"keep_checkpoints", 1}, {"dist_timeout_s", 30}}},
            {"data", {{"path", "replaced by deploy"}}}};
  }

  // The run's events (the work folder is on this machine's disk, as a shared filesystem).
  static std::vector<json> events(const std::string& run_dir, const std::string& type = {}) {
    std::vector<json> out;
    std::istringstream in(read_text(run_dir + "/events.jsonl"));
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (j.is_object() && (type.empty() || j.value("type", "") == type)) out.push_back(std::move(j));
    }
    return out;
  }
  static std::vector<int> step_numbers(const std::string& run_dir) {
    std::vector<int> out;
    for (const json& e : events(run_dir, "step")) out.push_back(e["step"].get<int>());
    return out;
  }
  static std::vector<int> one_to(int n) {
    std::vector<int> v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i + 1;
    return v;
  }

  // Waits (up to limit_ms) until the job has ended; its last state.
  SlurmJobState wait_ended(Session& s, const std::string& job, int limit_ms) {
    SlurmJobState j;
    for (int waited = 0; waited <= limit_ms; waited += 1000) {
      j = job_state(s, job);
      if (j.ended()) return j;
      QTest::qWait(1000);
    }
    return j;
  }
  bool wait_steps(const std::string& run_dir, size_t n, int limit_ms) {
    for (int waited = 0; waited <= limit_ms; waited += 500) {
      if (events(run_dir, "step").size() >= n) return true;
      QTest::qWait(500);
    }
    return false;
  }

  // What went on, for a failure message: the job, its output and the ranks' logs.
  std::string story(Session& s, const SlurmRun& run) {
    std::string text = "job " + run.job_id + ": " + job_state_text(job_state(s, run.job_id)) + "\n";
    for (const std::string& id : read_job_ids(s, run.paths.run_dir))
      text += "--- slurm-" + id + ".out\n" + read_text(run.paths.run_dir + "/slurm-" + id + ".out");
    text += "--- engine.log\n" + read_text(run.paths.run_dir + "/engine.log");
    text += "--- engine.rank1.log\n" + read_text(run.paths.run_dir + "/engine.rank1.log");
    return text;
  }

  std::string err_;
  bool start(Session& s, SlurmRun& run, const SlurmSpec& spec, const json& cfg, const std::string& id, bool resume = false) {
    run_ids_.push_back(id);
    SlurmStartOptions o;
    o.resume = resume;
    // No bundle for a container run: an empty bundle folder must do.
    err_ = error_message([&] { run = start_slurm_run(s, spec, {}, dataset_, cfg.dump(), id, o); });
    return err_ == "(no error)";
  }

 private slots:
  void initTestCase() {
    if (geteuid() != 0) QSKIP("needs root: the test runs Slurm's daemons and rootful podman on its nodes");
    std::string out;
    if (run_cmd({"podman", "--version"}, &out) != 0) QSKIP("podman is missing: install the Debian package podman");
    if (run_cmd({"sh", "-c", "command -v runc"}, &out) != 0) QSKIP("runc is missing: install the Debian package runc");
    if (!keys_.start(false)) QSKIP(keys_.skip_reason.c_str());
    if (!slurm_.start(2)) QSKIP(("test Slurm cluster: " + slurm_.skip_reason).c_str());
    // What this machine's podman needs (docs/containers.md): runc, no default ulimits.
    const fs::path conf = keys_.dir / "containers.conf";
    std::ofstream(conf) << "[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = \"runc\"\n";
    setenv("CONTAINERS_CONF", conf.c_str(), 1);  // for the image build and the clean-up here
    QVERIFY2(keys_.launch({}, "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n",
                          slurm_.env() + " CONTAINERS_CONF=" + conf.string()),
             keys_.skip_reason.c_str());
    conn_.host = "127.0.0.1";
    conn_.port = keys_.port;
    conn_.user = keys_.user;
    conn_.known_hosts = keys_.known_hosts;
    Session::connect(conn_).accept_host_key();
    local_ = keys_.dir / "local";
    bundle_ = local_ / "bundle";
    make_bundle(TD_ENGINE_EXE, bundle_);
    image_ = "localhost/td-slurm-test-" + random_token(8) + ":1";
    std::transform(image_.begin(), image_.end(), image_.begin(), [](char c) { return char(std::tolower(c)); });
    if (run_cmd({TD_ENGINE_IMAGE_EXE, "--bundle", bundle_.string(), "--work", (local_ / "image").string(), "--tag",
                 image_}, &out) != 0)
      QSKIP(("the engine image cannot be built here with podman: " + out).c_str());
    dataset_ = local_ / "dataset";
    const fs::path corpus = local_ / "corpus";
    fs::create_directories(corpus);
    {
      std::ofstream f(corpus / "text.txt");
      for (int i = 0; i < 400; ++i) f << "Line " << i << ": the quick brown fox jumps over the lazy dog.\n";
    }
    QCOMPARE(run_cmd({TD_ENGINE_EXE, "prepare", "--input", corpus.string(), "--out", dataset_.string(), "--tokenizer",
                      "byte", "--quiet"}, &out), 0);
    spec_.partition = slurm_.partition;
    spec_.nodes = 2;
    spec_.work_dir = (slurm_.dir / "shared").string();
    spec_.container.runtime = ContainerRuntime::Podman;
    spec_.container.image = image_;
  }
  void cleanupTestCase() {
    if (!image_.empty()) {
      for (const std::string& id : run_ids_)
        for (int rank : {0, 1}) run_cmd({"podman", "rm", "-f", "--time", "0", container_name(id, rank)});
      run_cmd({"podman", "rmi", "-f", image_});
    }
    slurm_.stop();
    keys_.stop();
  }

  void two_node_run_in_containers_completes() {
    const int steps = 12;
    Session s = login();
    SlurmRun run;
    QVERIFY2(start(s, run, spec_, config(steps, 6), "slc-run"), err_.c_str());
    QVERIFY2(run.script.find(" podman slc-run --rm ") != std::string::npos, run.script.c_str());
    QCOMPARE(run.deploy.engine, std::string("traindeck-engine"));
    QVERIFY(!fs::exists(spec_.work_dir + "/engine"));  // no bundle uploaded for a container run
    QVERIFY(run.deploy.engine_version.rfind("traindeck-engine", 0) == 0);  // checked inside the image
    const SlurmJobState j = wait_ended(s, run.job_id, 300000);
    QVERIFY2(j.state == "COMPLETED", story(s, run).c_str());
    QCOMPARE(j.nodes, slurm_.cluster_name + "n[1-2]");
    // Events, checkpoints and both ranks' logs in the run folder on the shared filesystem.
    QCOMPARE(step_numbers(run.paths.run_dir), one_to(steps));
    QCOMPARE(events(run.paths.run_dir, "run_end").back()["status"].get<std::string>(), std::string("completed"));
    QVERIFY(fs::is_regular_file(run.paths.run_dir + "/checkpoints/step_00000012/model.safetensors"));
    QVERIFY2(read_text(run.paths.run_dir + "/engine.log").find("step 12/12") != std::string::npos, story(s, run).c_str());
    QVERIFY(fs::exists(run.paths.run_dir + "/engine.rank1.log"));
    // Into the store through the login node: every step once, both ranks on their own node
    // (--network host: each container sees its node's name).
    const fs::path mirror = local_ / "mirror" / run.run_id / "events.jsonl";
    TransferOptions t;
    t.skip_same = false;
    download(s, run.paths.run_dir + "/events.jsonl", mirror, t);
    td::store::Store store((local_ / "store.db").string());
    store.note_launch(run.run_id, "slurm", mirror.string(), 0, "login", 0);
    td::store::Ingester ing(store, mirror.string(), "slurm");
    QCOMPARE(ing.poll_all().skipped, size_t(0));
    QCOMPARE(int64_t(store.metric_series(run.run_id, "loss").size()), int64_t(steps));
    const auto chart = store.chart_run(run.run_id);
    QCOMPARE(chart.world_size.value_or(0), int64_t(2));
    QCOMPARE(chart.hosts, slurm_.node_names);
    // --rm: no container is left on the nodes (they share this machine's podman storage).
    std::string left;
    run_cmd({"podman", "ps", "-a", "--filter", "name=td-slc-run-", "--format", "{{.Names}}"}, &left);
    QVERIFY2(left.empty(), left.c_str());
  }

  void usr1_and_term_reach_the_engine_in_the_container() {
    Session s = login();
    SlurmRun run;
    QVERIFY2(start(s, run, spec_, config(100000, 0), "slc-sig"), err_.c_str());
    QVERIFY2(wait_steps(run.paths.run_dir, 3, 300000), story(s, run).c_str());
    // The time-limit warning as Slurm sends it (to the step's tasks: podman's clients), by hand.
    signal_job(s, run.job_id, "USR1");
    SlurmJobState j = wait_ended(s, run.job_id, 120000);
    QVERIFY2(j.ended(), story(s, run).c_str());
    json end = events(run.paths.run_dir, "run_end").back();
    QCOMPARE(end["status"].get<std::string>(), std::string("stopped"));
    QCOMPARE(end["reason"].get<std::string>(), std::string("time limit"));
    const int first_stop = end["step"].get<int>();
    QCOMPARE(events(run.paths.run_dir, "checkpoint").back()["step"].get<int>(), first_stop);
    // Resumed in a new job, then a graceful stop (SIGTERM to the tasks) checkpoints again.
    SlurmRun again;
    QVERIFY2(start(s, again, spec_, config(100000, 0), "slc-sig", true), err_.c_str());
    QVERIFY2(wait_steps(run.paths.run_dir, size_t(first_stop) + 3, 300000), story(s, again).c_str());
    QVERIFY2(stop_job(s, again.job_id, 120000), story(s, again).c_str());
    end = events(run.paths.run_dir, "run_end").back();
    QCOMPARE(end["status"].get<std::string>(), std::string("stopped"));
    QCOMPARE(end["reason"].get<std::string>(), std::string("stop requested (signal)"));
    QCOMPARE(events(run.paths.run_dir, "checkpoint").back()["step"].get<int>(), end["step"].get<int>());
    QCOMPARE(step_numbers(run.paths.run_dir), one_to(end["step"].get<int>()));  // every step once
    QCOMPARE(events(run.paths.run_dir, "run_start")[1]["resumed_from_step"].get<int>(), first_stop);
  }

  void killed_client_leaves_no_container_and_the_run_resumes() {
    // Issue 35's finding: SIGKILL to one rank's `podman run` client left both containers training
    // outside Slurm (conmon keeps a container without its client), and the next resume failed
    // "exit code 125" (the names taken). Now the task wrapper's watcher removes its container
    // when the client dies, the cleanup step after srun removes every container of the run, and
    // a resume starts in a new job.
    Session s = login();
    SlurmRun run;
    QVERIFY2(start(s, run, spec_, config(100000, 5), "slc-kill"), err_.c_str());
    QVERIFY2(wait_steps(run.paths.run_dir, 6, 300000), story(s, run).c_str());  // a checkpoint at 5
    std::string out;
    QCOMPARE(run_cmd({"pkill", "-KILL", "-f", "^podman run --name td-slc-kill-r1 "}, &out), 0);
    const SlurmJobState j = wait_ended(s, run.job_id, 240000);
    QVERIFY2(j.ended(), story(s, run).c_str());
    // No container of the run is left, and nothing trains any more: the events stop growing.
    auto containers = [] {
      std::string names;
      run_cmd({"podman", "ps", "-a", "--filter", "name=td-slc-kill-", "--format", "{{.Names}}"}, &names);
      return names;
    };
    QVERIFY2(QTest::qWaitFor([&] { return containers().empty(); }, 60000),
             ("waited 60 s for the run's containers to be removed; left: " + containers()).c_str());
    const size_t lines = events(run.paths.run_dir).size(), steps = events(run.paths.run_dir, "step").size();
    QTest::qWait(3000);
    QCOMPARE(events(run.paths.run_dir).size(), lines);
    // Resume: the names are free, a new job trains on from the newest checkpoint.
    const int resumed_from = events(run.paths.run_dir, "checkpoint").back()["step"].get<int>();
    SlurmRun again;
    QVERIFY2(start(s, again, spec_, config(100000, 5), "slc-kill", true), err_.c_str());
    QVERIFY2(wait_steps(run.paths.run_dir, steps + 3, 300000), story(s, again).c_str());
    QCOMPARE(events(run.paths.run_dir, "run_start").back()["resumed_from_step"].get<int>(), resumed_from);
    QVERIFY2(stop_job(s, again.job_id, 120000), story(s, again).c_str());
    QVERIFY2(QTest::qWaitFor([&] { return containers().empty(); }, 60000), containers().c_str());
  }

  void missing_image_is_named_before_the_run_folder() {
    Session s = login();
    SlurmSpec missing = spec_;
    missing.container.image = "localhost/td-no-such-image:0";
    SlurmRun run;
    QVERIFY(!start(s, run, missing, config(5, 0), "slc-missing"));
    QVERIFY2(err_.find("podman on the node has no image localhost/td-no-such-image:0") != std::string::npos, err_.c_str());
    QVERIFY2(err_.find("podman load -i image.tar") != std::string::npos, err_.c_str());
    QVERIFY(!fs::exists(spec_.work_dir + "/runs/slc-missing"));
  }
};

QTEST_GUILESS_MAIN(TestSlurmContainer)
#include "test_slurm_container.moc"
