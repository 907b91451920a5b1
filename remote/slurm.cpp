// Slurm clusters (slurm.h): the spec, the batch script, submit, job state, cancel, sinfo.
#include "remote/slurm.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <set>
#include <sstream>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/run_id.h"
#include "remote/proc_check.h"
#include "remote/quote.h"

namespace td::remote {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Letters, digits and `extra`: what may go unquoted into an #SBATCH directive.
bool word_of(std::string_view s, std::string_view extra) {
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
  });
}

template <class T>
T get(const json& j, const char* key, const std::string& where, T fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw Error(where + "." + key + ": wrong type (" + std::string(it->type_name()) + ")");
  }
}

std::vector<std::string> get_lines(const json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_array()) throw Error(where + "." + key + ": expected a list of lines (strings)");
  std::vector<std::string> out;
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string())
      throw Error(where + "." + key + "[" + std::to_string(i) + "]: wrong type (" + (*it)[i].type_name() + ")");
    out.push_back((*it)[i].get<std::string>());
  }
  return out;
}

void check_job_id(const std::string& id) {
  if (!all_digits(id)) throw Error("'" + id + "' is not a Slurm job id (digits)");
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// "CANCELLED by 1000" -> "CANCELLED"; nullopt unless upper-case letters and '_'.
std::optional<std::string> clean_state(std::string_view raw) {
  std::string s = trim(raw);
  if (const auto sp = s.find(' '); sp != std::string::npos) {
    if (s.compare(sp, 4, " by ") != 0) return std::nullopt;
    s = s.substr(0, sp);
  }
  if (s.empty() || s.size() > 32 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; }))
    return std::nullopt;
  return s;
}

// "0:0" / "1:0" / "0:9" -> exit code and signal; false when malformed.
bool parse_exit(std::string_view text, SlurmJobState& j) {
  const std::string t = trim(text);
  const auto colon = t.find(':');
  if (colon == std::string::npos || !all_digits(t.substr(0, colon)) || !all_digits(t.substr(colon + 1))) return false;
  const long code = std::stol(t.substr(0, colon)), sig = std::stol(t.substr(colon + 1));
  if (code > 255 || sig > 255) return false;
  j.exit_code = static_cast<int>(code);
  j.exit_signal = static_cast<int>(sig);
  return true;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.emplace_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::vector<std::string> lines_of(std::string_view s) {
  std::vector<std::string> out;
  for (std::string& l : split(s, '\n')) {
    std::string t = trim(l);
    if (!t.empty()) out.push_back(std::move(t));
  }
  return out;
}

std::string node_list(std::string_view raw) {
  const std::string n = trim(raw);
  if (n == "(null)" || n == "None assigned" || n == "None" || n.find_first_of(" \t|=") != std::string::npos) return {};
  return n;
}

// The task wrapper srun runs once per rank: $1 the run folder, then the engine's argv. Maps
// Slurm's task variables to the engine's rank environment (docs/distributed.md), picks the
// interface toward the rendezvous address like remote/multinode.cpp, and execs the engine with
// its stderr in the rank's log. SIGUSR1 is ignored until the engine installs its own handler
// (a warning that came before would otherwise kill this shell).
std::string task_script() {
  return std::string("trap \"\" USR1\n") + detail::kRouteFunction +
         "td_dir=$1; shift\n"
         "export TRAINDECK_RANK=\"$SLURM_PROCID\" TRAINDECK_WORLD_SIZE=\"$SLURM_NTASKS\" "
         "TRAINDECK_LOCAL_RANK=\"$SLURM_LOCALID\"\n"
         "td_n=${SLURM_NTASKS_PER_NODE:-${SLURM_TASKS_PER_NODE:-1}}; td_n=${td_n%%[!0-9]*}\n"
         "export TRAINDECK_LOCAL_WORLD_SIZE=\"${td_n:-1}\"\n"
         "td_if=$(td_route_ifname \"$TRAINDECK_MASTER_ADDR\")\n"
         "if [ -n \"$td_if\" ] && [ \"$td_if\" != lo ]; then export TRAINDECK_GLOO_IFNAME=\"$td_if\" "
         "NCCL_SOCKET_IFNAME=\"$td_if\"; fi\n"
         "if [ \"$TRAINDECK_RANK\" = 0 ]; then td_log=\"$td_dir/engine.log\"; else td_log=\"$td_dir/engine.rank$TRAINDECK_RANK.log\"; fi\n"
         "exec \"$@\" </dev/null >/dev/null 2>>\"$td_log\"\n";
}

// The body of the batch script after its #SBATCH lines and variables (docs/slurm.md).
const char* kBatchHead = R"SH(
# Every job of this run, one a line (a job Slurm requeues keeps its id: listed once).
grep -qx -- "$SLURM_JOB_ID" "$td_jobs" 2>/dev/null || echo "$SLURM_JOB_ID" >> "$td_jobs"

# The newest checkpoint's step (empty: none). --resume when asked for, or when this job
# continues the run (submitted with "continue", or requeued by Slurm) and a checkpoint is there.
td_from=$(ls -1 "$td_run_dir/checkpoints" 2>/dev/null | sed -n 's/^step_\([0-9]\{8\}\)$/\1/p' | sort | tail -n 1 | sed 's/^0*\([0-9]\)/\1/')
td_resume_arg=
if [ "$td_resume" = 1 ]; then
  td_resume_arg=--resume
elif [ -n "$td_from" ] && { [ "${1-}" = continue ] || [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; }; then
  td_resume_arg=--resume
fi

# The rendezvous: rank 0 runs on the first node of the allocation (this one), at the address
# Slurm reaches it (NodeAddr; its name where NodeAddr is not shown), on a port from the job id.
td_first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
td_addr=$(scontrol show node -o "$td_first" 2>/dev/null | tr ' ' '\n' | sed -n 's/^NodeAddr=//p' | head -n 1)
[ -n "$td_addr" ] || td_addr=$td_first
export TRAINDECK_MASTER_ADDR="$td_addr"
export TRAINDECK_MASTER_PORT=$((20000 + SLURM_JOB_ID % 12000))
echo "traindeck: job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, rendezvous $TRAINDECK_MASTER_ADDR:$TRAINDECK_MASTER_PORT${td_resume_arg:+, resuming from step $td_from}"
)SH";

// One task per rank: the bundle's launcher, or (srun_container_line()) a container.
const char* kSrunBare = R"SH(
# One task per rank.
srun --kill-on-bad-exit=1 sh -c "$td_task" td-rank "$td_run_dir" "$td_engine" train --config "$td_config" --out "$td_run_dir" --run-id "$td_run_id" --no-events-stdout $td_resume_arg
)SH";

