// The engine bundle: traindeck-engine plus the shared libraries a plain node may lack, in one
// folder that deploy.h uploads to a node (plain C++, no Qt, Linux only).
//
// Layout (patchelf is not assumed, so the binary is not relinked):
//   <bundle>/bin/traindeck-engine      POSIX sh launcher: execs traindeck-engine.bin with
//                                      LD_LIBRARY_PATH="<bundle>/lib" (searched before the
//                                      binary's RUNPATH, so the bundled libraries win)
//   <bundle>/bin/traindeck-engine.bin  the engine binary, unchanged
//   <bundle>/bin/libtraindeck-cuda.so  the CUDA backend module, when it sits beside the engine
//                                      (or in ../lib/traindeck/) and its libraries resolve here
//   <bundle>/lib/<soname>              every library ldd resolves for it, except glibc's own
//                                      (libc, libm, libpthread, libdl, librt, libresolv, libutil,
//                                      ld-linux...): libstdc++, libgcc_s, libgomp, libgfortran,
//                                      OpenBLAS (the OpenMP build the RUNPATH points at) ...
//   <bundle>/manifest.json             {"format":"traindeck-engine-bundle","arch":"x86_64",
//                                      "glibc":"2.34","hash":"<16 hex>","files":[{"path":
//                                      "bin/traindeck-engine.bin","size":N,"sha256":"..."}...],
//                                      "cuda_major":"13","node_libs":[{"soname":"libcublasLt.so.13",
//                                      "source":"/usr/local/cuda-13.0/lib64/libcublasLt.so.13","size":N}]}
// The CUDA libraries (libcudart, libcublas, libcublasLt, libnccl: hundreds of MB) are NOT copied:
// they are node libraries, which deploy() finds on the node (or uploads once from `source`), and
// the launcher adds the folders deploy() wrote to <bundle>/node-lib-path to LD_LIBRARY_PATH.
// Threading rule: functions here only touch local files; call them from any one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace td::remote {

struct BundleFile {
  std::string path;    ///< relative to the bundle folder, '/' separated ("lib/libgomp.so.1")
  uint64_t size = 0;   ///< bytes
  std::string sha256;  ///< hex
};

/// A library the bundle does not carry because the node usually has it (CUDA): deploy() looks
/// for `soname` on the node and uploads `source` only where it is missing.
struct NodeLibrary {
  std::string soname;  ///< "libcublasLt.so.13"
  std::string source;  ///< absolute local path ldd resolved it to (the file uploaded as a fallback)
  uint64_t size = 0;   ///< bytes of `source`
};

struct BundleManifest {
  std::string arch;    ///< `uname -m` of the machine the bundle runs on ("x86_64")
  std::string glibc;   ///< highest GLIBC_x.y symbol version the binary and libraries need ("2.34")
  std::string hash;    ///< first 16 hex of the sha256 over all files' paths + sha256s: the version
  std::vector<BundleFile> files;  ///< every file except manifest.json, sorted by path
  std::vector<NodeLibrary> node_libs;  ///< CUDA libraries left to the node, sorted by soname
  std::string cuda_major;  ///< CUDA runtime major version from libcudart's soname ("13"); empty: no CUDA
};

/// The POSIX sh launcher <bundle>/bin/<program> that execs <bundle>/bin/<program>.bin with the
/// bundled libraries (and node-lib-path's folders) on LD_LIBRARY_PATH.
std::string bundle_launcher(const std::string& program);

/// True for the CUDA libraries a bundle leaves to the node: libcudart.so*, libcublas.so*,
/// libcublasLt.so*, libnccl.so*.
bool is_node_library(const std::string& soname);

/// True for the libraries that come from the node's glibc and never go in a bundle
/// (libc.so.6, libm.so.6, libpthread.so.0, libdl.so.2, librt.so.1, ld-linux*.so.*, ...).
bool is_glibc_library(const std::string& soname);

/// Shared libraries `binary` needs (transitively), as ldd resolves them on this machine:
/// pairs of soname and absolute path, glibc's own included, linux-vdso left out; empty for a
/// static binary. `extra_env`: "NAME=value" set for ldd (e.g. LD_LIBRARY_PATH).
/// Errors: td::Error when ldd fails or a library is "not found".
std::vector<std::pair<std::string, std::string>> resolve_libraries(const std::filesystem::path& binary,
                                                                   const std::vector<std::string>& extra_env = {});

/// Builds the bundle of `engine_binary` in `out_dir` (created; an earlier bundle there is
/// replaced) and writes its manifest.json. Returns the manifest.
/// Errors: td::Error when the binary is missing, a library cannot be resolved or copied, or
/// the bundled launcher fails to run `--version`.
BundleManifest make_bundle(const std::filesystem::path& engine_binary, const std::filesystem::path& out_dir);

/// Reads <bundle_dir>/manifest.json. Errors: td::Error when missing or malformed.
BundleManifest read_bundle_manifest(const std::filesystem::path& bundle_dir);

/// The highest "GLIBC_x.y" version among the files' needed symbol versions (objdump -T), "" if none.
std::string glibc_requirement(const std::vector<std::filesystem::path>& files);

/// Compares dotted versions numerically: <0, 0, >0 ("2.9" < "2.34").
int compare_versions(const std::string& a, const std::string& b);

}  // namespace td::remote
