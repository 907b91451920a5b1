// A stand-in for NVIDIA's libnvidia-ml.so.1, built by the tests (tests/engine/CMakeLists.txt) and
// loaded through TRAINDECK_NVML_LIBRARY (engine/metrics/nvml.h). It exports the NVML entry points
// the engine resolves, with the signatures of nvml.h, and answers with values from environment
// variables read at each call (so one test process can change them between samples):
//
//   FAKE_NVML_INIT        nvmlInit_v2's return code (default 0, NVML_SUCCESS; 9 = driver not loaded)
//   FAKE_NVML_COUNT       how many GPUs (default 1, at most 16)
//   FAKE_NVML_UTIL, FAKE_NVML_MEM_USED, FAKE_NVML_MEM_TOTAL, FAKE_NVML_POWER_MW, FAKE_NVML_TEMP,
//   FAKE_NVML_SM_CLOCK, FAKE_NVML_THROTTLE, FAKE_NVML_NAME, FAKE_NVML_UUID, FAKE_NVML_BUS_ID
//                         comma-separated, item i for GPU i (numbers in C notation: 0x44 works);
//                         a GPU without an item answers NVML_ERROR_NOT_SUPPORTED (3)
//   FAKE_NVML_FAIL        function names that answer FAKE_NVML_FAIL_CODE (default 3) for every GPU
//   FAKE_NVML_LOG         a file to which each device query appends "<function> <index> <pid>\n"
//   FAKE_NVML_BY_RANK     when set, GPU i of the process of rank $TRAINDECK_RANK takes item
//                         i + rank (so that each rank of a launched run reads its own values)
//
// Built twice more: -DFAKE_NVML_PARTIAL leaves out nvmlDeviceGetPowerUsage and both throttle-reason
// functions (an old driver's library); -DFAKE_NVML_NO_INIT leaves out nvmlInit_v2 (not NVML).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <string>
#include <vector>

namespace {

constexpr int kSuccess = 0, kInvalidArgument = 2, kNotSupported = 3, kInsufficientSize = 7;
struct Device {
  unsigned index;
};
Device g_devices[16] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Item i of a comma-separated variable; false when there is none (or it is empty).
bool item(const char* var, unsigned i, std::string& out) {
  if (!env("FAKE_NVML_BY_RANK").empty()) i += (unsigned)std::strtoul(env("TRAINDECK_RANK").c_str(), nullptr, 10);
  const std::string list = env(var);
  size_t pos = 0;
  for (unsigned k = 0;; ++k) {
    const size_t comma = list.find(',', pos);
    if (k == i) {
      out = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      return !out.empty();
    }
    if (comma == std::string::npos) return false;
    pos = comma + 1;
  }
}

unsigned count() {
  const std::string c = env("FAKE_NVML_COUNT");
  const unsigned long n = c.empty() ? 1 : std::strtoul(c.c_str(), nullptr, 0);
  return n > 16 ? 16 : (unsigned)n;
}

void log_call(const char* fn, unsigned i) {
  const std::string path = env("FAKE_NVML_LOG");
  if (path.empty()) return;
  if (FILE* f = std::fopen(path.c_str(), "a")) {
    std::fprintf(f, "%s %u %ld\n", fn, i, (long)getpid());
    std::fclose(f);
  }
}

// The common part of a device query: a valid handle, not failed by FAKE_NVML_FAIL.
int check(const char* fn, void* dev, unsigned& index) {
  if (!dev) return kInvalidArgument;
  index = static_cast<Device*>(dev)->index;
  if (index >= count()) return kInvalidArgument;
  log_call(fn, index);
  const std::string fail = "," + env("FAKE_NVML_FAIL") + ",";
  if (fail.find(std::string(",") + fn + ",") != std::string::npos) {
    const std::string code = env("FAKE_NVML_FAIL_CODE");
    return code.empty() ? kNotSupported : (int)std::strtol(code.c_str(), nullptr, 0);
  }
  return kSuccess;
}

template <typename T>
int number(const char* fn, const char* var, void* dev, T* out) {
  unsigned i = 0;
  if (int r = check(fn, dev, i)) return r;
  if (!out) return kInvalidArgument;
  std::string v;
  if (!item(var, i, v)) return kNotSupported;
  *out = (T)std::strtoull(v.c_str(), nullptr, 0);
  return kSuccess;
}

int text(const char* fn, const char* var, void* dev, char* buf, unsigned len) {
  unsigned i = 0;
  if (int r = check(fn, dev, i)) return r;
  std::string v;
  if (!item(var, i, v)) return kNotSupported;
  if (!buf || v.size() + 1 > len) return kInsufficientSize;
  std::memcpy(buf, v.c_str(), v.size() + 1);
  return kSuccess;
}

struct Utilization {
  unsigned gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};
struct PciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

}  // namespace

