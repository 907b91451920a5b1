// The engine in a container on a node (container.h): spec, JSON, checks, the run argv.
#include "remote/container.h"

#include <filesystem>
#include <set>

#include "engine/common/error.h"

namespace td::remote {

namespace {

using nlohmann::json;

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool has_control(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

ContainerRuntime parse_runtime(const std::string& s, const std::string& where) {
  if (s == "podman") return ContainerRuntime::Podman;
  if (s == "docker") return ContainerRuntime::Docker;
  if (s == "apptainer") return ContainerRuntime::Apptainer;
  throw Error(where + ".runtime: '" + s + "' is not a container runtime (podman, docker or apptainer)");
}

}  // namespace

namespace detail {

// podman/docker: adds --name td-<id>-r<rank> (the rank from the shell's TRAINDECK_RANK) in front
// of the run options. $1 the runtime, $2 the run id, then `run`'s options, image and command.
// The client keeps this shell's pid (exec): signals (a stop, the time limit's warning) reach it
// as before, and it hands them to the engine once. Around it:
//  * a container of this name left by an earlier attempt (its client killed: the container
//    trained on, and the resume failed "exit code 125", the name taken) is removed first;
//  * a watcher removes the container as soon as the client is gone however it ended (killed:
//    `podman run`'s container outlives its client), so nothing trains outside the scheduler or
//    the workbench. It ignores the signals of a stop and polls every second. It kills at once
//    (podman's --time 0; docker's rm -f does), as remove_containers() does: the run is failed
//    by then (its follower sees the client gone), and a graceful stop racing the follower
//    made the recorded end now "failed", now "stopped".
const char* const kContainerRunWrapper =
    "rt=$1; id=$2; shift 2\n"
    "name=\"td-$id-r${TRAINDECK_RANK:-0}\"\n"
    "now=; [ \"$rt\" = podman ] && now='--time 0'\n"
    "\"$rt\" rm -f $now \"$name\" >/dev/null 2>&1\n"
    "me=$$\n"
    "( trap '' TERM INT HUP USR1; while kill -0 \"$me\" 2>/dev/null; do sleep 1; done; \"$rt\" rm -f $now \"$name\" >/dev/null 2>&1 ) "
    "</dev/null >/dev/null 2>&1 &\n"
    "exec \"$rt\" run --name \"$name\" \"$@\"\n";

// $1 runtime, $2 run id: removes every container of the run on this node (td-<id>-r<rank>).
const char* const kContainerCleanScript =
    "rt=$1; id=$2\n"
    "\"$rt\" ps -a --format '{{.Names}}' 2>/dev/null | while read -r n; do\n"
    "  case $n in \"td-$id-r\"*) \"$rt\" rm -f \"$n\" >/dev/null 2>&1 ;; esac\n"
    "done\n"
    "exit 0\n";

}  // namespace detail

namespace {

// $1 runtime, $2 image. Exit 10: no runtime on PATH; 11: no such image (stderr says why);
// 12: docker's daemon cannot be reached.
const char* kCheckScript = "rt=$1; img=$2\n"
                           "command -v \"$rt\" >/dev/null 2>&1 || exit 10\n"
                           "case $rt in\n"
                           "  podman) \"$rt\" image exists \"$img\" || exit 11 ;;\n"
                           "  docker) \"$rt\" version >/dev/null 2>&1 || { \"$rt\" version 2>&1 | tail -n 3 >&2; exit 12; }\n"
                           "          \"$rt\" image inspect \"$img\" >/dev/null || exit 11 ;;\n"
                           "  apptainer) case $img in *://*) ;; *) [ -f \"$img\" ] || exit 11 ;; esac ;;\n"
                           "esac\n"
                           "exit 0\n";

// $1 the work directory. Prints the home (cwd), the absolute work directory and uid:gid.
const char* kPathsScript = "h=$(pwd) || exit 3\n"
                           "cd -- \"$1\" 2>/dev/null || exit 4\n"
                           "printf '%s\\n%s\\n%s:%s\\n' \"$h\" \"$(pwd)\" \"$(id -u)\" \"$(id -g)\"\n";

}  // namespace

const char* container_runtime_name(ContainerRuntime r) {
  switch (r) {
    case ContainerRuntime::Podman: return "podman";
    case ContainerRuntime::Docker: return "docker";
    case ContainerRuntime::Apptainer: return "apptainer";
  }
  return "podman";
}

ContainerMount parse_mount(const std::string& text) {
  const std::string form = " (write it as /path/on/node:/path/in/container, with :ro for read-only)";
  if (has_control(text) || text.find(',') != std::string::npos)
    throw Error("mount '" + text + "': a ',' or control character cannot be passed to a container runtime" + form);
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) throw Error("mount '" + text + "' is not host:container[:ro]" + form);
  ContainerMount m;
  m.host = parts[0];
  m.container = parts[1];
  if (parts.size() == 3) {
    if (parts[2] == "ro") m.read_only = true;
    else if (parts[2] != "rw")
      throw Error("mount '" + text + "': '" + parts[2] + "' is not a mount option (ro or rw)" + form);
  }
  if (m.host.empty() || m.host[0] != '/')
    throw Error("mount '" + text + "': the node path '" + m.host + "' is not absolute" + form);
  if (m.container.empty() || m.container[0] != '/')
    throw Error("mount '" + text + "': the container path '" + m.container + "' is not absolute" + form);
  // "/mnt/..", "/./" and "//" name the root too: judged on the normal form.
  const std::string normal = std::filesystem::path(m.container).lexically_normal().string();
  if (normal.find_first_not_of('/') == std::string::npos)
    throw Error("mount '" + text + "': the container's root '/' cannot be a mount target" + form);
  return m;
}

json to_json(const ContainerSpec& c) {
  json j = {{"runtime", container_runtime_name(c.runtime)}, {"image", c.image}};
  if (!c.mounts.empty()) j["mounts"] = c.mounts;
  return j;
}

ContainerSpec container_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected an object, got " + std::string(j.type_name()));
  ContainerSpec c;
  auto str = [&](const char* key) -> std::string {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    if (!it->is_string()) throw Error(where + "." + key + ": wrong type (" + std::string(it->type_name()) + ")");
    return it->get<std::string>();
  };
  const std::string rt = trim(str("runtime"));
  c.runtime = rt.empty() ? ContainerRuntime::Podman : parse_runtime(rt, where);
  c.image = trim(str("image"));
  if (const auto it = j.find("mounts"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw Error(where + ".mounts: expected a list of \"host:container[:ro]\" strings");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& m = (*it)[i];
      const std::string at = where + ".mounts[" + std::to_string(i) + "]";
      if (!m.is_string()) throw Error(at + ": wrong type (" + std::string(m.type_name()) + ")");
      try {
        parse_mount(m.get<std::string>());
      } catch (const Error& e) {
        throw Error(at + ": " + e.what());
      }
      c.mounts.push_back(m.get<std::string>());
    }
  }
  return c;
}