// The srun line of a container run: the task wrapper, then container_command()'s argv as quoted
// words (the rank environment, exported by the wrapper, passed in by name; on GPUs also the
// CUDA_VISIBLE_DEVICES Slurm set for the task), then --resume when the job resumes.
std::string srun_container_line(const SlurmSpec& s, const SlurmJobPaths& p, const std::string& run_id) {
  // Not resolved (a preview of the script): the spec's work directory (absolute, no ':' by
  // validate()) and a visible placeholder for docker's user.
  ContainerPaths cp = p.container;
  if (cp.work_dir.empty()) cp.work_dir = s.work_dir;
  if (cp.user.empty()) cp.user = "<uid>:<gid>";
  if (cp.work_dir[0] != '/' || cp.work_dir.find(':') != std::string::npos)
    throw Error("the work directory " + cp.work_dir + " cannot be mounted into a container: it must be absolute, without ':'");
  const bool gpus = s.gpus_per_node > 0;
  std::vector<std::string> env = rank_env_names();
  if (gpus) env.push_back("CUDA_VISIBLE_DEVICES");
  const std::vector<std::string> argv =
      container_command(s.container, cp, run_id, gpus, env,
                        {"train", "--config", p.config_path, "--out", p.run_dir, "--run-id", run_id, "--no-events-stdout"});
  const std::string rt = container_runtime_name(s.container.runtime);
  std::string out = "\n# One task per rank, its engine in a " + rt +
                    " container (docs/slurm.md).\nsrun --kill-on-bad-exit=1 sh -c \"$td_task\" td-rank \"$td_run_dir\" " +
                    command_line(argv) + " $td_resume_arg\n";
  if (s.container.runtime != ContainerRuntime::Apptainer)  // apptainer's processes are the step's own
    out += "td_srun_rc=$?\n"
           "# No container of this run outlives the job, whatever ended a rank's client (killed, or Slurm's\n"
           "# KillWait after a failed rank): one task per node removes what is left (--overlap: beside\n"
           "# whatever of the step lingers; at most a minute).\n"
           "timeout 60 srun --overlap --ntasks-per-node=1 --nodes=\"$SLURM_JOB_NUM_NODES\" --kill-on-bad-exit=0 sh -c " +
           shell_quote(detail::kContainerCleanScript) + " td-clean " + rt + " \"$td_run_id\" >/dev/null 2>&1\n"
           "(exit $td_srun_rc)\n";
  return out;
}

const char* kBatchTail = R"SH(td_rc=$?

# Requeue: after a time-limit stop that made progress, the same script in a new job (after
# this one ends), resuming from the checkpoint the stop wrote.
if [ "$td_requeue" = 1 ]; then
  td_end=$(grep -F '"type":"run_end"' "$td_run_dir/events.jsonl" 2>/dev/null | tail -n 1)
  td_step=$(printf '%s\n' "$td_end" | sed -n 's/.*"step":\([0-9][0-9]*\).*/\1/p')
  case $td_end in
    *'"reason":"time limit"'*)
      case $td_end in
        *'"status":"stopped"'*)
          if [ -n "$td_step" ] && [ "$td_step" -gt "${td_from:-0}" ]; then
            if td_next=$(sbatch --parsable --dependency="afterany:$SLURM_JOB_ID" -- "$td_script" continue); then
              td_next=${td_next%%;*}
              echo "$td_next" >> "$td_jobs"
              echo "traindeck: stopped at step $td_step at the time limit; the run continues in job $td_next"
            else
              echo "traindeck: stopped at step $td_step at the time limit; submitting the next job failed" >&2
            fi
          else
            echo "traindeck: stopped at the time limit without a new step since step ${td_from:-0}; not continued" >&2
          fi ;;
      esac ;;
  esac
