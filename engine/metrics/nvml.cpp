#include "engine/metrics/nvml.h"

#include <dlfcn.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

namespace td::nvml {
namespace {

// ---- The part of NVML's public API used here (nvml.h; NVML API Reference Guide,
// https://docs.nvidia.com/deploy/nvml-api/). Declared here so that no NVIDIA header is needed.
using nvmlReturn_t = int;                 // enum nvmlReturn_enum
constexpr nvmlReturn_t NVML_SUCCESS = 0;
using nvmlDevice_t = struct nvmlDevice_st*;  // opaque handle
struct nvmlUtilization_t {                // "Utilization information for a device"
  unsigned int gpu;                       // % of time over the past sample period a kernel ran
  unsigned int memory;                    // % of time device memory was read or written
};
struct nvmlMemory_t {                     // nvmlDeviceGetMemoryInfo (version 1), bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlPciInfo_t {                    // nvmlDeviceGetPciInfo_v3
  char busIdLegacy[16];                   // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];                         // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
};
constexpr int NVML_TEMPERATURE_GPU = 0;   // nvmlTemperatureSensors_t
constexpr int NVML_CLOCK_SM = 1;          // nvmlClockType_t: GRAPHICS 0, SM 1, MEM 2, VIDEO 3
constexpr unsigned kNameBuffer = 96;      // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidBuffer = 96;      // NVML_DEVICE_UUID_V2_BUFFER_SIZE

// The throttle (clocks event) reason bits, nvmlClocksThrottleReason* / nvmlClocksEventReason*.
struct Reason {
  uint64_t bit;
  const char* name;
};
constexpr Reason kReasons[] = {
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
    {0x200, "board_limit"},
    {0x400, "reliability"},
};

// A text from the driver as printable ASCII (JSON-safe whatever bytes came), up to its NUL.
std::string printable(const char* buf, size_t cap) {
  std::string s;
  for (size_t i = 0; i < cap && buf[i]; ++i) {
    const unsigned char c = (unsigned char)buf[i];
    s += (c >= 0x20 && c < 0x7f) ? (char)c : '?';
  }
  return s;
}

// "domain:bus:device.function" in hex ("0000:3b:00.0", "00000000:3B:00.0") as numbers.
std::optional<std::tuple<unsigned long, unsigned long, unsigned long, unsigned long>> parse_bus_id(const std::string& s) {
  unsigned long v[4];
  const char seps[4] = {':', ':', '.', '\0'};
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    size_t end = pos;
    while (end < s.size() && std::isxdigit((unsigned char)s[end])) ++end;
    if (end == pos || end - pos > 8) return std::nullopt;
    v[i] = std::strtoul(s.substr(pos, end - pos).c_str(), nullptr, 16);
    if (seps[i] == '\0') {
      if (end != s.size()) return std::nullopt;
    } else {
      if (end >= s.size() || s[end] != seps[i]) return std::nullopt;
      pos = end + 1;
    }
  }
  return std::make_tuple(v[0], v[1], v[2], v[3]);
}

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace((unsigned char)s[a])) ++a;
  while (b > a && std::isspace((unsigned char)s[b - 1])) --b;
  return s.substr(a, b - a);
}

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;                                       // nvmlInit_v2
  nvmlReturn_t (*shutdown)() = nullptr;                                   // nvmlShutdown
  nvmlReturn_t (*count)(unsigned int*) = nullptr;                         // nvmlDeviceGetCount_v2
  nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t*) = nullptr;        // nvmlDeviceGetHandleByIndex_v2
  nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;       // nvmlDeviceGetUtilizationRates
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;          // nvmlDeviceGetMemoryInfo
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*) = nullptr;           // nvmlDeviceGetPowerUsage (mW)
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;  // nvmlDeviceGetTemperature (°C)
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*) = nullptr;      // nvmlDeviceGetClockInfo (MHz)
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;  // ...CurrentClocksThrottleReasons
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;      // nvmlDeviceGetName
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;      // nvmlDeviceGetUUID
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;            // nvmlDeviceGetPciInfo_v3
  const char* (*error_string)(nvmlReturn_t) = nullptr;                    // nvmlErrorString

  std::string describe(nvmlReturn_t r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    std::string text = s ? printable(s, 256) : std::string();
    return (text.empty() ? "NVML error" : text) + " (" + std::to_string(r) + ")";
  }
};

