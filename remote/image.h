// The engine as an OCI image built here without a registry: FROM scratch, from the engine bundle
// (remote/bundle.h) plus the few files of this machine the bundle leaves to the node. Plain C++,
// no Qt; `./traindeck.sh image` runs it through the td_engine_image tool (image_main.cpp).
// packaging/Containerfile is the other image, for users: Debian 12 with the .deb installed.
//
// Build context written by write_image_context() (docs/containers.md):
//   <context>/Containerfile                       FROM scratch; COPY rootfs/ /; ENV PATH; ENTRYPOINT
//   <context>/rootfs/opt/traindeck/{bin,lib,manifest.json}   the bundle, unchanged
//   <context>/rootfs/opt/traindeck/lib/<soname>   the bundle's node libraries (CUDA: libcudart,
//                                                 libcublas, ...) where their `source` exists here,
//                                                 so a GPU image needs only the driver from the
//                                                 node (CDI / --gpus / --nv inject it)
//   <context>/rootfs/<path>                       glibc's libraries and the program loader, at the
//                                                 paths ldd resolves them to here (/lib64/ld-linux-x86-64.so.2,
//                                                 /lib/x86_64-linux-gnu/libc.so.6, ...): the bundle
//                                                 takes glibc from its machine, and in the image that is this one
//   <context>/rootfs/bin/sh, /usr/bin/dirname     this machine's /bin/sh and dirname with their
//                                                 libraries: the bundle's launcher is an sh script,
//                                                 and apptainer's action scripts need /bin/sh
//   <context>/rootfs/tmp                          mode 1777
// The image runs `traindeck-engine` (the bundle's launcher, on PATH) as its entrypoint.
// Threading rule: local files and child processes only; call from any one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace td::remote {

/// What write_image_context() put in the context.
struct ImageContext {
  std::string version;      ///< the engine's version ("0.1.0", from `traindeck-engine --version`)
  std::string bundle_hash;  ///< the bundle's manifest hash (the image's io.github.traindeck.bundle label)
  uint64_t rootfs_bytes = 0;  ///< bytes of every file under rootfs/
  std::vector<std::string> system_files;     ///< absolute paths in the image taken from this machine (glibc, sh, ...)
  std::vector<std::string> node_libs_added;  ///< CUDA sonames copied into /opt/traindeck/lib
  std::vector<std::string> node_libs_missing;  ///< CUDA sonames whose source is gone here (the image then trains on CPUs)
};

/// "localhost/traindeck-engine:<version>": the tag `./traindeck.sh image` gives the image.
std::string default_image_tag(const std::string& version);

/// Writes the build context for the bundle at `bundle_dir` (made by make_bundle) into
/// `context_dir` (created; an earlier rootfs/ and Containerfile there are replaced). The version
/// comes from the bundled launcher's `--version` run here.
/// Errors: td::Error when the bundle's manifest is missing or malformed, a library cannot be
/// resolved (ldd) or copied, or the bundled engine does not print its version.
ImageContext write_image_context(const std::filesystem::path& bundle_dir, const std::filesystem::path& context_dir);

/// The Containerfile of write_image_context(): FROM scratch, the rootfs, PATH, labels with the
/// version and bundle hash, ENTRYPOINT ["/opt/traindeck/bin/traindeck-engine"].
std::string image_containerfile(const std::string& version, const std::string& bundle_hash);

/// Builds the image `tag` from `context_dir` with `builder`: "podman" or "docker" (`<builder>
/// build -f <context>/Containerfile -t <tag> <context>`) or "buildah" (`buildah bud ...`); the
/// builder's output goes to this process's stderr. The builder's own settings (podman:
/// CONTAINERS_CONF, storage) come from the environment. Errors: td::Error when the builder is
/// unknown, cannot be started or fails (with its exit status).
void build_image(const std::string& builder, const std::filesystem::path& context_dir, const std::string& tag);

}  // namespace td::remote
