// Slurm clusters: a run submitted with sbatch through the cluster's login node (an ordinary SSH
// node, cluster.h), its ranks started by srun, its job followed with sacct/scontrol/squeue and
// stopped with scancel. Plain C++ on Sessions, no Qt. The script explained: docs/slurm.md.
//
// Layout on the cluster's shared filesystem (deploy.h's, under SlurmSpec::work_dir):
//   <work>/runs/<run id>/traindeck.sbatch   the batch script of the run (kept; resubmitted)
//   <work>/runs/<run id>/slurm-jobs         every job id of the run, one a line, in order
//   <work>/runs/<run id>/slurm-<job>.out    each job's own output (sbatch --output)
//   <work>/runs/<run id>/engine.log, engine.rank<r>.log, events.jsonl, checkpoints/ (the engine's)
//
// Time limits: the job asks for SIGUSR1 `signal_lead_s` before its limit (`--signal=USR1@S`, to
// every rank); the engine checkpoints and ends with run_end "stopped", reason "time limit"
// (docs/events.md). With `requeue`, the batch script itself then submits the same script again
// ("continue": --resume from that checkpoint) and appends the new job id to slurm-jobs, so the
// run goes on to train.steps with no workbench open; a job Slurm requeues (node failure,
// preemption) resumes the same way.
//
// Threading rule: every function that takes a Session blocks on the network (call it on a
// worker thread) and uses the Session as that Session's rule says (one thread at a time).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "remote/deploy.h"
#include "remote/session.h"