std::string throttle_reason_names(uint64_t mask) {
  if (mask == 0) return "none";
  std::string out;
  for (int b = 0; b < 64; ++b) {
    const uint64_t bit = uint64_t(1) << b;
    if (!(mask & bit)) continue;
    const char* name = nullptr;
    for (const Reason& r : kReasons)
      if (r.bit == bit) name = r.name;
    if (!out.empty()) out += ',';
    out += name ? std::string(name) : "bit_" + std::to_string(b);
  }
  return out;
}

nlohmann::json sample_json(const GpuSample& s) {
  nlohmann::json j{{"index", s.index}};
  if (!s.name.empty()) j["name"] = s.name;
  if (!s.uuid.empty()) j["uuid"] = s.uuid;
  if (!s.pci_bus_id.empty()) j["pci_bus_id"] = s.pci_bus_id;
  if (s.util_pct) j["util_pct"] = *s.util_pct;
  if (s.mem_used_bytes) j["mem_used_bytes"] = *s.mem_used_bytes;
  if (s.mem_total_bytes) j["mem_total_bytes"] = *s.mem_total_bytes;
  if (s.power_w) j["power_w"] = *s.power_w;
  if (s.temp_c) j["temp_c"] = *s.temp_c;
  if (s.sm_clock_mhz) j["sm_clock_mhz"] = *s.sm_clock_mhz;
  if (s.throttle_reasons) {
    j["throttle_reasons"] = *s.throttle_reasons;
    j["throttle"] = throttle_reason_names(*s.throttle_reasons);
  }
  return j;
}

Nvml::Nvml(const std::string& library) {
  const char* env = std::getenv(kLibraryEnv);
  const bool from_env = library.empty() && env && *env;
  library_ = !library.empty() ? library : from_env ? std::string(env) : std::string(kDefaultLibrary);
  ::dlerror();
  handle_ = ::dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* e = ::dlerror();
    const std::string why = e ? e : "dlopen failed";
    if (library_ == kDefaultLibrary)
      error_ = std::string("no NVIDIA driver (") + kDefaultLibrary + " not found): " + why;
    else
      error_ = (from_env ? std::string(kLibraryEnv) + "=" : std::string()) + library_ + " cannot be loaded: " + why;
    return;
  }
  api_ = new Api;
  auto sym = [this](const char* name) { return ::dlsym(handle_, name); };
  // The entry points are C functions of the types above; dlsym returns them as void*.
  auto bind = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym(name)); };
  bind(api_->init, "nvmlInit_v2");
  bind(api_->shutdown, "nvmlShutdown");
  bind(api_->count, "nvmlDeviceGetCount_v2");
  bind(api_->by_index, "nvmlDeviceGetHandleByIndex_v2");
  bind(api_->util, "nvmlDeviceGetUtilizationRates");
  bind(api_->memory, "nvmlDeviceGetMemoryInfo");
  bind(api_->power, "nvmlDeviceGetPowerUsage");
  bind(api_->temperature, "nvmlDeviceGetTemperature");
  bind(api_->clock, "nvmlDeviceGetClockInfo");
  bind(api_->throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  // Drivers from R535 name it ...ClocksEventReasons (the old name is kept as a deprecated alias).
  if (!api_->throttle) bind(api_->throttle, "nvmlDeviceGetCurrentClocksEventReasons");
  bind(api_->name, "nvmlDeviceGetName");
  bind(api_->uuid, "nvmlDeviceGetUUID");
  bind(api_->pci, "nvmlDeviceGetPciInfo_v3");
  bind(api_->error_string, "nvmlErrorString");
  for (auto [fn, name] : {std::pair<bool, const char*>{api_->init != nullptr, "nvmlInit_v2"},
                          {api_->shutdown != nullptr, "nvmlShutdown"},
                          {api_->count != nullptr, "nvmlDeviceGetCount_v2"},
                          {api_->by_index != nullptr, "nvmlDeviceGetHandleByIndex_v2"}}) {
    if (!fn) {
      error_ = library_ + " has no " + name + " (not NVML, or a driver older than R319)";
      return;
    }
  }
  const nvmlReturn_t r = api_->init();
  if (r != NVML_SUCCESS) {
    error_ = "nvmlInit_v2 failed: " + api_->describe(r);
    return;
  }
  ok_ = true;
}

