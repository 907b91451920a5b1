#include "engine/train/tp_run.h"

#include <algorithm>
#include <cstring>

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

TpTensorGather::TpTensorGather(dist::Communicator& group, Backend& be, const ModelConfig& m)
    : group_(group), be_(be), tp_(group.world_size()), rank_(group.rank()), full_(model_param_tensors(m)) {
  const std::vector<TpSplit> splits = tp_splits(m);
  for (const auto& s : splits) replicated_.push_back(s.dim < 0);
  size_t widest_piece = 0, widest_full = 0;
  for (const auto& t : full_) widest_full = std::max(widest_full, t.numel);
  for (int q = 0; q < tp_; q++) {
    local_.push_back(tp_param_tensors(m, q, tp_));
    for (const auto& t : local_.back()) widest_piece = std::max(widest_piece, t.numel);
  }
  buf_ = static_cast<float*>(be.alloc(widest_piece * sizeof(float)));
  if (rank_ != 0) return;
  out_.resize(widest_full);
  chunk_.resize(widest_piece);
  runs_.resize((size_t)tp_);
  first_run_.assign((size_t)tp_, std::vector<size_t>(full_.size() + 1, 0));
  for (int q = 0; q < tp_; q++) {
    auto& runs = runs_[(size_t)q];
    auto& first = first_run_[(size_t)q];
    size_t tensor = 0;
    tp_for_each_run(m, q, tp_, [&](size_t fo, size_t lo, size_t n) {
      // Runs come tensor by tensor with ascending full offsets: tensors without runs start here.
      while (fo >= full_[tensor].offset + full_[tensor].numel) first[++tensor] = runs.size();
      runs.push_back({fo, lo, n});
    });
    while (tensor < full_.size()) first[++tensor] = runs.size();
  }
}

TpTensorGather::~TpTensorGather() { be_.free(buf_); }

const float* TpTensorGather::tensor(size_t i, const float* local) {
  const ParamTensor& ft = full_[i];
  for (int q = 0; q < tp_; q++) {
    if (q > 0 && replicated_[i]) break;  // every rank's copy is the same: TP rank 0's is written
    const ParamTensor& lt = local_[(size_t)q][i];
    const size_t n = lt.numel;
    if (n == 0) continue;
    if (q == 0) {
      if (rank_ == 0) be_.download(chunk_.data(), local + lt.offset, n * sizeof(float));
    } else {
      // Backend to backend through the host (the Backend interface has no device copy); NCCL
      // broadcasts device memory.
      if (rank_ == q) {
        std::vector<float> mine(n);
        be_.download(mine.data(), local + lt.offset, n * sizeof(float));
        be_.upload(buf_, mine.data(), n * sizeof(float));
      }
      group_.broadcast(buf_, n * sizeof(float), q);
      if (rank_ == 0) be_.download(chunk_.data(), buf_, n * sizeof(float));
    }
    if (rank_ != 0) continue;
    const auto& runs = runs_[(size_t)q];
    for (size_t k = first_run_[(size_t)q][i]; k < first_run_[(size_t)q][i + 1]; k++) {
      const auto& [fo, lo, c] = runs[k];
      std::memcpy(out_.data() + (fo - ft.offset), chunk_.data() + (lo - lt.offset), c * sizeof(float));
    }
  }
  return rank_ == 0 ? out_.data() : nullptr;
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
