// Running the engine inside an OCI image on a node instead of the bare bundle: the container
// setting of a node (runtime, image, extra mounts), its JSON form and checks, the node check
// (runtime installed, image present, the engine in it runs) and the argv that starts a rank in
// a container. Plain C++, no Qt. docs/containers.md explains each runtime's flags.
//
// JSON form (a node's "container" field in remote/cluster.h's cluster JSON; absent = bare):
//   {"runtime": "podman"|"docker"|"apptainer", "image": "localhost/traindeck-engine:0.1.0",
//    "mounts": ["/scratch/corpora:/scratch/corpora:ro", "/data:/data"]}
//
// What a container run looks like (container_command()): for podman and docker
//   <runtime> run --name td-<run id>-r<rank> --rm --pull=never --network host --pid host
//     --entrypoint traindeck-engine -v <work>:<work> -w <work> --env HOME=<work> [--env NAME]...
//     [GPUs] [extra mounts] <image> train ...
// (podman adds --security-opt label=disable for SELinux nodes; docker adds --user <uid>:<gid>
// so files in the run folder belong to the node user), for apptainer
//   apptainer exec [--nv] --bind <work>:<work> --pwd <work> [extra binds] <image> traindeck-engine train ...
// The node's work directory is mounted at the same absolute path, so every path deploy() wrote
// (config.json's data.path, the run folder; relative ones made absolute with
// ContainerPaths::absolute) means the same inside: events.jsonl, checkpoints
// and logs land in the run folder on the node, outside the container. The rank environment
// (TRAINDECK_RANK, ...) is passed by name (`--env NAME` takes the value from the launching
// shell; apptainer passes the environment on by itself). The runtime's own settings
// (containers.conf, registries, rootless storage) are the node's business.
//
// Threading rule: the functions that take a Session are used on that Session's thread; the rest
// are pure and may be called from any thread.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "remote/session.h"

namespace td::remote {

/// The program that runs images on a node.
enum class ContainerRuntime { Podman, Docker, Apptainer };

/// "podman" | "docker" | "apptainer" (also the program's name on the node).
const char* container_runtime_name(ContainerRuntime r);

/// One extra bind mount "host:container[:ro]".
struct ContainerMount {
  std::string host;       ///< absolute path on the node
  std::string container;  ///< absolute path inside the container
  bool read_only = false; ///< ":ro"
};

/// Parses "host:container", "host:container:ro" or "host:container:rw". Both paths absolute,
/// without ':', ',' or control characters (the runtimes' mount syntax cannot carry them), the
/// container path not "/". Errors: td::Error saying what is wrong and the expected form.
ContainerMount parse_mount(const std::string& text);

/// How a node runs the engine. An empty image means the bare bundle (no container).
struct ContainerSpec {
  ContainerRuntime runtime = ContainerRuntime::Podman;
  /// podman/docker: an image reference present on the node ("localhost/traindeck-engine:0.1.0",
  /// "registry.lab/td:1"; never pulled at launch, see check_container()); apptainer: a .sif
  /// file on the node, or a URI ("docker://...") apptainer resolves itself.
  std::string image;
  std::vector<std::string> mounts;  ///< extra mounts, "host:container[:ro]" each (parse_mount)

  bool enabled() const { return !image.empty(); }
  bool operator==(const ContainerSpec&) const = default;
};

/// {"runtime":..., "image":..., "mounts":[...]} ("mounts" only when there are some).
nlohmann::json to_json(const ContainerSpec& c);

/// Reads the JSON form; a missing runtime is podman. `where` prefixes errors ("nodes[0].container").
/// Errors: td::Error naming the field for a wrong type, an unknown runtime or a malformed mount.
ContainerSpec container_from_json(const nlohmann::json& j, const std::string& where = "container");

/// Problems a person must fix, one line each, prefixed with `who` ("node 2"): an image that is
/// empty while mounts are set, holds whitespace or starts with '-', a malformed mount, a mount
/// onto the same container path twice. Empty when usable (a disabled spec without mounts is).
std::vector<std::string> validate(const ContainerSpec& c, const std::string& who);

/// The container name of a rank: "td-<run id>-r<rank>" (rank 0 for a single-rank run).
std::string container_name(const std::string& run_id, int rank);

/// Where a container of the node finds its files (container_paths()).
struct ContainerPaths {
  std::string home;      ///< the SSH session's working directory (the remote home): relative paths start here
  std::string work_dir;  ///< the node's work directory, absolute (mounted at the same path)
  std::string user;      ///< "<uid>:<gid>" of the node user (docker's --user)

