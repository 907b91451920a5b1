// GPU telemetry from NVIDIA's management library (NVML, libnvidia-ml.so.1, which the driver
// installs): utilization, memory used, power, temperature, SM clock and the reasons the clocks
// are held down, per GPU. docs/cuda.md "GPU telemetry".
//
// The library is opened with dlopen at run time and its entry points resolved by name, so the
// engine builds and runs without NVIDIA's headers or driver. The few types and constants used
// are declared in nvml.cpp from NVML's public API (nvml.h; NVML API Reference Guide,
// https://docs.nvidia.com/deploy/nvml-api/). Nothing here throws or aborts: no library, a
// library without a symbol, or a call that fails gives no sample or a sample without that field.
//
// Thread rule: an Nvml may be used from one thread at a time (NVML itself is thread-safe).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace td::nvml {

/// The environment variable that names the library to open instead of libnvidia-ml.so.1 (the
/// tests' fake NVML; a driver installed in an unusual place). Like TRAINDECK_NCCL_LIBRARY.
inline constexpr const char* kLibraryEnv = "TRAINDECK_NVML_LIBRARY";
/// The name dlopen looks for by default (the driver's library, on the loader's search path).
inline constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";

/// One reading of one GPU. A field is empty when its NVML call is missing or failed
/// (NVML_ERROR_NOT_SUPPORTED on that board, no permission, a lost GPU, ...).
struct GpuSample {
  unsigned index = 0;      // NVML's device index (PCI bus order, as nvidia-smi numbers them)
  std::string name;        // "NVIDIA H100 80GB HBM3"; empty when unknown
  std::string uuid;        // "GPU-<hex>" (what CUDA_VISIBLE_DEVICES may name); empty when unknown
  std::string pci_bus_id;  // "00000000:3B:00.0"; empty when unknown
  /// nvmlDeviceGetUtilizationRates().gpu: % of the driver's last sample period (1/6 s to 1 s,
  /// by board) in which one or more kernels ran. 0..100. Not how busy the SMs were.
  std::optional<double> util_pct;
  /// nvmlDeviceGetMemoryInfo(): device memory in use by all processes, and the total, in bytes.
  std::optional<uint64_t> mem_used_bytes;
  std::optional<uint64_t> mem_total_bytes;
  /// nvmlDeviceGetPowerUsage() (milliwatts) / 1000: the board's power draw in W.
  std::optional<double> power_w;
  /// nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU): the GPU die's temperature in °C.
  std::optional<double> temp_c;
  /// nvmlDeviceGetClockInfo(NVML_CLOCK_SM): the SM clock now, in MHz.
  std::optional<double> sm_clock_mhz;
  /// nvmlDeviceGetCurrentClocksThrottleReasons() (…ClocksEventReasons on drivers that dropped
  /// the old name): the nvmlClocksThrottleReason* bits that hold the clocks down now; 0 = none.
  std::optional<uint64_t> throttle_reasons;
};

/// The names of the bits of a throttle-reason mask, lower case, comma-separated, lowest bit first:
/// 0x44 -> "sw_power_cap,hw_thermal_slowdown"; 0 -> "none". Bits NVML documents (nvml.h,
/// nvmlClocksThrottleReason* / nvmlClocksEventReason*): gpu_idle 0x1,
/// applications_clocks_setting 0x2, sw_power_cap 0x4, hw_slowdown 0x8, sync_boost 0x10,
/// sw_thermal_slowdown 0x20, hw_thermal_slowdown 0x40, hw_power_brake_slowdown 0x80,
/// display_clock_setting 0x100, board_limit 0x200, reliability 0x400; any other bit N is "bit_N".
std::string throttle_reason_names(uint64_t mask);

/// A GpuSample as JSON: {"index", "name", "uuid", "pci_bus_id", "util_pct", "mem_used_bytes",
/// "mem_total_bytes", "power_w", "temp_c", "sm_clock_mhz", "throttle_reasons" (the mask),
/// "throttle" (its names)}; a field NVML did not give is left out (an empty text too).
nlohmann::json sample_json(const GpuSample& s);

/// The opened library. Construction opens and initialises it (nvmlInit_v2); the destructor calls
/// nvmlShutdown and closes it. available() says whether it worked, error() why not.
class Nvml {
 public:
  /// `library`: the file or name to dlopen; empty = $TRAINDECK_NVML_LIBRARY, else
  /// libnvidia-ml.so.1. Never throws.
  explicit Nvml(const std::string& library = {});
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  /// True when the library loaded, the entry points every sample needs resolved
  /// (nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2) and
  /// nvmlInit_v2 succeeded.
  bool available() const { return ok_; }
  /// Why not available: "libnvidia-ml.so.1 not found (no NVIDIA driver): <dlerror>",
  /// "<path> has no nvmlInit_v2", "nvmlInit_v2 failed: <nvmlErrorString>". Empty when available.
  const std::string& error() const { return error_; }
  /// What was opened (the library name or path).
  const std::string& library() const { return library_; }

