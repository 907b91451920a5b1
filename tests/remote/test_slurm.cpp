// The Slurm target (remote/slurm.h) against a real Slurm started by the test (slurm_fixture.h):
// munged, slurmctld and two slurmd "nodes" in network namespaces, each with its own address
// and host name; the login node is this machine reached through a real sshd (sshd_fixture.h)
// whose sessions get SLURM_CONF. Every run is submitted through the library over SSH: deploy to
// the shared work folder, the batch script, sbatch, job states from scontrol (the test cluster
// has no accounting, so sacct fails as it does on clusters without slurmdbd), scancel.
// Skips with the reason where the packages, root or namespaces are missing.
#include <QtTest>

#include <algorithm>

#include <QProcess>

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
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
using td::remote::testing::SlurmCluster;
using td::remote::testing::SshdFixture;
namespace fs = std::filesystem;
using json = nlohmann::json;

class TestSlurm : public QObject {
  Q_OBJECT
  SshdFixture keys_;
  SlurmCluster slurm_;
  fs::path local_, bundle_, dataset_;
  ConnectOptions conn_;
  SlurmSpec spec_;

  Session login() { return Session::open(conn_, Auth::key(keys_.user_key)); }

  json config(int steps, int checkpoint_interval = 0) const {
    return {{"model", {{"vocab_size", 257}, {"seq_len", 32}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 32}}},
            {"train",
             {{"steps", steps}, {"micro_batch", 2}, {"lr", 1e-3}, {"warmup", 2}, {"min_lr", 1e-4}, {"threads", 1},
              {"eval_interval", 0}, {"sample_interval", 0}, {"checkpoint_interval", checkpoint_interval},
              {"keep_checkpoints", 1}, {"dist_timeout_s", 20}}},
            {"data", {{"path", dataset_.string()}}}};
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