Nvml::~Nvml() {
  if (ok_ && api_->shutdown) api_->shutdown();
  delete api_;
  // NVML's documentation allows dlclose after nvmlShutdown; the driver's library stays mapped
  // in practice (other users, CUDA), the tests' fake is unmapped.
  if (handle_) ::dlclose(handle_);
}

unsigned Nvml::device_count() const {
  if (!ok_) return 0;
  unsigned int n = 0;
  return api_->count(&n) == NVML_SUCCESS ? n : 0;
}

std::optional<GpuSample> Nvml::sample(unsigned index, bool identity) const {
  if (!ok_ || index >= device_count()) return std::nullopt;
  nvmlDevice_t dev = nullptr;
  if (api_->by_index(index, &dev) != NVML_SUCCESS) return std::nullopt;
  GpuSample s;
  s.index = index;
  if (identity && api_->name) {
    char buf[kNameBuffer] = {};
    if (api_->name(dev, buf, kNameBuffer) == NVML_SUCCESS) s.name = printable(buf, kNameBuffer);
  }
  if (identity && api_->uuid) {
    char buf[kUuidBuffer] = {};
    if (api_->uuid(dev, buf, kUuidBuffer) == NVML_SUCCESS) s.uuid = printable(buf, kUuidBuffer);
  }
  if (identity && api_->pci) {
    nvmlPciInfo_t p{};
    if (api_->pci(dev, &p) == NVML_SUCCESS) s.pci_bus_id = printable(p.busId, sizeof p.busId);
  }
  // A reading outside what the quantity can be is taken as a failed call (the field stays empty).
  if (nvmlUtilization_t u{}; api_->util && api_->util(dev, &u) == NVML_SUCCESS && u.gpu <= 100) s.util_pct = u.gpu;
  if (nvmlMemory_t m{}; api_->memory && api_->memory(dev, &m) == NVML_SUCCESS && m.used <= m.total) {
    s.mem_used_bytes = m.used;
    s.mem_total_bytes = m.total;
  }
  if (unsigned int mw = 0; api_->power && api_->power(dev, &mw) == NVML_SUCCESS) s.power_w = mw / 1000.0;
  if (unsigned int c = 0; api_->temperature && api_->temperature(dev, NVML_TEMPERATURE_GPU, &c) == NVML_SUCCESS && c < 1000)
    s.temp_c = c;
  if (unsigned int mhz = 0; api_->clock && api_->clock(dev, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS) s.sm_clock_mhz = mhz;
  if (unsigned long long bits = 0; api_->throttle && api_->throttle(dev, &bits) == NVML_SUCCESS) s.throttle_reasons = bits;
  return s;
}

std::vector<GpuSample> Nvml::sample_all() const {
  std::vector<GpuSample> out;
  const unsigned n = device_count();
  for (unsigned i = 0; i < n; ++i)
    if (auto s = sample(i)) out.push_back(std::move(*s));
  return out;
}

std::optional<unsigned> Nvml::index_of_uuid(const std::string& uuid) const {
  if (!ok_ || !api_->uuid || uuid.empty()) return std::nullopt;
  std::optional<unsigned> found;
  const unsigned n = device_count();
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t dev = nullptr;
    char buf[kUuidBuffer] = {};
    if (api_->by_index(i, &dev) != NVML_SUCCESS || api_->uuid(dev, buf, kUuidBuffer) != NVML_SUCCESS) continue;
    const std::string u = printable(buf, kUuidBuffer);
    if (u.compare(0, uuid.size(), uuid) != 0) continue;
    if (u.size() == uuid.size()) return i;  // the whole UUID: exact
    if (found) return std::nullopt;         // a prefix of two: ambiguous
    found = i;
  }
  return found;
}