extern "C" {

#ifndef FAKE_NVML_NO_INIT
__attribute__((visibility("default"))) int nvmlInit_v2() {
  const std::string r = env("FAKE_NVML_INIT");
  return r.empty() ? kSuccess : (int)std::strtol(r.c_str(), nullptr, 0);
}
#endif
__attribute__((visibility("default"))) int nvmlShutdown() { return kSuccess; }
__attribute__((visibility("default"))) const char* nvmlErrorString(int r) {
  switch (r) {
    case 0: return "Success";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
  }
}
__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned* n) {
  if (!n) return kInvalidArgument;
  *n = count();
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** dev) {
  if (!dev || i >= count()) return kInvalidArgument;
  *dev = &g_devices[i];
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(void* dev, Utilization* u) {
  unsigned gpu = 0;
  if (int r = number("nvmlDeviceGetUtilizationRates", "FAKE_NVML_UTIL", dev, &gpu)) return r;
  u->gpu = gpu;
  u->memory = 0;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void* dev, Memory* m) {
  unsigned long long used = 0, total = 0;
  if (int r = number("nvmlDeviceGetMemoryInfo", "FAKE_NVML_MEM_USED", dev, &used)) return r;
  std::string t;
  unsigned i = static_cast<Device*>(dev)->index;
  if (!item("FAKE_NVML_MEM_TOTAL", i, t)) return kNotSupported;
  total = std::strtoull(t.c_str(), nullptr, 0);
  m->total = total;
  m->used = used;
  m->free = total >= used ? total - used : 0;
  return kSuccess;
}
#ifndef FAKE_NVML_PARTIAL
__attribute__((visibility("default"))) int nvmlDeviceGetPowerUsage(void* dev, unsigned* mw) {
  return number("nvmlDeviceGetPowerUsage", "FAKE_NVML_POWER_MW", dev, mw);
}
__attribute__((visibility("default"))) int nvmlDeviceGetCurrentClocksThrottleReasons(void* dev, unsigned long long* bits) {
  return number("nvmlDeviceGetCurrentClocksThrottleReasons", "FAKE_NVML_THROTTLE", dev, bits);
}
#endif
__attribute__((visibility("default"))) int nvmlDeviceGetTemperature(void* dev, int sensor, unsigned* c) {
  if (sensor != 0) return kInvalidArgument;  // NVML_TEMPERATURE_GPU only
  return number("nvmlDeviceGetTemperature", "FAKE_NVML_TEMP", dev, c);
}
__attribute__((visibility("default"))) int nvmlDeviceGetClockInfo(void* dev, int type, unsigned* mhz) {
  if (type != 1) return kInvalidArgument;  // NVML_CLOCK_SM only: the engine must ask for the SM clock
  return number("nvmlDeviceGetClockInfo", "FAKE_NVML_SM_CLOCK", dev, mhz);
}
__attribute__((visibility("default"))) int nvmlDeviceGetName(void* dev, char* buf, unsigned len) {
  return text("nvmlDeviceGetName", "FAKE_NVML_NAME", dev, buf, len);
}
__attribute__((visibility("default"))) int nvmlDeviceGetUUID(void* dev, char* buf, unsigned len) {
  return text("nvmlDeviceGetUUID", "FAKE_NVML_UUID", dev, buf, len);
}
__attribute__((visibility("default"))) int nvmlDeviceGetPciInfo_v3(void* dev, PciInfo* p) {
  unsigned i = 0;
  if (int r = check("nvmlDeviceGetPciInfo_v3", dev, i)) return r;
  std::string v;
  if (!item("FAKE_NVML_BUS_ID", i, v)) return kNotSupported;
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->busId, sizeof p->busId, "%s", v.c_str());
  return kSuccess;
}

}  // extern "C"