fi
exit $td_rc
)SH";

}  // namespace

// ---- the spec ----------------------------------------------------------------------------

json to_json(const SlurmSpec& s) {
  json j = {{"nodes", s.nodes}, {"gpus_per_node", s.gpus_per_node}, {"work_dir", s.work_dir},
            {"requeue", s.requeue}, {"signal_lead_s", s.signal_lead_s}};
  if (!s.partition.empty()) j["partition"] = s.partition;
  if (!s.account.empty()) j["account"] = s.account;
  if (!s.qos.empty()) j["qos"] = s.qos;
  if (!s.time_limit.empty()) j["time_limit"] = s.time_limit;
  if (s.cpus_per_task) j["cpus_per_task"] = s.cpus_per_task;
  if (!s.extra_sbatch.empty()) j["extra_sbatch"] = s.extra_sbatch;
  if (!s.setup.empty()) j["setup"] = s.setup;
  if (s.container.enabled() || !s.container.mounts.empty()) j["container"] = to_json(s.container);
  return j;
}

SlurmSpec slurm_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected an object, got " + std::string(j.type_name()));
  SlurmSpec s;
  s.partition = trim(get<std::string>(j, "partition", where, ""));
  s.account = trim(get<std::string>(j, "account", where, ""));
  s.qos = trim(get<std::string>(j, "qos", where, ""));
  s.time_limit = trim(get<std::string>(j, "time_limit", where, ""));
  s.nodes = get<int>(j, "nodes", where, 1);
  s.gpus_per_node = get<int>(j, "gpus_per_node", where, 0);
  s.cpus_per_task = get<int>(j, "cpus_per_task", where, 0);
  s.extra_sbatch = get_lines(j, "extra_sbatch", where);
  s.setup = get_lines(j, "setup", where);
  s.work_dir = trim(get<std::string>(j, "work_dir", where, ""));
  s.requeue = get<bool>(j, "requeue", where, false);
  s.signal_lead_s = get<int>(j, "signal_lead_s", where, 120);
  if (const auto it = j.find("container"); it != j.end() && !it->is_null())
    s.container = container_from_json(*it, where + ".container");
  return s;
}

std::optional<int64_t> slurm_time_seconds(std::string_view text) {
  const std::string t = trim(text);
  if (upper(t) == "UNLIMITED" || upper(t) == "INFINITE") return -1;
  if (t.empty() || t.size() > 20) return std::nullopt;
  int64_t days = 0;
  std::string rest = t;
  const bool has_days = t.find('-') != std::string::npos;
  if (has_days) {
    const auto dash = t.find('-');
    if (!all_digits(t.substr(0, dash))) return std::nullopt;
    days = std::stoll(t.substr(0, dash));
    rest = t.substr(dash + 1);
  }
  const std::vector<std::string> parts = split(rest, ':');
  if (parts.size() > 3) return std::nullopt;
  std::vector<int64_t> v;
  for (const std::string& p : parts) {
    if (!all_digits(p)) return std::nullopt;
    v.push_back(std::stoll(p));
  }
  if (has_days) {  // days-hours[:minutes[:seconds]]
    const int64_t h = v[0], m = v.size() > 1 ? v[1] : 0, sec = v.size() > 2 ? v[2] : 0;
    return ((days * 24 + h) * 60 + m) * 60 + sec;
  }
  switch (v.size()) {  // minutes | minutes:seconds | hours:minutes:seconds
    case 1: return v[0] * 60;
    case 2: return v[0] * 60 + v[1];
    default: return (v[0] * 60 + v[1]) * 60 + v[2];
  }
}

int slurm_world_size(const SlurmSpec& s) { return std::max(1, s.nodes) * std::max(1, s.gpus_per_node); }