std::vector<std::string> validate(const ContainerSpec& c, const std::string& who) {
  std::vector<std::string> problems;
  if (!c.enabled()) {
    if (!c.mounts.empty()) problems.push_back(who + ": container mounts are set but no image: enter the image, or remove the mounts");
    return problems;
  }
  if (c.image.find_first_of(" \t\r\n") != std::string::npos || has_control(c.image))
    problems.push_back(who + ": the container image '" + c.image + "' holds whitespace; enter one image name");
  else if (c.image[0] == '-')
    problems.push_back(who + ": the container image '" + c.image + "' starts with '-' (it would read as an option)");
  std::set<std::string> targets;
  for (const std::string& text : c.mounts) {
    try {
      const ContainerMount m = parse_mount(text);
      if (!targets.insert(m.container).second)
        problems.push_back(who + ": two mounts go to " + m.container + " in the container; keep one");
    } catch (const Error& e) {
      problems.push_back(who + ": " + e.what());
    }
  }
  return problems;
}

std::string container_name(const std::string& run_id, int rank) {
  return "td-" + run_id + "-r" + std::to_string(rank);
}

const std::vector<std::string>& rank_env_names() {
  static const std::vector<std::string> names{"TRAINDECK_RANK",        "TRAINDECK_WORLD_SIZE",
                                              "TRAINDECK_LOCAL_RANK",  "TRAINDECK_LOCAL_WORLD_SIZE",
                                              "TRAINDECK_MASTER_ADDR", "TRAINDECK_MASTER_PORT",
                                              "TRAINDECK_GLOO_IFNAME", "NCCL_SOCKET_IFNAME"};
  return names;
}