namespace td::remote {

/// A Slurm cluster's settings besides its login node (ClusterSpec::nodes[0]). No secrets.
/// JSON: {"partition": "gpu", "account": "proj", "qos": "normal", "time_limit": "04:00:00",
///   "nodes": 2, "gpus_per_node": 8, "cpus_per_task": 12, "extra_sbatch": ["#SBATCH --mem=0"],
///   "setup": ["module load cuda/12.4"], "work_dir": "/scratch/ana/traindeck", "requeue": true,
///   "signal_lead_s": 120,
///   "container": {"runtime": "apptainer", "image": "/scratch/ana/traindeck-engine.sif"}}
/// ("container" only when set; remote/container.h's form and checks)
struct SlurmSpec {
  std::string partition;    ///< --partition; empty: the cluster's default partition
  std::string account;      ///< --account; empty: the user's default account
  std::string qos;          ///< --qos; empty: the default QoS
  std::string time_limit;   ///< --time in Slurm's format ("30", "00:30:00", "1-12:00:00"); empty: the partition's default
  int nodes = 1;            ///< --nodes (>= 1)
  int gpus_per_node = 0;    ///< --gpus-per-node and one task (rank) per GPU; 0: a CPU partition, one rank per node
  int cpus_per_task = 0;    ///< --cpus-per-task; 0: Slurm's default
  std::vector<std::string> extra_sbatch;  ///< further directives, each a whole "#SBATCH --..." line
  std::vector<std::string> setup;  ///< shell lines run before srun, verbatim (e.g. "module load cuda/12.4")
  std::string work_dir;     ///< absolute folder on the filesystem every node shares (bundle, dataset, runs)
  bool requeue = false;     ///< continue the run in a new job after a time-limit stop; let Slurm requeue it
  int signal_lead_s = 120;  ///< seconds before the time limit that SIGUSR1 asks for a checkpoint
  /// Run each rank's engine inside this OCI image instead of the bare bundle (remote/container.h,
  /// docs/slurm.md "Containers"): the image must be present on the login node (checked by
  /// deploy) and on every compute node (podman, docker) or on the shared filesystem
  /// (apptainer's .sif). Empty image: the bare bundle.
  ContainerSpec container;
};

nlohmann::json to_json(const SlurmSpec& s);
/// Errors: td::Error naming the field ("slurm.nodes: wrong type (string)") for a wrong type; the
/// values themselves are checked by validate().
SlurmSpec slurm_from_json(const nlohmann::json& j, const std::string& where = "slurm");

/// Problems a person has to fix before the cluster can be used, one line each; empty when
/// usable. Names (partition, account, QoS) are letters, digits and "._-+" (an sbatch directive
/// cannot be quoted); time_limit one of Slurm's formats and longer than signal_lead_s; nodes
/// >= 1, GPUs and CPUs >= 0; extra lines start with "#SBATCH " and hold no newline; setup lines
/// hold no newline; work_dir absolute, made of letters, digits and "/._-+" (it is written into
/// the #SBATCH --output and --chdir directives); signal_lead_s in 1..65535; the container as
/// remote/container.h validate() says (each line "container: ...").
std::vector<std::string> validate(const SlurmSpec& s);

/// Seconds of a Slurm time ("minutes", "minutes:seconds", "hours:minutes:seconds",
/// "days-hours", "days-hours:minutes", "days-hours:minutes:seconds"); -1 for "UNLIMITED" or
/// "INFINITE" (any case); nullopt when it is none of them.
std::optional<int64_t> slurm_time_seconds(std::string_view text);

/// Ranks of a run on this spec: nodes * gpus_per_node (nodes on a CPU partition).
int slurm_world_size(const SlurmSpec& s);

/// Where a run's files are on the shared filesystem (from deploy()'s result).
struct SlurmJobPaths {
  std::string run_dir;      ///< <work>/runs/<run id>
  std::string engine;       ///< the bundle's launcher
  std::string config_path;  ///< <run_dir>/config.json
  std::string script_path;  ///< <run_dir>/traindeck.sbatch
  std::string jobs_path;    ///< <run_dir>/slurm-jobs
  /// Container runs (SlurmSpec::container): the absolute work directory mounted into each rank's
  /// container and the login node user's uid:gid (docker's --user); deploy() resolves them.
  /// Left empty (a preview), sbatch_script() uses SlurmSpec::work_dir and "<uid>:<gid>".
  ContainerPaths container;
};
SlurmJobPaths slurm_job_paths(const DeployResult& d);

/// The batch script of run `run_id` (docs/slurm.md explains it line by line): #SBATCH lines (job
/// name traindeck-<run id>, partition, account, QoS, time, nodes, one task per GPU or per node,
/// GPUs, CPUs, output and working folder in the run folder, SIGUSR1 signal_lead_s before the
/// limit, --requeue or --no-requeue, the extra lines), then the job id appended to slurm-jobs,
/// the rendezvous (first host of the allocation, a port from the job id), the setup lines, one
/// srun whose tasks map SLURM_PROCID/NTASKS/LOCALID/NTASKS_PER_NODE to the engine's rank
/// environment, and the continuation after a time-limit stop when requeue is on. With
/// s.container set, each task runs container_command() (remote/container.h: the work directory
/// mounted at its path, --network host, the rank environment and, on GPUs, CUDA_VISIBLE_DEVICES
/// passed in by name, GPUs the runtime's way) in place of the bundle's launcher; the runtime's
/// client forwards SIGTERM and SIGUSR1 to the engine. `resume`:
/// start the engine with --resume (a stopped or failed run continued by a person). Paths and
/// the run id are single-quoted shell words (remote/quote.h); the spec's setup lines are the
/// user's own code and go in verbatim. Errors: td::Error for an invalid spec (validate()'s first
/// problem), an invalid run id, a path that cannot go into a directive, or a container work
/// directory (p.container.work_dir) that is not absolute or holds ':'.
std::string sbatch_script(const SlurmSpec& s, const SlurmJobPaths& p, const std::string& run_id, bool resume);

/// `sbatch --parsable -- <script> [args]` on the login node. Returns the job id (digits).
/// Errors: td::Error with sbatch's message when it fails (exit status not 0) or when its output
/// is not exactly one job id (parse_sbatch_output()).
std::string submit(Session& s, const std::string& script_path, const std::vector<std::string>& args = {});

/// The job id of `sbatch --parsable` output: one line "<digits>" or "<digits>;<cluster>" (spaces
/// around it ignored); nullopt for anything else (other lines, letters, an empty id).
std::optional<std::string> parse_sbatch_output(std::string_view out);

/// A job's state as Slurm reports it.
struct SlurmJobState {
  std::string job_id;
  /// PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL,
  /// OUT_OF_MEMORY, REQUEUED, SUSPENDED, ... (upper case, as Slurm prints it; "CANCELLED by 0"
  /// is CANCELLED); "UNKNOWN" when no source knows the job (purged after MinJobAge).
  std::string state = "UNKNOWN";
  std::string reason;    ///< Slurm's reason ("Resources", "Priority", "None", ...)
  int exit_code = -1;    ///< the batch script's exit code (ExitCode's first number); -1 unknown
  int exit_signal = 0;   ///< the signal that ended it (ExitCode's second number)
  std::string nodes;     ///< the node list ("tdn[1-2]"); empty while pending
  std::string source;    ///< "sacct", "scontrol" or "squeue": which command answered
  std::string cancelled_by;  ///< sacct's "CANCELLED by <uid>": the uid (digits); empty when unknown