std::vector<std::string> validate(const SlurmSpec& s) {
  std::vector<std::string> p;
  auto name = [&](const std::string& v, const char* what) {
    if (!v.empty() && !word_of(v, "._-+"))
      p.push_back(std::string("the ") + what + " '" + v + "' may hold only letters, digits and . _ - +");
  };
  name(s.partition, "partition");
  name(s.account, "account");
  name(s.qos, "QoS");
  if (s.nodes < 1) p.push_back("nodes must be 1 or more (got " + std::to_string(s.nodes) + ")");
  if (s.gpus_per_node < 0) p.push_back("GPUs per node must be 0 (a CPU partition) or more");
  if (s.cpus_per_task < 0) p.push_back("CPUs per task must be 0 (Slurm's default) or more");
  if (s.signal_lead_s < 1 || s.signal_lead_s > 65535)
    p.push_back("the signal lead must be 1..65535 seconds before the time limit (got " + std::to_string(s.signal_lead_s) + ")");
  if (!s.time_limit.empty()) {
    const auto secs = slurm_time_seconds(s.time_limit);
    if (!secs)
      p.push_back("the time limit '" + s.time_limit + "' is not in Slurm's format (minutes, HH:MM:SS or D-HH:MM:SS)");
    else if (*secs >= 0 && *secs <= s.signal_lead_s)
      p.push_back("the time limit " + s.time_limit + " is not longer than the signal lead (" +
                  std::to_string(s.signal_lead_s) + " s): the checkpoint signal would come at the start");
  }
  for (size_t i = 0; i < s.extra_sbatch.size(); ++i) {
    const std::string& l = s.extra_sbatch[i];
    if (l.rfind("#SBATCH ", 0) != 0 || l.find_first_of("\r\n", 0) != std::string::npos || l.find('\0') != std::string::npos)
      p.push_back("extra sbatch line " + std::to_string(i + 1) + " must be one line starting with '#SBATCH ' (got '" + l + "')");
  }
  for (size_t i = 0; i < s.setup.size(); ++i)
    if (s.setup[i].find_first_of("\r\n") != std::string::npos || s.setup[i].find('\0') != std::string::npos)
      p.push_back("set-up line " + std::to_string(i + 1) + " holds a line break: give each command its own line");
  if (s.work_dir.empty())
    p.push_back("the work directory is empty: give a folder every node shares (e.g. /scratch/<you>/traindeck)");
  else if (s.work_dir[0] != '/')
    p.push_back("the work directory '" + s.work_dir + "' must be an absolute path on the shared filesystem");
  else if (!word_of(s.work_dir, "/._-+") || s.work_dir.find("/../") != std::string::npos ||
           (s.work_dir.size() >= 3 && s.work_dir.compare(s.work_dir.size() - 3, 3, "/..") == 0))
    p.push_back("the work directory '" + s.work_dir +
                "' may hold only letters, digits and / . _ - + (it goes into #SBATCH --output and --chdir), and no '..'");
  for (std::string& c : validate(s.container, "container")) p.push_back(std::move(c));
  return p;
}

SlurmJobPaths slurm_job_paths(const DeployResult& d) {
  SlurmJobPaths p;
  p.run_dir = d.run_dir;
  p.engine = d.engine;
  p.config_path = d.config_path;
  p.script_path = d.run_dir + "/traindeck.sbatch";
  p.jobs_path = d.run_dir + "/slurm-jobs";
  p.container = d.container_paths;
  return p;
}

// ---- the batch script --------------------------------------------------------------------

std::string sbatch_script(const SlurmSpec& s, const SlurmJobPaths& p, const std::string& run_id, bool resume) {
  if (const auto problems = validate(s); !problems.empty()) throw Error("the Slurm settings cannot be used: " + problems.front());
  if (!valid_run_id(run_id)) throw Error("'" + run_id + "' is not a run id (" + std::string(kRunIdRule) + ")");
  if (p.run_dir.empty() || p.run_dir[0] != '/' || !word_of(p.run_dir, "/._-+"))
    throw Error("the run folder '" + p.run_dir + "' cannot go into an #SBATCH directive: it must be absolute and "
                "made of letters, digits and / . _ - +");
  for (const std::string* v : {&p.engine, &p.config_path, &p.script_path, &p.jobs_path})
    if (v->empty() || v->find_first_of("\n\r") != std::string::npos || v->find('\0') != std::string::npos)
      throw Error("a path of the run ('" + *v + "') is empty or holds a line break");
  const int ranks_per_node = std::max(1, s.gpus_per_node);
  std::ostringstream o;
  o << "#!/bin/sh\n";
  o << "#SBATCH --job-name=traindeck-" << run_id << "\n";
  if (!s.partition.empty()) o << "#SBATCH --partition=" << s.partition << "\n";
  if (!s.account.empty()) o << "#SBATCH --account=" << s.account << "\n";
  if (!s.qos.empty()) o << "#SBATCH --qos=" << s.qos << "\n";
  if (!s.time_limit.empty()) o << "#SBATCH --time=" << s.time_limit << "\n";
  o << "#SBATCH --nodes=" << s.nodes << "\n";
  o << "#SBATCH --ntasks-per-node=" << ranks_per_node << "\n";
  if (s.gpus_per_node > 0) o << "#SBATCH --gpus-per-node=" << s.gpus_per_node << "\n";
  if (s.cpus_per_task > 0) o << "#SBATCH --cpus-per-task=" << s.cpus_per_task << "\n";
  o << "#SBATCH --output=" << p.run_dir << "/slurm-%j.out\n";
  o << "#SBATCH --open-mode=append\n";
  o << "#SBATCH --chdir=" << p.run_dir << "\n";
  o << "#SBATCH --signal=USR1@" << s.signal_lead_s << "\n";
  o << (s.requeue ? "#SBATCH --requeue\n" : "#SBATCH --no-requeue\n");
  for (const std::string& l : s.extra_sbatch) o << l << "\n";
  o << "# TrainDeck run " << run_id << " (docs/slurm.md). `sbatch " << shell_quote(p.script_path)
    << " continue` resumes it from its newest checkpoint.\n";
  o << "td_run_dir=" << shell_quote(p.run_dir) << "\n";
  o << "td_engine=" << shell_quote(p.engine) << "\n";
  o << "td_config=" << shell_quote(p.config_path) << "\n";
  o << "td_run_id=" << shell_quote(run_id) << "\n";
  o << "td_script=" << shell_quote(p.script_path) << "\n";
  o << "td_jobs=" << shell_quote(p.jobs_path) << "\n";
  o << "td_resume=" << (resume ? 1 : 0) << "\n";
  o << "td_requeue=" << (s.requeue ? 1 : 0) << "\n";
  o << "td_task=" << shell_quote(task_script()) << "\n";
  o << kBatchHead;
  if (!s.setup.empty()) {
    o << "\n# The cluster's set-up lines (its settings).\n";
    for (const std::string& l : s.setup) o << l << "\n";
  }
  o << (s.container.enabled() ? srun_container_line(s, p, run_id) : std::string(kSrunBare));
  o << kBatchTail;
  return o.str();
}

