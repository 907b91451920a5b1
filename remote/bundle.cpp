// The engine bundle (bundle.h): ldd-resolved libraries, an sh launcher, a manifest.
#include "remote/bundle.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "remote/quote.h"
#include "remote/sftp.h"

namespace td::remote {
namespace fs = std::filesystem;

namespace {

// Runs a quoted command line through /bin/sh; returns stdout (+stderr when merged) and the exit code.
int run_local(const std::string& line, std::string* out) {
  FILE* p = popen(line.c_str(), "r");
  if (!p) throw td::Error("cannot run `" + line + "`");
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  int status = pclose(p);
  if (out) *out = std::move(text);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::string bundle_launcher(const std::string& program) {
  return "#!/bin/sh\n"
         "# TrainDeck bundle launcher: the bundled libraries come first (LD_LIBRARY_PATH is\n"
         "# searched before the binary's RUNPATH); glibc comes from this machine.\n"
         "# Node libraries (CUDA) live where deploy found or put them: one folder per line in\n"
         "# ../node-lib-path, absolute or relative to the bundle folder.\n"
         "dir=$(cd -- \"$(dirname -- \"$0\")\" && pwd) || exit 127\n"
         "libs=\"$dir/../lib\"\n"
         "if [ -r \"$dir/../node-lib-path\" ]; then\n"
         "  while IFS= read -r d || [ -n \"$d\" ]; do\n"
         "    case $d in '') ;; /*) libs=\"$libs:$d\" ;; *) libs=\"$libs:$dir/../$d\" ;; esac\n"
         "  done < \"$dir/../node-lib-path\"\n"
         "fi\n"
         "LD_LIBRARY_PATH=\"$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"\n"
         "export LD_LIBRARY_PATH\n"
         "exec \"$dir/" +
         program + ".bin\" \"$@\"\n";
}

bool is_node_library(const std::string& soname) {
  for (const char* p : {"libcudart.so", "libcublas.so", "libcublasLt.so", "libnccl.so"})
    if (soname.rfind(p, 0) == 0) return true;
  return false;
}

bool is_glibc_library(const std::string& soname) {
  static const char* kGlibc[] = {"libc.so", "libm.so", "libpthread.so", "libdl.so", "librt.so",
                                 "libresolv.so", "libutil.so", "libanl.so", "libnsl.so", "libBrokenLocale.so",
                                 "libmvec.so", "libthread_db.so", "libnss_", "libc_malloc_debug.so",
                                 "ld-linux", "ld64.so", "linux-vdso", "linux-gate"};
  for (const char* g : kGlibc)
    if (soname.rfind(g, 0) == 0) return true;
  return false;
}

std::vector<std::pair<std::string, std::string>> resolve_libraries(const fs::path& binary,
                                                                   const std::vector<std::string>& extra_env) {
  std::string line;
  for (const std::string& e : extra_env) line += "export " + shell_quote(e) + "; ";
  line += "ldd " + shell_quote(binary.string()) + " 2>&1";
  std::string out;
  int rc = run_local(line, &out);
  if (out.find("not a dynamic executable") != std::string::npos) return {};  // static: nothing to bundle
  if (rc != 0) throw td::Error("ldd " + binary.string() + " failed (exit " + std::to_string(rc) + "): " + out);
  std::vector<std::pair<std::string, std::string>> libs;
  std::istringstream in(out);
  static const std::regex arrow(R"(^\s*(\S+)\s+=>\s+(\S+)\s+\(0x[0-9a-f]+\)\s*$)");
  static const std::regex plain(R"(^\s*(/\S+)\s+\(0x[0-9a-f]+\)\s*$)");
  static const std::regex missing(R"(^\s*(\S+)\s+=>\s+not found)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, missing))
      throw td::Error(binary.string() + " needs " + m[1].str() + ", which is not found on this machine");
    if (std::regex_match(line, m, arrow))
      libs.emplace_back(m[1].str(), m[2].str());
    else if (std::regex_match(line, m, plain))
      libs.emplace_back(fs::path(m[1].str()).filename().string(), m[1].str());
  }
  return libs;
}

int compare_versions(const std::string& a, const std::string& b) {
  std::istringstream ia(a), ib(b);
  std::string pa, pb;
  while (true) {
    bool ha = static_cast<bool>(std::getline(ia, pa, '.')), hb = static_cast<bool>(std::getline(ib, pb, '.'));
    if (!ha && !hb) return 0;
    long va = ha ? std::atol(pa.c_str()) : 0, vb = hb ? std::atol(pb.c_str()) : 0;
    if (va != vb) return va < vb ? -1 : 1;
  }
}

std::string glibc_requirement(const std::vector<fs::path>& files) {
  std::string best;
  static const std::regex ver(R"(GLIBC_([0-9]+(\.[0-9]+)+))");
  for (const fs::path& f : files) {
    std::string out;
    if (run_local("objdump -T " + shell_quote(f.string()) + " 2>/dev/null", &out) != 0)
      throw td::Error("objdump -T " + f.string() + " failed: install binutils");
    for (std::sregex_iterator it(out.begin(), out.end(), ver), end; it != end; ++it)
      if (best.empty() || compare_versions((*it)[1].str(), best) > 0) best = (*it)[1].str();
  }
  return best;
}

BundleManifest make_bundle(const fs::path& engine_binary, const fs::path& out_dir) {
  if (!fs::is_regular_file(engine_binary))
    throw td::Error("engine binary " + engine_binary.string() + " is missing: build traindeck-engine first");
  std::error_code ec;
  fs::remove_all(out_dir / "bin", ec);
  fs::remove_all(out_dir / "lib", ec);
  fs::remove(out_dir / "manifest.json", ec);
  fs::create_directories(out_dir / "bin");
  fs::create_directories(out_dir / "lib");
  const fs::path bin = out_dir / "bin" / "traindeck-engine.bin";
  fs::copy_file(engine_binary, bin, fs::copy_options::overwrite_existing);
  fs::permissions(bin, fs::perms(0755));
  std::vector<fs::path> elf_files{bin};
  std::vector<NodeLibrary> node_libs;
  std::set<std::string> seen;
  auto add_libraries = [&](const fs::path& elf) {
    for (const auto& [soname, path] : resolve_libraries(elf)) {
      if (is_glibc_library(soname) || !seen.insert(soname).second) continue;
      if (is_node_library(soname)) {  // left to the node: listed, not copied
        node_libs.push_back({soname, fs::canonical(path).string(), static_cast<uint64_t>(fs::file_size(path))});
        continue;
      }
      const fs::path dst = out_dir / "lib" / soname;
      if (!fs::copy_file(path, dst, fs::copy_options::overwrite_existing, ec) || ec)  // follows symlinks
        throw td::Error("cannot copy " + path + " into the bundle: " + ec.message());
      fs::permissions(dst, fs::perms(0755));
      elf_files.push_back(dst);
    }
  };
  add_libraries(engine_binary);
  // The CUDA backend module (engine/ops/backend.h), where the engine would find it: it goes beside
  // traindeck-engine.bin, its cuBLAS libraries are node libraries like the engine's own.
  const fs::path exe_dir = engine_binary.parent_path();
  for (const fs::path& module : {exe_dir / "libtraindeck-cuda.so", exe_dir.parent_path() / "lib" / "traindeck" / "libtraindeck-cuda.so"}) {
    if (!fs::is_regular_file(module)) continue;
    const fs::path dst = out_dir / "bin" / "libtraindeck-cuda.so";
    try {
      add_libraries(module);
    } catch (const td::Error& e) {
      // cuBLAS not resolvable here: the bundle trains on CPUs only, and says why on stderr.
      std::fprintf(stderr, "traindeck: the engine bundle leaves out the CUDA backend: %s\n", e.what());
      break;
    }
    fs::copy_file(module, dst, fs::copy_options::overwrite_existing);
    fs::permissions(dst, fs::perms(0755));
    elf_files.push_back(dst);
    break;
  }
  {
    std::ofstream f(out_dir / "bin" / "traindeck-engine", std::ios::binary | std::ios::trunc);
    f << bundle_launcher("traindeck-engine");
    if (!f) throw td::Error("cannot write " + (out_dir / "bin" / "traindeck-engine").string());
  }
  fs::permissions(out_dir / "bin" / "traindeck-engine", fs::perms(0755));

  BundleManifest m;
  utsname u{};
  uname(&u);
  m.arch = u.machine;
  m.glibc = glibc_requirement(elf_files);
  std::sort(node_libs.begin(), node_libs.end(),
            [](const NodeLibrary& a, const NodeLibrary& b) { return a.soname < b.soname; });
  m.node_libs = node_libs;
  // The CUDA runtime major: libcudart.so.13 -> "13" (else that of cuBLAS, whose soname follows it).
  for (const char* prefix : {"libcudart.so.", "libcublas.so.", "libcublasLt.so."})
    for (const NodeLibrary& l : m.node_libs)
      if (m.cuda_major.empty() && l.soname.rfind(prefix, 0) == 0)
        m.cuda_major = l.soname.substr(std::string(prefix).size(), l.soname.find('.', std::string(prefix).size()) -
                                                                       std::string(prefix).size());
  for (const auto& e : fs::recursive_directory_iterator(out_dir)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), out_dir).generic_string();
    if (rel == "manifest.json") continue;
    m.files.push_back({rel, static_cast<uint64_t>(e.file_size()), sha256_file(e.path())});
  }
  std::sort(m.files.begin(), m.files.end(), [](const BundleFile& a, const BundleFile& b) { return a.path < b.path; });
  std::string all;
  for (const BundleFile& f : m.files) all += f.path + " " + f.sha256 + "\n";
  for (const NodeLibrary& l : m.node_libs) all += "node " + l.soname + "\n";
  {
    const fs::path tmp = out_dir / ".hash-input";
    std::ofstream(tmp, std::ios::binary) << all;
    m.hash = sha256_file(tmp).substr(0, 16);
    fs::remove(tmp);
  }
  nlohmann::json j = {{"format", "traindeck-engine-bundle"}, {"arch", m.arch}, {"glibc", m.glibc}, {"hash", m.hash}};
  j["files"] = nlohmann::json::array();
  for (const BundleFile& f : m.files) j["files"].push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
  if (!m.node_libs.empty()) {
    j["cuda_major"] = m.cuda_major;
    j["node_libs"] = nlohmann::json::array();
    for (const NodeLibrary& l : m.node_libs)
      j["node_libs"].push_back({{"soname", l.soname}, {"source", l.source}, {"size", l.size}});
  }
  std::ofstream(out_dir / "manifest.json", std::ios::binary | std::ios::trunc) << j.dump(1) << "\n";

