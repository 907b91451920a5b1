#include "engine/train/zero.h"

#include <algorithm>
#include <cstring>

#include "engine/common/error.h"
#include "engine/train/tp_run.h"

namespace td {

void copy_backend(Backend& be, float* dst, const float* src, size_t n) {
  if (n == 0) return;
  if (be.name() == "cpu") {
    be.upload(dst, src, n * sizeof(float));
    return;
  }
  std::vector<float> host(n);
  be.download(host.data(), src, n * sizeof(float));
  be.upload(dst, host.data(), n * sizeof(float));
}

std::vector<ParamTensor> slice_tensors(const std::vector<ParamTensor>& all, size_t lo, size_t hi) {
  std::vector<ParamTensor> out;
  for (const auto& t : all) {
    const size_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.numel);
    if (a >= b) continue;
    ParamTensor s = t;
    s.offset = a - lo;
    s.numel = b - a;
    out.push_back(s);
  }
  return out;
}

Zero2::Zero2(GPT& model, dist::Communicator& comm, const TrainConfig& tc)
    : model_(model), comm_(comm), be_(model.backend()), buckets_(model.grad_buckets()) {
  const int n = comm.world_size(), r = comm.rank();
  size_t block = 0;
  for (size_t b = 0; b < buckets_.size(); b++) {
    const auto [lo, hi] = buckets_[b];
    own_.push_back(dist::shard_range(hi - lo, r, n));
    acc_off_.push_back(share_);
    share_ += own_.back().second - own_.back().first;
    if (b > 0 && b + 1 < buckets_.size()) block = std::max(block, hi - lo);
    const size_t a = lo + own_.back().first, e = lo + own_.back().second;
    adam_.push_back(std::make_unique<AdamW>(be_, slice_tensors(model.tensors(), a, e), e - a, tc.beta1, tc.beta2, tc.eps, tc.weight_decay));
  }
  opened_.assign(buckets_.size(), 0);
  auto take = [&](size_t floats) { return static_cast<float*>(be_.alloc(std::max<size_t>(floats, 1) * sizeof(float))); };
  acc_ = take(share_);
  first_ = take(buckets_.front().second - buckets_.front().first);
  last_ = take(buckets_.back().second - buckets_.back().first);
  block_ = take(block);
  model_.release_grads();
  model_.set_grad_sink(this);
}

Zero2::~Zero2() {
  model_.set_grad_sink(nullptr);
  for (float* p : {acc_, first_, last_, block_}) be_.free(p);
}

void Zero2::begin_step() { std::fill(opened_.begin(), opened_.end(), 0); }

float* Zero2::open(int b) {
  TD_ASSERT(b >= 0 && (size_t)b < buckets_.size());
  float* buf = b == 0 ? first_ : (size_t)b + 1 == buckets_.size() ? last_ : block_;
  if (buf == block_) {
    TD_ASSERT(block_open_ < 0);
    block_open_ = b;
  }
  const size_t len = buckets_[b].second - buckets_[b].first;
  be_.zero(buf, len * sizeof(float));
  // A later micro-batch starts from this rank's accumulated slice; the other ranks hold zeros
  // there, so the reduce-scatter adds it exactly once.
  if (opened_[b] > 0) copy_backend(be_, buf + own_[b].first, acc_ + acc_off_[b], own_[b].second - own_[b].first);
  opened_[b]++;
  return buf;
}

void Zero2::close(int b) {
  float* buf = b == 0 ? first_ : (size_t)b + 1 == buckets_.size() ? last_ : block_;
  if (buf == block_) block_open_ = -1;
  const size_t len = buckets_[b].second - buckets_[b].first;
  comm_.reduce_scatter(buf, len, dist::ReduceOp::sum);
  copy_backend(be_, acc_ + acc_off_[b], buf + own_[b].first, own_[b].second - own_[b].first);
}

double Zero2::local_norm_squared(const std::vector<std::pair<size_t, size_t>>& counted) {
  if (counted.empty()) return be_.grad_norm_squared(acc_, share_);
  double s = 0.0;
  for (size_t b = 0; b < buckets_.size(); b++) {
    const size_t a = buckets_[b].first + own_[b].first, e = buckets_[b].first + own_[b].second;
    s += counted_norm_squared(be_, acc_ + acc_off_[b], a, e, counted);
  }
  return s;
}

