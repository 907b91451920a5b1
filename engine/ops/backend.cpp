#include "engine/ops/backend.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <mutex>
#include <vector>

#include "engine/common/error.h"
#include "engine/dist/communicator.h"
#include "engine/ops/cpu_ops.h"

namespace td {
namespace {

constexpr const char* kModuleName = "libtraindeck-cuda.so";
constexpr const char* kCreateSymbol = "traindeck_create_cuda_backend";
constexpr const char* kNcclIdSymbol = "traindeck_nccl_unique_id";
constexpr const char* kNcclCommSymbol = "traindeck_create_nccl_communicator";

std::vector<std::string> module_candidates() {
  std::vector<std::string> c;
  if (const char* e = std::getenv("TRAINDECK_CUDA_MODULE"); e && *e) c.push_back(e);
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    buf[n] = 0;
    std::filesystem::path dir = std::filesystem::path(buf).parent_path();
    c.push_back((dir / kModuleName).string());
    c.push_back((dir.parent_path() / "lib" / "traindeck" / kModuleName).string());
  }
  return c;
}

struct Module {
  void* handle = nullptr;
  TraindeckCreateCudaBackendFn create = nullptr;
  TraindeckNcclUniqueIdFn nccl_id = nullptr;            // null in a module of an older build
  TraindeckCreateNcclCommunicatorFn nccl_comm = nullptr;
  std::string path;
  std::string error;  // why it did not load
};

// Loads the module once per process (dlopen keeps it for the process's life).
const Module& cuda_module() {
  static Module m;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tried;
    // A path the user gave is the one meant: a missing file there is an error, not a fallback.
    if (const char* e = std::getenv("TRAINDECK_CUDA_MODULE"); e && *e && !std::filesystem::exists(e)) {
      m.error = std::string("TRAINDECK_CUDA_MODULE is set to '") + e + "', which does not exist; point it at libtraindeck-cuda.so or unset it";
      return;
    }
    for (const auto& p : module_candidates()) {
      if (!std::filesystem::exists(p)) {
        tried += "\n  " + p + " (not there)";
        continue;
      }
      void* h = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        // A module that is there but cannot load (a CUDA library missing): say so, stop looking.
        const char* e = ::dlerror();
        m.error = "the CUDA backend " + p + " cannot be loaded: " + (e ? e : "?") +
                  "; install the CUDA 13 runtime libraries (cuBLAS) or put them on LD_LIBRARY_PATH";
        return;
      }
      auto fn = reinterpret_cast<TraindeckCreateCudaBackendFn>(::dlsym(h, kCreateSymbol));
      if (!fn) {
        m.error = p + " is not a TrainDeck CUDA backend (no " + kCreateSymbol + ")";
        ::dlclose(h);
        return;
      }
      m.handle = h;
      m.create = fn;
      m.nccl_id = reinterpret_cast<TraindeckNcclUniqueIdFn>(::dlsym(h, kNcclIdSymbol));
      m.nccl_comm = reinterpret_cast<TraindeckCreateNcclCommunicatorFn>(::dlsym(h, kNcclCommSymbol));
      m.path = p;
      return;
    }
    m.error = std::string("this engine has no CUDA backend: ") + kModuleName +
              " was not found (looked at:" + tried +
              ")\n  build TrainDeck on a machine with the CUDA toolkit (nvcc) to get it, or set "
              "TRAINDECK_CUDA_MODULE to its path; use train.device = \"cpu\" meanwhile";
  });
  return m;
}

}  // namespace

DeviceSpec parse_device(const std::string& device) {
  if (device == "cpu") return {"cpu", 0};
  if (device == "cuda") return {"cuda", 0};
  if (device.rfind("cuda:", 0) == 0 && device.size() > 5) {
    const std::string n = device.substr(5);
    if (n.size() <= 3 && n.find_first_not_of("0123456789") == std::string::npos) return {"cuda", std::stoi(n)};
  }
  fail("\"" + device + "\" is not a device: use \"cpu\", \"cuda\" or \"cuda:N\" (N = 0, 1, ...)");
}

std::unique_ptr<Backend> make_backend(const std::string& device) {
  DeviceSpec d = parse_device(device);
  if (d.kind == "cpu") return make_cpu_backend();
  const Module& m = cuda_module();
  if (!m.create) fail(m.error);
  char err[2048] = {0};
  Backend* be = m.create(kBackendAbiVersion, d.ordinal, err, sizeof err);
  if (!be) fail(err[0] ? std::string(err) : "the CUDA backend could not start (no message)");
  return std::unique_ptr<Backend>(be);
}

namespace {
// The module, checked to have the NCCL functions (a module of an older build has not).
const Module& nccl_module() {
  const Module& m = cuda_module();
  if (!m.create) fail(m.error);
  if (!m.nccl_id || !m.nccl_comm)
    fail(m.path + " has no NCCL communicator (it is from an older TrainDeck build); install the module built with this engine, or set "
                  "TRAINDECK_CUDA_MODULE to it");
  return m;
}
}  // namespace

std::vector<unsigned char> nccl_unique_id() {
  const Module& m = nccl_module();
  std::vector<unsigned char> id(kNcclUniqueIdBytes);
  char err[2048] = {0};
  if (m.nccl_id(kBackendAbiVersion, id.data(), id.size(), err, sizeof err) != 0)
    fail(err[0] ? std::string(err) : "NCCL could not create its unique id (no message)");
  return id;
}

std::unique_ptr<dist::Communicator> make_nccl_device_communicator(Backend& backend, int rank, int world_size,
                                                                  const std::vector<unsigned char>& id, double timeout_s) {
  const Module& m = nccl_module();
  char err[4096] = {0};
  dist::Communicator* c = m.nccl_comm(kBackendAbiVersion, &backend, rank, world_size, id.data(), id.size(), timeout_s, err, sizeof err);
  if (!c) fail(err[0] ? std::string(err) : "the NCCL communicator could not start (no message)");
  return std::unique_ptr<dist::Communicator>(c);
}

bool cuda_available(std::string* why) {
  try {
    make_backend("cuda");
    return true;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
}

std::string cuda_module_search_description() {
  const Module& m = cuda_module();
  if (m.create) return m.path;
  std::string s;
  for (const auto& p : module_candidates()) s += (s.empty() ? "" : ", ") + p;
  return s;
}

}  // namespace td