  /// The number of GPUs NVML sees (all of the machine's, whatever CUDA_VISIBLE_DEVICES says);
  /// 0 when not available or the call fails.
  unsigned device_count() const;
  /// One reading of GPU `index` (NVML's index), or nothing when not available, the index is out
  /// of range or its handle cannot be had. Each field is one NVML call (microseconds each; the
  /// power reading can take up to about a millisecond on some boards). `identity` false leaves
  /// name, uuid and pci_bus_id empty (three calls fewer: the trainer's per-step reading).
  std::optional<GpuSample> sample(unsigned index, bool identity = true) const;
  /// A reading of every GPU, in index order (those whose handle fails are left out).
  std::vector<GpuSample> sample_all() const;
  /// The NVML index of the GPU whose UUID is `uuid` or begins with it (CUDA accepts a unique
  /// prefix such as "GPU-8932f937"); nothing when none or more than one match.
  std::optional<unsigned> index_of_uuid(const std::string& uuid) const;
  /// The NVML index of the GPU at PCI bus id `bus_id` ("0000:3b:00.0" or NVML's
  /// "00000000:3B:00.0"; case and the domain's width do not matter); nothing when none.
  std::optional<unsigned> index_of_pci_bus_id(const std::string& bus_id) const;

  struct Api;  // the resolved entry points (nvml.cpp)

 private:
  void* handle_ = nullptr;
  Api* api_ = nullptr;
  bool ok_ = false;
  std::string error_;
  std::string library_;
};

/// Which NVML device is the CUDA device `cuda_ordinal` of this process (cuda:N, N = the
/// ordinal; with several ranks per node the trainer's "cuda" is cuda:TRAINDECK_LOCAL_RANK).
/// The rule, as the CUDA driver applies CUDA_VISIBLE_DEVICES (CUDA C Programming Guide, "CUDA
/// Environment Variables"):
///  * `cuda_visible_devices` null (unset): NVML index = the ordinal. This assumes CUDA numbers
///    the GPUs in PCI bus order like NVML, which holds with CUDA_DEVICE_ORDER=PCI_BUS_ID and on
///    nodes of one GPU model (CUDA's default FASTEST_FIRST orders equal GPUs by PCI bus id);
///  * otherwise it is a comma-separated list; entry number `cuda_ordinal` names the device: a
///    number is an NVML index, "GPU-<uuid>" (or a unique prefix) is found by UUID. The list ends
///    at the first entry that is neither (CUDA ignores the rest), so an ordinal past it, an empty
///    list, "-1" and MIG instances ("MIG-...", whose figures these calls do not give per
///    instance) have no device: nothing.
/// Nothing too when the device is not among NVML's (an index >= device_count()).
std::optional<unsigned> device_for_cuda_ordinal(const Nvml& nvml, int cuda_ordinal, const char* cuda_visible_devices);

/// The environment variable that names the GPU whose telemetry a run reports, overriding the
/// rule below: an NVML index ("0") or a GPU UUID (or a unique prefix). It is how a CPU run
/// reports a GPU (the tests, with the fake NVML) and how a node whose CUDA numbering differs
/// from NVML's (mixed GPU models without CUDA_DEVICE_ORDER=PCI_BUS_ID) is set right.
inline constexpr const char* kDeviceEnv = "TRAINDECK_NVML_DEVICE";

/// The NVML index of the GPU whose figures a rank reports, for its engine device `device`
/// ("cpu", "cuda", "cuda:N"; the trainer's, after "cuda" became cuda:LOCAL_RANK in a
/// multi-rank run): `nvml_device` ($TRAINDECK_NVML_DEVICE) when set and non-empty; else, for
/// cuda / cuda:N, the GPU at `pci_bus_id` (the CUDA backend's DeviceInfo::pci_bus_id, exact
/// whatever CUDA's device order) when NVML lists it, else device_for_cuda_ordinal(N,
/// `cuda_visible_devices`) (cuda = ordinal 0); else (a CPU run) nothing. Nothing too when NVML
/// is not available or names no such GPU.
std::optional<unsigned> telemetry_device(const Nvml& nvml, const std::string& device, const char* nvml_device,
                                         const char* cuda_visible_devices, const std::string& pci_bus_id = {});

}  // namespace td::nvml
