#include "engine/plan/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "engine/plan/cluster.h"
#include "engine/plan/plan.h"

namespace td {

std::optional<double> error_percent(const std::optional<double>& planned, const std::optional<double>& measured) {
  if (!planned || !measured || *measured == 0 || !std::isfinite(*planned) || !std::isfinite(*measured)) return std::nullopt;
  return 100.0 * (*planned - *measured) / *measured;
}

std::vector<PlanVsMeasuredRow> plan_vs_measured(const RunConfig& c, const RunMeasured& m, double mfu) {
  const bool gpu = c.train.device != "cpu";
  if (!(mfu > 0)) mfu = gpu ? kPlanGpuMfu : kPlanCpuMfu;
  const int world = std::max(1, m.world_size);
  const Plan plan = make_plan(c, world);
  // Tensor parallelism: tp ranks a group, dp replicas (each reads its own slice of the batch).
  const int tp = plan.tensor_parallel, dp = world / tp;
  std::vector<PlanVsMeasuredRow> rows;
  char buf[256];

  PlanVsMeasuredRow mem;
  mem.key = "memory";
  mem.unit = "bytes";
  if (gpu) {
    mem.quantity = "memory per rank (GPU peak)";
    mem.planned = double(plan.total_bytes + kCudaRuntimeBytes);
    mem.measured = m.gpu_mem_peak_bytes;
    mem.basis = "weights + gradients + AdamW + activations (make_plan) + 32 MiB cuBLAS workspace";
  } else {
    mem.quantity = "memory per rank (peak RSS)";
    mem.planned = double(plan.total_bytes + kCpuRuntimeBytes);
    mem.measured = m.peak_rss_bytes;
    mem.basis = "weights + gradients + AdamW + activations (make_plan) + 16 MiB process baseline";
  }
  mem.error_pct = error_percent(mem.planned, mem.measured);
  rows.push_back(mem);

  PlanVsMeasuredRow tps;
  tps.key = "tokens_per_s";
  tps.quantity = "tokens/s";
  tps.unit = "tokens/s";
  if (m.peak_flops && *m.peak_flops > 0 && plan.flops_per_token > 0) {
    tps.planned = world * *m.peak_flops * mfu / plan.flops_per_token;
    std::snprintf(buf, sizeof buf, "%d x peak %.3g FLOP/s x MFU %.2f / %.4g FLOPs per token", world, *m.peak_flops, mfu,
                  plan.flops_per_token);
    tps.basis = buf;
  } else {
    tps.basis = "the run reported no peak FLOP/s";
  }
  tps.measured = m.tokens_per_s;
  tps.error_pct = error_percent(tps.planned, tps.measured);
  rows.push_back(tps);

  if (world > 1) {
    const Precision prec = resolved_precision(c.train) == "bf16" ? Precision::mixed : Precision::fp32;
    // The engine trains ZeRO stages 0 to 3 (cluster.h collective_bytes_per_step; 1 moves the
    // bytes of 0, 2 reduce-scatters every micro batch, 3 also all-gathers the weights twice per
    // micro batch).
    const int stage = std::clamp(c.train.zero, 0, 3);
    // Tensor parallelism (plan.tensor_parallel > 1): ZeRO's over the dp replicas of the rank's
    // shard, plus its TP group's activation all-reduces and cross-entropy all-gather.
    const double bytes = collective_bytes_per_step(plan.n_params_per_rank, prec, stage, dp, c.train.grad_accum) +
                         tp_collective_bytes(c.model, c.train.micro_batch, c.train.grad_accum, tp, prec).total();
    PlanVsMeasuredRow cb;
    cb.key = "comm_bytes";
    cb.quantity = "collective bytes per step and rank";
    cb.unit = "bytes";
    cb.planned = bytes;
    cb.measured = m.comm_bytes_per_step;
    std::snprintf(buf, sizeof buf, "ring %s of the %s gradients over %d ranks (ZeRO-%d)%s", stage == 0 ? "all-reduce" : stage == 1 ? "reduce-scatter + all-gather" : stage == 2 ? "reduce-scatter per micro batch + all-gather" : "reduce-scatter + 2 all-gathers per micro batch",
                  prec == Precision::mixed ? "bf16" : "fp32", dp, stage,
                  tp > 1 ? ", + the tensor-parallel group's activation all-reduces and cross-entropy all-gather" : "");
    cb.basis = buf;
    cb.error_pct = error_percent(cb.planned, cb.measured);
    rows.push_back(cb);

    PlanVsMeasuredRow bw;
    bw.key = "busbw";
    bw.quantity = "bus bandwidth (needed to hide / reached)";
    bw.unit = "bytes/s";
    if (tps.planned && *tps.planned > 0) {
      const double step_s = double(plan.tokens_per_step) / *tps.planned;
      bw.planned = bytes / step_s;
      std::snprintf(buf, sizeof buf, "collective bytes / planned compute time of a step (%.3g s)", step_s);
      bw.basis = buf;
    } else {
      bw.basis = "no planned step time (no peak FLOP/s)";
    }
    bw.measured = m.busbw_bytes_per_s;
    bw.error_pct = error_percent(bw.planned, bw.measured);
    rows.push_back(bw);
  }

  // Storage: what the planned tokens/s read per rank (each rank reads its own slice of the global
  // batch), beside how fast rank 0's reads went (data_read_mb_s). Reached above needed (error
  // below 0): storage keeps up.
  PlanVsMeasuredRow io;
  io.key = "storage";
  io.quantity = "storage read per rank (needed / reached)";
  io.unit = "bytes/s";
  const int token_bytes = shard_token_bytes(c.model.vocab_size);
  if (tps.planned) {
    io.planned = *tps.planned / dp * token_bytes;
    std::snprintf(buf, sizeof buf, "planned tokens/s / %d %s x %d bytes per token on disk; reached: median data_read_mb_s of rank 0",
                  dp, tp > 1 ? (dp == 1 ? "data-parallel replica" : "data-parallel replicas") : (dp == 1 ? "rank" : "ranks"), token_bytes);
    io.basis = buf;
  } else {
    io.basis = "no planned tokens/s (no peak FLOP/s)";
  }
  io.measured = m.storage_read_bytes_per_s;
  io.error_pct = error_percent(io.planned, io.measured);
  rows.push_back(io);
  return rows;
}

static std::string fmt_value(const std::optional<double>& v, const std::string& unit) {
  if (!v) return "-";
  char buf[48];
  double x = *v;
  if (unit == "bytes") {
    const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (std::fabs(x) >= 1024 && i < 4) x /= 1024, ++i;
    std::snprintf(buf, sizeof buf, i ? "%.1f %s" : "%.0f %s", x, u[i]);
  } else {
    const char* u[] = {"", "k", "M", "G", "T"};
    int i = 0;
    while (std::fabs(x) >= 1000 && i < 4) x /= 1000, ++i;
    std::snprintf(buf, sizeof buf, "%.3g %s%s", x, u[i], unit == "bytes/s" ? "B/s" : "");
  }
  return buf;
}

std::string plan_vs_measured_table(const std::vector<PlanVsMeasuredRow>& rows) {
  std::ostringstream o;
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-42s %14s %14s %9s\n", "QUANTITY", "PLANNED", "MEASURED", "ERROR");
  o << buf;
  for (const auto& r : rows) {
    char err[32] = "-";
    if (r.error_pct) std::snprintf(err, sizeof err, "%+.1f%%", *r.error_pct);
    std::snprintf(buf, sizeof buf, "  %-42s %14s %14s %9s\n", r.quantity.c_str(), fmt_value(r.planned, r.unit).c_str(),
                  fmt_value(r.measured, r.unit).c_str(), err);
    o << buf;
  }
  for (const auto& r : rows) o << "  " << r.quantity << ": " << r.basis << "\n";
  return o.str();
}

}  // namespace td
