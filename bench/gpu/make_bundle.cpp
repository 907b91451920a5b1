// gpu_make_bundle: the engine bundle (remote/bundle.h) plus further programs and the CUDA module,
// for bench/gpu.sh --prepare, which carries it to a GPU machine without our Debian libraries.
//
//   gpu_make_bundle ENGINE OUT_DIR [--program BIN]... [--module SO]...
//
// ENGINE goes in as remote/bundle.h lays it out (bin/traindeck-engine launcher, bin/
// traindeck-engine.bin, lib/<soname>, manifest.json), made by td::remote::make_bundle. Each
// --program BIN (test_parity) is copied to bin/<name>.bin with a launcher bin/<name> like the
// engine's; each --module SO (libtraindeck-cuda.so) is copied to bin/ beside the engine binary,
// where engine/ops/backend.cpp looks for it. The libraries ldd resolves for them are added to lib/
// by the same rules as make_bundle's: glibc's own are left out, and the CUDA libraries (libcudart,
// libcublas, libcublasLt, libnccl: is_node_library) are NOT copied; the GPU machine supplies them
// (NVIDIA's pip wheels there). manifest.json covers the engine's files only; extras.json lists
// what this tool added: {"programs":[...],"modules":[...],"libs":[...],"node_libs":[sonames],
// "glibc":"2.34"} (glibc: the highest GLIBC_x.y any ELF file of the bundle needs).
// /usr/local/cuda/lib64 is put on ldd's LD_LIBRARY_PATH so that the module's CUDA libraries
// resolve here (they are listed, not copied).
// Exit status 0 on success; 1 with "error: ..." on stderr.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "remote/bundle.h"

namespace fs = std::filesystem;

namespace {

// Copies the non-glibc, non-CUDA libraries `elf` needs into out/lib (those not there yet).
void add_libraries(const fs::path& elf, const fs::path& out, nlohmann::json& extras, std::set<std::string>& node) {
  std::vector<std::string> env;
  if (fs::is_directory("/usr/local/cuda/lib64")) {
    const char* old = std::getenv("LD_LIBRARY_PATH");
    env.push_back(std::string("LD_LIBRARY_PATH=/usr/local/cuda/lib64") + (old && *old ? std::string(":") + old : ""));
  }
  for (const auto& [soname, path] : td::remote::resolve_libraries(elf, env)) {
    if (td::remote::is_glibc_library(soname)) continue;
    if (td::remote::is_node_library(soname)) {
      node.insert(soname);
      continue;
    }
    const fs::path dst = out / "lib" / soname;
    if (fs::exists(dst)) continue;
    std::error_code ec;
    if (!fs::copy_file(path, dst, fs::copy_options::overwrite_existing, ec) || ec)
      throw td::Error("cannot copy " + path + " into the bundle: " + ec.message());
    fs::permissions(dst, fs::perms(0755));
    extras["libs"].push_back(soname);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<std::string> pos, programs, modules;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if ((a == "--program" || a == "--module") && i + 1 < argc)
        (a == "--program" ? programs : modules).push_back(argv[++i]);
      else if (a.rfind("--", 0) == 0)
        throw td::Error("unknown option " + a + "; usage: gpu_make_bundle ENGINE OUT_DIR [--program BIN]... [--module SO]...");
      else
        pos.push_back(a);
    }
    if (pos.size() != 2) throw td::Error("usage: gpu_make_bundle ENGINE OUT_DIR [--program BIN]... [--module SO]...");
    const fs::path out = pos[1];
    const td::remote::BundleManifest m = td::remote::make_bundle(pos[0], out);
    nlohmann::json extras = {{"programs", nlohmann::json::array()}, {"modules", nlohmann::json::array()},
                             {"libs", nlohmann::json::array()}, {"node_libs", nlohmann::json::array()}};
    std::set<std::string> node;
    for (const auto& l : m.node_libs) node.insert(l.soname);
    for (const std::string& p : programs) {
      if (!fs::is_regular_file(p)) throw td::Error("program " + p + " is missing: build it first");
      const std::string name = fs::path(p).filename().string();
      const fs::path bin = out / "bin" / (name + ".bin");
      fs::copy_file(p, bin, fs::copy_options::overwrite_existing);
      fs::permissions(bin, fs::perms(0755));
      std::ofstream(out / "bin" / name, std::ios::binary | std::ios::trunc) << td::remote::bundle_launcher(name);
      fs::permissions(out / "bin" / name, fs::perms(0755));
      add_libraries(p, out, extras, node);
      extras["programs"].push_back("bin/" + name);
    }
    for (const std::string& so : modules) {
      if (!fs::is_regular_file(so)) throw td::Error("module " + so + " is missing: build it first");
      const fs::path dst = out / "bin" / fs::path(so).filename();
      fs::copy_file(so, dst, fs::copy_options::overwrite_existing);
      fs::permissions(dst, fs::perms(0755));
      add_libraries(so, out, extras, node);
      extras["modules"].push_back("bin/" + fs::path(so).filename().string());
    }
    for (const std::string& s : node) extras["node_libs"].push_back(s);
    // The glibc every ELF file of the bundle needs (the engine's manifest counts its own only).
    std::vector<fs::path> elf;
    for (const auto& e : fs::recursive_directory_iterator(out))
      if (e.is_regular_file() && (e.path().extension() == ".bin" || e.path().parent_path().filename() == "lib" ||
                                  e.path().extension() == ".so"))
        elf.push_back(e.path());
    extras["glibc"] = td::remote::glibc_requirement(elf);
    std::ofstream(out / "extras.json", std::ios::binary | std::ios::trunc) << extras.dump(1) << "\n";
    std::printf("bundle %s: hash %s, glibc >= %s, %zu engine files, %zu programs, %zu modules, node libraries:",
                out.c_str(), m.hash.c_str(), extras["glibc"].get<std::string>().c_str(), m.files.size(), programs.size(), modules.size());
    for (const std::string& s : node) std::printf(" %s", s.c_str());
    std::printf("\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