// ---- jobs --------------------------------------------------------------------------------

std::optional<std::string> parse_sbatch_output(std::string_view out) {
  const std::vector<std::string> lines = lines_of(out);
  if (lines.size() != 1) return std::nullopt;
  std::string id = lines[0];
  if (const auto semi = id.find(';'); semi != std::string::npos) {
    const std::string cluster = id.substr(semi + 1);
    if (cluster.empty() || !word_of(cluster, "._-")) return std::nullopt;
    id = id.substr(0, semi);
  }
  if (!all_digits(id)) return std::nullopt;
  return id;
}

std::string submit(Session& s, const std::string& script_path, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"sbatch", "--parsable", "--", script_path};
  argv.insert(argv.end(), args.begin(), args.end());
  const ExecResult r = s.exec(argv);
  if (r.exit_status != 0)
    throw Error(s.where() + ": sbatch refused the job (exit " + std::to_string(r.exit_status) + "): " + trim(r.err) +
                (trim(r.out).empty() ? "" : " " + trim(r.out)));
  const auto id = parse_sbatch_output(r.out);
  if (!id) throw Error(s.where() + ": sbatch --parsable printed '" + trim(r.out) + "', not a job id");
  return *id;
}

std::optional<SlurmJobState> parse_sacct(std::string_view out, const std::string& job_id) {
  std::optional<SlurmJobState> found;
  for (const std::string& line : lines_of(out)) {
    const std::vector<std::string> f = split(line, '|');
    if (f.size() != 5 || trim(f[0]) != job_id) continue;
    SlurmJobState j;
    j.job_id = job_id;
    const auto st = clean_state(f[1]);
    if (!st || !parse_exit(f[3], j)) return std::nullopt;
    j.state = *st;
    if (const std::string raw = trim(f[1]); raw.size() > j.state.size() + 4) {  // "CANCELLED by 1000"
      const std::string by = raw.substr(j.state.size() + 4);
      if (by.size() <= 10 && std::all_of(by.begin(), by.end(), [](char c) { return c >= '0' && c <= '9'; }))
        j.cancelled_by = by;
    }
    j.reason = trim(f[2]);
    j.nodes = node_list(f[4]);
    j.source = "sacct";
    found = j;  // the last line: a requeued job's newest attempt
  }
  return found;
}

std::optional<SlurmJobState> parse_scontrol_job(std::string_view out, const std::string& job_id) {
  // Key=Value words; a word without '=' (or not starting like a key) continues the last value.
  std::vector<std::pair<std::string, std::string>> kv;
  for (const std::string& line : lines_of(out)) {
    std::istringstream in(line);
    for (std::string w; in >> w;) {
      const auto eq = w.find('=');
      const bool key = eq != std::string::npos && eq > 0 && word_of(w.substr(0, eq), "/:_");
      if (key) kv.emplace_back(w.substr(0, eq), w.substr(eq + 1));
      else if (!kv.empty()) kv.back().second += " " + w;
    }
  }
  auto value = [&](const char* k) -> std::optional<std::string> {
    for (const auto& [key, v] : kv)
      if (key == k) return v;
    return std::nullopt;
  };
  const auto id = value("JobId"), state = value("JobState"), exit = value("ExitCode");
  if (!id || *id != job_id || !state || !exit) return std::nullopt;
  SlurmJobState j;
  j.job_id = job_id;
  const auto st = clean_state(*state);
  if (!st || !parse_exit(*exit, j)) return std::nullopt;
  j.state = *st;
  j.reason = value("Reason").value_or("");
  j.nodes = node_list(value("NodeList").value_or(""));
  j.source = "scontrol";
  return j;
}

std::optional<SlurmJobState> parse_squeue(std::string_view out, const std::string& job_id) {
  for (const std::string& line : lines_of(out)) {
    const std::vector<std::string> f = split(line, '|');
    if (f.size() != 4 || trim(f[0]) != job_id) continue;
    SlurmJobState j;
    j.job_id = job_id;
    const auto st = clean_state(f[1]);
    if (!st) return std::nullopt;
    j.state = *st;
    j.reason = trim(f[2]);
    j.nodes = node_list(f[3]);
    j.source = "squeue";
    return j;
  }
  return std::nullopt;
}

SlurmJobState job_state(Session& s, const std::string& job_id) {
  check_job_id(job_id);
  ExecResult r = s.exec({"sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobIDRaw,State,Reason,ExitCode,NodeList"});
  if (r.exit_status == 0)
    if (auto j = parse_sacct(r.out, job_id)) return *j;
  r = s.exec({"scontrol", "show", "job", "-o", job_id});
  if (r.exit_status == 0)
    if (auto j = parse_scontrol_job(r.out, job_id)) return *j;
  r = s.exec({"squeue", "-h", "-j", job_id, "-o", "%i|%T|%r|%N"});
  if (r.exit_status == 0)
    if (auto j = parse_squeue(r.out, job_id)) return *j;
  SlurmJobState j;
  j.job_id = job_id;
  return j;
}

