// The planner's device catalogue: memory, dense peak FLOP/s per precision, memory bandwidth and
// an optional price of the accelerators a plan can target (docs/planner.md).
//
// The built-in catalogue is resources/devices.json, compiled into the library at build time (so
// the engine and the GUI need no data file at run time). A user file
// ($XDG_CONFIG_HOME/traindeck/devices.json, default ~/.config/traindeck/devices.json) in the
// same format overrides and extends it: an entry whose name matches a built-in one
// (case-insensitively) replaces the fields it gives, any other entry is added.
//
// File format: {"devices": [{"name": "H100", "kind": "gpu", "description": "...",
//   "memory_gib": 80, "peak_tflops": {"fp32": 67, "bf16": 989, "fp16": 989},
//   "memory_bandwidth_gbps": 3350, "price_per_hour": 2.5, "planning_only": false,
//   "this_machine": false, "source": "datasheet"}]}
// "this_machine": true takes the memory from /proc/meminfo (MemTotal) and the fp32 peak from
// the calibration cache (engine/metrics/calibrate.h, all cores), unless the entry gives them.
//
// Threading: plain values and free functions; loading reads files, call it off the GUI thread
// only if the user file may sit on a slow disk (it is a few KB).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace td {

/// The number formats a plan computes in. fp32: everything fp32 (the CPU engine). mixed: bf16
/// (or fp16 where the device has no bf16) matmuls with fp32 master weights and AdamW moments.
enum class Precision { fp32, mixed };
const char* precision_name(Precision p);

/// One catalogue entry. Units: bytes, FLOP/s, bytes/s, price per device-hour.
struct Device {
  std::string name;         // catalogue key ("H100"); matched case-insensitively
  std::string kind;         // "gpu", "tpu" or "cpu"
  std::string description;  // "NVIDIA H100 SXM5 80 GB"
  uint64_t memory_bytes = 0;
  std::optional<double> peak_fp32;  // dense FLOP/s; empty when unknown (e.g. an uncalibrated CPU)
  std::optional<double> peak_bf16;
  std::optional<double> peak_fp16;
  std::optional<double> memory_bytes_per_s;
  std::optional<double> price_per_hour;
  bool planning_only = false;  // the engine cannot train on it (TPUs)
  bool this_machine = false;   // probed from this machine
  std::string source;          // where the figures come from

  /// The peak that `p` computes at: fp32 -> peak_fp32; mixed -> peak_bf16, else peak_fp16.
  std::optional<double> peak(Precision p) const;
  /// mixed when the device has a bf16 or fp16 peak, else fp32 (CPUs).
  Precision default_precision() const;
};

struct DeviceCatalogue {
  std::vector<Device> devices;  // built-in order, then the user's additions
  std::string user_path;        // the user file consulted ("" when none)
  bool user_loaded = false;     // whether it existed and was merged

  /// The device named `name` (case-insensitive). Throws td::Error "unknown device 'X': known
  /// devices are A, B, ... (add it to <user file>)".
  const Device& find(const std::string& name) const;
  /// "V100-16GB, V100-32GB, ..." in catalogue order.
  std::string names() const;
};

/// $XDG_CONFIG_HOME/traindeck/devices.json, default $HOME/.config/traindeck/devices.json.
std::string user_devices_path();
/// The built-in catalogue document (resources/devices.json as compiled in).
const nlohmann::json& builtin_devices_json();
/// Merges `user` (same format) into `base` by name: fields of an entry with a known name replace
/// that entry's fields, other entries are appended. Throws td::Error for a malformed document.
nlohmann::json merge_device_documents(nlohmann::json base, const nlohmann::json& user, const std::string& what);
/// Parses a catalogue document (probing this machine for "this_machine" entries). Throws
/// td::Error naming the entry and field for a missing name, a negative or non-numeric value.
std::vector<Device> parse_devices(const nlohmann::json& doc, const std::string& what);
/// The built-in catalogue merged with the user file at `user_path` when it exists
/// (default: user_devices_path()). Throws td::Error for an unreadable or malformed user file.
DeviceCatalogue load_device_catalogue(const std::string& user_path = user_devices_path());

/// MemTotal of /proc/meminfo in bytes; 0 when unknown.
uint64_t meminfo_total_bytes();

}  // namespace td

namespace td {

/// The catalogue entry of a CUDA device by the name the CUDA runtime reports
/// (cudaDeviceProp::name): "NVIDIA H200" -> H200, "NVIDIA H100 80GB HBM3" -> H100 (SXM),
/// "NVIDIA A100-SXM4-80GB" / "NVIDIA A100-PCIE-40GB" -> A100-80GB / A100-40GB (by memory_bytes).
/// Variants with other peaks (H100 PCIe and NVL, H200 NVL) and unknown GPUs give nullptr: the
/// engine then reports MFU as null rather than guess.
const Device* find_cuda_device(const DeviceCatalogue& cat, const std::string& cuda_name, uint64_t memory_bytes);

}  // namespace td
