#include "engine/plan/cluster.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "engine/common/error.h"
#include "engine/model/shape.h"
#include "engine/model/tensor_parallel.h"

namespace td {

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

ZeroMemory zero_memory(uint64_t n_params, uint64_t activation_floats, Precision p, int stage, int world_size) {
  if (stage < 0 || stage > 3) throw Error("ZeRO stage " + std::to_string(stage) + " is out of range: use 0, 1, 2 or 3");
  if (world_size < 1) throw Error("world size must be at least 1");
  const bool mixed = p == Precision::mixed;
  const uint64_t n = (uint64_t)world_size;
  uint64_t params = (mixed ? 2 : 4) * n_params;
  uint64_t grads = (mixed ? 2 : 4) * n_params;
  uint64_t optim = (mixed ? 12 : 8) * n_params;
  ZeroMemory z;
  z.stage = stage;
  z.optimizer_bytes = stage >= 1 ? ceil_div(optim, n) : optim;
  z.grads_bytes = stage >= 2 ? ceil_div(grads, n) : grads;
  z.params_bytes = stage >= 3 ? ceil_div(params, n) : params;
  z.activations_bytes = (mixed ? 2 : 4) * activation_floats;
  z.total_bytes = z.params_bytes + z.grads_bytes + z.optimizer_bytes + z.activations_bytes;
  return z;
}

CollectiveBytes collective_bytes_by_kind(uint64_t n_params, Precision p, int stage, int world_size, int grad_accum) {
  if (stage < 0 || stage > 3) throw Error("ZeRO stage " + std::to_string(stage) + " is out of range: use 0, 1, 2 or 3");
  CollectiveBytes c;
  if (world_size <= 1) return c;
  const double s = double(n_params) * (p == Precision::mixed ? 2 : 4);  // G = P
  const double f = double(world_size - 1) / world_size;
  switch (stage) {
    case 0: c.all_reduce = 2 * f * s; break;
    case 1: c.reduce_scatter = f * s, c.all_gather = f * s; break;
    case 2: c.reduce_scatter = f * grad_accum * s, c.all_gather = f * s; break;
    default: c.reduce_scatter = f * grad_accum * s, c.all_gather = f * 2 * grad_accum * s; break;
  }
  return c;
}

CollectiveBytes tp_collective_bytes(const ModelConfig& m, int micro_batch, int grad_accum, int tp, Precision p) {
  CollectiveBytes c;
  if (tp <= 1) return c;
  const double bt = double(micro_batch) * m.seq_len, f = double(tp - 1) / tp;
  const double s = bt * m.d_model * 4;  // fp32 in both precisions (GPT::tp_reduce)
  (void)p;
  c.all_reduce = grad_accum * 2.0 * (1 + 2 * m.n_layer) * 2 * f * s;
  c.all_gather = grad_accum * 8.0 * (tp - 1) * bt;
  return c;
}

double collective_bytes_per_step(uint64_t n_params, Precision p, int stage, int world_size, int grad_accum) {
  return collective_bytes_by_kind(n_params, p, stage, world_size, grad_accum).total();
}

// The fewest devices whose memory holds stage `stage`; 0 when no count does.
static int devices_to_fit(uint64_t n_params, uint64_t act_floats, Precision p, int stage, uint64_t memory) {
  if (zero_memory(n_params, act_floats, p, stage, 1).total_bytes <= memory) return 1;
  if (stage == 0) return 0;
  // total(n) = fixed + sharded / n: solve, then step over the ceil rounding.
  ZeroMemory one = zero_memory(n_params, act_floats, p, stage, 1);
  uint64_t sharded = one.optimizer_bytes + (stage >= 2 ? one.grads_bytes : 0) + (stage >= 3 ? one.params_bytes : 0);
  uint64_t fixed = one.total_bytes - sharded;
  if (fixed >= memory) return 0;
  double n0 = std::ceil(double(sharded) / double(memory - fixed));
  if (n0 > 1e9) return 0;
  int n = std::max(1, (int)n0 - 1);
  while (zero_memory(n_params, act_floats, p, stage, n).total_bytes > memory) ++n;
  return n;
}

ClusterPlan make_cluster_plan(const RunConfig& c, const DeviceCatalogue& cat, const ClusterOptions& o) {
  if (o.zero < 0 || o.zero > 3) throw Error("--zero " + std::to_string(o.zero) + " is out of range: use 0, 1, 2 or 3");
  if (!(o.mfu > 0 && o.mfu <= 1)) throw Error("--mfu must be in (0, 1] (e.g. 0.4 for 40%)");
  if (!(o.tokens >= 0)) throw Error("--tokens must be a non-negative token count (e.g. 1e9)");
  if (!(o.deadline_hours >= 0)) throw Error("--deadline-hours must be non-negative (0: no deadline)");
  if (o.world_size < 1) throw Error("--world-size must be at least 1");
  const int tp = o.tensor_parallel;
  if (tp < 1 || o.world_size % tp != 0)
    throw Error("--world-size " + std::to_string(o.world_size) + " is not a multiple of the tensor-parallel degree " + std::to_string(tp) +
                ": give a world size of data-parallel replicas x " + std::to_string(tp) + " devices");
  if (tp > 1)
    if (const std::string why = tp_problem(c.model, tp); !why.empty()) throw Error("tensor parallel " + std::to_string(tp) + ": " + why);
  const int dp = o.world_size / tp;
  ClusterPlan p;
  p.device = cat.find(o.device);
  p.options = o;
  p.precision = o.precision.value_or(p.device.default_precision());
  p.options.precision = p.precision;
  p.peak_flops = p.device.peak(p.precision);
  if (o.precision && !p.peak_flops && !p.device.this_machine)
    throw Error("device '" + p.device.name + "' has no " + precision_name(p.precision) +
                " peak in the catalogue: use --precision " +
                (p.precision == Precision::mixed ? "fp32" : "mixed") + " or add the peak to " + user_devices_path());
  RunConfig ct = c;
  ct.train.tensor_parallel = tp;
  p.model = make_plan(ct, o.world_size);
  const ModelConfig& m = c.model;
  // Model state per device: a TP rank's shard (the largest), ZeRO over the dp replicas.
  const uint64_t psi = p.model.n_params_per_rank;
  // Activations in floats (a TP rank's: its widths and TP's buffers, the largest rank's); a CPU
  // also keeps its backend's attention scratch (fp32, plan.h).
  const AttentionKernel attn = parse_attention_kernel(c.train.attention);
  uint64_t act_model = model_activation_bytes(m, c.train.micro_batch, m.seq_len, DType::kF32, attn) / 4;
  if (tp > 1) {
    act_model = 0;
    for (int r = 0; r < tp; r++)
      act_model = std::max<uint64_t>(act_model, (model_activation_bytes(m, c.train.micro_batch, m.seq_len, DType::kF32, tp_widths(m, r, tp), attn) +
                                                 tp_buffer_bytes(m, c.train.micro_batch, r, tp)) / 4);
  }
  auto act_floats = [&](const Device& d) -> uint64_t {
    uint64_t a = act_model;
    if (d.kind == "cpu") a += cpu_backend_scratch_bytes(m, c.train.micro_batch, tp, attn) / 4;
    return a;
  };
  const uint64_t act = act_floats(p.device);
  for (int s = 0; s < 4; ++s) p.memory[s] = zero_memory(psi, act, p.precision, s, dp);
  p.fits = p.memory[o.zero].total_bytes <= p.device.memory_bytes;
  p.tokens = o.tokens > 0 ? o.tokens : double(c.train.steps) * double(p.model.tokens_per_step);
  p.total_flops = p.tokens * p.model.flops_per_token;
  p.token_bytes = shard_token_bytes(m.vocab_size);
  // A replica's tokens of a step, computed by its tp devices together.
  const double tokens_per_device_step = double(c.train.micro_batch) * c.train.grad_accum * m.seq_len / tp;
  p.collective_bytes_by_kind = collective_bytes_by_kind(psi, p.precision, o.zero, dp, c.train.grad_accum);
  p.tp_collective_bytes = tp_collective_bytes(m, c.train.micro_batch, c.train.grad_accum, tp, p.precision);
  p.collective_bytes_by_kind.all_reduce += p.tp_collective_bytes.all_reduce;
  p.collective_bytes_by_kind.all_gather += p.tp_collective_bytes.all_gather;
  p.collective_bytes_per_step = p.collective_bytes_by_kind.total();
  p.price_per_hour = o.price_per_hour ? o.price_per_hour : p.device.price_per_hour;
  if (p.peak_flops) {
    const double rate = *p.peak_flops * o.mfu;  // achieved FLOP/s per device
    p.tokens_per_s = o.world_size * rate / p.model.flops_per_token;
    p.train_seconds = p.total_flops / (o.world_size * rate);
    p.step_seconds = tokens_per_device_step * p.model.flops_per_token / rate;
    p.network_bytes_per_s = p.collective_bytes_per_step / p.step_seconds;
    p.storage_bytes_per_s = p.tokens_per_s * p.token_bytes;
    if (p.price_per_hour) p.cost = o.world_size * p.train_seconds / 3600 * *p.price_per_hour;
  }
  for (const Device& d : cat.devices) {
    DeviceNeed need;
    need.device = d.name;
    need.precision = o.precision ? *o.precision : d.default_precision();
    need.peak_flops = d.peak(need.precision);
    // Replicas of a TP group's shard that fit, times the group's devices.
    for (int s = 0; s < 4; ++s) need.n_fit[s] = tp * devices_to_fit(psi, act_floats(d), need.precision, s, d.memory_bytes);
    if (need.peak_flops && o.deadline_hours > 0) {
      const int n = std::max(1, (int)std::ceil(p.total_flops / (*need.peak_flops * o.mfu * o.deadline_hours * 3600)));
      need.n_deadline = (n + tp - 1) / tp * tp;  // whole TP groups
    }
    int fit = need.n_fit[o.zero];
    need.n_needed = fit == 0 ? 0 : std::max(fit, need.n_deadline);
    if (need.peak_flops && need.n_needed > 0) {
      need.device_hours = p.total_flops / (*need.peak_flops * o.mfu) / 3600;
      need.hours = need.device_hours / need.n_needed;
      auto price = d.name == p.device.name && o.price_per_hour ? o.price_per_hour : d.price_per_hour;
      if (price) need.cost = need.device_hours * *price;
    }
    p.needs.push_back(need);
  }
  return p;
}

static std::string gib(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
  return buf;
}

static std::string si(double v, const char* unit) {
  const char* pre[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 6) v /= 1000, ++i;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", v, pre[i], unit);
  return buf;
}

static std::string duration(double s) {
  char buf[48];
  if (s < 1) std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else if (s < 120) std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else if (s < 2 * 86400) std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  else std::snprintf(buf, sizeof buf, "%.1f days", s / 86400);
  return buf;
}

std::string cluster_table(const ClusterPlan& p) {
  std::ostringstream o;
  char buf[256];
  const auto& op = p.options;
  std::snprintf(buf, sizeof buf, "\ncluster: %d x %s (%s, %s memory), %s, ZeRO-%d%s\n", op.world_size, p.device.name.c_str(),
                p.device.description.c_str(), gib((double)p.device.memory_bytes).c_str(), precision_name(p.precision),
                op.zero, op.zero == 3 && p.precision == Precision::mixed ? " (stage 3 trains in fp32 only: a planning estimate in bf16)" : "");
  o << buf;
  if (op.tensor_parallel > 1) {
    std::snprintf(buf, sizeof buf, "tensor parallel %d x data parallel %d: each device holds a %s-parameter shard\n", op.tensor_parallel,
                  op.world_size / op.tensor_parallel, si((double)p.model.n_params_per_rank, "").c_str());
    o << buf;
  }
  if (p.device.planning_only) o << "  (planning only: the engine does not run on " << p.device.name << ")\n";
  o << "memory per device by ZeRO stage (Rajbhandari et al. 2020):\n";
  std::snprintf(buf, sizeof buf, "  %-6s %12s %12s %12s %12s %12s\n", "stage", "params", "grads", "optimizer", "activations", "total");
  o << buf;
  for (const auto& z : p.memory) {
    std::snprintf(buf, sizeof buf, "  %-6d %12s %12s %12s %12s %12s%s\n", z.stage, gib((double)z.params_bytes).c_str(),
                  gib((double)z.grads_bytes).c_str(), gib((double)z.optimizer_bytes).c_str(),
                  gib((double)z.activations_bytes).c_str(), gib((double)z.total_bytes).c_str(),
                  z.total_bytes <= p.device.memory_bytes ? "" : "  does not fit");
    o << buf;
  }
  std::snprintf(buf, sizeof buf, "%-34s %s tokens, %s\n", "budget", si(p.tokens, "").c_str(), si(p.total_flops, "FLOP").c_str());
  o << buf;
  if (!p.peak_flops) {
    o << "time: unknown: " << p.device.name << " has no " << precision_name(p.precision) << " peak"
      << (p.device.this_machine ? " (run traindeck-engine calibrate)" : "") << "\n";
  } else {
    std::snprintf(buf, sizeof buf, "%-34s %s at MFU %.0f%% of %s\n", "throughput (all devices)", si(p.tokens_per_s, "tokens/s").c_str(),
                  op.mfu * 100, si(*p.peak_flops, "FLOP/s").c_str());
    o << buf;
    std::snprintf(buf, sizeof buf, "%-34s %s\n", "time to train the budget", duration(p.train_seconds).c_str());
    o << buf;
    std::snprintf(buf, sizeof buf, "%-34s %s\n", "compute time per step", duration(p.step_seconds).c_str());
    o << buf;
    std::snprintf(buf, sizeof buf, "%-34s %s per device\n", "collective bytes per step", si(p.collective_bytes_per_step, "B").c_str());
    o << buf;
    if (op.tensor_parallel > 1) {
      std::snprintf(buf, sizeof buf, "%-34s %s per device\n", "  in the tensor-parallel group", si(p.tp_collective_bytes.total(), "B").c_str());
      o << buf;
    }
    std::snprintf(buf, sizeof buf, "%-34s %s per device\n", "bus bandwidth to hide them", si(p.network_bytes_per_s, "B/s").c_str());
    o << buf;
    std::snprintf(buf, sizeof buf, "%-34s %s (%d bytes per token)\n", "storage read bandwidth", si(p.storage_bytes_per_s, "B/s").c_str(),
                  p.token_bytes);
    o << buf;
    if (p.cost) std::snprintf(buf, sizeof buf, "%-34s %.2f (%.2f per device-hour)\n", "cost", *p.cost, *p.price_per_hour);
    else std::snprintf(buf, sizeof buf, "%-34s unknown (give --price per device-hour)\n", "cost");
    o << buf;
  }
  o << "devices needed per type (fit: fewest devices holding ZeRO-0/1/2/3; deadline: "
    << (op.deadline_hours > 0 ? si(op.deadline_hours, "h") : std::string("none")) << "):\n";
  std::snprintf(buf, sizeof buf, "  %-11s %-6s %5s %5s %5s %5s %9s %7s %12s %12s %10s\n", "device", "prec", "fit0", "fit1", "fit2",
                "fit3", "deadline", "needed", "time", "device-h", "cost");
  o << buf;
  for (const auto& n : p.needs) {
    auto cnt = [](int v) { return v == 0 ? std::string("-") : std::to_string(v); };
    char dh[32] = "-", cost[32] = "-";
    if (n.device_hours > 0) std::snprintf(dh, sizeof dh, "%.1f", n.device_hours);
    if (n.cost) std::snprintf(cost, sizeof cost, "%.2f", *n.cost);
    std::snprintf(buf, sizeof buf, "  %-11s %-6s %5s %5s %5s %5s %9s %7s %12s %12s %10s\n", n.device.c_str(), precision_name(n.precision),
                  cnt(n.n_fit[0]).c_str(), cnt(n.n_fit[1]).c_str(), cnt(n.n_fit[2]).c_str(), cnt(n.n_fit[3]).c_str(),
                  cnt(n.n_deadline).c_str(), cnt(n.n_needed).c_str(), n.hours > 0 ? duration(n.hours * 3600).c_str() : "-", dh, cost);
    o << buf;
  }
  return o.str();
}

static nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json cluster_json(const ClusterPlan& p) {
  // The figures that follow from a peak: null when the device has none for the precision (never
  // 0.0, which would read as "no throughput").
  auto timed = [&](double v) { return p.peak_flops ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json mem = nlohmann::json::array();
  for (const auto& z : p.memory)
    mem.push_back({{"stage", z.stage}, {"params_bytes", z.params_bytes}, {"grads_bytes", z.grads_bytes},
                   {"optimizer_bytes", z.optimizer_bytes}, {"activations_bytes", z.activations_bytes},
                   {"total_bytes", z.total_bytes}, {"fits", z.total_bytes <= p.device.memory_bytes}});
  nlohmann::json needs = nlohmann::json::array();
  for (const auto& n : p.needs)
    needs.push_back({{"device", n.device}, {"precision", precision_name(n.precision)}, {"peak_flops", opt(n.peak_flops)},
                     {"n_fit", n.n_fit}, {"n_deadline", n.n_deadline}, {"n_needed", n.n_needed}, {"hours", n.hours},
                     {"device_hours", n.device_hours}, {"cost", opt(n.cost)}});
  return {{"device", p.device.name},
          {"device_memory_bytes", p.device.memory_bytes},
          {"world_size", p.options.world_size},
          {"tensor_parallel", p.options.tensor_parallel},
          {"zero", p.options.zero},
          {"precision", precision_name(p.precision)},
          {"mfu", p.options.mfu},
          {"deadline_hours", p.options.deadline_hours},
          {"memory_per_device", mem},
          {"fits", p.fits},
          {"tokens", p.tokens},
          {"total_flops", p.total_flops},
          {"peak_flops", opt(p.peak_flops)},
          {"tokens_per_s", timed(p.tokens_per_s)},
          {"train_seconds", timed(p.train_seconds)},
          {"step_seconds", timed(p.step_seconds)},
          {"collective_bytes_per_step", p.collective_bytes_per_step},
          {"collective_bytes_by_kind",
           {{"all_reduce", p.collective_bytes_by_kind.all_reduce},
            {"reduce_scatter", p.collective_bytes_by_kind.reduce_scatter},
            {"all_gather", p.collective_bytes_by_kind.all_gather}}},
          {"tp_collective_bytes", {{"all_reduce", p.tp_collective_bytes.all_reduce}, {"all_gather", p.tp_collective_bytes.all_gather}}},
          {"network_bytes_per_s", timed(p.network_bytes_per_s)},
          {"token_bytes", p.token_bytes},
          {"storage_bytes_per_s", timed(p.storage_bytes_per_s)},
          {"price_per_hour", opt(p.price_per_hour)},
          {"cost", opt(p.cost)},
          {"devices_needed", needs}};
}

}  // namespace td