ContainerPaths container_paths(Session& s, const std::string& work_dir) {
  ExecResult r = s.exec({"sh", "-c", kPathsScript, "sh", work_dir});
  if (r.exit_status == 4)
    throw Error(s.where() + ": the work directory " + work_dir + " does not exist on the node (deploy creates it)");
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < r.out.size()) {
    const size_t nl = r.out.find('\n', start);
    if (nl == std::string::npos) break;
    lines.push_back(r.out.substr(start, nl - start));
    start = nl + 1;
  }
  if (r.exit_status != 0 || lines.size() != 3 || lines[0].empty() || lines[0][0] != '/' || lines[1].empty() ||
      lines[1][0] != '/' || lines[1].find(':') != std::string::npos || lines[2].find_first_not_of("0123456789:") != std::string::npos)
    throw Error(s.where() + ": cannot resolve the work directory " + work_dir + " for the container (exit " +
                std::to_string(r.exit_status) + "): " + trim(r.err) +
                (lines.size() > 1 && lines[1].find(':') != std::string::npos
                     ? "; its absolute path holds ':', which no container mount can carry: choose another work directory"
                     : ""));
  return {lines[0], lines[1], lines[2]};
}

std::vector<std::string> container_command(const ContainerSpec& c, const ContainerPaths& p, const std::string& run_id,
                                           bool gpus, const std::vector<std::string>& env_names,
                                           const std::vector<std::string>& engine_args) {
  if (const auto problems = validate(c, "container"); !problems.empty()) throw Error(problems.front());
  if (!c.enabled()) throw Error("internal: container_command() for a node without a container image");
  const std::string work_mount = p.work_dir + ":" + p.work_dir;
  std::vector<std::string> argv;
  if (c.runtime == ContainerRuntime::Apptainer) {
    // apptainer passes the environment on and binds $HOME, /tmp and the cwd by default.
    argv = {"apptainer", "exec"};
    if (gpus) argv.push_back("--nv");
    argv.insert(argv.end(), {"--bind", work_mount, "--pwd", p.work_dir});
    for (const std::string& m : c.mounts) argv.insert(argv.end(), {"--bind", m});
    argv.push_back(c.image);
    argv.push_back("traindeck-engine");
  } else {
    const bool docker = c.runtime == ContainerRuntime::Docker;
    argv = {"sh", "-c", detail::kContainerRunWrapper, "sh", container_runtime_name(c.runtime), run_id,
            // --rm: nothing is left once the engine ends; --pull=never: an image is never fetched
            // at launch (check_container() said it is there); --network host: the rendezvous
            // address and port, and the interface names, are the node's own; --pid host: the
            // engine's pid (run_start's "pid", kept by the store for reattach and stop) is the
            // node's, as for a bare engine and for apptainer (which shares it by default).
            "--rm", "--pull=never", "--network", "host", "--pid", "host", "--entrypoint", "traindeck-engine",
            "-v", work_mount, "-w", p.work_dir, "--env", "HOME=" + p.work_dir};
    if (docker) argv.insert(argv.end(), {"--user", p.user});
    else argv.insert(argv.end(), {"--security-opt", "label=disable"});  // SELinux nodes: the bind mounts stay readable
    if (gpus) {
      if (docker) argv.insert(argv.end(), {"--gpus", "all"});
      else argv.insert(argv.end(), {"--device", "nvidia.com/gpu=all"});
      argv.insert(argv.end(), {"--ipc", "host"});
    }
    for (const std::string& name : env_names) argv.insert(argv.end(), {"--env", name});
    for (const std::string& m : c.mounts) argv.insert(argv.end(), {"-v", m});
    argv.push_back(c.image);
  }
  argv.insert(argv.end(), engine_args.begin(), engine_args.end());
  return argv;
}

