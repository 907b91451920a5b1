#include "engine/train/parallel_state.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/model/shape.h"
#include "engine/train/tp_run.h"

namespace td {

namespace {

void add_stats(dist::CommStats& s, const dist::CommStats& x) {
  s.calls += x.calls;
  s.bytes_sent += x.bytes_sent;
  s.bytes_received += x.bytes_received;
  s.seconds += x.seconds;
  s.bus_bytes += x.bus_bytes;
  for (int k = 0; k < dist::kCollectiveKinds; k++) {
    s.by_kind[k].calls += x.by_kind[k].calls;
    s.by_kind[k].bytes_sent += x.by_kind[k].bytes_sent;
    s.by_kind[k].seconds += x.by_kind[k].seconds;
  }
}

}  // namespace

// n floats of backend memory (device memory on a GPU), freed with the scope; n = 0: none.
class ParallelState::BackendBuffer {
 public:
  BackendBuffer(Backend& be, size_t n) : be_(be), p_(n ? static_cast<float*>(be.alloc(n * sizeof(float))) : nullptr) {}
  ~BackendBuffer() { be_.free(p_); }
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;
  float* data() { return p_; }

 private:
  Backend& be_;
  float* p_;
};

double all_sum_double(dist::Communicator& comm, double x) {
  const int n = comm.world_size();
  if (n == 1) return x;
  std::vector<float> buf(2 * (size_t)n);
  std::memcpy(&buf[2 * (size_t)comm.rank()], &x, sizeof x);
  comm.all_gather(buf.data(), buf.size());
  double total = 0;
  for (int r = 0; r < n; r++) {
    double v;
    std::memcpy(&v, &buf[2 * (size_t)r], sizeof v);
    total += v;
  }
  return total;
}

ParallelState::ParallelState(GPT& model, Backend& be, dist::Communicator& world, dist::ParallelGroups& groups,
                             const ModelConfig& mc, const TrainConfig& tc)
    : model_(model),
      be_(be),
      world_(world),
      groups_(groups),
      mc_(mc),
      tc_(tc),
      tp_(tc.tensor_parallel),
      dpc_(tp_ > 1 ? *groups.dp : world),
      dp_(dpc_.world_size()),
      tp_rank_(tp_ > 1 ? groups.tp_rank : 0),
      rank0_(world.rank() == 0),
      zero1_(tc.zero == 1 && dp_ > 1),
      zero3_(tc.zero == 3 && dp_ > 1),
      zero2_((tc.zero == 2 || zero3_) && dp_ > 1),
      sharded_(zero1_ || zero2_),
      n_(model.num_params()),
      shard_lo_(zero1_ ? dist::shard_range(n_, dpc_.rank(), dp_).first : 0),
      shard_hi_(zero1_ ? dist::shard_range(n_, dpc_.rank(), dp_).second : zero2_ ? 0 : n_),
      adam_(be, sharded_ ? slice_tensors(model.tensors(), shard_lo_, shard_hi_) : model.tensors(), shard_hi_ - shard_lo_, tc.beta1,
            tc.beta2, tc.eps, tc.weight_decay) {
  // ZeRO-2 (engine/train/zero.h): gradients reduce-scattered bucket by bucket during backward
  // and kept sharded, with the optimizer state; adam_ is then empty. ZeRO-3 (Zero3, the same
  // file): parameters sharded too, all-gathered bucket by bucket in forward and backward.
  if (zero3_) {
    auto z = std::make_unique<Zero3>(model, dpc_, tc);
    z3_ = z.get();
    z2_ = std::move(z);
  } else if (zero2_) {
    z2_ = std::make_unique<Zero2>(model, dpc_, tc);
  }
  if (tp_ > 1) counted_ = tp_counted_ranges(mc, tp_rank_, tp_);
}

ParallelState::~ParallelState() = default;

const char* ParallelState::zero_label() const { return zero1_ ? ", ZeRO-1" : zero3_ ? ", ZeRO-3" : zero2_ ? ", ZeRO-2" : ""; }

dist::CommStats ParallelState::comm_stats() const {
  dist::CommStats s = world_.stats();
  if (tp_ > 1)
    for (dist::Communicator* g : {groups_.tp.get(), groups_.dp.get()}) add_stats(s, g->stats());
  return s;
}

std::unique_ptr<AdamW> ParallelState::full_adam() {
  return std::make_unique<AdamW>(be_, model_.tensors(), n_, tc_.beta1, tc_.beta2, tc_.eps, tc_.weight_decay);
}

void ParallelState::gather_moment(int which, float* full) {
  if (z2_) return z2_->gather_moment(which, full);
  copy_backend(be_, full + shard_lo_, which ? adam_.v() : adam_.m(), shard_hi_ - shard_lo_);
  dpc_.all_gather(full, n_);
}

void ParallelState::load_moment(int which, const float* full) {
  if (z2_) return z2_->load_moment(which, full);
  copy_backend(be_, which ? adam_.v() : adam_.m(), full + shard_lo_, shard_hi_ - shard_lo_);
}

void ParallelState::load_checkpoint_rank0(const std::string& dir) {
  if (tp_ > 1) {
    ckpt_ = std::make_unique<CheckpointTensorReader>(dir, mc_, true);  // read tensor by tensor in distribute()
  } else {
    if (sharded_) full_adam_ = full_adam();
    load_checkpoint(dir, model_, sharded_ ? full_adam_.get() : &adam_);
  }
}

void ParallelState::init_from_rank0(const InitSource& src) {
  if (tp_ > 1)
    init_params_ = init_source_params(src, mc_);  // sliced by every rank in distribute()
  else
    apply_init_source(src, model_);
}

void ParallelState::distribute(bool resumed, bool init_from) {
  if (world_.world_size() > 1) {
    if (tp_ > 1) {
      // Tensor parallelism: a fresh run's ranks each slice the same seeded initialisation (rank 0
      // made its own); --init-from's or a resume's full state goes from rank 0 to all one tensor
      // at a time, each rank keeping its piece (a resume's straight from the checkpoint's files).
      const std::vector<ParamTensor> tensors = model_param_tensors(mc_);
      auto from_ckpt = [&](int which) { return [&, which](size_t i, float* out) { ckpt_->read(i, which, out); }; };
      if (!resumed && !rank0_) model_.init_weights(tc_.seed);
      if (!resumed && init_from)
        tp_scatter_tensors(world_, be_, mc_, tp_rank_, tp_, [&](size_t i, float* out) {
          std::memcpy(out, init_params_.data() + tensors[i].offset, tensors[i].numel * sizeof(float));
        }, model_.params());
      if (resumed) {
        tp_scatter_tensors(world_, be_, mc_, tp_rank_, tp_, from_ckpt(0), model_.params());
        // A sharded optimizer state: the rank's full-layout moment first, then its DP shard.
        BackendBuffer full_buf(be_, sharded_ ? n_ : 0);
        for (int which = 0; which < 2; which++) {
          tp_scatter_tensors(world_, be_, mc_, tp_rank_, tp_, from_ckpt(1 + which), sharded_ ? full_buf.data() : which ? adam_.v() : adam_.m());
          if (sharded_) load_moment(which, full_buf.data());
        }
      }
    } else {
      world_.broadcast(model_.params(), n_ * sizeof(float), 0);
      if (resumed && sharded_) {
        // Rank 0's full moments (backend memory) reach every rank, which keeps its shard. The
        // others receive into a full-size backend buffer (GPU memory with NCCL).
        BackendBuffer full_buf(be_, rank0_ ? 0 : n_);
        for (int which = 0; which < 2; which++) {
          float* full = rank0_ ? (which ? full_adam_->v() : full_adam_->m()) : full_buf.data();
          world_.broadcast(full, n_ * sizeof(float), 0);
          load_moment(which, full);
        }
      } else if (resumed) {
        world_.broadcast(adam_.m(), n_ * sizeof(float), 0);
        world_.broadcast(adam_.v(), n_ * sizeof(float), 0);
      }
    }
  }
  init_params_ = {};
  full_adam_.reset();
  ckpt_.reset();
  // ZeRO-3: the parameters are final and the same on every rank; each keeps its slices only.
  if (z3_) z3_->shard_params();
}

double ParallelState::reduce_and_clip() {
  const double clip = tc_.grad_clip;
  double norm;
  if (zero1_) {
    // ZeRO-1: this rank's shard of the summed gradient; the global norm from every shard's.
    dpc_.reduce_scatter(model_.grads(), n_, dist::ReduceOp::sum);
    float* g = model_.grads() + shard_lo_;
    const size_t n = shard_hi_ - shard_lo_;
    norm = std::sqrt(all_sum_double(world_, counted_norm_squared(be_, g, shard_lo_, shard_hi_, counted_)));
    if (std::isfinite(norm) && clip > 0 && norm > clip) be_.scale(g, (float)(clip / (norm + 1e-6)), n);
  } else if (z2_) {
    // ZeRO-2/3: the gradient was reduce-scattered during backward; this rank holds its slices.
    norm = std::sqrt(all_sum_double(world_, z2_->local_norm_squared(counted_)));
    if (std::isfinite(norm) && clip > 0 && norm > clip) z2_->scale((float)(clip / (norm + 1e-6)));
  } else if (tp_ > 1) {
    // Tensor parallelism: sum over the replicas, then the norm of the whole model over the TP
    // group (replicated tensors counted once) and the clip applied to every shard alike.
    if (dp_ > 1) dpc_.all_reduce(model_.grads(), n_, dist::ReduceOp::sum);
    norm = std::sqrt(all_sum_double(*groups_.tp, tp_norm_squared(be_, mc_, tp_rank_, tp_, model_.grads())));
    if (std::isfinite(norm) && clip > 0 && norm > clip) be_.scale(model_.grads(), (float)(clip / (norm + 1e-6)), n_);
  } else {
    if (world_.world_size() > 1) world_.all_reduce(model_.grads(), n_, dist::ReduceOp::sum);
    norm = clip_grad_norm(be_, model_.grads(), n_, clip);
  }
  return norm;
}

void ParallelState::optimizer_step(double lr, int t) {
  if (zero1_) {
    adam_.step(model_.params() + shard_lo_, model_.grads() + shard_lo_, lr, t);
    dpc_.all_gather(model_.params(), n_);
  } else if (z2_) {
    z2_->step(lr, t);
  } else {
    adam_.step(model_.params(), model_.grads(), lr, t);
  }
}

void ParallelState::gather_checkpoint() {
  // Rank 0 gathers straight into its full-size state; ZeRO-1's others into one full-size
  // backend buffer (GPU memory with NCCL), used for m then v; ZeRO-2/3's through their buckets.
  if (sharded_ && tp_ == 1) {
    if (rank0_) full_adam_ = full_adam();
    BackendBuffer buf(be_, rank0_ || z2_ ? 0 : n_);
    for (int which = 0; which < 2; which++)
      gather_moment(which, rank0_ ? (which ? full_adam_->v() : full_adam_->m()) : z2_ ? nullptr : buf.data());
  }
  // Tensor parallelism: world rank 0's TP group (DP rank 0) gives its shards to the writer one
  // full tensor at a time (write_checkpoint, follow_checkpoint_write). With ZeRO, that group's
  // ranks first gather their own layout's weights (ZeRO-3) and moments (two backend buffers of
  // their shard's size) over their DP groups, in which the other groups' ranks take part through
  // their bucket buffers (ZeRO-1: one shard-sized buffer); no rank ever holds the whole model.
  if (tp_ > 1) {
    const bool gathering = dpc_.rank() == 0;
    if (z3_) {
      if (gathering) model_.acquire_params();
      z3_->gather_params(gathering ? model_.params() : nullptr);
    }
    if (sharded_) {
      if (gathering) {
        tp_m_ = std::make_unique<BackendBuffer>(be_, n_);
        tp_v_ = std::make_unique<BackendBuffer>(be_, n_);
      }
      BackendBuffer scratch(be_, gathering || z2_ ? 0 : n_);
      for (int which = 0; which < 2; which++)
        gather_moment(which, gathering ? (which ? tp_v_ : tp_m_)->data() : z2_ ? nullptr : scratch.data());
    }
  }
  // ZeRO-3: the weights gathered bucket by bucket, into a full-size buffer on rank 0 only
  // (freed again after the write); the other ranks take part through their bucket buffers.
  if (z3_ && tp_ == 1) {
    if (rank0_) model_.acquire_params();
    z3_->gather_params(rank0_ ? model_.params() : nullptr);
  }
}

void ParallelState::stream_tp_checkpoint(const std::function<void(const StateReader&)>& consume) {
  TpTensorGather g(*groups_.tp, be_, mc_);
  const float* m = sharded_ ? tp_m_->data() : adam_.m();
  const float* v = sharded_ ? tp_v_->data() : adam_.v();
  consume([&](size_t i, int which) { return g.tensor(i, which == 0 ? model_.params() : which == 1 ? m : v); });
}

void ParallelState::release_checkpoint() {
  if (z3_ && (tp_ == 1 ? rank0_ : dpc_.rank() == 0)) model_.release_params();
  tp_m_.reset();
  tp_v_.reset();
  full_adam_.reset();
}

CheckpointInfo ParallelState::write_checkpoint(const std::string& root, const TrainerState& st) {
  CheckpointInfo ci;
  if (tp_ > 1)
    stream_tp_checkpoint([&](const StateReader& read) { ci = save_checkpoint(root, mc_, read, true, st); });
  else
    ci = save_checkpoint(root, model_, sharded_ ? full_adam_.get() : &adam_, st);
  release_checkpoint();
  return ci;
}

void ParallelState::follow_checkpoint_write() {
  if (tp_ > 1 && dpc_.rank() == 0)
    stream_tp_checkpoint([&](const StateReader& read) {
      for_each_state_read(model_param_tensors(mc_).size(), true, [&](size_t i, int which) { read(i, which); });
    });
  release_checkpoint();
}

}  // namespace td