  // Waits (up to limit_ms) until `done` holds for the job's state; the last state seen.
  SlurmJobState wait_job(Session& s, const std::string& job, const std::function<bool(const SlurmJobState&)>& done,
                         int limit_ms) {
    SlurmJobState j;
    for (int waited = 0; waited <= limit_ms; waited += 1000) {
      j = job_state(s, job);
      if (done(j)) return j;
      QTest::qWait(1000);
    }
    return j;
  }
  // Waits until the run folder's events hold at least `n` events of `type`.
  bool wait_events(const std::string& run_dir, const std::string& type, size_t n, int limit_ms) {
    for (int waited = 0; waited <= limit_ms; waited += 500) {
      if (events(run_dir, type).size() >= n) return true;
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

  // The events file brought here through the login node (SFTP), ingested into `store`.
  void ingest(Session& s, td::store::Store& store, const SlurmRun& run) {
    const fs::path mirror = local_ / "mirror" / run.run_id / "events.jsonl";
    TransferOptions t;
    t.skip_same = false;
    download(s, run.paths.run_dir + "/events.jsonl", mirror, t);
    store.note_launch(run.run_id, "slurm", mirror.string(), 0, "login", 0);
    td::store::Ingester ing(store, mirror.string(), "slurm");
    const auto st = ing.poll_all();
    QCOMPARE(st.skipped, size_t(0));
  }

  // start_slurm_run(), its td::Error kept in err_ (a test then fails with it instead of the
  // process aborting on an uncaught exception).
  std::string err_;
  bool start(Session& s, SlurmRun& run, const SlurmSpec& spec, const json& cfg, const std::string& id, bool resume = false) {
    SlurmStartOptions o;
    o.resume = resume;
    err_ = error_message([&] { run = start_slurm_run(s, spec, bundle_, dataset_, cfg.dump(), id, o); });
    return err_ == "(no error)";
  }

  // The step numbers of the run's step events, in file order.
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

 private slots:
  void initTestCase() {
    if (!keys_.start(false)) QSKIP(keys_.skip_reason.c_str());
    if (!slurm_.start(2)) QSKIP(("test Slurm cluster: " + slurm_.skip_reason).c_str());
    // The login node: this machine's sshd, whose sessions find the test cluster's slurm.conf.
    QVERIFY2(keys_.launch({}, "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n", slurm_.env()),
             keys_.skip_reason.c_str());
    conn_.host = "127.0.0.1";
    conn_.port = keys_.port;
    conn_.user = keys_.user;
    conn_.known_hosts = keys_.known_hosts;
    Session::connect(conn_).accept_host_key();
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
    spec_.partition = slurm_.partition;
    spec_.nodes = 2;
    spec_.work_dir = (slurm_.dir / "shared").string();
  }
  void cleanupTestCase() {
    slurm_.stop();
    keys_.stop();
  }

  void partition_as_sinfo_says() {
    Session s = login();
    const PartitionInfo p = partition_info(s, "");  // the default partition
    QCOMPARE(p.name, slurm_.partition);
    QVERIFY(p.is_default);
    QCOMPARE(p.avail, std::string("up"));
    QCOMPARE(p.nodes_idle, 2);
    QCOMPARE(p.nodes_allocated + p.nodes_other, 0);
    QCOMPARE(p.gpus, 0);
    QCOMPARE(p.time_limit, std::string("infinite"));
    QCOMPARE(p.node_names, slurm_.node_names);
    QCOMPARE(partition_summary(p), "partition " + slurm_.partition + " (default) up: 2 idle, 0 allocated, 0 other node(s); "
                                   "no GPUs; time limit infinite");
    const std::string err = error_message([&] { partition_info(s, "gpu"); });
    QVERIFY2(err.find("the partition 'gpu' is not there (sinfo lists: " + slurm_.partition + " (default))") != std::string::npos,
             err.c_str());
  }

  void two_node_cpu_run_completes() {
    const int steps = 12;
    Session s = login();
    SlurmRun run;
    QVERIFY2(start(s, run, spec_, config(steps), "sl-run"), err_.c_str());
    // The script is kept in the run folder as submitted; the job id is listed.
    QCOMPARE(read_text(run.paths.script_path), run.script);
    QVERIFY(run.script.find("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n") != std::string::npos);
    QCOMPARE(read_job_ids(s, run.paths.run_dir), std::vector<std::string>{run.job_id});
    const SlurmJobState j = wait_job(s, run.job_id, [](const SlurmJobState& x) { return x.ended(); }, 300000);
    QVERIFY2(j.state == "COMPLETED", story(s, run).c_str());
    QCOMPARE(j.exit_code, 0);
    QCOMPARE(j.source, std::string("scontrol"));  // no accounting here: sacct refuses
    QCOMPARE(j.nodes, slurm_.cluster_name + "n[1-2]");
    QCOMPARE(job_state_text(j), std::string("completed"));
    // Every step once, from rank 0 on the first node; rank 1 logged on the second.
    QCOMPARE(step_numbers(run.paths.run_dir), one_to(steps));
    QCOMPARE(events(run.paths.run_dir, "run_end").back()["status"].get<std::string>(), std::string("completed"));
    QVERIFY(fs::exists(run.paths.run_dir + "/engine.rank1.log"));
    const std::string out = read_text(run.paths.run_dir + "/slurm-" + run.job_id + ".out");
    QVERIFY2(out.find("rendezvous " + slurm_.node_addrs[0] + ":" + std::to_string(20000 + std::stoi(run.job_id) % 12000)) !=
                 std::string::npos,
             out.c_str());
    // Into the store: both hosts in the per-rank figures, every step once.
    td::store::Store store((local_ / "store.db").string());
    ingest(s, store, run);
    QCOMPARE(int64_t(store.metric_series(run.run_id, "loss").size()), int64_t(steps));
    for (int rank : {0, 1}) {
      const auto tps = store.metric_series(run.run_id, "rank_tokens_per_s", rank);
      const auto sent = store.metric_series(run.run_id, "comm_bytes_sent", rank);
      QCOMPARE(int64_t(tps.size()), int64_t(steps));
      QCOMPARE(int64_t(sent.size()), int64_t(steps));
      for (size_t i = 0; i < tps.size(); ++i) QVERIFY(tps.value[i] > 0 && sent.value[i] > 0);
    }
    const auto chart = store.chart_run(run.run_id);
    QCOMPARE(chart.world_size.value_or(0), int64_t(2));
    QCOMPARE(chart.hosts, slurm_.node_names);
    QCOMPARE(chart.status, std::string("completed"));
  }

  void a_job_that_cannot_run_stays_pending_with_its_reason() {
    Session s = login();
    // More nodes than the partition has.
    SlurmSpec three = spec_;
    three.nodes = 3;
    SlurmRun big;
    QVERIFY2(start(s, big, three, config(5), "sl-three"), err_.c_str());
    SlurmJobState j = wait_job(s, big.job_id, [](const SlurmJobState& x) { return x.pending() && x.reason != "None"; }, 120000);
    // Slurm 22.05 gives either reason for it (seen both, the scheduler re-evaluates the job).
    QVERIFY2(j.state == "PENDING" && (j.reason == "PartitionNodeLimit" || j.reason == "PartitionConfig"),
             (j.state + " " + j.reason).c_str());
    QCOMPARE(job_state_text(j), std::string(j.reason == "PartitionConfig"
                                                ? "pending: asks for more than the partition has (nodes, CPUs or GPUs)"
                                                : "pending: asks for more nodes than the partition allows"));
    QVERIFY(j.nodes.empty());
    QVERIFY(stop_job(s, big.job_id));  // a pending job is cancelled at once
    QCOMPARE(job_state(s, big.job_id).state, std::string("CANCELLED"));
    // Both nodes needed, one busy with another job: waiting for resources.
    std::string id;
    QCOMPARE(slurm_.client({"sbatch", "--parsable", "-N1", "--exclusive", "-J", "blocker", "--output=/dev/null", "--wrap", "sleep 600"}, &id), 0);
    id = parse_sbatch_output(id).value_or("");
    QVERIFY(!id.empty());
    QVERIFY(wait_job(s, id, [](const SlurmJobState& x) { return x.state == "RUNNING"; }, 120000).state == "RUNNING");
    const PartitionInfo p = partition_info(s, slurm_.partition);
    QCOMPARE(p.nodes_idle, 1);
    QCOMPARE(p.nodes_allocated, 1);
    SlurmRun wait;
    QVERIFY2(start(s, wait, spec_, config(5), "sl-wait"), err_.c_str());
    j = wait_job(s, wait.job_id, [](const SlurmJobState& x) { return x.pending() && x.reason != "None"; }, 120000);
    QVERIFY2(j.state == "PENDING" && j.reason == "Resources", (j.state + " " + j.reason).c_str());
    QCOMPARE(job_state_text(j), std::string("pending: waiting for resources"));
    QVERIFY(stop_job(s, wait.job_id));
    cancel_job(s, id);
    QVERIFY(slurm_.wait_idle(2));
  }

  void stop_then_resume_in_a_new_job() {
    Session s = login();
    SlurmRun run;
    QVERIFY2(start(s, run, spec_, config(100000), "sl-stop"), err_.c_str());
    QVERIFY2(wait_events(run.paths.run_dir, "step", 3, 300000), story(s, run).c_str());
    QVERIFY(job_state(s, run.job_id).running());
    // SIGTERM to the ranks: the engine checkpoints and ends "stopped"; the job then ends by itself.
    QVERIFY2(stop_job(s, run.job_id, 120000), story(s, run).c_str());
    const SlurmJobState j = job_state(s, run.job_id);
    QVERIFY2(j.ended(), story(s, run).c_str());
    const json end = events(run.paths.run_dir, "run_end").back();
    QCOMPARE(end["status"].get<std::string>(), std::string("stopped"));
    QCOMPARE(end["reason"].get<std::string>(), std::string("stop requested (signal)"));
    const int stopped_at = end["step"].get<int>();
    QCOMPARE(events(run.paths.run_dir, "checkpoint").back()["step"].get<int>(), stopped_at);
    // Resume: a new job with --resume continues the steps.
    SlurmRun again;
    QVERIFY2(start(s, again, spec_, config(stopped_at + 4), "sl-stop", true), err_.c_str());
    QVERIFY(again.job_id != run.job_id);
    QVERIFY(again.script.find("\ntd_resume=1\n") != std::string::npos);
    const SlurmJobState k = wait_job(s, again.job_id, [](const SlurmJobState& x) { return x.ended(); }, 300000);
    QVERIFY2(k.state == "COMPLETED", story(s, again).c_str());
    QCOMPARE(step_numbers(run.paths.run_dir), one_to(stopped_at + 4));
    const auto starts = events(run.paths.run_dir, "run_start");
    QCOMPARE(starts.size(), size_t(2));
    QCOMPARE(starts[1]["resumed_from_step"].get<int>(), stopped_at);
    QCOMPARE(events(run.paths.run_dir, "run_end").back()["status"].get<std::string>(), std::string("completed"));
    QCOMPARE(read_job_ids(s, run.paths.run_dir), (std::vector<std::string>{run.job_id, again.job_id}));
  }

  // The bundle's engine as the jobs run it: the environment of the login node's SSH session
  // (an OPENBLAS_CORETYPE of the test's own environment would choose another GEMM kernel, whose
  // rounding differs: seen, the losses parted at step 6).
  void start_local_ranks(QProcess& p, const json& cfg, const fs::path& out, const QStringList& extra = {}) {
    const fs::path cfg_path = out.string() + ".json";
    std::ofstream(cfg_path) << cfg.dump();
    QProcessEnvironment clean;
    for (const char* v : {"PATH", "HOME", "LANG"})
      if (qEnvironmentVariableIsSet(v)) clean.insert(v, qEnvironmentVariable(v));
    p.setProcessEnvironment(clean);
    p.start(QString::fromStdString((bundle_ / "bin" / "traindeck-engine").string()),
            QStringList{"launch", "--nproc", "2", "--quiet", "--", "train", "--config", QString::fromStdString(cfg_path.string()),
                        "--out", QString::fromStdString(out.string()), "--quiet", "--no-events-stdout"} +
                extra);
  }

  void time_limit_with_requeue_runs_to_the_end_across_jobs() {
    // A one-minute limit with SIGUSR1 20 s before it and --requeue: each job that gets the
    // warning checkpoints and ends "time limit", and its batch script submits the next one; the
    // last reaches train.steps. The warning is sent here by hand (scancel --signal=USR1, what
    // slurmctld sends) once the first job is past step 20, so the test neither waits for
    // slurmctld's 30-s limit checks nor depends on how fast this machine trains (sized by a
    // calibration job for about 45 s instead, it took 2 to 4 jobs and 130-160 s). Should Slurm's
    // own warning reach the second job first on a very slow machine, that only adds a job.
    // The uninterrupted reference runs after the jobs (beside them it doubled their time), and
    // only 20 steps past the first job's end (--debug-stop-after, the same train.steps and so
    // the same schedule): the boundary between two jobs is what it checks.
    Session s = login();
    // 1000 steps: the first job is signalled within about 100 ms of its step 20 (looked for every
    // 50 ms), at 1-10 ms a step far from its end; the second then trains the rest in 1-10 s.
    const int steps = 1000;
    SlurmSpec spec = spec_;
    spec.time_limit = "1";
    spec.signal_lead_s = 20;
    spec.requeue = true;
    SlurmRun run;
    QVERIFY2(start(s, run, spec, config(steps), "sl-requeue"), err_.c_str());
    bool past_20 = false;
    for (int waited = 0; waited < 300000 && !past_20; waited += 50) {
      past_20 = events(run.paths.run_dir, "step").size() >= 20;
      if (!past_20) QTest::qWait(50);
    }
    QVERIFY2(past_20, ("waited 300 s for step 20 of the first job\n" + story(s, run)).c_str());
    {
      std::string out;
      QVERIFY2(slurm_.client({"scancel", "--signal=USR1", run.job_id}, &out) == 0, out.c_str());
    }
    QVERIFY(run.script.find("#SBATCH --time=1\n") != std::string::npos);
    QVERIFY(run.script.find("#SBATCH --signal=USR1@20\n") != std::string::npos);
    QVERIFY(run.script.find("#SBATCH --requeue\n") != std::string::npos);
    // Until the run completes (no workbench involved: the jobs continue it themselves), or its
    // newest job ended without a next one (a job lists its successor before it ends).
    bool done = false;
    for (int waited = 0; waited < 480000 && !done; waited += 2000) {
      const auto ends = events(run.paths.run_dir, "run_end");
      done = !ends.empty() && ends.back()["status"] == "completed";
      if (done) break;
      const std::vector<std::string> ids = read_job_ids(s, run.paths.run_dir);
      const SlurmJobState last = job_state(s, ids.back());
      if ((last.ended() || last.state == "UNKNOWN") && read_job_ids(s, run.paths.run_dir) == ids) {
        const auto again = events(run.paths.run_dir, "run_end");
        done = !again.empty() && again.back()["status"] == "completed";
        break;
      }
      QTest::qWait(2000);
    }
    QVERIFY2(done, story(s, run).c_str());
    const std::vector<std::string> jobs = read_job_ids(s, run.paths.run_dir);
    QVERIFY2(jobs.size() >= 2, story(s, run).c_str());
    QVERIFY(jobs.front() == run.job_id);
    for (const std::string& id : jobs) {
      const SlurmJobState j = wait_job(s, id, [](const SlurmJobState& x) { return x.ended(); }, 120000);
      QVERIFY2(j.state == "COMPLETED", (id + ": " + j.state + "\n" + story(s, run)).c_str());
    }
    // One engine start per job; every job but the last ended at its time limit.
    const auto ends = events(run.paths.run_dir, "run_end");
    QCOMPARE(events(run.paths.run_dir, "run_start").size(), jobs.size());
    QCOMPARE(ends.size(), jobs.size());
    for (size_t i = 0; i + 1 < ends.size(); ++i) {
      QCOMPARE(ends[i]["status"].get<std::string>(), std::string("stopped"));
      QCOMPARE(ends[i]["reason"].get<std::string>(), std::string("time limit"));
    }
    // Nothing lost or repeated between the jobs, and the losses are the uninterrupted run's: the
    // same run on this machine (2 ranks, same global batch) to 20 steps past the first job's end.
    QCOMPARE(step_numbers(run.paths.run_dir), one_to(steps));
    const int compared = std::min(steps, ends[0]["step"].get<int>() + 20);
    const fs::path ref_dir = local_ / "reference";
    QProcess ref;
    start_local_ranks(ref, config(steps), ref_dir, {"--debug-stop-after", QString::number(compared)});
    QVERIFY2(ref.waitForFinished(300000), "the uninterrupted reference run did not end within 300 s");
    QCOMPARE(ref.exitStatus(), QProcess::NormalExit);
    QCOMPARE(ref.exitCode(), 0);
    const auto ref_steps = events(ref_dir.string(), "step");
    const auto got = events(run.paths.run_dir, "step");
    QCOMPARE(ref_steps.size(), size_t(compared));
    for (size_t i = 0; i < size_t(compared); ++i)
      QVERIFY2(got[i]["loss"] == ref_steps[i]["loss"],
               ("step " + std::to_string(i + 1) + ": " + got[i]["loss"].dump() + " vs " + ref_steps[i]["loss"].dump()).c_str());
    td::store::Store store((local_ / "store.db").string());
    ingest(s, store, run);
    const auto loss = store.metric_series(run.run_id, "loss");
    QCOMPARE(int64_t(loss.size()), int64_t(steps));
    for (size_t i = 0; i < loss.size(); ++i) QCOMPARE(loss.value[i], got[i]["loss"].get<double>());
    qInfo("requeue: %d steps in %zu jobs", steps, jobs.size());
  }

  void a_dead_node_ends_the_job_as_node_fail_with_a_checkpoint_to_resume() {
    Session s = login();
    SlurmRun run;
    QVERIFY2(start(s, run, spec_, config(100000, 20), "sl-nodefail"), err_.c_str());
    QVERIFY2(wait_events(run.paths.run_dir, "checkpoint", 1, 300000), story(s, run).c_str());
    // The first node (the batch script, rank 0) dies: slurmd, slurmstepd and the rank.
    QVERIFY(slurm_.kill_node(0) >= 3);
    const SlurmJobState j = wait_job(s, run.job_id, [](const SlurmJobState& x) { return x.ended(); }, 240000);
    QVERIFY2(j.state == "NODE_FAIL", (j.state + " " + j.reason + "\n" + story(s, run)).c_str());
    QCOMPARE(job_state_text(j), std::string("a node failed (NODE_FAIL): resume from the last checkpoint"));
    // The checkpoint it can resume from.
    int newest = 0;
    for (const auto& e : fs::directory_iterator(run.paths.run_dir + "/checkpoints")) {
      const std::string n = e.path().filename().string();
      if (n.size() == 13 && n.rfind("step_", 0) == 0) newest = std::max(newest, std::stoi(n.substr(5)));
    }
    QVERIFY(newest >= 20 && newest % 20 == 0);
    // The node comes back; the run resumes from that checkpoint in a new job and completes,
    // past the steps trained after the checkpoint before the node died (those are trained again).
    const int trained = step_numbers(run.paths.run_dir).back();
    QVERIFY(trained >= newest);
    const int target = trained + 5;
    QVERIFY(slurm_.start_slurmd(0));
    QVERIFY2(slurm_.wait_idle(2), slurm_.sinfo().c_str());
    SlurmRun again;
    QVERIFY2(start(s, again, spec_, config(target, 20), "sl-nodefail", true), err_.c_str());
    const SlurmJobState k = wait_job(s, again.job_id, [](const SlurmJobState& x) { return x.ended(); }, 300000);
    QVERIFY2(k.state == "COMPLETED", story(s, again).c_str());
    const json start = events(run.paths.run_dir, "run_start").back();
    QCOMPARE(start["resumed_from_step"].get<int>(), newest);
    QCOMPARE(events(run.paths.run_dir, "run_end").back()["status"].get<std::string>(), std::string("completed"));
    // The store holds each step once: those after the checkpoint from the resumed attempt.
    td::store::Store store((local_ / "store.db").string());
    ingest(s, store, again);
    const auto loss = store.metric_series(run.run_id, "loss");
    QCOMPARE(int64_t(loss.size()), int64_t(target));
    for (size_t i = 0; i < loss.size(); ++i) {
      QCOMPARE(loss.step[i], int64_t(i + 1));
      if (loss.step[i] > newest) QCOMPARE(loss.attempt[i], start["attempt"].get<int>());
    }
    QVERIFY(start["attempt"].get<int>() > 0);
  }
};

QTEST_GUILESS_MAIN(TestSlurm)
#include "test_slurm.moc"
