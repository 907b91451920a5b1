#include "engine/ops/profile.h"

#include <chrono>

#include "engine/common/error.h"

namespace td {

double OpTimes::total_seconds() const {
  double s = 0;
  for (const auto& [name, e] : by_op) s += e.seconds;
  return s;
}

namespace {

using Clock = std::chrono::steady_clock;

// Synchronises, then on destruction synchronises again and books the elapsed time under name.
class Timed {
 public:
  Timed(Backend& be, OpTimes& times, const char* name) : be_(be), times_(times), name_(name) {
    be_.synchronize();
    t0_ = Clock::now();
  }
  ~Timed() {
    be_.synchronize();
    OpTimes::Entry& e = times_.by_op[name_];
    e.calls++;
    e.seconds += std::chrono::duration<double>(Clock::now() - t0_).count();
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  Backend& be_;
  OpTimes& times_;
  const char* name_;
  Clock::time_point t0_;
};

#define TD_TIMED(op) Timed timed_(be_, times_, op_name(Op::op))

template <class Act>
class ProfilingOps final : public ActivationOps<Act> {
 public:
  ProfilingOps(Backend& be, OpTimes& times) : be_(be), in_(be.ops<Act>()), times_(times) {}

  // One timed forward per entry of activation_ops.def.
#define TD_ACTIVATION_OP(name, op, params, args) \
  void name params override {                      \
    TD_TIMED(op);                                  \
    in_.name args;                                 \
  }
#include "engine/ops/activation_ops.def"

 private:
  Backend& be_;
  ActivationOps<Act>& in_;
  OpTimes& times_;
};

class ProfilingBackend final : public Backend {
 public:
  ProfilingBackend(Backend& inner, OpTimes& times) : be_(inner), times_(times), f32_(inner, times), bf16_(inner, times) {}
  std::string name() const override { return be_.name(); }
  bool supports(Op op, DType dtype) const override { return be_.supports(op, dtype); }
  DeviceInfo device_info() const override { return be_.device_info(); }
  void* alloc(size_t bytes) override { return be_.alloc(bytes); }
  void free(void* p) override { be_.free(p); }
  void upload(void* dst, const void* src_host, size_t bytes) override {
    Timed t(be_, times_, "upload");
    be_.upload(dst, src_host, bytes);
  }
  void download(void* dst_host, const void* src, size_t bytes) override {
    Timed t(be_, times_, "download");
    be_.download(dst_host, src, bytes);
  }
  void zero(void* p, size_t bytes) override {
    Timed t(be_, times_, "zero");
    be_.zero(p, bytes);
  }
  void synchronize() override { be_.synchronize(); }
  void convert(bf16* dst, const float* src, size_t n) override {
    TD_TIMED(kConvert);
    be_.convert(dst, src, n);
  }
  void adamw(float* params, const float* grads, float* m, float* v, const AdamWSpan* spans, size_t n_spans, float lr,
             float beta1, float beta2, float eps, float weight_decay, int t) override {
    TD_TIMED(kAdamW);
    be_.adamw(params, grads, m, v, spans, n_spans, lr, beta1, beta2, eps, weight_decay, t);
  }
  double grad_norm_squared(const float* g, size_t n) override {
    TD_TIMED(kGradNormSquared);
    return be_.grad_norm_squared(g, n);
  }
  void scale(float* x, float s, size_t n) override {
    TD_TIMED(kScale);
    be_.scale(x, s, n);
  }

 protected:
  ActivationOps<float>& ops_f32() override { return f32_; }
  ActivationOps<bf16>& ops_bf16() override { return bf16_; }

 private:
  Backend& be_;
  OpTimes& times_;
  ProfilingOps<float> f32_;
  ProfilingOps<bf16> bf16_;
};

#undef TD_TIMED

}  // namespace

std::unique_ptr<Backend> make_profiling_backend(Backend& inner, OpTimes* times) {
  TD_ASSERT(times != nullptr);
  return std::make_unique<ProfilingBackend>(inner, *times);
}

}  // namespace td
