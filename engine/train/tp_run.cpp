#include "engine/train/tp_run.h"

#include <algorithm>
#include <cstring>

#include "engine/model/shape.h"
#include "engine/model/tensor_parallel.h"

namespace td {
namespace {

// n floats of backend memory for the scope.
struct Scratch {
  Scratch(Backend& b, size_t n) : be(b), p(static_cast<float*>(b.alloc(n * sizeof(float)))) {}
  ~Scratch() { be.free(p); }
  Backend& be;
  float* p;
};

}  // namespace

TpPieces::TpPieces(const ModelConfig& m, int tp) : full(model_param_tensors(m)) {
  for (const auto& s : tp_splits(m)) replicated.push_back(s.dim < 0);
  for (const auto& t : full) widest_full = std::max(widest_full, t.numel);
  runs_.resize((size_t)tp);
  first_run_.assign((size_t)tp, std::vector<size_t>(full.size() + 1, 0));
  for (int q = 0; q < tp; q++) {
    local.push_back(tp_param_tensors(m, q, tp));
    for (const auto& t : local.back()) widest_piece = std::max(widest_piece, t.numel);
    auto& runs = runs_[(size_t)q];
    auto& first = first_run_[(size_t)q];
    size_t tensor = 0;
    tp_for_each_run(m, q, tp, [&](size_t fo, size_t lo, size_t n) {
      // Runs come tensor by tensor with ascending full offsets: tensors without runs start here.
      while (fo >= full[tensor].offset + full[tensor].numel) first[++tensor] = runs.size();
      runs.push_back({fo, lo, n});
    });
    while (tensor < full.size()) first[++tensor] = runs.size();
  }
}

void tp_scatter_tensors(dist::Communicator& world, Backend& be, const ModelConfig& m, int tp_rank, int tp,
                        const std::function<void(size_t, float*)>& source, float* local) {
  const TpPieces p(m, tp);
  const bool root = world.rank() == 0;
  Scratch buf(be, p.widest_piece);
  std::vector<float> full(root ? p.widest_full : 0), chunk(p.widest_piece);
  // buf (backend) -> this rank's piece of a tensor in local, through the host (the Backend
  // interface has no device copy).
  auto keep = [&](const ParamTensor& lt) {
    be.download(chunk.data(), buf.p, lt.numel * sizeof(float));
    be.upload(local + lt.offset, chunk.data(), lt.numel * sizeof(float));
  };
  for (size_t i = 0; i < p.full.size(); i++) {
    if (root) source(i, full.data());
    if (p.replicated[i]) {  // every rank's piece is the whole tensor: one broadcast
      const size_t n = p.full[i].numel;
      if (root) be.upload(buf.p, full.data(), n * sizeof(float));
      world.broadcast(buf.p, n * sizeof(float), 0);
      keep(p.local[(size_t)tp_rank][i]);
      continue;
    }
    for (int q = 0; q < tp; q++) {
      const ParamTensor& lt = p.local[(size_t)q][i];
      if (lt.numel == 0) continue;
      if (root) {  // TP rank q's piece packed from the full tensor
        p.for_each_run(q, i, [&](size_t fo, size_t lo, size_t c) { std::memcpy(chunk.data() + lo, full.data() + fo, c * sizeof(float)); });
        be.upload(buf.p, chunk.data(), lt.numel * sizeof(float));
      }
      world.broadcast(buf.p, lt.numel * sizeof(float), 0);
      if (q == tp_rank) keep(lt);
    }
  }
}

TpTensorGather::TpTensorGather(dist::Communicator& group, Backend& be, const ModelConfig& m)
    : group_(group), be_(be), tp_(group.world_size()), rank_(group.rank()), pieces_(m, tp_) {
  buf_ = static_cast<float*>(be.alloc(pieces_.widest_piece * sizeof(float)));
  if (rank_ != 0) return;
  out_.resize(pieces_.widest_full);
  chunk_.resize(pieces_.widest_piece);
}

TpTensorGather::~TpTensorGather() { be_.free(buf_); }

const float* TpTensorGather::tensor(size_t i, const float* local) {
  for (int q = 0; q < tp_; q++) {
    if (q > 0 && pieces_.replicated[i]) break;  // every rank's copy is the same: TP rank 0's is written
    const ParamTensor& lt = pieces_.local[(size_t)q][i];
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
    if (rank_ == 0)
      pieces_.for_each_run(q, i, [&](size_t fo, size_t lo, size_t c) { std::memcpy(out_.data() + fo, chunk_.data() + lo, c * sizeof(float)); });
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
