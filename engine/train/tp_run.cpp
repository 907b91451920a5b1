#include "engine/train/tp_run.h"

#include <algorithm>

#include "engine/model/shape.h"
#include "engine/model/tensor_parallel.h"

namespace td {
namespace {

size_t local_count(const ModelConfig& m, int tp_rank, int tp) {
  const auto t = tp_param_tensors(m, tp_rank, tp);
  return t.back().offset + t.back().numel;
}

// n floats of backend memory for the scope.
struct Scratch {
  Scratch(Backend& b, size_t n) : be(b), p(static_cast<float*>(b.alloc(n * sizeof(float)))) {}
  ~Scratch() { be.free(p); }
  Backend& be;
  float* p;
};

}  // namespace

void tp_scatter_full(dist::Communicator& world, Backend& be, const ModelConfig& m, int tp_rank, int tp,
                     const std::vector<float>& full, float* local) {
  size_t widest = 0;
  for (int q = 0; q < tp; q++) widest = std::max(widest, local_count(m, q, tp));
  // TP rank q's shard, sliced on rank 0, broadcast to all through one shard-sized buffer; the
  // ranks of TP rank q keep it. No rank but 0 holds the full layout.
  Scratch buf(be, widest);
  std::vector<float> chunk(world.rank() == 0 ? widest : 0);
  for (int q = 0; q < tp; q++) {
    const size_t n = local_count(m, q, tp);
    if (world.rank() == 0) {
      tp_slice(m, q, tp, full.data(), chunk.data());
      be.upload(buf.p, chunk.data(), n * sizeof(float));
    }
    world.broadcast(buf.p, n * sizeof(float), 0);
    if (q == tp_rank) {
      std::vector<float> mine(n);  // backend to backend through the host
      be.download(mine.data(), buf.p, n * sizeof(float));
      be.upload(local, mine.data(), n * sizeof(float));
    }
  }
}

std::vector<float> tp_gather_full(dist::Communicator& group, Backend& be, const ModelConfig& m, const float* local) {
  const int tp = group.world_size(), r = group.rank();
  size_t widest = 0;
  for (int q = 0; q < tp; q++) widest = std::max(widest, local_count(m, q, tp));
  // One shard-sized buffer: TP rank q's shard broadcast from q, placed by rank 0 as it arrives
  // (a checkpoint's gather holds the full layout on rank 0 only, never a full-size buffer on
  // the others).
  Scratch buf(be, widest);
  std::vector<float> full, chunk(widest);
  if (r == 0) full.assign(model_num_params(m), 0.0f);
  for (int q = 0; q < tp; q++) {
    const size_t n = local_count(m, q, tp);
    if (r == q) {  // backend to backend through the host (the Backend interface has no device copy)
      be.download(chunk.data(), local, n * sizeof(float));
      be.upload(buf.p, chunk.data(), n * sizeof(float));
    }
    group.broadcast(buf.p, n * sizeof(float), q);
    if (r != 0) continue;
    be.download(chunk.data(), buf.p, n * sizeof(float));
    tp_place(m, q, tp, chunk.data(), full.data());
  }
  return full;
}

std::vector<std::pair<size_t, size_t>> tp_counted_ranges(const ModelConfig& m, int tp_rank, int tp) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const auto& [range, replicated] : tp_replicated_ranges(m, tp_rank, tp))
    if (!replicated || tp_rank == 0) out.push_back(range);
  return out;
}

double counted_norm_squared(Backend& be, const float* g, size_t lo, size_t hi, const std::vector<std::pair<size_t, size_t>>& counted) {
  if (counted.empty()) return hi > lo ? be.grad_norm_squared(g, hi - lo) : 0.0;
  double s = 0.0;
  for (const auto& [a, b] : counted) {
    const size_t x = std::max(a, lo), y = std::min(b, hi);
    if (x < y) s += be.grad_norm_squared(g + (x - lo), y - x);
  }
  return s;
}

double tp_norm_squared(Backend& be, const ModelConfig& m, int tp_rank, int tp, const float* grads) {
  const auto counted = tp_counted_ranges(m, tp_rank, tp);
  return counted_norm_squared(be, grads, 0, counted.empty() ? 0 : counted.back().second, counted);
}

}  // namespace td
