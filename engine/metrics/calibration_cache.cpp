// The calibration cache: $XDG_CACHE_HOME/traindeck/calibration.json, keyed by CPU model and
// thread count. Kept apart from the sgemm measurement (calibrate.cpp) so that the planner
// library (td_engine_plan, linked by the GUI) reads it without OpenBLAS or OpenMP.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/metrics/calibrate.h"
#include "engine/metrics/sysinfo.h"

namespace td {

std::string calibration_cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string base = xdg && *xdg ? xdg : std::string(home ? home : "/tmp") + "/.cache";
  return base + "/traindeck/calibration.json";
}

static std::string cache_key(int threads) { return cpu_model() + " | threads=" + std::to_string(threads); }

namespace {

std::optional<double> cached_value(const std::string& key) {
  std::ifstream in(calibration_cache_path());
  if (!in) return std::nullopt;
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains(key)) return std::nullopt;
  auto v = j[key];
  if (!v.is_number() || v.get<double>() <= 0) return std::nullopt;
  return v.get<double>();
}

// Keeps the higher of `value` and the cached one: other load on the machine can only lower a
// measurement.
void store_max(const std::string& key, double value) {
  std::error_code ec;
  std::string path = calibration_cache_path();
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  nlohmann::json j = nlohmann::json::object();
  {
    std::ifstream in(path);
    if (in) {
      auto old = nlohmann::json::parse(in, nullptr, false);
      if (!old.is_discarded() && old.is_object()) j = old;
    }
  }
  if (j.contains(key) && j[key].is_number() && j[key].get<double>() > value) return;
  j[key] = value;
  std::string tmp = path + ".tmp";
  std::ofstream out(tmp);
  out << j.dump(2) << "\n";
  out.close();
  if (out) std::filesystem::rename(tmp, path, ec);
}

std::string engine_mfu_key(int threads) { return cache_key(threads) + " | engine_mfu"; }

}  // namespace

std::optional<double> cached_peak_flops(int threads) { return cached_value(cache_key(threads)); }

void store_peak_flops(int threads, double flops) { store_max(cache_key(threads), flops); }

std::optional<double> cached_engine_mfu(int threads) {
  std::optional<double> v = cached_value(engine_mfu_key(threads));
  if (v && *v > 1) return std::nullopt;
  return v;
}

void store_engine_mfu(int threads, double mfu) {
  if (!(mfu > 0 && mfu <= 1)) return;
  store_max(engine_mfu_key(threads), mfu);
}

}  // namespace td
