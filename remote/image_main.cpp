// td_engine_image: the traindeck-engine OCI image, FROM scratch, from the engine bundle
// (remote/image.h). `./traindeck.sh image` and tests/remote/test_container.cpp run it.
//
//   td_engine_image --engine BIN | --bundle DIR  [--work DIR] [--tag TAG] [--builder podman|buildah|docker]
//                   [--no-build]
//
// --engine BIN makes the bundle of BIN first (remote/bundle.h) in <work>/bundle; --bundle DIR
// takes a bundle made before. The build context goes to <work>/context (default work:
// ./engine-image). The tag defaults to localhost/traindeck-engine:<version>. --no-build only
// writes the context (for `podman build` by hand, or another builder). Prints on stdout:
//   image=<tag>
//   version=<engine version>
//   bundle=<bundle hash>
//   rootfs_bytes=<bytes>
// Exit status 0 on success; 1 with "error: ..." on stderr; 2 for a usage error.
#include <cstdio>
#include <filesystem>
#include <string>

#include "engine/common/error.h"
#include "remote/bundle.h"
#include "remote/image.h"

namespace fs = std::filesystem;

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "error: %s\nusage: td_engine_image --engine BIN | --bundle DIR [--work DIR] [--tag TAG] "
               "[--builder podman|buildah|docker] [--no-build]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string engine, bundle, work = "engine-image", tag, builder = "podman";
  bool build = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    if (a == "--engine") {
      if (!value(engine)) return usage("--engine needs the engine binary");
    } else if (a == "--bundle") {
      if (!value(bundle)) return usage("--bundle needs the bundle folder");
    } else if (a == "--work") {
      if (!value(work)) return usage("--work needs a folder");
    } else if (a == "--tag") {
      if (!value(tag)) return usage("--tag needs an image name");
    } else if (a == "--builder") {
      if (!value(builder)) return usage("--builder needs podman, buildah or docker");
    } else if (a == "--no-build") {
      build = false;
    } else {
      return usage(("unknown argument '" + a + "'").c_str());
    }
  }
  if (engine.empty() == bundle.empty()) return usage("give exactly one of --engine and --bundle");
  try {
    fs::path bundle_dir = bundle;
    if (!engine.empty()) {
      bundle_dir = fs::path(work) / "bundle";
      td::remote::make_bundle(engine, bundle_dir);
    }
    const fs::path context = fs::path(work) / "context";
    fs::create_directories(context);
    const td::remote::ImageContext ctx = td::remote::write_image_context(bundle_dir, context);
    for (const std::string& so : ctx.node_libs_missing)
      std::fprintf(stderr, "warning: %s is not on this machine any more: the image trains on CPUs only\n", so.c_str());
    if (tag.empty()) tag = td::remote::default_image_tag(ctx.version);
    if (build) td::remote::build_image(builder, context, tag);
    std::printf("image=%s\nversion=%s\nbundle=%s\nrootfs_bytes=%llu\n", tag.c_str(), ctx.version.c_str(),
                ctx.bundle_hash.c_str(), static_cast<unsigned long long>(ctx.rootfs_bytes));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
