#include "engine/plan/devices.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/common/error.h"
#include "engine/metrics/calibrate.h"
#include "engine/metrics/sysinfo.h"

namespace td {

extern const char* const kBuiltinDevicesJson;  // devices_builtin.cpp (generated)

const char* precision_name(Precision p) { return p == Precision::fp32 ? "fp32" : "mixed"; }

std::optional<double> Device::peak(Precision p) const {
  if (p == Precision::fp32) return peak_fp32;
  return peak_bf16 ? peak_bf16 : peak_fp16;
}

Precision Device::default_precision() const { return peak_bf16 || peak_fp16 ? Precision::mixed : Precision::fp32; }

static std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return (char)std::tolower(c); });
  return s;
}

const Device& DeviceCatalogue::find(const std::string& name) const {
  for (const Device& d : devices)
    if (lower(d.name) == lower(name)) return d;
  throw Error("unknown device '" + name + "': known devices are " + names() + " (add it to " +
              (user_path.empty() ? user_devices_path() : user_path) + ", see docs/planner.md)");
}

std::string DeviceCatalogue::names() const {
  std::string s;
  for (const Device& d : devices) s += (s.empty() ? "" : ", ") + d.name;
  return s;
}

std::string user_devices_path() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  std::string base = xdg && *xdg ? xdg : std::string(home ? home : "/tmp") + "/.config";
  return base + "/traindeck/devices.json";
}

const nlohmann::json& builtin_devices_json() {
  static const nlohmann::json j = nlohmann::json::parse(kBuiltinDevicesJson);
  return j;
}

static const nlohmann::json& device_list(const nlohmann::json& doc, const std::string& what) {
  if (!doc.is_object() || !doc.contains("devices") || !doc["devices"].is_array())
    throw Error(what + ": expected an object {\"devices\": [ ... ]} (see docs/planner.md)");
  for (const auto& e : doc["devices"])
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || e["name"].get<std::string>().empty())
      throw Error(what + ": every entry of \"devices\" must be an object with a non-empty \"name\"");
  return doc["devices"];
}

nlohmann::json merge_device_documents(nlohmann::json base, const nlohmann::json& user, const std::string& what) {
  device_list(base, "the built-in device catalogue");
  for (const auto& u : device_list(user, what)) {
    auto& list = base["devices"];
    auto it = std::find_if(list.begin(), list.end(), [&](const nlohmann::json& b) {
      return lower(b["name"].get<std::string>()) == lower(u["name"].get<std::string>());
    });
    if (it == list.end()) {
      list.push_back(u);
    } else {
      std::string keep = (*it)["name"];
      for (auto f = u.begin(); f != u.end(); ++f) {
        // a user peak_tflops replaces the given precisions only
        if (f.key() == "peak_tflops" && f.value().is_object() && (*it).contains("peak_tflops") && (*it)["peak_tflops"].is_object())
          for (auto q = f.value().begin(); q != f.value().end(); ++q) (*it)["peak_tflops"][q.key()] = q.value();
        else
          (*it)[f.key()] = f.value();
      }
      (*it)["name"] = keep;
    }
  }
  return base;
}

uint64_t meminfo_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemTotal:") return kb * 1024;
  return 0;
}

// A number in [0, max], or empty for null/absent. Throws for anything else, saying the range:
// 1e300 GiB would overflow the byte count it becomes (and read as "missing").
static std::optional<double> number(const nlohmann::json& e, const std::string& key, const std::string& where, double max) {
  if (!e.contains(key) || e[key].is_null()) return std::nullopt;
  if (!e[key].is_number() || !(e[key].get<double>() >= 0) || e[key].get<double>() > max) {
    char range[64];
    std::snprintf(range, sizeof range, "%g", max);
    throw Error(where + "." + key + ": expected a number in [0, " + range + "] or null, got " + e[key].dump());
  }
  return e[key].get<double>();
}

// Upper bounds of a catalogue's figures: far beyond any device, and small enough that the byte
// and FLOP/s counts they become stay exact.
constexpr double kMaxMemoryGiB = 1e7;       // 10 PiB of device memory
constexpr double kMaxPeakTflops = 1e7;      // 10 EFLOP/s
constexpr double kMaxBandwidthGBps = 1e7;   // 10 PB/s
constexpr double kMaxPricePerHour = 1e9;

static const char* const kKnownFields[] = {"name", "kind", "description", "memory_gib", "peak_tflops",
                                           "memory_bandwidth_gbps", "price_per_hour", "planning_only",
                                           "this_machine", "source", "comment"};