std::string pending_reason_text(const std::string& reason) {
  // Slurm's base reason: "ReqNodeNotAvail,_UnavailableNodes:n1" -> "ReqNodeNotAvail".
  const std::string base = reason.substr(0, reason.find_first_of(",( "));
  static const std::pair<const char*, const char*> table[] = {
      {"Resources", "waiting for resources"},
      {"Priority", "waiting behind higher-priority jobs"},
      {"None", "waiting to be scheduled"},
      {"Dependency", "waiting for the job it depends on"},
      {"DependencyNeverSatisfied", "its dependency can never be satisfied: cancel it"},
      {"JobHeldUser", "held by its user (release it with scontrol release)"},
      {"JobHeldAdmin", "held by an administrator"},
      {"BeginTime", "waiting for its start time"},
      {"PartitionNodeLimit", "asks for more nodes than the partition allows"},
      {"PartitionConfig", "asks for more than the partition has (nodes, CPUs or GPUs)"},
      {"PartitionTimeLimit", "asks for a longer time limit than the partition allows"},
      {"PartitionDown", "the partition is down"},
      {"PartitionInactive", "the partition is inactive"},
      {"ReqNodeNotAvail", "a node it needs is not available (down, drained or reserved)"},
      {"NodeDown", "a node it needs is down"},
      {"Reservation", "waiting for its reservation"},
      {"Licenses", "waiting for licenses"},
      {"BadConstraints", "its constraints cannot be met by any node"},
      {"InvalidAccount", "the account is not valid for this partition"},
      {"InvalidQOS", "the QoS is not valid for this account"},
      {"Cleaning", "waiting for its earlier attempt to clean up"},
      {"Prolog", "running the prolog"},
      {"launch", "its launch failed; it is held (scontrol release)"},
  };
  for (const auto& [k, text] : table)
    if (base == k) return text;
  if (base.rfind("QOS", 0) == 0) return "a limit of the QoS is reached (" + base + ")";
  if (base.rfind("Assoc", 0) == 0) return "a limit of the account is reached (" + base + ")";
  return reason.empty() ? "waiting to be scheduled" : "Slurm says: " + reason;
}

std::string job_state_text(const SlurmJobState& j) {
  const std::string& s = j.state;
  auto code = [&] { return j.exit_code >= 0 ? " (exit code " + std::to_string(j.exit_code) + ")" : std::string(); };
  if (s == "PENDING") return "pending: " + pending_reason_text(j.reason);
  if (s == "REQUEUED" || s == "REQUEUE_HOLD" || s == "REQUEUE_FED") return "requeued: waiting to run again";
  if (s == "CONFIGURING") return "starting: its nodes are being configured";
  if (s == "RUNNING") return j.nodes.empty() ? "running" : "running on " + j.nodes;
  if (s == "COMPLETING") return "finishing";
  if (s == "SUSPENDED" || s == "STOPPED") return "suspended";
  if (s == "COMPLETED") return "completed";
  if (s == "FAILED") return "failed" + code();
  if (s == "CANCELLED") return j.cancelled_by.empty() ? "cancelled" : "cancelled by uid " + j.cancelled_by;
  if (s == "TIMEOUT") return "ended at its time limit";
  if (s == "PREEMPTED") return "preempted by a higher-priority job";
  if (s == "NODE_FAIL") return "a node failed (NODE_FAIL): resume from the last checkpoint";
  if (s == "OUT_OF_MEMORY") return "ran out of memory";
  if (s == "BOOT_FAIL") return "a node failed to boot";
  if (s == "DEADLINE") return "missed its deadline";
  if (s == "UNKNOWN") return "Slurm no longer knows the job (ended longer ago than MinJobAge, without accounting)";
  return upper(s);
}

std::string job_end_reason(const SlurmJobState& js, std::string_view log_tail) {
  std::string out = "job " + js.job_id + ": " +
                    (js.state == "UNKNOWN" ? std::string("Slurm no longer knows the job") : job_state_text(js));
  std::vector<std::string> lines;
  for (std::string line : lines_of(log_tail)) {
    line.erase(std::remove_if(line.begin(), line.end(), [](char c) { return (c >= 0 && c < 32) || c == 127; }),
               line.end());
    if (line.size() > 300) line = line.substr(0, 300) + "...";
    if (!trim(line).empty()) lines.push_back(trim(line));
  }
  static const char* runtime_marks[] = {"Error: ", "Error response from daemon", "docker: ", "crun: ", "runc: ",
                                        "OCI runtime"};
  std::vector<std::string> runtime;
  for (const std::string& l : lines)
    for (const char* m : runtime_marks)
      if (l.rfind(m, 0) == 0 || (std::string_view(m) == "OCI runtime" && l.find(m) != std::string::npos)) {
        runtime.push_back(l);
        break;
      }
  if (!runtime.empty()) {
    if (runtime.size() > 3) runtime.erase(runtime.begin(), runtime.end() - 3);
    out += "; the container runtime said: ";
    for (size_t i = 0; i < runtime.size(); ++i) out += (i ? " | " : "") + runtime[i];
  } else if (!lines.empty()) {
    if (lines.size() > 5) lines.erase(lines.begin(), lines.end() - 5);
    out += "; engine.log ends:";
    for (const std::string& l : lines) out += "\n  " + l;
  }
  return out;
}

