// Deploy, node checks and detached launch (deploy.h).
#include "remote/deploy.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "remote/sftp.h"

namespace td::remote {
namespace fs = std::filesystem;

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string join(const std::string& dir, const std::string& rel) {
  if (dir.empty()) return rel;
  return dir.back() == '/' ? dir + rel : dir + "/" + rel;
}

void check_cancel(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw td::Error("deploy cancelled");
}

// One command for the NVIDIA driver (when $2 is 1) and the folder of each node library.
// Arguments: $1 a folder put first on PATH (or empty), $2 "1": query the driver, $3 "1": search
// the default folders too, $4 the number of configured folders, then those folders, then the
// sonames. Prints smi_missing=1 | smi_rc=N and smi=<line> per GPU, then found=<soname>:<dir>
// or missing=<soname> per library. Every value is a positional argument, never interpolated.
const char* kNodeLibScript = R"SH(extra=$1; driver=$2; defaults=$3; n=$4; shift 4
[ -n "$extra" ] && PATH="$extra:$PATH"
if [ "$driver" = 1 ]; then
  if command -v nvidia-smi >/dev/null 2>&1; then
    if command -v timeout >/dev/null 2>&1; then t="timeout 15"; else t=; fi
    out=$($t nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1); rc=$?
    echo "smi_rc=$rc"
    printf '%s
' "$out" | sed 's/^/smi=/'
  else
    echo "smi_missing=1"
  fi
fi
nl='
'
cands=
while [ "$n" -gt 0 ]; do cands="$cands$1$nl"; shift; n=$((n-1)); done
if [ "$defaults" = 1 ]; then
  [ -n "$CUDA_HOME" ] && cands="$cands$CUDA_HOME/lib64$nl"
  for d in /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 "/usr/lib/$(uname -m)-linux-gnu"       "$HOME"/.local/lib/python3*/site-packages/nvidia/*/lib       /usr/local/lib/python3*/site-packages/nvidia/*/lib /usr/local/lib/python3*/dist-packages/nvidia/*/lib       /usr/lib/python3*/site-packages/nvidia/*/lib /usr/lib/python3/dist-packages/nvidia/*/lib       /opt/conda/lib/python3*/site-packages/nvidia/*/lib; do
    case $d in *:*) continue ;; esac
    [ -d "$d" ] && cands="$cands$d$nl"
  done
fi
set -f
IFS=$nl
for so in "$@"; do
  f=
  for d in $cands; do
    if [ -f "$d/$so" ]; then f=$d; break; fi
  done
  case $f in '') printf 'missing=%s
' "$so"; continue ;; /*) ;; *) f="$PWD/$f" ;; esac
  printf 'found=%s:%s
' "$so" "$f"
done
)SH";

struct NodeLibScan {
  bool smi_missing = false;
  int smi_rc = 0;
  std::string smi_out;                  // nvidia-smi's output lines
  std::vector<std::string> driver_versions;
  std::vector<std::pair<std::string, std::string>> found;  // soname, remote folder
  std::vector<std::string> missing;                        // sonames
};

}  // namespace

std::string minimum_nvidia_driver(int cuda_major) {
  // NVIDIA, CUDA Toolkit release notes, "CUDA Toolkit and Minimum Required Driver Version for
  // CUDA Minor Version Compatibility" (Linux x86_64).
  switch (cuda_major) {
    case 11: return "450.80.02";
    case 12: return "525.60.13";
    case 13: return "580";
    default: return "";
  }
}

// The driver and node-library scan (kNodeLibScript), parsed.
static NodeLibScan scan_node(Session& s, const BundleManifest& m, const DeployOptions& o, bool libs) {
  std::vector<std::string> argv{"sh", "-c", kNodeLibScript, "sh", o.extra_path, m.cuda_major.empty() ? "0" : "1",
                                o.search_default_dirs ? "1" : "0"};
  std::vector<std::string> dirs = libs ? o.node_lib_dirs : std::vector<std::string>{};
  for (const std::string& d : dirs)
    if (d.empty() || d.find(':') != std::string::npos || d.find('\n') != std::string::npos)
      throw td::Error("node library folder '" + d + "' cannot be used: it is empty or holds ':' or a newline "
                      "(LD_LIBRARY_PATH cannot carry it); choose another folder");
  argv.push_back(std::to_string(dirs.size()));
  argv.insert(argv.end(), dirs.begin(), dirs.end());
  if (libs)
    for (const NodeLibrary& l : m.node_libs) argv.push_back(l.soname);
  ExecResult r = s.exec(argv);
  if (r.exit_status != 0)
    throw td::Error(s.where() + ": the node library and driver check did not run (exit " +
                    std::to_string(r.exit_status) + "): " + trim(r.err));
  NodeLibScan scan;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), val = line.substr(eq + 1);
    if (key == "smi_missing") scan.smi_missing = true;
    else if (key == "smi_rc") scan.smi_rc = std::atoi(val.c_str());
    else if (key == "smi") {
      scan.smi_out += val + "\n";
      const std::string v = trim(val.substr(val.find_first_not_of(' ') == std::string::npos ? val.size()
                                                                                          : val.find_first_not_of(' ')));
      if (!v.empty() && v.find_first_not_of("0123456789.") == std::string::npos) scan.driver_versions.push_back(v);
    } else if (key == "found") {
      const size_t colon = val.find(':');
      if (colon != std::string::npos) scan.found.emplace_back(val.substr(0, colon), val.substr(colon + 1));
    } else if (key == "missing") {
      scan.missing.push_back(val);
    }
  }
  return scan;
}

// The NVIDIA driver against the bundle's CUDA runtime; fills r.driver_version.
static void check_driver(Session& s, const BundleManifest& m, const NodeLibScan& scan, DeployResult& r) {
  if (m.cuda_major.empty()) return;
  const std::string min = minimum_nvidia_driver(std::atoi(m.cuda_major.c_str()));
  if (min.empty())
    throw td::Error("the engine bundle uses CUDA " + m.cuda_major +
                    ", for which TrainDeck knows no minimum NVIDIA driver: update TrainDeck");
  if (scan.smi_missing)
    throw td::Error(s.where() + ": the engine bundle uses CUDA " + m.cuda_major +
                    " but the node has no nvidia-smi on its PATH (no NVIDIA driver?): install the NVIDIA driver " +
                    min + " or newer there, or choose a node with a GPU");
  if (scan.smi_rc != 0 || scan.driver_versions.empty())
    throw td::Error(s.where() + ": nvidia-smi failed on the node (exit " + std::to_string(scan.smi_rc) +
                    "): " + trim(scan.smi_out) + ". Check the NVIDIA driver there (nvidia-smi must list the GPUs)");
  std::string lowest = scan.driver_versions.front();
  for (const std::string& v : scan.driver_versions)
    if (compare_versions(v, lowest) < 0) lowest = v;
  r.driver_version = lowest;
  if (compare_versions(lowest, min) < 0)
    throw td::Error(s.where() + ": the node's NVIDIA driver is " + lowest + " but the engine bundle's CUDA " +
                    m.cuda_major + " runtime needs driver " + min +
                    " or newer (NVIDIA's CUDA Toolkit release notes): update the driver on the node, or use an "
                    "engine built with an older CUDA");
}

// uname -m and glibc: possible before anything is uploaded.
static void check_platform(Session& s, const BundleManifest& m, DeployResult& r) {
  ExecResult u = s.exec({"uname", "-m"});
  const std::string arch = trim(u.out);
  if (u.exit_status != 0 || arch.empty())
    throw td::Error(s.where() + ": `uname -m` failed on the node: " + trim(u.err));
  if (arch != m.arch)
    throw td::Error(s.where() + ": the node's architecture is " + arch + " but the engine bundle is built for " +
                    m.arch + ": build the engine on a " + arch + " machine");
  ExecResult g = s.exec({"getconf", "GNU_LIBC_VERSION"});
  std::string glibc = trim(g.out);
  if (glibc.rfind("glibc ", 0) == 0) glibc = glibc.substr(6);
  if (g.exit_status != 0 || glibc.empty())
    throw td::Error(s.where() + ": the node has no GNU C library (getconf GNU_LIBC_VERSION failed: " + trim(g.err) +
                    "); the engine needs glibc " + m.glibc + " or newer");
  r.node_glibc = glibc;
  if (!m.glibc.empty() && compare_versions(glibc, m.glibc) < 0)
    throw td::Error(s.where() + ": the node's glibc is " + glibc + " but the engine bundle needs glibc " + m.glibc +
                    " or newer: build the engine on a system with an older glibc, or use a newer node OS");
}

static void check_engine_runs(Session& s, const std::string& remote_bundle_dir, DeployResult& r) {
  const std::string engine = join(remote_bundle_dir, "bin/traindeck-engine");
  ExecResult v = s.exec({engine, "--version"});
  if (v.exit_status != 0)
    throw td::Error(s.where() + ": the bundled engine does not run on the node (" + engine + " --version, exit " +
                    std::to_string(v.exit_status) + (v.exit_signal.empty() ? "" : ", signal " + v.exit_signal) +
                    "): " + trim(v.err.empty() ? v.out : v.err));
  r.engine_version = trim(v.out);
}

void check_node(Session& s, const BundleManifest& m, const std::string& remote_bundle_dir, DeployResult& r,
                const DeployOptions& options, bool gpu_run) {
  check_platform(s, m, r);
  if (gpu_run && !m.cuda_major.empty()) check_driver(s, m, scan_node(s, m, options, false), r);
  check_engine_runs(s, remote_bundle_dir, r);
}

std::string remote_dataset_name(const fs::path& dataset_dir) {
  const fs::path abs = fs::absolute(dataset_dir).lexically_normal();
  std::string name = abs.filename().empty() ? abs.parent_path().filename().string() : abs.filename().string();
  // The manifest names every shard with its CRC and every source with its size and mtime: two
  // datasets with the same folder name (data/ of two corpora, or one folder prepared again)
  // get folders of their own, so a run on the node never reads another dataset's tokens.
  const fs::path manifest = abs / "manifest.json";
  std::error_code ec;
  if (fs::is_regular_file(manifest, ec)) name.append("-").append(sha256_file(manifest).substr(0, 12));
  return name;
}

DeployResult deploy(Session& s, const fs::path& bundle_dir, const fs::path& dataset_dir, const std::string& config_json,
                    const std::string& remote_work_dir, const std::string& run_id, const DeployProgress& progress,
                    const std::atomic<bool>* cancel, const DeployOptions& options) {
  const bool container = options.container.enabled();
  if (container) {
    if (const auto problems = validate(options.container, s.where()); !problems.empty())
      throw td::Error(problems.front());
  }
  const BundleManifest m = container ? BundleManifest{} : read_bundle_manifest(bundle_dir);
  if (!fs::is_directory(dataset_dir))
    throw td::Error("dataset folder " + dataset_dir.string() + " is missing: prepare the dataset first");
  nlohmann::json cfg;
  try {
    cfg = nlohmann::json::parse(config_json);
  } catch (const std::exception& e) {
    throw td::Error(std::string("the run config is not JSON: ") + e.what());
  }
  DeployResult r;
  const std::string remote_bundle = join(remote_work_dir, "engine/" + m.hash);
  // In a container the engine is the image's traindeck-engine (on its PATH).
  r.engine = container ? std::string("traindeck-engine") : join(remote_bundle, "bin/traindeck-engine");
  r.container = options.container;
  r.dataset_dir = join(remote_work_dir, "datasets/" + remote_dataset_name(dataset_dir));
  r.run_dir = join(remote_work_dir, "runs/" + run_id);
  r.config_path = join(r.run_dir, "config.json");

  // A wrong node fails before anything is uploaded: a container node needs its runtime and
  // image (the image brings engine, libraries and glibc), a bare node the bundle's platform.
  if (container) check_container(s, options.container);
  else check_platform(s, m, r);
  // The CUDA libraries and the driver matter only to a run on GPUs: the engine loads its CUDA
  // module (and with it cuBLAS) only for train.device "cuda"/"cuda:N" (engine/ops/backend.h).
  const bool gpu_run = cfg.contains("train") && cfg["train"].is_object() && cfg["train"].value("device", std::string("cpu")) != "cpu";
  r.gpu_run = gpu_run;
  std::string node_lib_path;  // <bundle>/node-lib-path
  std::vector<const NodeLibrary*> upload_libs;
  if (!container && gpu_run && (!m.node_libs.empty() || !m.cuda_major.empty())) {
    const NodeLibScan scan = scan_node(s, m, options, true);
    check_driver(s, m, scan, r);
    for (const NodeLibrary& l : m.node_libs) {
      std::string dir;
      for (const auto& [so, d] : scan.found)
        if (so == l.soname) dir = d;
      if (dir.empty()) {  // the node lacks it: <work>/cuda/<soname>/<soname>, i.e. ../../cuda/<soname>
        upload_libs.push_back(&l);
        dir = join(remote_work_dir, "cuda/" + l.soname);
        node_lib_path += "../../cuda/" + l.soname + "\n";
        ++r.node_libs_uploaded;
      } else {
        node_lib_path += dir + "\n";
        ++r.node_libs_found;
      }
      if (std::find(r.node_lib_dirs.begin(), r.node_lib_dirs.end(), dir) == r.node_lib_dirs.end())
        r.node_lib_dirs.push_back(dir);
    }
  }

  // What to move: (local, remote, size).
  struct Item {
    fs::path local;
    std::string remote;
    uint64_t size;
  };
  std::vector<Item> items;
  std::stringstream local_manifest;
  if (!container) local_manifest << std::ifstream(bundle_dir / "manifest.json", std::ios::binary).rdbuf();
  bool bundle_there = container;  // a container node needs no bundle: as if it were there
  if (!container) {
    ExecResult rm = s.exec({"cat", "--", join(remote_bundle, "manifest.json")});
    bundle_there = rm.exit_status == 0 && rm.out == local_manifest.str();
  }
  uint64_t total = 0;
  if (!bundle_there) {
    for (const BundleFile& f : m.files) {
      items.push_back({bundle_dir / f.path, join(remote_bundle, f.path), f.size});
      total += f.size;
    }
  }
  for (const NodeLibrary* l : upload_libs) {
    if (!fs::is_regular_file(l->source))
      throw td::Error(s.where() + " lacks " + l->soname + " and its local copy " + l->source +
                      " is gone: make the bundle again on a machine with the CUDA toolkit, or install " +
                      l->soname + " on the node (and give its folder in the cluster's CUDA library path)");
    items.push_back({l->source, join(remote_work_dir, "cuda/" + l->soname + "/" + l->soname),
                     static_cast<uint64_t>(fs::file_size(l->source))});
    total += items.back().size;
  }
  std::vector<fs::path> data_files;
  for (const auto& e : fs::recursive_directory_iterator(dataset_dir))
    if (e.is_regular_file()) data_files.push_back(e.path());
  std::sort(data_files.begin(), data_files.end());
  for (const fs::path& p : data_files) {
    const uint64_t size = fs::file_size(p);
    items.push_back({p, join(r.dataset_dir, fs::relative(p, dataset_dir).generic_string()), size});
    total += size;
  }
  uint64_t done = 0;
  if (progress) progress(0, total);
  for (const Item& it : items) {
    check_cancel(cancel);
    TransferOptions t;
    t.cancel = cancel;
    t.skip_same = true;
    const uint64_t base = done;
    if (progress) t.progress = [&](uint64_t d, uint64_t) { progress(base + d, total); };
    TransferResult tr = upload(s, it.local, it.remote, t);
    if (tr.outcome == TransferResult::Outcome::Cancelled) throw td::Error("deploy cancelled");
    r.bytes_sent += tr.bytes_sent;
    (tr.outcome == TransferResult::Outcome::Skipped ? r.files_skipped : r.files_sent)++;
    done = base + it.size;
    if (progress) progress(done, total);
  }
  if (!bundle_there) {
    // SFTP creates files 0644: the files under bin/ (launcher, binary) get their x bit back,
    // then the manifest goes last, so a bundle folder with a manifest is complete.
    std::vector<std::string> chmod{"chmod", "755", "--"};
    for (const BundleFile& f : m.files)
      if (f.path.rfind("bin/", 0) == 0) chmod.push_back(join(remote_bundle, f.path));
    ExecResult c = s.exec(chmod);
    if (c.exit_status != 0) throw td::Error(s.where() + ": chmod of the engine bundle failed: " + trim(c.err));
    TransferOptions t;
    t.skip_same = true;
    r.bytes_sent += upload(s, bundle_dir / "manifest.json", join(remote_bundle, "manifest.json"), t).bytes_sent;
  } else if (!container) {
    r.files_skipped += static_cast<int>(m.files.size());
  }
  check_cancel(cancel);
  if (gpu_run && !m.node_libs.empty()) {
    ExecOptions eo;
    eo.stdin_data = node_lib_path;
    ExecResult w = s.exec({"sh", "-c", "cat > \"$1\"", "sh", join(remote_bundle, "node-lib-path")}, eo);
    if (w.exit_status != 0)
      throw td::Error(s.where() + ": cannot write " + join(remote_bundle, "node-lib-path") + ": " + trim(w.err));
  }

  // The engine takes a relative data.path from the config file's folder (<work>/runs/<id>/), so a
  // work directory relative to the remote home gets the dataset as ../../datasets/<name>.
  cfg["data"]["path"] = r.dataset_dir.empty() || r.dataset_dir[0] == '/'
                            ? r.dataset_dir
                            : "../../datasets/" + remote_dataset_name(dataset_dir);
  ExecOptions eo;
  eo.stdin_data = cfg.dump(2) + "\n";
  ExecResult w = s.exec({"sh", "-c", "mkdir -p -- \"$1\" && cat > \"$2\"", "sh", r.run_dir, r.config_path}, eo);
  if (w.exit_status != 0) throw td::Error(s.where() + ": cannot write " + r.config_path + ": " + trim(w.err));

  if (container) {
    r.container_paths = container_paths(s, remote_work_dir);
    r.engine_version = container_engine_version(s, options.container);
  } else {
    check_engine_runs(s, remote_bundle, r);
  }
  return r;
}

int64_t launch_detached(Session& s, const DeployResult& d, const std::string& run_id, bool resume) {
  // Fixed script; the log path and the argv arrive as positional parameters.
  const std::string script = "log=\"$1\"; shift; setsid \"$@\" </dev/null >/dev/null 2>>\"$log\" & echo $!";
  const bool container = d.container.enabled();
  auto path = [&](const std::string& p) { return container ? d.container_paths.absolute(p) : p; };
  std::vector<std::string> engine_args{"train", "--config", path(d.config_path), "--out", path(d.run_dir),
                                       "--run-id", run_id, "--no-events-stdout"};
  if (resume) engine_args.push_back("--resume");
  std::vector<std::string> argv{"sh", "-c", script, "sh", join(d.run_dir, "engine.log")};
  if (container) {
    const std::vector<std::string> run = container_command(d.container, d.container_paths, run_id, d.gpu_run, {}, engine_args);
    argv.insert(argv.end(), run.begin(), run.end());
  } else {
    argv.push_back(d.engine);
    argv.insert(argv.end(), engine_args.begin(), engine_args.end());
  }
  ExecResult r = s.exec(argv);
  const std::string out = trim(r.out);
  if (r.exit_status != 0 || out.empty() || out.find_first_not_of("0123456789") != std::string::npos)
    throw td::Error(s.where() + ": launching the engine failed (exit " + std::to_string(r.exit_status) + "): " +
                    trim(r.err) + trim(r.out));
  return std::stoll(out);
}

}  // namespace td::remote