  bool pending() const { return state == "PENDING" || state == "REQUEUED" || state == "REQUEUE_HOLD" || state == "REQUEUE_FED" || state == "CONFIGURING"; }
  bool running() const { return state == "RUNNING" || state == "COMPLETING" || state == "SUSPENDED" || state == "STOPPED" || state == "SIGNALING" || state == "STAGE_OUT" || state == "RESIZING"; }
  /// An end state (nothing of the job runs any more): COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
  bool ended() const { return state != "UNKNOWN" && !pending() && !running(); }
};

/// The job's state from `sacct` (where accounting works), else `scontrol show job -o`, else
/// `squeue`. Never throws for a job no source knows (state "UNKNOWN"). Errors: td::Error when
/// the job id is not digits or the Session fails.
SlurmJobState job_state(Session& s, const std::string& job_id);

/// Parsers of the three sources, for `job_id` only (hostile text: a line for another job, a
/// missing field, a state that is not upper-case letters, a non-numeric exit code → nullopt).
/// sacct: `sacct -n -P -X -j ID -o JobIDRaw,State,Reason,ExitCode,NodeList` lines.
std::optional<SlurmJobState> parse_sacct(std::string_view out, const std::string& job_id);
/// scontrol: `scontrol show job -o ID`, one line of Key=Value words (JobId, JobState, Reason, ExitCode, NodeList).
std::optional<SlurmJobState> parse_scontrol_job(std::string_view out, const std::string& job_id);
/// squeue: `squeue -h -j ID -o %i|%T|%r|%N` lines.
std::optional<SlurmJobState> parse_squeue(std::string_view out, const std::string& job_id);

/// A pending reason for people: "Resources" → "waiting for resources", "Priority" → "waiting
/// behind higher-priority jobs", "PartitionNodeLimit" → "asks for more nodes than the partition
/// allows", ...; an unknown reason is returned as "Slurm says: <reason>".
std::string pending_reason_text(const std::string& reason);
/// One line for the run page: "pending: waiting for resources", "running on n[1-2]", "completed",
/// "failed (exit code 1)", "ended at its time limit", "a node failed (NODE_FAIL)", ...
std::string job_state_text(const SlurmJobState& j);

/// The end reason of a job that ended without the engine's run_end: Slurm's words, then what
/// the container runtime or the engine said last in engine.log (`log_tail`: the file's last
/// bytes, hostile text): "job 12: failed (exit code 125); the container runtime said: Error:
/// creating container storage: the container name \"td-r1-0\" is already in use", else "...;
/// engine.log ends: <its last 5 lines>", else Slurm's words alone. A runtime line is one that
/// podman, docker, crun or runc print ("Error: ", "Error response from daemon", "docker: ",
/// "crun: ", "runc: ", "OCI runtime"). Lines are cut at 300 bytes, control characters dropped.
std::string job_end_reason(const SlurmJobState& js, std::string_view log_tail);

/// The engine's end reason when any rank got SIGTERM/SIGINT (engine/train/training_run.cpp).
inline constexpr const char* kEngineSignalStop = "stop requested (signal)";

/// What to record instead of the engine's "stop requested (signal)" when the job ended without
/// TrainDeck asking it to stop (`user_asked` false): Slurm signals the ranks the same way for
/// scancel, a node failure and preemption, so the engine cannot tell them from a person's stop.
/// "cancelled by Slurm, not from TrainDeck (scancel by uid 0: an administrator or Slurm itself),
/// job 12; resume to continue", "a node of job 12 failed (NODE_FAIL) ...", "job 12 was preempted
/// ...", else "stopped by a signal TrainDeck did not send (job 12: <job_state_text>) ...".
/// nullopt when the user asked, or the engine ended for another reason (completed, time limit,
/// an error): its own words stay.
std::optional<std::string> scheduler_stop_reason(const SlurmJobState& js, const std::string& engine_reason,
                                                 bool user_asked);

/// `scancel --signal=<signal> [--full] -- <job>` ("TERM", "USR1", ...). Without `full` only the
/// job's steps (the engine ranks) get it: srun, signalled with the batch shell by --full, ends
/// its step at once (SIGKILL to the ranks, seen on Slurm 22.05), so a graceful stop must not
/// use --full. Errors: td::Error with scancel's message.
void signal_job(Session& s, const std::string& job_id, const std::string& signal, bool full = false);
/// `scancel -- <job>`: ends the job now (a pending job leaves the queue). Errors: td::Error.
void cancel_job(Session& s, const std::string& job_id);
/// Stops the run's job: a pending job is cancelled at once; a running one gets SIGTERM on its
/// ranks (the engine checkpoints, writes run_end "stopped"), then `scancel` when it still runs
/// after `kill_timeout_ms`. Returns true when the job ended without the hard cancel.
bool stop_job(Session& s, const std::string& job_id, int kill_timeout_ms = 60000);

/// What `sinfo` says about a partition (Test connection).
struct PartitionInfo {
  std::string name;          ///< the partition (the default one when asked for "")
  bool is_default = false;
  std::string avail;         ///< "up", "down", "drain", "inact"
  std::string time_limit;    ///< sinfo's %l ("infinite", "1-00:00:00")
  int nodes_idle = 0, nodes_allocated = 0, nodes_other = 0;  ///< allocated includes "mixed"
  int gpus = 0;              ///< GPUs of all its nodes (gres "gpu[:type]:N")
  std::vector<std::string> node_names;
  int nodes_total() const { return nodes_idle + nodes_allocated + nodes_other; }
};
/// `sinfo -h -N -o '%P|%N|%T|%G|%l|%a'` for `partition` ("" = the default, marked '*').
/// Errors: td::Error when sinfo fails, the partition is not there (naming those that are) or a
/// line is malformed.
PartitionInfo partition_info(Session& s, const std::string& partition);
/// The parser of partition_info() (sinfo's lines). Errors: as partition_info().
PartitionInfo parse_sinfo(std::string_view out, const std::string& partition);
/// "2 idle, 1 allocated, 0 other; 16 GPUs; time limit 1-00:00:00".
std::string partition_summary(const PartitionInfo& p);

/// The job ids in <run_dir>/slurm-jobs, in order (lines that are not digits are skipped).
/// Empty when the file is missing. Errors: td::Error when the Session fails.
std::vector<std::string> read_job_ids(Session& s, const std::string& run_dir);

/// Options of start_slurm_run().
struct SlurmStartOptions {
  bool resume = false;       ///< continue the run with --resume in a new job (its run folder is there)
  DeployOptions deploy;      ///< deploy()'s options on the login node
  DeployProgress progress;   ///< bytes of the deploy
  const std::atomic<bool>* cancel = nullptr;  ///< stops the deploy; nothing is submitted
};

/// What start_slurm_run() did.
struct SlurmRun {
  std::string run_id;
  SlurmJobPaths paths;
  std::string script;        ///< the batch script as written (show it before/after submitting)
  std::string job_id;        ///< the job just submitted
  DeployResult deploy;
};

/// Starts (or, with opts.resume, continues) run `run_id` on the Slurm cluster through its login
/// node: deploy() of bundle, dataset and config into spec.work_dir (with spec.container: no
/// bundle; the runtime and the image are checked on the login node first, a missing image is a
/// td::Error naming it and the runtime, and `bundle_dir` may be empty; what is there is skipped;
/// train.device set to "cuda" with GPUs, else "cpu"; the login node's GPU driver is not checked:
/// the compute nodes have the GPUs), the batch script written to <run_dir>/traindeck.sbatch,
/// `sbatch --parsable` and the job id appended to <run_dir>/slurm-jobs. Errors: td::Error for an
/// invalid spec or run id (before any connection work), a deploy, write or submit failure.
SlurmRun start_slurm_run(Session& login, const SlurmSpec& spec, const std::filesystem::path& bundle_dir,
                         const std::filesystem::path& dataset_dir, const std::string& config_json,
                         const std::string& run_id, const SlurmStartOptions& opts = {});

}  // namespace td::remote
