// The Slurm target's pure parts (remote/slurm.h), no cluster needed: the batch script's
// directives and quoting, its task wrapper run for real with Slurm's task variables, its
// continuation logic run for real with stand-ins for sbatch, srun and scontrol on PATH, and the
// parsers of sbatch, sacct, scontrol, squeue and sinfo output fed hostile text.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "engine/common/error.h"
#include "remote/container.h"
#include "remote/quote.h"
#include "remote/slurm.h"
#include "sshd_fixture.h"

using namespace td::remote;
using td::remote::testing::error_message;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
namespace fs = std::filesystem;

class TestSlurmScript : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

  SlurmSpec spec() const {
    SlurmSpec s;
    s.partition = "gpu";
    s.account = "proj-7";
    s.qos = "high";
    s.time_limit = "04:00:00";
    s.nodes = 2;
    s.gpus_per_node = 8;
    s.cpus_per_task = 12;
    s.extra_sbatch = {"#SBATCH --mem=0", "#SBATCH --exclusive"};
    s.setup = {"module load cuda/12.4", "export NCCL_DEBUG=WARN"};
    s.work_dir = "/scratch/ana/td";
    s.requeue = true;
    s.signal_lead_s = 300;
    return s;
  }
  SlurmJobPaths paths(const std::string& run_dir) const {
    SlurmJobPaths p;
    p.run_dir = run_dir;
    p.engine = run_dir + "/../../engine/ab 'c/bin/traindeck-engine";  // a quote and a space: quoted
    p.config_path = run_dir + "/config.json";
    p.script_path = run_dir + "/traindeck.sbatch";
    p.jobs_path = run_dir + "/slurm-jobs";
    return p;
  }
  // The script's lines before its body: the directives and the td_ variables (safe to run).
  static std::string prelude(const std::string& script) {
    return script.substr(0, script.find("\n# Every job of this run"));
  }
  static void write_exe(const fs::path& p, const std::string& text) {
    std::ofstream(p) << text;
    fs::permissions(p, fs::perms::owner_all);
  }

 private slots:
  void directives_and_quoting() {
    const std::string s = sbatch_script(spec(), paths("/scratch/ana/td/runs/r-1"), "r-1", false);
    const std::string head =
        "#!/bin/sh\n"
        "#SBATCH --job-name=traindeck-r-1\n"
        "#SBATCH --partition=gpu\n"
        "#SBATCH --account=proj-7\n"
        "#SBATCH --qos=high\n"
        "#SBATCH --time=04:00:00\n"
        "#SBATCH --nodes=2\n"
        "#SBATCH --ntasks-per-node=8\n"
        "#SBATCH --gpus-per-node=8\n"
        "#SBATCH --cpus-per-task=12\n"
        "#SBATCH --output=/scratch/ana/td/runs/r-1/slurm-%j.out\n"
        "#SBATCH --open-mode=append\n"
        "#SBATCH --chdir=/scratch/ana/td/runs/r-1\n"
        "#SBATCH --signal=USR1@300\n"
        "#SBATCH --requeue\n"
        "#SBATCH --mem=0\n"
        "#SBATCH --exclusive\n";
    QCOMPARE(s.substr(0, head.size()), head);
    // Every #SBATCH line comes before the first command (sbatch stops reading them there).
    QVERIFY(s.rfind("#SBATCH") < s.find("\ntd_run_dir="));
    QVERIFY(s.find("\ntd_engine='/scratch/ana/td/runs/r-1/../../engine/ab '\\''c/bin/traindeck-engine'\n") != std::string::npos);
    QVERIFY(s.find("\ntd_resume=0\ntd_requeue=1\n") != std::string::npos);
    // The set-up lines verbatim, after the rendezvous and before srun.
    const size_t setup = s.find("\nmodule load cuda/12.4\nexport NCCL_DEBUG=WARN\n");
    QVERIFY(setup != std::string::npos);
    QVERIFY(s.find("TRAINDECK_MASTER_PORT=") < setup && setup < s.find("\nsrun "));
    std::string out;
    QCOMPARE(run_cmd({"sh", "-n", "-c", s}, &out), 0);
    // CPU partition, no requeue, defaults left to Slurm.
    SlurmSpec cpu;
    cpu.work_dir = "/shared/td";
    const std::string c = sbatch_script(cpu, paths("/shared/td/runs/x"), "x", true);
    QVERIFY(c.find("#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n#SBATCH --output=") != std::string::npos);
    for (const char* absent : {"--partition", "--account", "--qos", "--time", "--gpus-per-node", "--cpus-per-task"})
      QVERIFY2(c.find(absent) == std::string::npos, absent);
    QVERIFY(c.find("#SBATCH --no-requeue\n") != std::string::npos);
    QVERIFY(c.find("#SBATCH --signal=USR1@120\n") != std::string::npos);
    QVERIFY(c.find("\ntd_resume=1\ntd_requeue=0\n") != std::string::npos);
    // Refused: a bad spec, a run id or a run folder that cannot go into a directive.
    SlurmSpec bad = spec();
    bad.partition = "gpu\n#SBATCH --uid=0";
    QVERIFY(error_message([&] { sbatch_script(bad, paths("/scratch/ana/td/runs/r-1"), "r-1", false); })
                .find("the partition 'gpu\n#SBATCH --uid=0' may hold only letters") != std::string::npos);
    QVERIFY(error_message([&] { sbatch_script(spec(), paths("/scratch/ana/td/runs/../x"), "../x", false); })
                .find("is not a run id") != std::string::npos);
    QVERIFY(error_message([&] { sbatch_script(spec(), paths("/scratch/a b/runs/r"), "r", false); })
                .find("cannot go into an #SBATCH directive") != std::string::npos);
  }

  void task_wrapper_maps_slurm_variables() {
    const fs::path dir = fs::path(tmp_.path().toStdString()) / "task";
    fs::create_directories(dir);
    const std::string s = sbatch_script(spec(), paths(dir.string()), "r-1", false);
    std::string task;
    QCOMPARE(run_cmd({"sh", "-c", prelude(s) + "\nprintf '%s' \"$td_task\""}, &task), 0);
    // Rank 3 of 8, the second task on its node of 4; the rendezvous on loopback (no interface set).
    const std::string env3 = (dir / "env3").string();
    std::string out;
    QCOMPARE(run_cmd({"sh", "-c", task, "td-rank", dir.string(), "sh", "-c", "env > \"$1\"; echo on-stderr >&2", "sh", env3},
                     &out, {},
                     {"SLURM_PROCID=3", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=4",
                      "TRAINDECK_MASTER_ADDR=127.0.0.1"}),
             0);
    const std::string e = read_text(env3);
    for (const char* want : {"TRAINDECK_RANK=3\n", "TRAINDECK_WORLD_SIZE=8\n", "TRAINDECK_LOCAL_RANK=1\n",
                             "TRAINDECK_LOCAL_WORLD_SIZE=4\n"})
      QVERIFY2(e.find(want) != std::string::npos, (want + e).c_str());
    QVERIFY(e.find("TRAINDECK_GLOO_IFNAME") == std::string::npos);
    QCOMPARE(read_text(dir / "engine.rank3.log"), std::string("on-stderr\n"));
    // Rank 0 logs to engine.log; a heterogeneous "2(x3)" count gives 2; the interface that holds
    // a non-loopback address of this machine is chosen for Gloo and NCCL.
    std::string addrs;
    run_cmd({"sh", "-c", "ip -o -4 addr show | awk '$2 != \"lo\" {print $2, $4; exit}'"}, &addrs);
    std::istringstream in(addrs);
    std::string ifname, cidr;
    in >> ifname >> cidr;
    const std::string addr = cidr.substr(0, cidr.find('/'));
    const std::string env0 = (dir / "env0").string();
    QCOMPARE(run_cmd({"sh", "-c", task, "td-rank", dir.string(), "sh", "-c", "env > \"$1\"; echo zero >&2", "sh", env0},
                     &out, {},
                     {"SLURM_PROCID=0", "SLURM_NTASKS=6", "SLURM_LOCALID=0", "SLURM_TASKS_PER_NODE=2(x3)",
                      "TRAINDECK_MASTER_ADDR=" + (addr.empty() ? std::string("127.0.0.1") : addr)}),
             0);
    const std::string z = read_text(env0);
    QVERIFY2(z.find("TRAINDECK_LOCAL_WORLD_SIZE=2\n") != std::string::npos, z.c_str());
    QCOMPARE(read_text(dir / "engine.log"), std::string("zero\n"));
    if (!addr.empty() && !ifname.empty()) {
      QVERIFY2(z.find("TRAINDECK_GLOO_IFNAME=" + ifname + "\n") != std::string::npos, (ifname + "\n" + z).c_str());
      QVERIFY(z.find("NCCL_SOCKET_IFNAME=" + ifname + "\n") != std::string::npos);
    }
  }

  void batch_script_continues_after_a_time_limit_stop() {
    // Stand-ins: scontrol answers hostnames and NodeAddr, srun records its argv and appends the
    // run_end the test chose, sbatch records its argv and prints "77;cl".
    const fs::path dir = fs::path(tmp_.path().toStdString()) / "batch";
    const fs::path bin = dir / "bin", run = dir / "runs" / "r-1";
    fs::create_directories(bin);
    fs::create_directories(run / "checkpoints" / "step_00000040");
    write_exe(bin / "scontrol",
              "#!/bin/sh\ncase \"$1 $2\" in\n  'show hostnames') echo n7; echo n8 ;;\n"
              "  'show node') echo \"NodeName=n7 Arch=x86_64 NodeAddr=10.1.2.7 NodeHostName=n7\" ;;\nesac\n");
    write_exe(bin / "srun", "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$TD_TEST/srun.args\"\ncat \"$TD_TEST/end\" >> \"$TD_TEST/runs/r-1/events.jsonl\"\n");
    write_exe(bin / "sbatch", "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$TD_TEST/sbatch.args\"\necho '77;cl'\n");
    SlurmSpec sp;
    sp.work_dir = dir.string();
    sp.requeue = true;
    SlurmJobPaths p = paths(run.string());
    p.engine = run.string() + "/engine";
    const std::string script = sbatch_script(sp, p, "r-1", false);
    std::ofstream(p.script_path) << script;
    const std::vector<std::string> env{"PATH=" + bin.string() + ":/usr/bin:/bin", "TD_TEST=" + dir.string(),
                                       "SLURM_JOB_ID=5", "SLURM_JOB_NODELIST=n[7-8]"};
    auto run_job = [&](const std::string& end, const std::vector<std::string>& args) {
      std::ofstream(dir / "end") << end;
      fs::remove(dir / "sbatch.args");
      std::vector<std::string> argv{"sh", p.script_path};
      argv.insert(argv.end(), args.begin(), args.end());
      std::string out;
      const int rc = run_cmd(argv, &out, {}, env);
      return std::make_pair(rc, out);
    };
    // A time-limit stop at step 60 after the checkpoint of step 40: job 77 continues it.
    auto [rc, out] = run_job(
        "{\"attempt\":1,\"rank\":0,\"reason\":\"time limit\",\"run_id\":\"r-1\",\"status\":\"stopped\",\"step\":60,\"type\":\"run_end\"}\n",
        {"continue"});
    QVERIFY2(rc == 0, out.c_str());
    QCOMPARE(read_text(p.jobs_path), std::string("5\n77\n"));
    QCOMPARE(read_text(dir / "sbatch.args"),
             std::string("--parsable\n--dependency=afterany:5\n--\n") + p.script_path + "\ncontinue\n");
    const std::string srun = read_text(dir / "srun.args");
    QVERIFY2(srun.find("\n" + p.engine + "\ntrain\n--config\n" + p.config_path + "\n--out\n" + run.string() +
                       "\n--run-id\nr-1\n--no-events-stdout\n--resume\n") != std::string::npos,
             srun.c_str());
    QVERIFY2(out.find("rendezvous 10.1.2.7:" + std::to_string(20000 + 5 % 12000) + ", resuming from step 40") != std::string::npos,
             out.c_str());
    // Completed: nothing more is submitted; the job is listed once (it is there already).
    std::tie(rc, out) = run_job(
        "{\"attempt\":2,\"rank\":0,\"reason\":\"reached train.steps\",\"run_id\":\"r-1\",\"status\":\"completed\",\"step\":90,\"type\":\"run_end\"}\n",
        {"continue"});
    QCOMPARE(rc, 0);
    QVERIFY(!fs::exists(dir / "sbatch.args"));
    QCOMPARE(read_text(p.jobs_path), std::string("5\n77\n"));
    // A time limit without a new step since the checkpoint (step 40): not continued (no loop).
    std::tie(rc, out) = run_job(
        "{\"attempt\":3,\"rank\":0,\"reason\":\"time limit\",\"run_id\":\"r-1\",\"status\":\"stopped\",\"step\":40,\"type\":\"run_end\"}\n",
        {"continue"});
    QVERIFY(!fs::exists(dir / "sbatch.args"));
    QVERIFY2(out.find("not continued") != std::string::npos, out.c_str());
    // A person's stop is not continued; a first job (no "continue") does not resume.
    std::tie(rc, out) = run_job(
        "{\"attempt\":4,\"rank\":0,\"reason\":\"stop requested (signal)\",\"run_id\":\"r-1\",\"status\":\"stopped\",\"step\":70,\"type\":\"run_end\"}\n",
        {});
    QVERIFY(!fs::exists(dir / "sbatch.args"));
    QVERIFY(read_text(dir / "srun.args").find("--resume") == std::string::npos);
  }

  void sbatch_output_is_parsed_strictly() {
    QCOMPARE(parse_sbatch_output("123\n").value_or("-"), std::string("123"));
    QCOMPARE(parse_sbatch_output("  4567;cluster-a \n").value_or("-"), std::string("4567"));
    for (const char* bad : {"", "\n", "Submitted batch job 123\n", "123\n456\n", "12a\n", "123;\n", "123;a b\n", "-1\n",
                            "123;$(reboot)\n", "99999999999999999999\n"})
      QVERIFY2(!parse_sbatch_output(bad), bad);
  }

  void job_state_parsers_refuse_hostile_text() {
    // sacct -P: the job's own line (a requeued job's newest last), other jobs ignored.
    auto a = parse_sacct("12|COMPLETED|None|0:0|n1\n123|PENDING|Resources|0:0|None assigned\n"
                         "123|CANCELLED by 1000|None|0:15|n[1-2]\n", "123");
    QVERIFY(a);
    QCOMPARE(a->state, std::string("CANCELLED"));
    QCOMPARE(a->exit_signal, 15);
    QCOMPARE(a->nodes, std::string("n[1-2]"));
    QCOMPARE(a->source, std::string("sacct"));
    QCOMPARE(a->cancelled_by, std::string("1000"));
    QCOMPARE(job_state_text(*a), std::string("cancelled by uid 1000"));
    // Anything but digits after "by" is not kept (a node's text never reaches a message unchecked).
    QVERIFY(parse_sacct("123|CANCELLED by root|None|0:15|n1\n", "123")->cancelled_by.empty());
    a = parse_sacct("123|FAILED|NonZeroExitCode|1:0|n1\n", "123");
    QVERIFY(a && a->state == "FAILED" && a->exit_code == 1);
    QCOMPARE(job_state_text(*a), std::string("failed (exit code 1)"));
    for (const char* bad : {"123|running|None|0:0|n1\n", "123|RUNNING|None|x:0|n1\n", "123|RUNNING; rm|None|0:0|n1\n",
                            "123|RUNNING|None|0:0\n", "1234|RUNNING|None|0:0|n1\n", "123|RUNNING|None|300:0|n1\n"})
      QVERIFY2(!parse_sacct(bad, "123"), bad);
    // scontrol show job -o: Key=Value words, a reason with details, the job id checked.
    const std::string line =
        "JobId=5 JobName=traindeck-r UserId=root(0) GroupId=root(0) Priority=4294901755 Account=(null) "
        "JobState=PENDING Reason=ReqNodeNotAvail,_UnavailableNodes:n1 Dependency=(null) Requeue=0 Restarts=0 "
        "ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:01:00 NodeList=(null) BatchHost=n1 NumNodes=2 Command=/s/x.sbatch";
    auto c = parse_scontrol_job(line, "5");
    QVERIFY(c);
    QCOMPARE(c->state, std::string("PENDING"));
    QCOMPARE(c->reason, std::string("ReqNodeNotAvail,_UnavailableNodes:n1"));
    QVERIFY(c->nodes.empty());
    QCOMPARE(job_state_text(*c), std::string("pending: a node it needs is not available (down, drained or reserved)"));
    QVERIFY(!parse_scontrol_job(line, "6"));
    QVERIFY(!parse_scontrol_job("slurm_load_jobs error: Invalid job id specified\n", "5"));
    QVERIFY(!parse_scontrol_job("JobId=5 JobState=RUNNING ExitCode=0\n", "5"));
    c = parse_scontrol_job("JobId=5 JobState=NODE_FAIL Reason=NodeDown ExitCode=0:0 NodeList=n[1-2]\n", "5");
    QVERIFY(c && c->ended() && c->nodes == "n[1-2]");
    // squeue -h -o %i|%T|%r|%N.
    auto q = parse_squeue("5|RUNNING|None|n[1-2]\n", "5");
    QVERIFY(q && q->running() && q->source == "squeue");
    QCOMPARE(job_state_text(*q), std::string("running on n[1-2]"));
    QVERIFY(!parse_squeue("5|RUNNING|None\n", "5"));
    // Reasons and states for people.
    QCOMPARE(pending_reason_text("Priority"), std::string("waiting behind higher-priority jobs"));
    QCOMPARE(pending_reason_text("QOSMaxJobsPerUserLimit"), std::string("a limit of the QoS is reached (QOSMaxJobsPerUserLimit)"));
    QCOMPARE(pending_reason_text("SomethingNew"), std::string("Slurm says: SomethingNew"));
    SlurmJobState t;
    t.state = "TIMEOUT";
    QVERIFY(t.ended());
    QCOMPARE(job_state_text(t), std::string("ended at its time limit"));
    t.state = "PREEMPTED";
    QCOMPARE(job_state_text(t), std::string("preempted by a higher-priority job"));
    t.state = "UNKNOWN";
    QVERIFY(!t.ended() && !t.pending() && !t.running());
  }

  void a_failed_jobs_reason_carries_the_runtimes_words() {
    SlurmJobState j;
    j.job_id = "7";
    j.state = "FAILED";
    j.exit_code = 125;
    // podman's own message, among the engine's lines (and a hostile escape sequence).
    const std::string podman =
        "step 3 | loss 4.1\n"
        "Error: creating container storage: the container name \"td-r1-0\" is already in use by abc. "
        "You have to remove that container to be able to reuse that name: that name is already in use\n"
        "srun: error: tdn1: task 0: Exited with exit code 125\n\x1b[31m\n";
    const std::string r = job_end_reason(j, podman);
    QVERIFY2(r.find("job 7: failed (exit code 125); the container runtime said: Error: creating container storage: "
                    "the container name \"td-r1-0\" is already in use") == 0, r.c_str());
    QVERIFY2(r.find('\x1b') == std::string::npos, r.c_str());
    QVERIFY2(r.find("step 3") == std::string::npos, r.c_str());
    // docker's words are found too; no runtime line: the log's last lines; no log: Slurm's words.
    QVERIFY(job_end_reason(j, "docker: Error response from daemon: pull access denied.\n").find(
                "the container runtime said: docker: Error response from daemon") != std::string::npos);
    const std::string lines = "a\nb\nc\nd\ne\nf\nTraceback: something broke\n";
    QCOMPARE(job_end_reason(j, lines), std::string("job 7: failed (exit code 125); engine.log ends:\n  c\n  d\n  e\n  f\n"
                                                   "  Traceback: something broke"));
    QCOMPARE(job_end_reason(j, ""), std::string("job 7: failed (exit code 125)"));
    QCOMPARE(job_end_reason(j, std::string(1000, 'x')).size(), std::string("job 7: failed (exit code 125); engine.log ends:\n  ").size() + 303);
    j.state = "UNKNOWN";
    QCOMPARE(job_end_reason(j, ""), std::string("job 7: Slurm no longer knows the job"));
  }

  void who_stopped_the_job() {
    // The engine writes "stop requested (signal)" for any SIGTERM: when TrainDeck did not ask,
    // Slurm's end state says what happened.
    SlurmJobState j;
    j.job_id = "41";
    j.state = "CANCELLED";
    j.cancelled_by = "0";
    const std::string sig = kEngineSignalStop;
    QCOMPARE(sig, std::string("stop requested (signal)"));  // engine/train/training_run.cpp's words
    auto r = scheduler_stop_reason(j, sig, false);
    QVERIFY(r);
    QCOMPARE(*r, std::string("cancelled by Slurm, not from TrainDeck (scancel by uid 0: an administrator or Slurm "
                             "itself), job 41; the engine saved a checkpoint as it stopped: resume to continue"));
    j.cancelled_by = "1001";
    QVERIFY(scheduler_stop_reason(j, sig, false)->find("(scancel by uid 1001), job 41") != std::string::npos);
    j.cancelled_by.clear();  // no accounting: who is not known
    QVERIFY(scheduler_stop_reason(j, sig, false)->find("sacct would say who") != std::string::npos);
    j.state = "NODE_FAIL";
    QVERIFY(scheduler_stop_reason(j, sig, false)->find("a node of job 41 failed (NODE_FAIL)") == 0);
    j.state = "PREEMPTED";
    QVERIFY(scheduler_stop_reason(j, sig, false)->find("job 41 was preempted") == 0);
    j.state = "COMPLETED";
    QVERIFY(scheduler_stop_reason(j, sig, false)->find("stopped by a signal TrainDeck did not send (job 41: completed)") == 0);
    // The user's own stop, and ends for other reasons, keep the engine's words.
    j.state = "CANCELLED";
    QVERIFY(!scheduler_stop_reason(j, sig, true));
    QVERIFY(!scheduler_stop_reason(j, "time limit", false));
    QVERIFY(!scheduler_stop_reason(j, "reached train.steps", false));
  }

  void sinfo_is_parsed_strictly() {
    const std::string out = "cpu*|c1|idle|(null)|1-00:00:00|up\ncpu*|c2|mixed|(null)|1-00:00:00|up\n"
                            "gpu|g1|allocated|gpu:a100:4(S:0-1)|04:00:00|up\ngpu|g2|down*|gpu:4,mps:200|04:00:00|up\n"
                            "gpu|g3|idle~|gpu:h100:8|04:00:00|up\n";
    const PartitionInfo d = parse_sinfo(out, "");
    QCOMPARE(d.name, std::string("cpu"));
    QVERIFY(d.is_default);
    QCOMPARE(d.nodes_idle, 1);
    QCOMPARE(d.nodes_allocated, 1);
    QCOMPARE(d.gpus, 0);
    const PartitionInfo g = parse_sinfo(out, "gpu");
    QCOMPARE(g.nodes_idle, 1);  // idle~ (powered down) is idle
    QCOMPARE(g.nodes_allocated, 1);
    QCOMPARE(g.nodes_other, 1);
    QCOMPARE(g.gpus, 16);
    QCOMPARE(g.time_limit, std::string("04:00:00"));
    QCOMPARE(partition_summary(g), std::string("partition gpu up: 1 idle, 1 allocated, 1 other node(s); 16 GPUs; time limit 04:00:00"));
    QVERIFY(error_message([&] { parse_sinfo(out, "big"); }).find("the partition 'big' is not there (sinfo lists: cpu (default), gpu)") !=
            std::string::npos);
    QVERIFY(error_message([&] { parse_sinfo("cpu|c1|idle\n", "cpu"); }).find("not 6 fields") != std::string::npos);
    QVERIFY(error_message([&] { parse_sinfo("c;d|c1|idle|(null)|1|up\n", "cpu"); }).find("is not one") != std::string::npos);
  }

  // The srun line of a container run, for each runtime (hand-written: the flags docs/slurm.md
  // and docs/containers.md list), then the podman one run for real through the batch script with
  // stand-ins for srun (runs the task as rank 1 of 2) and podman (records its argv and the
  // values of the variables it is told to pass in).
  void container_srun_lines() {
    SlurmJobPaths p = paths("/scratch/ana/td/runs/r-1");
    p.engine = "traindeck-engine";
    p.container = {"/home/ana", "/scratch/ana/td", "1000:1001"};
    const std::string task = "srun --kill-on-bad-exit=1 sh -c \"$td_task\" td-rank \"$td_run_dir\" ";
    const std::string wrapper = "sh -c " + shell_quote(td::remote::detail::kContainerRunWrapper) + " sh ";
    const std::string rank_env =
        "--env TRAINDECK_RANK --env TRAINDECK_WORLD_SIZE --env TRAINDECK_LOCAL_RANK --env TRAINDECK_LOCAL_WORLD_SIZE "
        "--env TRAINDECK_MASTER_ADDR --env TRAINDECK_MASTER_PORT --env TRAINDECK_GLOO_IFNAME --env NCCL_SOCKET_IFNAME ";
    const std::string engine =
        "train --config /scratch/ana/td/runs/r-1/config.json --out /scratch/ana/td/runs/r-1 --run-id r-1 "
        "--no-events-stdout $td_resume_arg\n";
    auto srun_line = [](const std::string& script) {
      const size_t at = script.find("\nsrun ");
      // The first srun, to the end of its command ($td_resume_arg; the wrapper inside spans lines).
      const std::string end = "$td_resume_arg\n";
      return at == std::string::npos ? std::string() : script.substr(at + 1, script.find(end, at) + end.size() - at - 1);
    };
    SlurmSpec sp = spec();  // 8 GPUs per node
    sp.container.runtime = ContainerRuntime::Podman;
    sp.container.image = "localhost/traindeck-engine:0.1.0";
    const std::string podman = sbatch_script(sp, p, "r-1", false);
    QCOMPARE(srun_line(podman),
             task + wrapper +
                 "podman r-1 --rm '--pull=never' --network host --pid host --entrypoint traindeck-engine "
                 "-v /scratch/ana/td:/scratch/ana/td -w /scratch/ana/td --env 'HOME=/scratch/ana/td' "
                 "--security-opt 'label=disable' --device 'nvidia.com/gpu=all' --ipc host " +
                 rank_env + "--env CUDA_VISIBLE_DEVICES localhost/traindeck-engine:0.1.0 " + engine);
    QVERIFY(podman.find("\n# One task per rank, its engine in a podman container (docs/slurm.md).\nsrun ") != std::string::npos);
    // Issue 35: after srun, one task per node removes the run's containers that are left, and the
    // batch script goes on with srun's exit status.
    QVERIFY2(podman.find("td_srun_rc=$?\n") != std::string::npos &&
                 podman.find("timeout 60 srun --overlap --ntasks-per-node=1 --nodes=\"$SLURM_JOB_NUM_NODES\" --kill-on-bad-exit=0 sh -c " +
                             shell_quote(td::remote::detail::kContainerCleanScript) + " td-clean podman \"$td_run_id\"") !=
                     std::string::npos &&
                 podman.find("(exit $td_srun_rc)\ntd_rc=$?") != std::string::npos,
             podman.c_str());
    std::string out;
    QCOMPARE(run_cmd({"sh", "-n", "-c", podman}, &out), 0);

    sp.container.runtime = ContainerRuntime::Docker;
    sp.container.image = "registry.lab/td:1";
    sp.container.mounts = {"/scratch/corpora:/corpora:ro"};
    QCOMPARE(srun_line(sbatch_script(sp, p, "r-1", false)),
             task + wrapper +
                 "docker r-1 --rm '--pull=never' --network host --pid host --entrypoint traindeck-engine "
                 "-v /scratch/ana/td:/scratch/ana/td -w /scratch/ana/td --env 'HOME=/scratch/ana/td' "
                 "--user 1000:1001 --gpus all --ipc host " +
                 rank_env + "--env CUDA_VISIBLE_DEVICES -v /scratch/corpora:/corpora:ro registry.lab/td:1 " + engine);

    sp.container.runtime = ContainerRuntime::Apptainer;
    sp.container.image = "/scratch/ana/traindeck-engine.sif";
    sp.container.mounts = {};
    QCOMPARE(srun_line(sbatch_script(sp, p, "r-1", false)),
             task + "apptainer exec --nv --bind /scratch/ana/td:/scratch/ana/td --pwd /scratch/ana/td "
                    "/scratch/ana/traindeck-engine.sif traindeck-engine " + engine);
    sp.gpus_per_node = 0;  // a CPU partition: no --nv
    QCOMPARE(srun_line(sbatch_script(sp, p, "r-1", false)),
             task + "apptainer exec --bind /scratch/ana/td:/scratch/ana/td --pwd /scratch/ana/td "
                    "/scratch/ana/traindeck-engine.sif traindeck-engine " + engine);
    // Paths deploy() did not resolve (the Clusters page's preview): the spec's work directory,
    // docker's user a visible placeholder.
    p.container = {};
    sp.work_dir = "/shared/td";
    QCOMPARE(srun_line(sbatch_script(sp, p, "r-1", false)),
             task + "apptainer exec --bind /shared/td:/shared/td --pwd /shared/td "
                    "/scratch/ana/traindeck-engine.sif traindeck-engine " + engine);
    sp.container.runtime = ContainerRuntime::Docker;
    QVERIFY(sbatch_script(sp, p, "r-1", false).find(" --user '<uid>:<gid>' ") != std::string::npos);
    p.container.work_dir = "/a:b";
    QVERIFY(error_message([&] { sbatch_script(sp, p, "r-1", false); }).find("cannot be mounted into a container") !=
            std::string::npos);

    // For real: the batch script as Slurm's rank 1 of 2 would run it, podman a stand-in.
    const fs::path dir = fs::path(tmp_.path().toStdString()) / "ctr";
    const fs::path bin = dir / "bin", run = dir / "runs" / "r-1";
    fs::create_directories(bin);
    fs::create_directories(run);
    write_exe(bin / "scontrol",
              "#!/bin/sh\ncase \"$1 $2\" in\n  'show hostnames') echo n7 ;;\n"
              "  'show node') echo \"NodeName=n7 NodeAddr=127.0.0.1\" ;;\nesac\n");
    write_exe(bin / "srun", "#!/bin/sh\nshift\nSLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=0 SLURM_NTASKS_PER_NODE=1 exec \"$@\"\n");
    // The stub records the variables the task wrapper sets (not the test's own environment's
    // TRAINDECK_*: fresh-check runs the suite with TRAINDECK_HEADLESS=1).
    // Only `run` is recorded: the wrapper's `rm -f` of a stale container and its watcher's call
    // the stub too (they are checked in test_remote_container_spec).
    write_exe(bin / "podman",
              "#!/bin/sh\n[ \"$1\" = run ] || exit 0\nprintf '%s\\n' \"$@\" > \"$TD_TEST/podman.args\"\n"
              "env | grep -E '^(TRAINDECK_(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|GLOO_IFNAME)|"
              "NCCL_SOCKET_IFNAME|CUDA_VISIBLE_DEVICES)=' | sort > \"$TD_TEST/podman.env\"\necho engine-log >&2\n");
    SlurmSpec cpu;
    cpu.work_dir = dir.string();
    cpu.container.image = "localhost/td:1";
    SlurmJobPaths rp = paths(run.string());
    rp.engine = "traindeck-engine";
    rp.container = {"/root", dir.string(), "0:0"};
    std::ofstream(rp.script_path) << sbatch_script(cpu, rp, "r-1", true);
    QCOMPARE(run_cmd({"sh", rp.script_path}, &out, {},
                     {"PATH=" + bin.string() + ":/usr/bin:/bin", "TD_TEST=" + dir.string(), "SLURM_JOB_ID=5",
                      "SLURM_JOB_NODELIST=n7"}),
             0);
    const std::string args = read_text(dir / "podman.args");
    QVERIFY2(args.rfind("run\n--name\ntd-r-1-r1\n--rm\n", 0) == 0, args.c_str());  // the rank's own name
    QVERIFY2(args.find("\n-v\n" + dir.string() + ":" + dir.string() + "\n-w\n" + dir.string() + "\n") != std::string::npos,
             args.c_str());
    QVERIFY2(args.find("\nlocalhost/td:1\ntrain\n--config\n" + rp.config_path + "\n--out\n" + run.string() +
                       "\n--run-id\nr-1\n--no-events-stdout\n--resume\n") != std::string::npos,
             args.c_str());
    QVERIFY(args.find("nvidia") == std::string::npos && args.find("CUDA_VISIBLE_DEVICES") == std::string::npos);
    QCOMPARE(read_text(dir / "podman.env"),
             std::string("TRAINDECK_LOCAL_RANK=0\nTRAINDECK_LOCAL_WORLD_SIZE=1\nTRAINDECK_MASTER_ADDR=127.0.0.1\n"
                         "TRAINDECK_MASTER_PORT=20005\nTRAINDECK_RANK=1\nTRAINDECK_WORLD_SIZE=2\n"));
    QCOMPARE(read_text(run / "engine.rank1.log"), std::string("engine-log\n"));  // the client's stderr: the rank's log
  }

  void time_limits_and_validation() {
    QCOMPARE(slurm_time_seconds("30").value_or(-2), int64_t(1800));
    QCOMPARE(slurm_time_seconds("30:15").value_or(-2), int64_t(1815));
    QCOMPARE(slurm_time_seconds("04:00:00").value_or(-2), int64_t(14400));
    QCOMPARE(slurm_time_seconds("2-12").value_or(-2), int64_t(216000));
    QCOMPARE(slurm_time_seconds("1-00:30").value_or(-2), int64_t(88200));
    QCOMPARE(slurm_time_seconds("1-00:00:10").value_or(-2), int64_t(86410));
    QCOMPARE(slurm_time_seconds("UNLIMITED").value_or(-2), int64_t(-1));
    for (const char* bad : {"", "1:2:3:4", "a", "1-", "-1", "1:x", "4 hours", "1--2"}) QVERIFY2(!slurm_time_seconds(bad), bad);
    QCOMPARE(slurm_world_size(spec()), 16);
    SlurmSpec s;
    s.work_dir = "/scratch/a b";
    QVERIFY(validate(s).size() == 1 && validate(s)[0].find("may hold only letters, digits and / . _ - +") != std::string::npos);
    s.work_dir = "/scratch/../etc";
    QCOMPARE(validate(s).size(), size_t(1));
    s.work_dir = "";
    QVERIFY(validate(s)[0].find("the work directory is empty") != std::string::npos);
    s = spec();
    s.setup = {"module load a\nmodule load b"};
    s.signal_lead_s = 0;
    QCOMPARE(validate(s).size(), size_t(2));
    // JSON: every field round-trips; defaults for a minimal object.
    const SlurmSpec back = slurm_from_json(nlohmann::json::parse(to_json(spec()).dump()));
    QCOMPARE(to_json(back), to_json(spec()));
    const SlurmSpec min = slurm_from_json(nlohmann::json::parse(R"({"work_dir": "/w"})"));
    QCOMPARE(min.nodes, 1);
    QCOMPARE(min.signal_lead_s, 120);
    QVERIFY(!min.requeue);
    QCOMPARE(error_message([] { slurm_from_json(nlohmann::json::parse(R"({"extra_sbatch": [1]})")); }),
             std::string("slurm.extra_sbatch[0]: wrong type (number)"));
    // The container: round-trips, absent when unset, checked by validate() and the loader.
    SlurmSpec c = spec();
    QVERIFY(!to_json(c).contains("container"));
    c.container.runtime = ContainerRuntime::Apptainer;
    c.container.image = "/scratch/ana/td.sif";
    c.container.mounts = {"/data:/data:ro"};
    QCOMPARE(to_json(c)["container"], nlohmann::json::parse(R"({"runtime": "apptainer", "image": "/scratch/ana/td.sif", "mounts": ["/data:/data:ro"]})"));
    QVERIFY(slurm_from_json(to_json(c)).container == c.container);
    c.container.image = "-v /:/host";
    QCOMPARE(validate(c), std::vector<std::string>{"container: the container image '-v /:/host' holds whitespace; enter one image name"});
    c.container.image = "";
    QCOMPARE(validate(c), std::vector<std::string>{"container: container mounts are set but no image: enter the image, or remove the mounts"});
    QCOMPARE(error_message([] { slurm_from_json(nlohmann::json::parse(R"({"container": {"runtime": "lxc", "image": "x"}})")); }),
             std::string("slurm.container.runtime: 'lxc' is not a container runtime (podman, docker or apptainer)"));
  }
};

QTEST_GUILESS_MAIN(TestSlurmScript)
#include "test_slurm_script.moc"