std::optional<std::string> scheduler_stop_reason(const SlurmJobState& js, const std::string& engine_reason,
                                                 bool user_asked) {
  if (user_asked || engine_reason != kEngineSignalStop) return std::nullopt;
  const std::string job = "job " + js.job_id;
  const std::string resume = "; the engine saved a checkpoint as it stopped: resume to continue";
  if (js.state == "CANCELLED") {
    std::string who = "scancel by an administrator or another session; sacct would say who";
    if (js.cancelled_by == "0") who = "scancel by uid 0: an administrator or Slurm itself";
    else if (!js.cancelled_by.empty()) who = "scancel by uid " + js.cancelled_by;
    return "cancelled by Slurm, not from TrainDeck (" + who + "), " + job + resume;
  }
  if (js.state == "NODE_FAIL")
    return "a node of " + job + " failed (NODE_FAIL) and Slurm stopped the ranks that were left" + resume;
  if (js.state == "PREEMPTED") return job + " was preempted by a higher-priority job" + resume;
  return "stopped by a signal TrainDeck did not send (" + job + ": " + job_state_text(js) + ")" + resume;
}

void signal_job(Session& s, const std::string& job_id, const std::string& signal, bool full) {
  check_job_id(job_id);
  if (signal.empty() || !word_of(signal, ""))
    throw Error("'" + signal + "' is not a signal name (TERM, USR1, ...)");
  std::vector<std::string> argv{"scancel", "--signal=" + signal};
  if (full) argv.push_back("--full");
  argv.insert(argv.end(), {"--", job_id});
  const ExecResult r = s.exec(argv);
  if (r.exit_status != 0)
    throw Error(s.where() + ": scancel --signal=" + signal + " " + job_id + " failed (exit " +
                std::to_string(r.exit_status) + "): " + trim(r.err));
}

void cancel_job(Session& s, const std::string& job_id) {
  check_job_id(job_id);
  const ExecResult r = s.exec({"scancel", "--", job_id});
  if (r.exit_status != 0)
    throw Error(s.where() + ": scancel " + job_id + " failed (exit " + std::to_string(r.exit_status) + "): " + trim(r.err));
}

bool stop_job(Session& s, const std::string& job_id, int kill_timeout_ms) {
  SlurmJobState j = job_state(s, job_id);
  if (j.ended() || j.state == "UNKNOWN") return true;
  if (j.pending()) {
    cancel_job(s, job_id);
    return true;
  }
  try {
    signal_job(s, job_id, "TERM");
  } catch (const Error&) {
    // No step to signal yet (the batch script is in its set-up): the hard cancel below.
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(kill_timeout_ms);
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    j = job_state(s, job_id);
    if (j.ended() || j.state == "UNKNOWN") return true;
  }
  cancel_job(s, job_id);
  return false;
}

// ---- partitions --------------------------------------------------------------------------

PartitionInfo parse_sinfo(std::string_view out, const std::string& partition) {
  PartitionInfo info;
  std::set<std::string> names;
  bool any = false;
  for (const std::string& line : lines_of(out)) {
    const std::vector<std::string> f = split(line, '|');
    if (f.size() != 6) throw Error("sinfo printed a line that is not 6 fields: '" + line + "'");
    std::string part = trim(f[0]);
    const bool is_default = !part.empty() && part.back() == '*';
    if (is_default) part.pop_back();
    if (part.empty() || !word_of(part, "._-+")) throw Error("sinfo printed a partition name '" + part + "' that is not one");
    names.insert(part + (is_default ? " (default)" : ""));
    if (partition.empty() ? !is_default : part != partition) continue;
    any = true;
    info.name = part;
    info.is_default = is_default;
    info.time_limit = trim(f[4]);
    info.avail = trim(f[5]);
    info.node_names.push_back(trim(f[1]));
    std::string state = trim(f[2]);
    while (!state.empty() && !std::isalpha(static_cast<unsigned char>(state.back()))) state.pop_back();  // "down*", "idle~"
    if (state == "idle") ++info.nodes_idle;
    else if (state == "allocated" || state == "mixed" || state == "completing") ++info.nodes_allocated;
    else ++info.nodes_other;
    // GRES: "gpu:4", "gpu:a100:4(S:0-1)", "gpu:2,mps:200", "(null)".
    for (const std::string& g : split(trim(f[3]), ',')) {
      if (g.rfind("gpu", 0) != 0) continue;
      std::string item = g.substr(0, g.find('('));
      const auto colon = item.rfind(':');
      if (colon == std::string::npos) continue;
      const std::string n = item.substr(colon + 1);
      if (all_digits(n) && n.size() <= 6) info.gpus += std::stoi(n);
    }
  }
  if (!any) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw Error(partition.empty() ? "sinfo names no default partition (partitions: " + (list.empty() ? "none" : list) +
                                        "): choose a partition in the cluster's settings"
                                  : "the partition '" + partition + "' is not there (sinfo lists: " +
                                        (list.empty() ? "none" : list) + ")");
  }
  return info;
}