void check_container(Session& s, const ContainerSpec& c) {
  const std::string rt = container_runtime_name(c.runtime);
  ExecResult r = s.exec({"sh", "-c", kCheckScript, "sh", rt, c.image});
  if (r.exit_status == 0) return;
  const std::string err = trim(r.err);
  if (r.exit_status == 10)
    throw Error(s.where() + ": the node has no " + rt + " on its PATH, so it cannot run the container image " +
                c.image + ": install " + rt + " there, or choose another runtime in the node's settings");
  if (r.exit_status == 11) {
    const std::string how = c.runtime == ContainerRuntime::Apptainer
                                ? "copy the .sif file there, or give a docker:// URI"
                                : "load or pull it there first (`" + rt + " load -i image.tar` or `" + rt + " pull " +
                                      c.image + "`), or fix the image name";
    throw Error(s.where() + ": " + rt + " on the node has no image " + c.image + (err.empty() ? "" : " (" + err + ")") +
                ": " + how);
  }
  if (r.exit_status == 12)
    throw Error(s.where() + ": docker on the node cannot reach its daemon (" + err +
                "): start dockerd there, or add the node user to the docker group");
  throw Error(s.where() + ": checking the container image " + c.image + " with " + rt + " failed (exit " +
              std::to_string(r.exit_status) + "): " + err);
}

std::string container_engine_version(Session& s, const ContainerSpec& c) {
  std::vector<std::string> argv;
  if (c.runtime == ContainerRuntime::Apptainer)
    argv = {"apptainer", "exec", c.image, "traindeck-engine", "--version"};
  else
    argv = {container_runtime_name(c.runtime), "run", "--rm", "--pull=never", "--network", "none", "--entrypoint",
            "traindeck-engine", c.image, "--version"};
  ExecOptions eo;
  eo.timeout_ms = 300000;  // a first start of a large image unpacks its layers
  ExecResult r = s.exec(argv, eo);
  const std::string out = trim(r.out);
  if (r.exit_status != 0 || out.rfind("traindeck-engine", 0) != 0)
    throw Error(s.where() + ": the engine in the container image " + c.image + " does not run (`" +
                container_runtime_name(c.runtime) + " ... traindeck-engine --version`, exit " +
                std::to_string(r.exit_status) + "): " + trim(r.err.empty() ? r.out : r.err) +
                "; the image needs traindeck-engine on its PATH (packaging/Containerfile, ./traindeck.sh image)");
  return out;
}

std::string remove_containers(Session& s, const ContainerSpec& c, const std::vector<std::string>& names) {
  if (c.runtime == ContainerRuntime::Apptainer || names.empty()) return {};
  // podman's rm -f stops with SIGTERM first and waits 10 s; --time 0 kills at once, as docker's does.
  std::vector<std::string> argv{container_runtime_name(c.runtime), "rm", "-f"};
  if (c.runtime == ContainerRuntime::Podman) argv.insert(argv.end(), {"--time", "0"});
  argv.push_back("--");
  argv.insert(argv.end(), names.begin(), names.end());
  try {
    ExecResult r = s.exec(argv);
    return r.exit_status == 0 ? std::string() : trim(r.err);
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace td::remote