  std::string out;
  const std::string launcher = (out_dir / "bin" / "traindeck-engine").string();
  if (run_local(shell_quote(launcher) + " --version 2>&1", &out) != 0)
    throw td::Error("the bundled engine does not run (" + launcher + " --version): " + out);
  return m;
}

BundleManifest read_bundle_manifest(const fs::path& bundle_dir) {
  std::ifstream f(bundle_dir / "manifest.json", std::ios::binary);
  if (!f) throw td::Error((bundle_dir / "manifest.json").string() + " is missing: make the bundle first (make_bundle)");
  try {
    nlohmann::json j = nlohmann::json::parse(f);
    if (j.value("format", "") != "traindeck-engine-bundle") throw td::Error("not a traindeck-engine-bundle manifest");
    BundleManifest m;
    m.arch = j.at("arch").get<std::string>();
    m.glibc = j.at("glibc").get<std::string>();
    m.hash = j.at("hash").get<std::string>();
    for (const auto& e : j.at("files"))
      m.files.push_back({e.at("path").get<std::string>(), e.at("size").get<uint64_t>(), e.at("sha256").get<std::string>()});
    m.cuda_major = j.value("cuda_major", "");
    if (j.contains("node_libs"))
      for (const auto& e : j.at("node_libs"))
        m.node_libs.push_back(
            {e.at("soname").get<std::string>(), e.at("source").get<std::string>(), e.at("size").get<uint64_t>()});
    return m;
  } catch (const std::exception& e) {
    throw td::Error((bundle_dir / "manifest.json").string() + " is malformed: " + e.what() + "; make the bundle again");
  }
}

}  // namespace td::remote