void Zero2::scale(float s) { be_.scale(acc_, s, share_); }

void Zero2::step(double lr, int t) {
  for (size_t b = 0; b < buckets_.size(); b++) {
    const size_t a = buckets_[b].first + own_[b].first;
    adam_[b]->step(model_.params() + a, acc_ + acc_off_[b], lr, t);
  }
  for (const auto& [lo, hi] : buckets_) comm_.all_gather(model_.params() + lo, hi - lo);
}

void Zero2::gather_moment(int which, float* full) {
  for (size_t b = 0; b < buckets_.size(); b++) {
    const auto [lo, hi] = buckets_[b];
    const float* mine = which ? adam_[b]->v() : adam_[b]->m();
    // Without `full`: through the bucket's gradient buffer (unused between steps).
    float* buf = full ? full + lo : pick((int)b, first_, last_, block_);
    copy_backend(be_, buf + own_[b].first, mine, own_[b].second - own_[b].first);
    comm_.all_gather(buf, hi - lo);
  }
}

void Zero2::load_moment(int which, const float* full) {
  for (size_t b = 0; b < buckets_.size(); b++) {
    float* mine = which ? adam_[b]->v() : adam_[b]->m();
    copy_backend(be_, mine, full + buckets_[b].first + own_[b].first, own_[b].second - own_[b].first);
  }
}

Zero3::Zero3(GPT& model, dist::Communicator& comm, const TrainConfig& tc) : Zero2(model, comm, tc) {
  size_t block = 0;
  for (size_t b = 1; b + 1 < buckets_.size(); b++) block = std::max(block, buckets_[b].second - buckets_[b].first);
  auto take = [&](size_t floats) { return static_cast<float*>(be_.alloc(std::max<size_t>(floats, 1) * sizeof(float))); };
  pshard_ = take(share_);
  pfirst_ = take(buckets_.front().second - buckets_.front().first);
  plast_ = take(buckets_.back().second - buckets_.back().first);
  pblock_ = take(block);
}

Zero3::~Zero3() {
  model_.set_param_source(nullptr);
  for (float* p : {pshard_, pfirst_, plast_, pblock_}) be_.free(p);
}

void Zero3::shard_params() {
  TD_ASSERT(!sharded_ && model_.params());
  for (size_t b = 0; b < buckets_.size(); b++)
    copy_backend(be_, pshard_ + acc_off_[b], model_.params() + buckets_[b].first + own_[b].first, own_[b].second - own_[b].first);
  model_.release_params();
  model_.set_param_source(this);
  sharded_ = true;
}

void Zero3::gather_params(float* full) {
  for (size_t b = 0; b < buckets_.size(); b++) {
    const auto [lo, hi] = buckets_[b];
    float* buf = full ? full + lo : pick((int)b, pfirst_, plast_, pblock_);
    copy_backend(be_, buf + own_[b].first, pshard_ + acc_off_[b], own_[b].second - own_[b].first);
    comm_.all_gather(buf, hi - lo);
  }
}

const float* Zero3::need(int b) {
  TD_ASSERT(sharded_ && b >= 0 && (size_t)b < buckets_.size());
  float* buf = pick(b, pfirst_, plast_, pblock_);
  if (buf == pblock_) {
    TD_ASSERT(pblock_lent_ < 0);
    pblock_lent_ = b;
  }
  const auto [lo, hi] = buckets_[b];
  copy_backend(be_, buf + own_[b].first, pshard_ + acc_off_[b], own_[b].second - own_[b].first);
  comm_.all_gather(buf, hi - lo);
  return buf;
}

void Zero3::done(int b) {
  if (pick(b, pfirst_, plast_, pblock_) == pblock_) pblock_lent_ = -1;
}

void Zero3::step(double lr, int t) {
  for (size_t b = 0; b < buckets_.size(); b++) adam_[b]->step(pshard_ + acc_off_[b], acc_ + acc_off_[b], lr, t);
}

}  // namespace td
