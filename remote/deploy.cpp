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

}  // namespace

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

void check_node(Session& s, const BundleManifest& m, const std::string& remote_bundle_dir, DeployResult& r) {
  check_platform(s, m, r);
  check_engine_runs(s, remote_bundle_dir, r);
}

DeployResult deploy(Session& s, const fs::path& bundle_dir, const fs::path& dataset_dir, const std::string& config_json,
                    const std::string& remote_work_dir, const std::string& run_id, const DeployProgress& progress,
                    const std::atomic<bool>* cancel) {
  const BundleManifest m = read_bundle_manifest(bundle_dir);
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
  r.engine = join(remote_bundle, "bin/traindeck-engine");
  const std::string name = fs::absolute(dataset_dir).lexically_normal().filename().string().empty()
                               ? fs::absolute(dataset_dir).lexically_normal().parent_path().filename().string()
                               : fs::absolute(dataset_dir).lexically_normal().filename().string();
  r.dataset_dir = join(remote_work_dir, "datasets/" + name);
  r.run_dir = join(remote_work_dir, "runs/" + run_id);
  r.config_path = join(r.run_dir, "config.json");

  check_platform(s, m, r);  // a wrong node fails before anything is uploaded

  // What to move: (local, remote, size).
  struct Item {
    fs::path local;
    std::string remote;
    uint64_t size;
  };
  std::vector<Item> items;
  std::stringstream local_manifest;
  local_manifest << std::ifstream(bundle_dir / "manifest.json", std::ios::binary).rdbuf();
  ExecResult rm = s.exec({"cat", "--", join(remote_bundle, "manifest.json")});
  const bool bundle_there = rm.exit_status == 0 && rm.out == local_manifest.str();
  uint64_t total = 0;
  if (!bundle_there) {
    for (const BundleFile& f : m.files) {
      items.push_back({bundle_dir / f.path, join(remote_bundle, f.path), f.size});
      total += f.size;
    }
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
  } else {
    r.files_skipped += static_cast<int>(m.files.size());
  }
  check_cancel(cancel);

  cfg["data"]["path"] = r.dataset_dir;
  ExecOptions eo;
  eo.stdin_data = cfg.dump(2) + "\n";
  ExecResult w = s.exec({"sh", "-c", "mkdir -p -- \"$1\" && cat > \"$2\"", "sh", r.run_dir, r.config_path}, eo);
  if (w.exit_status != 0) throw td::Error(s.where() + ": cannot write " + r.config_path + ": " + trim(w.err));

  check_engine_runs(s, remote_bundle, r);
  return r;
}

int64_t launch_detached(Session& s, const DeployResult& d, const std::string& run_id) {
  // Fixed script; the log path and the argv arrive as positional parameters.
  const std::string script = "log=\"$1\"; shift; setsid \"$@\" </dev/null >/dev/null 2>>\"$log\" & echo $!";
  ExecResult r = s.exec({"sh", "-c", script, "sh", join(d.run_dir, "engine.log"), d.engine, "train", "--config",
                         d.config_path, "--out", d.run_dir, "--run-id", run_id, "--no-events-stdout"});
  const std::string out = trim(r.out);
  if (r.exit_status != 0 || out.empty() || out.find_first_not_of("0123456789") != std::string::npos)
    throw td::Error(s.where() + ": launching the engine failed (exit " + std::to_string(r.exit_status) + "): " +
                    trim(r.err) + trim(r.out));
  return std::stoll(out);
}

}  // namespace td::remote
