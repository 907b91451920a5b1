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

  void encoder_forward(Act* out, const int32_t* inp, const Act* wte, const Act* wpe, int B, int T, int C) override {
    TD_TIMED(kEncoderForward);
    in_.encoder_forward(out, inp, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const Act* dout, const int32_t* inp, int B, int T, int C) override {
    TD_TIMED(kEncoderBackward);
    in_.encoder_backward(dwte, dwpe, dout, inp, B, T, C);
  }
  void layernorm_forward(Act* out, float* mean, float* rstd, const Act* inp, const Act* weight, const Act* bias, int N,
                         int C) override {
    TD_TIMED(kLayerNormForward);
    in_.layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
  }
  void layernorm_backward(Act* dinp, float* dweight, float* dbias, const Act* dout, const Act* inp, const Act* weight,
                          const float* mean, const float* rstd, int N, int C) override {
    TD_TIMED(kLayerNormBackward);
    in_.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void rmsnorm_forward(Act* out, float* rstd, const Act* inp, const Act* weight, int N, int C, float eps) override {
    TD_TIMED(kRmsNormForward);
    in_.rmsnorm_forward(out, rstd, inp, weight, N, C, eps);
  }
  void rmsnorm_backward(Act* dinp, float* dweight, const Act* dout, const Act* inp, const Act* weight, const float* rstd,
                        int N, int C) override {
    TD_TIMED(kRmsNormBackward);
    in_.rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C);
  }
  void matmul_forward(Act* out, const Act* inp, const Act* weight, const Act* bias, int N, int C, int OC) override {
    TD_TIMED(kMatmulForward);
    in_.matmul_forward(out, inp, weight, bias, N, C, OC);
  }
  void matmul_backward(Act* dinp, float* dweight, float* dbias, const Act* dout, const Act* inp, const Act* weight,
                       int N, int C, int OC, bool overwrite_dinp) override {
    TD_TIMED(kMatmulBackward);
    in_.matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC, overwrite_dinp);
  }
  void matmul_gelu_forward(Act* out, Act* pre, const Act* inp, const Act* weight, const Act* bias, int N, int C,
                           int OC) override {
    TD_TIMED(kMatmulGeluForward);
    in_.matmul_gelu_forward(out, pre, inp, weight, bias, N, C, OC);
  }
  void matmul_backward_dgelu(Act* dpre, float* dweight, float* dbias, const Act* dout, const Act* inp,
                             const Act* weight, const Act* pre, int N, int C, int OC) override {
    TD_TIMED(kMatmulBackwardDgelu);
    in_.matmul_backward_dgelu(dpre, dweight, dbias, dout, inp, weight, pre, N, C, OC);
  }
  void attention_forward(Act* out, Act* att, const Act* qkv, int B, int T, int C, int NH, int NKV) override {
    TD_TIMED(kAttentionForward);
    in_.attention_forward(out, att, qkv, B, T, C, NH, NKV);
  }
  void attention_backward(Act* dqkv, const Act* dout, const Act* qkv, const Act* att, int B, int T, int C, int NH,
                          int NKV) override {
    TD_TIMED(kAttentionBackward);
    in_.attention_backward(dqkv, dout, qkv, att, B, T, C, NH, NKV);
  }
  void flash_attention_forward(Act* out, float* lse, const Act* qkv, int B, int T, int C, int NH, int NKV) override {
    TD_TIMED(kFlashAttentionForward);
    in_.flash_attention_forward(out, lse, qkv, B, T, C, NH, NKV);
  }
  void flash_attention_backward(Act* dqkv, const Act* dout, const Act* qkv, const Act* out, const float* lse, int B,
                                int T, int C, int NH, int NKV) override {
    TD_TIMED(kFlashAttentionBackward);
    in_.flash_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH, NKV);
  }
  void gelu_forward(Act* out, const Act* inp, size_t N) override {
    TD_TIMED(kGeluForward);
    in_.gelu_forward(out, inp, N);
  }
  void gelu_backward(Act* dinp, const Act* inp, const Act* dout, size_t N) override {
    TD_TIMED(kGeluBackward);
    in_.gelu_backward(dinp, inp, dout, N);
  }
  void swiglu_forward(Act* out, const Act* inp, int N, int F) override {
    TD_TIMED(kSwigluForward);
    in_.swiglu_forward(out, inp, N, F);
  }
  void swiglu_backward(Act* dinp, const Act* inp, const Act* dout, int N, int F) override {
    TD_TIMED(kSwigluBackward);
    in_.swiglu_backward(dinp, inp, dout, N, F);
  }
  void rope_forward(Act* qkv, int B, int T, int NH, int NKV, int hs, float theta) override {
    TD_TIMED(kRopeForward);
    in_.rope_forward(qkv, B, T, NH, NKV, hs, theta);
  }
  void rope_backward(Act* dqkv, int B, int T, int NH, int NKV, int hs, float theta) override {
    TD_TIMED(kRopeBackward);
    in_.rope_backward(dqkv, B, T, NH, NKV, hs, theta);
  }
  void residual_forward(Act* out, const Act* a, const Act* b, size_t N) override {
    TD_TIMED(kResidualForward);
    in_.residual_forward(out, a, b, N);
  }
  void softmax_cross_entropy(float* losses, Act* dlogits, const Act* logits, const int32_t* targets, int N, int V,
                             float grad_scale) override {
    TD_TIMED(kSoftmaxCrossEntropy);
    in_.softmax_cross_entropy(losses, dlogits, logits, targets, N, V, grad_scale);
  }
  void cross_entropy_shard_stats(float* lse, float* target_logit, const Act* logits, const int32_t* targets, int N,
                                 int V, int v0) override {
    TD_TIMED(kCrossEntropyShardStats);
    in_.cross_entropy_shard_stats(lse, target_logit, logits, targets, N, V, v0);
  }
  void cross_entropy_shard_backward(Act* dlogits, const Act* logits, const float* lse, const int32_t* targets, int N,
                                    int V, int v0, float grad_scale) override {
    TD_TIMED(kCrossEntropyShardBackward);
    in_.cross_entropy_shard_backward(dlogits, logits, lse, targets, N, V, v0, grad_scale);
  }

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