PartitionInfo partition_info(Session& s, const std::string& partition) {
  if (!partition.empty() && !word_of(partition, "._-+")) throw Error("'" + partition + "' is not a partition name");
  const ExecResult r = s.exec({"sinfo", "-h", "-N", "-o", "%P|%N|%T|%G|%l|%a"});
  if (r.exit_status != 0)
    throw Error(s.where() + ": sinfo failed (exit " + std::to_string(r.exit_status) + "): " + trim(r.err) +
                " (is Slurm's client installed on the login node and slurmctld reachable?)");
  return parse_sinfo(r.out, partition);
}

std::string partition_summary(const PartitionInfo& p) {
  std::string s = "partition " + p.name + (p.is_default ? " (default)" : "") + " " + p.avail + ": " +
                  std::to_string(p.nodes_idle) + " idle, " + std::to_string(p.nodes_allocated) + " allocated, " +
                  std::to_string(p.nodes_other) + " other node(s)";
  s += p.gpus > 0 ? "; " + std::to_string(p.gpus) + " GPUs" : "; no GPUs";
  return s + "; time limit " + p.time_limit;
}

// ---- runs --------------------------------------------------------------------------------

std::vector<std::string> read_job_ids(Session& s, const std::string& run_dir) {
  const ExecResult r = s.exec({"sh", "-c", "[ -f \"$1\" ] || exit 0; cat -- \"$1\"", "sh", run_dir + "/slurm-jobs"});
  if (r.exit_status != 0) throw Error(s.where() + ": cannot read " + run_dir + "/slurm-jobs: " + trim(r.err));
  std::vector<std::string> ids;
  for (const std::string& l : lines_of(r.out))
    if (all_digits(l) && std::find(ids.begin(), ids.end(), l) == ids.end()) ids.push_back(l);
  return ids;
}

SlurmRun start_slurm_run(Session& login, const SlurmSpec& spec, const std::filesystem::path& bundle_dir,
                         const std::filesystem::path& dataset_dir, const std::string& config_json,
                         const std::string& run_id, const SlurmStartOptions& opts) {
  if (const auto problems = validate(spec); !problems.empty())
    throw Error("the Slurm settings cannot be used: " + problems.front());
  if (!valid_run_id(run_id)) throw Error("'" + run_id + "' is not a run id (" + std::string(kRunIdRule) + ")");
  json cfg;
  try {
    cfg = json::parse(config_json);
  } catch (const std::exception& e) {
    throw Error(std::string("the run config is not JSON: ") + e.what());
  }
  // The login node only stores the files: deploy() checks it as for a CPU run (no GPU driver
  // or CUDA libraries there; the compute nodes have them), then the config gets its device.
  cfg["train"]["device"] = "cpu";
  SlurmRun run;
  run.run_id = run_id;
  // With a container: no bundle; the runtime and the image are checked here on the login node
  // (the compute nodes are not reachable over SSH; docs/slurm.md says what they need).
  DeployOptions dopts = opts.deploy;
  dopts.container = spec.container;
  run.deploy = deploy(login, bundle_dir, dataset_dir, cfg.dump(2) + "\n", spec.work_dir, run_id, opts.progress,
                      opts.cancel, dopts);
  run.paths = slurm_job_paths(run.deploy);
  if (spec.gpus_per_node > 0) {
    cfg["train"]["device"] = "cuda";
    cfg["data"]["path"] = run.deploy.dataset_dir;
    ExecOptions co;
    co.stdin_data = cfg.dump(2) + "\n";
    const ExecResult c = login.exec({"sh", "-c", "cat > \"$1\"", "sh", run.paths.config_path}, co);
    if (c.exit_status != 0) throw Error(login.where() + ": cannot write " + run.paths.config_path + ": " + trim(c.err));
  }
  run.script = sbatch_script(spec, run.paths, run_id, opts.resume);
  ExecOptions eo;
  eo.stdin_data = run.script;
  const ExecResult w = login.exec({"sh", "-c", "cat > \"$1.tmp\" && mv -f -- \"$1.tmp\" \"$1\"", "sh", run.paths.script_path}, eo);
  if (w.exit_status != 0) throw Error(login.where() + ": cannot write " + run.paths.script_path + ": " + trim(w.err));
  if (opts.cancel && opts.cancel->load()) throw Error("deploy cancelled");
  run.job_id = submit(login, run.paths.script_path);
  const ExecResult a = login.exec({"sh", "-c", "grep -qx -- \"$2\" \"$1\" 2>/dev/null || printf '%s\\n' \"$2\" >> \"$1\"",
                                   "sh", run.paths.jobs_path, run.job_id});
  if (a.exit_status != 0)
    throw Error(login.where() + ": job " + run.job_id + " was submitted but " + run.paths.jobs_path +
                " cannot be written: " + trim(a.err));
  return run;
}

}  // namespace td::remote