std::optional<unsigned> Nvml::index_of_pci_bus_id(const std::string& bus_id) const {
  const auto want = parse_bus_id(trim(bus_id));
  if (!ok_ || !api_->pci || !want) return std::nullopt;
  const unsigned n = device_count();
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t dev = nullptr;
    nvmlPciInfo_t p{};
    if (api_->by_index(i, &dev) != NVML_SUCCESS || api_->pci(dev, &p) != NVML_SUCCESS) continue;
    if (parse_bus_id(printable(p.busId, sizeof p.busId)) == want) return i;
  }
  return std::nullopt;
}

std::optional<unsigned> device_for_cuda_ordinal(const Nvml& nvml, int cuda_ordinal, const char* cuda_visible_devices) {
  if (!nvml.available() || cuda_ordinal < 0) return std::nullopt;
  const unsigned count = nvml.device_count();
  if (!cuda_visible_devices) {
    if ((unsigned)cuda_ordinal < count) return (unsigned)cuda_ordinal;
    return std::nullopt;
  }
  // Walk the list as CUDA does: it ends at the first entry that names no device.
  const std::string list = cuda_visible_devices;
  size_t pos = 0;
  for (int entry = 0;; ++entry) {
    const size_t comma = list.find(',', pos);
    const std::string item = trim(list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    std::optional<unsigned> dev;
    if (!item.empty() && item.size() <= 9 && item.find_first_not_of("0123456789") == std::string::npos) {
      const unsigned long v = std::strtoul(item.c_str(), nullptr, 10);
      if (v < count) dev = (unsigned)v;
    } else if (item.rfind("GPU-", 0) == 0) {
      dev = nvml.index_of_uuid(item);
    }
    if (!dev) return std::nullopt;  // "", "-1", "MIG-...", an unknown index or UUID: the list ends
    if (entry == cuda_ordinal) return dev;
    if (comma == std::string::npos) return std::nullopt;
    pos = comma + 1;
  }
}

std::optional<unsigned> telemetry_device(const Nvml& nvml, const std::string& device, const char* nvml_device,
                                         const char* cuda_visible_devices, const std::string& pci_bus_id) {
  if (!nvml.available()) return std::nullopt;
  if (nvml_device && *nvml_device) {
    const std::string v = trim(nvml_device);
    if (!v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos) {
      const unsigned long i = std::strtoul(v.c_str(), nullptr, 10);
      return i < nvml.device_count() ? std::optional<unsigned>((unsigned)i) : std::nullopt;
    }
    return nvml.index_of_uuid(v);
  }
  const bool cuda = device == "cuda" || device.rfind("cuda:", 0) == 0;
  if (cuda && !pci_bus_id.empty())
    if (const auto at = nvml.index_of_pci_bus_id(pci_bus_id)) return at;
  if (device == "cuda") return device_for_cuda_ordinal(nvml, 0, cuda_visible_devices);
  if (device.rfind("cuda:", 0) == 0) {
    const std::string n = device.substr(5);
    if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return device_for_cuda_ordinal(nvml, (int)std::strtoul(n.c_str(), nullptr, 10), cuda_visible_devices);
  }
  return std::nullopt;
}

}  // namespace td::nvml
