#include "engine/train/step_figures.h"

#include <array>
#include <cstring>
#include <utility>

namespace td {

namespace {

// The step table's GPU telemetry fields of one scope.
struct GpuFields {
  FieldIndex util, mem_used, power, temp, sm_clock, throttle;
};
constexpr GpuFields kGpuStepFields{step_field("gpu_util_pct"), step_field("gpu_mem_used_bytes"), step_field("gpu_power_w"),
                                   step_field("gpu_temp_c"),   step_field("gpu_sm_clock_mhz"),   step_field("gpu_throttle")};
constexpr GpuFields kGpuRankFields{rank_field("gpu_util_pct"), rank_field("gpu_mem_used_bytes"), rank_field("gpu_power_w"),
                                   rank_field("gpu_temp_c"),   rank_field("gpu_sm_clock_mhz"),   rank_field("gpu_throttle")};

}  // namespace

void set_gpu_figures(StepFigures& f, FieldScope scope, const nvml::GpuSample& g) {
  const GpuFields& k = scope == FieldScope::Rank ? kGpuRankFields : kGpuStepFields;
  if (g.util_pct) f.set(k.util, *g.util_pct);
  if (g.mem_used_bytes) f.set(k.mem_used, (double)*g.mem_used_bytes);
  if (g.power_w) f.set(k.power, *g.power_w);
  if (g.temp_c) f.set(k.temp, *g.temp_c);
  if (g.sm_clock_mhz) f.set(k.sm_clock, *g.sm_clock_mhz);
  if (g.throttle_reasons) f.set(k.throttle, (double)*g.throttle_reasons);
}

double set_comm_figures(StepFigures& f, const dist::CommStats& c0, const dist::CommStats& c1) {
  const double comm_s = c1.seconds - c0.seconds;
  f.set(rank_field("comm_bytes_sent"), (double)(c1.bytes_sent - c0.bytes_sent));
  f.set(rank_field("comm_bytes_received"), (double)(c1.bytes_received - c0.bytes_received));
  f.set(rank_field("comm_ms"), comm_s * 1e3);
  constexpr std::array<std::pair<FieldIndex, FieldIndex>, dist::kCollectiveKinds> kKindFields{
      {{rank_field("all_reduce_bytes"), rank_field("all_reduce_ms")},
       {rank_field("reduce_scatter_bytes"), rank_field("reduce_scatter_ms")},
       {rank_field("all_gather_bytes"), rank_field("all_gather_ms")}}};
  for (int k = 0; k < dist::kCollectiveKinds; k++) {
    f.set(kKindFields[k].first, (double)(c1.by_kind[k].bytes_sent - c0.by_kind[k].bytes_sent));
    f.set(kKindFields[k].second, (c1.by_kind[k].seconds - c0.by_kind[k].seconds) * 1e3);
  }
  f.set(rank_field("busbw_gb_s"), comm_s > 0 ? (c1.bus_bytes - c0.bus_bytes) / comm_s * 1e-9 : 0.0);
  return comm_s;
}

std::vector<StepFigures> all_gather_rank_figures(dist::Communicator& comm, const StepFigures& mine) {
  const int world = comm.world_size();
  const auto packed = mine.pack_rank();
  constexpr size_t kFloats = sizeof packed / sizeof(float);
  std::vector<float> all(kFloats * (size_t)world);
  std::memcpy(&all[kFloats * (size_t)comm.rank()], packed.data(), sizeof packed);
  comm.all_gather(all.data(), all.size());
  std::vector<StepFigures> out;
  out.reserve((size_t)world);
  for (int r = 0; r < world; r++) {
    std::array<double, kRankMetricFields.size()> v;
    std::memcpy(v.data(), &all[kFloats * (size_t)r], sizeof v);
    out.push_back(StepFigures::unpack_rank(v.data()));
  }
  return out;
}

}  // namespace td
