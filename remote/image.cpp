// The FROM-scratch engine image (image.h): build context from a bundle, and the build.
#include "remote/image.h"

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include "engine/common/error.h"
#include "remote/bundle.h"
#include "remote/quote.h"

extern char** environ;

namespace td::remote {
namespace fs = std::filesystem;

namespace {

// stdout of a command line run through /bin/sh; its exit code in *rc.
std::string capture(const std::string& line, int* rc) {
  FILE* p = popen(line.c_str(), "r");
  if (!p) throw td::Error("cannot run `" + line + "`");
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  const int status = pclose(p);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return text;
}

// Copies the file `from` points at (symlinks followed) to rootfs/<to> with mode 0755.
void copy_into(const fs::path& from, const fs::path& rootfs, const std::string& to) {
  const fs::path dst = rootfs / fs::path(to).relative_path();
  std::error_code ec;
  fs::create_directories(dst.parent_path(), ec);
  if (!fs::copy_file(from, dst, fs::copy_options::overwrite_existing, ec) || ec)
    throw td::Error("cannot copy " + from.string() + " into the image as " + to + ": " + ec.message());
  fs::permissions(dst, fs::perms(0755), ec);
}

}  // namespace

std::string default_image_tag(const std::string& version) { return "localhost/traindeck-engine:" + version; }

std::string image_containerfile(const std::string& version, const std::string& bundle_hash) {
  return "# The traindeck-engine image made by ./traindeck.sh image (remote/image.h): the engine bundle\n"
         "# with this machine's glibc, no distribution and no registry needed.\n"
         "FROM scratch\n"
         "COPY rootfs/ /\n"
         "ENV PATH=/opt/traindeck/bin:/usr/bin:/bin\n"
         "LABEL org.opencontainers.image.title=\"traindeck-engine\" "
         "org.opencontainers.image.version=\"" + version + "\" io.github.traindeck.bundle=\"" + bundle_hash + "\"\n"
         "ENTRYPOINT [\"/opt/traindeck/bin/traindeck-engine\"]\n";
}

ImageContext write_image_context(const fs::path& bundle_dir, const fs::path& context_dir) {
  const BundleManifest m = read_bundle_manifest(bundle_dir);
  ImageContext ctx;
  ctx.bundle_hash = m.hash;
  {
    int rc = 0;
    const std::string out = capture(shell_quote((bundle_dir / "bin/traindeck-engine").string()) + " --version 2>&1", &rc);
    const std::string prefix = "traindeck-engine ";
    if (rc != 0 || out.rfind(prefix, 0) != 0)
      throw td::Error("the bundled engine in " + bundle_dir.string() + " does not print its version (exit " +
                      std::to_string(rc) + "): " + out + "; make the bundle again");
    ctx.version = out.substr(prefix.size(), out.find_first_of(" \n", prefix.size()) - prefix.size());
    if (ctx.version.empty() || ctx.version.find_first_not_of("0123456789.abcdefghijklmnopqrstuvwxyz-+") != std::string::npos)
      throw td::Error("the bundled engine's version '" + ctx.version + "' cannot be an image tag");
  }
  const fs::path rootfs = context_dir / "rootfs";
  std::error_code ec;
  fs::remove_all(rootfs, ec);
  fs::remove(context_dir / "Containerfile", ec);
  fs::create_directories(rootfs / "opt/traindeck");
  fs::create_directories(rootfs / "tmp");
  fs::permissions(rootfs / "tmp", fs::perms(01777));
  fs::create_directories(rootfs / "etc");  // the runtime puts hosts, resolv.conf, passwd there
  // The bundle as it is: the files of its manifest, then the manifest.
  std::vector<fs::path> elf_files;
  for (const BundleFile& f : m.files) {
    const fs::path src = bundle_dir / f.path;
    if (!fs::is_regular_file(src)) throw td::Error("the bundle lacks " + src.string() + ": make the bundle again");
    copy_into(src, rootfs, "/opt/traindeck/" + f.path);
    if (f.path.size() > 4 && (f.path.rfind("lib/", 0) == 0 || f.path.ends_with(".bin") || f.path.ends_with(".so")))
      elf_files.push_back(src);
  }
  fs::copy_file(bundle_dir / "manifest.json", rootfs / "opt/traindeck/manifest.json", fs::copy_options::overwrite_existing);
  // The CUDA libraries the bundle leaves to a node: an image carries them itself.
  for (const NodeLibrary& l : m.node_libs) {
    if (!fs::is_regular_file(l.source)) {
      ctx.node_libs_missing.push_back(l.soname);
      continue;
    }
    copy_into(l.source, rootfs, "/opt/traindeck/lib/" + l.soname);
    ctx.node_libs_added.push_back(l.soname);
  }
  // glibc and the loader the bundle takes from its machine, and sh + dirname for the launcher
  // (with everything they link: /bin/sh may be bash, which needs libtinfo).
  std::set<std::string> system;
  std::string lib_path = "LD_LIBRARY_PATH=" + (bundle_dir / "lib").string();
  for (const NodeLibrary& l : m.node_libs) lib_path.append(":").append(fs::path(l.source).parent_path().string());
  for (const fs::path& elf : elf_files)
    for (const auto& [soname, path] : resolve_libraries(elf, {lib_path}))
      if (is_glibc_library(soname) && !is_node_library(soname)) system.insert(path);
  for (const char* program : {"/bin/sh", "/usr/bin/dirname"}) {
    if (!fs::exists(program)) throw td::Error(std::string(program) + " is missing on this machine: the image needs it");
    copy_into(program, rootfs, program);
    ctx.system_files.push_back(program);
    for (const auto& [soname, path] : resolve_libraries(program)) system.insert(path);
  }
  for (const std::string& path : system) {
    copy_into(path, rootfs, path);
    ctx.system_files.push_back(path);
  }
  std::sort(ctx.system_files.begin(), ctx.system_files.end());
  for (const auto& e : fs::recursive_directory_iterator(rootfs))
    if (e.is_regular_file()) ctx.rootfs_bytes += e.file_size();
  std::ofstream(context_dir / "Containerfile", std::ios::binary | std::ios::trunc)
      << image_containerfile(ctx.version, ctx.bundle_hash);
  if (!fs::is_regular_file(context_dir / "Containerfile"))
    throw td::Error("cannot write " + (context_dir / "Containerfile").string());
  return ctx;
}

void build_image(const std::string& builder, const fs::path& context_dir, const std::string& tag) {
  std::vector<std::string> argv;
  const std::string file = (context_dir / "Containerfile").string();
  if (builder == "podman" || builder == "docker")
    argv = {builder, "build", "-f", file, "-t", tag, context_dir.string()};
  else if (builder == "buildah")
    argv = {builder, "bud", "-f", file, "-t", tag, context_dir.string()};
  else
    throw td::Error("'" + builder + "' cannot build images here: use podman, buildah or docker");
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);  // the builder's progress goes to stderr
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0)
    throw td::Error("cannot start " + builder + " to build the image (" + std::string(strerror(err)) + "): install " +
                    builder + " (Debian: apt-get install " + builder + ")");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw td::Error(command_line(argv) + " failed (" +
                    (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                       : "signal " + std::to_string(WTERMSIG(status))) +
                    "); its output is above");
}

}  // namespace td::remote
