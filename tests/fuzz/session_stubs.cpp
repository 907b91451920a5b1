// The fuzz project compiles remote/checkpoints.cpp and remote/probe.cpp for their parsers;
// those files also hold the functions that run the parsers' commands over SSH. No fuzz target
// calls them, so the few Session and SFTP functions they reference are defined here and abort
// (the project's own build links the real ones from td_remote). Declarations come from the real
// headers, so a changed signature fails to compile here.
#include <cstdio>
#include <cstdlib>

#include "remote/session.h"
#include "remote/sftp.h"

namespace td::remote {
namespace {
[[noreturn]] void no_ssh(const char* what) {
  std::fprintf(stderr, "fuzz: %s called: the fuzz targets have no SSH session\n", what);
  std::abort();
}
}  // namespace

ExecResult Session::exec(const std::vector<std::string>&, const ExecOptions&) { no_ssh("Session::exec"); }
std::string Session::where() const { no_ssh("Session::where"); }
TransferResult download(Session&, const std::string&, const std::filesystem::path&, const TransferOptions&) {
  no_ssh("download");
}
// download_checkpoint's check of the downloaded files against SHA256SUMS (a local file's hash;
// the real one is in sftp.cpp, which the fuzz project does not compile).
std::string sha256_file(const std::filesystem::path&, std::optional<uint64_t>) { no_ssh("sha256_file"); }

}  // namespace td::remote