  /// `path` as the container must see it: unchanged when absolute, else under `home` (the
  /// container's working directory is the work directory, not the home).
  std::string absolute(const std::string& path) const {
    return path.empty() || path[0] == '/' ? path : home + "/" + path;
  }
};

/// Resolves `work_dir` (absolute, or relative to the remote home; it must exist) on the node in
/// one command. Errors: td::Error when it does not exist or the answer is malformed.
ContainerPaths container_paths(Session& s, const std::string& work_dir);

/// The argv that runs `traindeck-engine <engine_args...>` (paths in them absolute: the working
/// directory inside is the work directory) in the container on the node, to be
/// started by the launch scripts of deploy.cpp/multinode.cpp in place of the bundle's launcher.
/// The rank in the container name comes from the launching shell's TRAINDECK_RANK (0 when unset:
/// a single-rank run); podman and docker get a fixed `sh -c` wrapper that adds --name (every
/// value stays a positional argument). `gpus`: pass the node's GPUs the runtime's way (podman
/// CDI `--device nvidia.com/gpu=all`, docker `--gpus all`, apptainer `--nv`; podman and docker
/// also get --ipc host so NCCL's shared-memory transport works between the ranks' containers).
/// `env_names`: variables passed by name from the launching shell. Errors: td::Error for an
/// invalid spec (validate()).
namespace detail {
/// The `sh -c` wrapper of a podman/docker rank (container_command()'s argv[2]; $1 the runtime,
/// $2 the run id, then `run`'s arguments): removes a stale container of the rank's name first,
/// execs `<rt> run --name td-<id>-r<rank> ...` (the client keeps the pid: signals reach it), and
/// leaves a watcher that removes the container once the client is gone however it ended.
extern const char* const kContainerRunWrapper;
/// An `sh -c` script, $1 the runtime, $2 the run id: removes every container of the run on this
/// node (td-<id>-r*; Slurm's cleanup step after srun, docs/slurm.md). Exits 0.
extern const char* const kContainerCleanScript;
}  // namespace detail

std::vector<std::string> container_command(const ContainerSpec& c, const ContainerPaths& p, const std::string& run_id,
                                           bool gpus, const std::vector<std::string>& env_names,
                                           const std::vector<std::string>& engine_args);

/// The names the multi-rank launch passes into each rank's container: TRAINDECK_RANK,
/// TRAINDECK_WORLD_SIZE, TRAINDECK_LOCAL_RANK, TRAINDECK_LOCAL_WORLD_SIZE, TRAINDECK_MASTER_ADDR,
/// TRAINDECK_MASTER_PORT, TRAINDECK_GLOO_IFNAME, NCCL_SOCKET_IFNAME.
const std::vector<std::string>& rank_env_names();

/// Checks the node can run `c` before anything is uploaded: the runtime is on the PATH of the
/// SSH session, and the image is there (podman `image exists`, docker `image inspect`, apptainer:
/// the .sif file exists; a URI is left to apptainer). Nothing is pulled. Errors: td::Error naming
/// the node, the runtime and the image, and what to do (install the runtime; load or pull the
/// image on the node, e.g. `podman load -i image.tar`).
void check_container(Session& s, const ContainerSpec& c);

/// `traindeck-engine --version` inside the image (no network, removed after): the engine's
/// version line. Errors: td::Error with the runtime's output when it does not run.
std::string container_engine_version(Session& s, const ContainerSpec& c);

/// Hard stop: `<runtime> rm -f <names>` for podman and docker (SIGKILL to the `run` client leaves
/// the container running under conmon / the daemon); nothing for apptainer (its processes are
/// children of the killed one). Never throws: returns the runtime's error text, "" on success.
std::string remove_containers(Session& s, const ContainerSpec& c, const std::vector<std::string>& names);

}  // namespace td::remote