std::vector<Device> parse_devices(const nlohmann::json& doc, const std::string& what) {
  std::vector<Device> out;
  for (const auto& e : device_list(doc, what)) {
    Device d;
    d.name = e["name"];
    std::string where = what + ": device '" + d.name + "'";
    for (auto f = e.begin(); f != e.end(); ++f)
      if (std::find(std::begin(kKnownFields), std::end(kKnownFields), f.key()) == std::end(kKnownFields))
        throw Error(where + ": unknown field '" + f.key() + "' (known: name, kind, description, memory_gib, "
                    "peak_tflops {fp32, bf16, fp16}, memory_bandwidth_gbps, price_per_hour, planning_only, source)");
    d.kind = e.value("kind", std::string("gpu"));
    d.description = e.value("description", d.name);
    d.source = e.value("source", std::string());
    d.planning_only = e.value("planning_only", false);
    d.this_machine = e.value("this_machine", false);
    if (auto gib = number(e, "memory_gib", where, kMaxMemoryGiB)) d.memory_bytes = (uint64_t)(*gib * double(1ull << 30) + 0.5);
    if (e.contains("peak_tflops") && !e["peak_tflops"].is_null()) {
      const auto& pk = e["peak_tflops"];
      if (!pk.is_object()) throw Error(where + ".peak_tflops: expected an object like {\"fp32\": 67, \"bf16\": 989}");
      for (auto q = pk.begin(); q != pk.end(); ++q)
        if (q.key() != "fp32" && q.key() != "bf16" && q.key() != "fp16")
          throw Error(where + ".peak_tflops: unknown precision '" + q.key() + "' (known: fp32, bf16, fp16)");
      auto tf = [&](const char* k) -> std::optional<double> {
        auto v = number(pk, k, where + ".peak_tflops", kMaxPeakTflops);
        if (v && *v == 0) return std::nullopt;
        return v ? std::optional<double>(*v * 1e12) : std::nullopt;
      };
      d.peak_fp32 = tf("fp32");
      d.peak_bf16 = tf("bf16");
      d.peak_fp16 = tf("fp16");
    }
    if (auto bw = number(e, "memory_bandwidth_gbps", where, kMaxBandwidthGBps)) d.memory_bytes_per_s = *bw * 1e9;
    d.price_per_hour = number(e, "price_per_hour", where, kMaxPricePerHour);
    if (d.this_machine) {
      if (d.memory_bytes == 0) d.memory_bytes = meminfo_total_bytes();
      if (!d.peak_fp32) d.peak_fp32 = cached_peak_flops(cpu_cores());
      if (d.description.empty() || d.description == d.name) d.description = cpu_model();
      else d.description += ": " + cpu_model();
    }
    if (d.memory_bytes == 0 && !d.this_machine) throw Error(where + ": memory_gib is missing (GiB of device memory)");
    out.push_back(std::move(d));
  }
  return out;
}

DeviceCatalogue load_device_catalogue(const std::string& user_path) {
  DeviceCatalogue c;
  c.user_path = user_path;
  nlohmann::json doc = builtin_devices_json();
  std::error_code ec;
  if (!user_path.empty() && std::filesystem::exists(user_path, ec)) {
    std::ifstream in(user_path);
    if (!in) throw Error("cannot read the device catalogue '" + user_path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json user;
    try {
      user = nlohmann::json::parse(ss.str());
    } catch (const nlohmann::json::parse_error& e) {
      throw Error("the device catalogue '" + user_path + "' is not valid JSON (" + e.what() + "): fix or remove it");
    }
    doc = merge_device_documents(std::move(doc), user, user_path);
    c.user_loaded = true;
  }
  c.devices = parse_devices(doc, c.user_loaded ? user_path : "the built-in device catalogue");
  return c;
}

}  // namespace td

namespace td {

const Device* find_cuda_device(const DeviceCatalogue& cat, const std::string& cuda_name, uint64_t memory_bytes) {
  std::string n;
  for (char ch : cuda_name) n += (char)std::toupper((unsigned char)ch);
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  std::string key;
  if (has("PCIE") && has("H100")) return nullptr;  // H100 PCIe: 756 TF bf16, not in the catalogue
  if (has(" NVL")) return nullptr;                 // H100 NVL, H200 NVL: other clocks and power
  if (has("H200")) key = "H200";
  else if (has("H100")) key = "H100";
  else if (has("A100")) key = memory_bytes > (uint64_t)60 << 30 ? "A100-80GB" : "A100-40GB";
  else if (has("V100")) key = memory_bytes > (uint64_t)20 << 30 ? "V100-32GB" : "V100-16GB";
  else return nullptr;
  for (const auto& d : cat.devices)
    if (d.name == key) return &d;
  return nullptr;
}

}  // namespace td
