// The CPU backend: adapts the reference ops (engine/ops/reference/) to the Backend interface.
#include "engine/ops/cpu_ops.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/common/error.h"
#include "engine/ops/reference/attention.h"
#include "engine/ops/reference/flash_attention.h"
#include "engine/ops/reference/encoder.h"
#include "engine/ops/reference/gelu.h"
#include "engine/ops/reference/layernorm.h"
#include "engine/ops/reference/matmul.h"
#include "engine/ops/reference/optimizer.h"
#include "engine/ops/reference/residual.h"
#include "engine/ops/reference/rmsnorm.h"
#include "engine/ops/reference/rope.h"
#include "engine/ops/reference/softmax_cross_entropy.h"
#include "engine/ops/reference/swiglu.h"

namespace td {

int set_cpu_threads(int threads) {
  if (threads <= 0) threads = omp_get_num_procs();
  omp_set_num_threads(threads);
  // No nested parallelism: a GEMM called from inside an OpenMP loop (attention) must run on its
  // calling thread, not fork another team onto cores that are already busy.
  omp_set_max_active_levels(1);
  openblas_set_num_threads(threads);
  return threads;
}

namespace {

// The fp32 buffers a reference op runs on, for activations of type Act.
// Act = float: the caller's buffers themselves (no copy).
// Act = bf16: mixed precision emulated. in() widens a bf16 input to an fp32 temporary; out()
// gives an fp32 buffer for an output the op writes, acc() one that starts as the widened output
// (the op accumulates into it: the += happens in fp32); each output is rounded to bf16 once,
// when the Io goes out of scope (after the op). Inputs are read when in() is called, so an
// output may alias an input. Slow, but it gives the model's bf16 plumbing and the parity
// harness a reference without a GPU. All three pass null through (an absent argument).
template <class Act> class Io;
template <> class Io<float> {
 public:
  const float* in(const float* p, size_t) { return p; }
  float* out(float* p, size_t) { return p; }
  float* acc(float* p, size_t) { return p; }
};
template <> class Io<bf16> {
 public:
  Io() = default;
  Io(const Io&) = delete;
  Io& operator=(const Io&) = delete;
  ~Io() {
    for (Out& o : outs_)
      for (size_t i = 0; i < o.v.size(); i++) o.dst[i] = to_bf16(o.v[i]);
  }
  const float* in(const bf16* p, size_t n) {
    if (!p) return nullptr;
    ins_.push_back(widen(p, n));
    return ins_.back().data();
  }
  float* out(bf16* p, size_t n) {
    if (!p) return nullptr;
    outs_.push_back({p, std::vector<float>(n)});
    return outs_.back().v.data();
  }
  float* acc(bf16* p, size_t n) {
    if (!p) return nullptr;
    outs_.push_back({p, widen(p, n)});
    return outs_.back().v.data();
  }

 private:
  struct Out {
    bf16* dst;
    std::vector<float> v;
  };
  static std::vector<float> widen(const bf16* p, size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = to_float(p[i]);
    return v;
  }
  // Moving a vector keeps its data where it is, so pointers handed out stay valid.
  std::vector<std::vector<float>> ins_;
  std::vector<Out> outs_;
};

// The activation ops of the CPU backend, once for both element types: each forwards to the fp32
// instantiation of its reference op through an Io<Act>.
template <class Act> class CpuOps final : public ActivationOps<Act> {
  // Elements of qkv (B,T,C+2 NKV hs) for attention.
  static size_t qkv_elements(int B, int T, int C, int NH, int NKV) {
    return (size_t)B * T * (C + 2 * (size_t)NKV * (C / NH));
  }
  static void check_heads(int C, int NH, int NKV) {
    TD_ASSERT(NH > 0 && NKV > 0 && C % NH == 0 && NH % NKV == 0);
  }

 public:
  void encoder_forward(Act* out, const int32_t* inp, const Act* wte, const Act* wpe, int B, int T, int C) override {
    const size_t BT = (size_t)B * T;
    int32_t V = 0;  // rows of wte that the tokens reach
    for (size_t i = 0; i < BT; i++) V = std::max(V, inp[i] + 1);
    Io<Act> io;
    cpu::encoder_forward(io.out(out, BT * C), inp, io.in(wte, (size_t)V * C), io.in(wpe, (size_t)T * C), B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const Act* dout, const int32_t* inp, int B, int T, int C) override {
    Io<Act> io;
    cpu::encoder_backward(dwte, dwpe, io.in(dout, (size_t)B * T * C), inp, B, T, C);
  }
  void layernorm_forward(Act* out, float* mean, float* rstd, const Act* inp, const Act* weight, const Act* bias, int N, int C) override {
    const size_t NC = (size_t)N * C;
    Io<Act> io;
    cpu::layernorm_forward(io.out(out, NC), mean, rstd, io.in(inp, NC), io.in(weight, C), io.in(bias, C), N, C);
  }
  void layernorm_backward(Act* dinp, float* dweight, float* dbias, const Act* dout, const Act* inp, const Act* weight,
                          const float* mean, const float* rstd, int N, int C) override {
    const size_t NC = (size_t)N * C;
    Io<Act> io;
    cpu::layernorm_backward(io.acc(dinp, NC), dweight, dbias, io.in(dout, NC), io.in(inp, NC), io.in(weight, C), mean,
                            rstd, N, C);
  }
  void rmsnorm_forward(Act* out, float* rstd, const Act* inp, const Act* weight, int N, int C, float eps) override {
    const size_t NC = (size_t)N * C;
    Io<Act> io;
    cpu::rmsnorm_forward(io.out(out, NC), rstd, io.in(inp, NC), io.in(weight, C), N, C, eps);
  }
  void rmsnorm_backward(Act* dinp, float* dweight, const Act* dout, const Act* inp, const Act* weight,
                        const float* rstd, int N, int C) override {
    const size_t NC = (size_t)N * C;
    Io<Act> io;
    cpu::rmsnorm_backward(io.acc(dinp, NC), dweight, io.in(dout, NC), io.in(inp, NC), io.in(weight, C), rstd, N, C);
  }
  void matmul_forward(Act* out, const Act* inp, const Act* weight, const Act* bias, int N, int C, int OC) override {
    Io<Act> io;
    cpu::matmul_forward(io.out(out, (size_t)N * OC), io.in(inp, (size_t)N * C), io.in(weight, (size_t)OC * C),
                        io.in(bias, OC), N, C, OC);
  }
  void matmul_backward(Act* dinp, float* dweight, float* dbias, const Act* dout, const Act* inp, const Act* weight,
                       int N, int C, int OC, bool overwrite_dinp) override {
    Io<Act> io;
    Act* const none = nullptr;
    float* dx = !dinp ? io.acc(none, 0) : overwrite_dinp ? io.out(dinp, (size_t)N * C) : io.acc(dinp, (size_t)N * C);
    cpu::matmul_backward(dx, dweight, dbias, io.in(dout, (size_t)N * OC), io.in(inp, (size_t)N * C),
                         io.in(weight, (size_t)OC * C), N, C, OC, overwrite_dinp);
  }
  void matmul_gelu_forward(Act* out, Act* pre, const Act* inp, const Act* weight, const Act* bias, int N, int C,
                           int OC) override {
    const size_t n = (size_t)N * OC;
    Io<Act> io;
    cpu::matmul_gelu_forward(io.out(out, n), io.out(pre, n), io.in(inp, (size_t)N * C), io.in(weight, (size_t)OC * C),
                             io.in(bias, OC), N, C, OC);
  }
  void matmul_backward_dgelu(Act* dpre, float* dweight, float* dbias, const Act* dout, const Act* inp,
                             const Act* weight, const Act* pre, int N, int C, int OC) override {
    const size_t n = (size_t)N * C;
    Io<Act> io;
    cpu::matmul_backward_dgelu(io.out(dpre, n), dweight, dbias, io.in(dout, (size_t)N * OC), io.in(inp, n),
                               io.in(weight, (size_t)OC * C), io.in(pre, n), N, C, OC);
  }
  void attention_forward(Act* out, Act* att, const Act* qkv, int B, int T, int C, int NH, int NKV) override {
    check_heads(C, NH, NKV);
    Io<Act> io;
    cpu::attention_forward(io.out(out, (size_t)B * T * C), io.out(att, (size_t)B * NH * T * T),
                           io.in(qkv, qkv_elements(B, T, C, NH, NKV)), B, T, C, NH, NKV);
  }
  void attention_backward(Act* dqkv, const Act* dout, const Act* qkv, const Act* att, int B, int T, int C, int NH,
                          int NKV) override {
    check_heads(C, NH, NKV);
    const size_t nqkv = qkv_elements(B, T, C, NH, NKV), natt = (size_t)B * NH * T * T;
    scratch_.resize(natt);
    Io<Act> io;
    cpu::attention_backward(io.acc(dqkv, nqkv), scratch_.data(), io.in(dout, (size_t)B * T * C), io.in(qkv, nqkv),
                            io.in(att, natt), B, T, C, NH, NKV);
  }
  void flash_attention_forward(Act* out, float* lse, const Act* qkv, int B, int T, int C, int NH, int NKV) override {
    check_heads(C, NH, NKV);
    Io<Act> io;
    cpu::flash_attention_forward(io.out(out, (size_t)B * T * C), lse, io.in(qkv, qkv_elements(B, T, C, NH, NKV)), B,
                                 T, C, NH, NKV);
  }
  void flash_attention_backward(Act* dqkv, const Act* dout, const Act* qkv, const Act* out, const float* lse, int B,
                                int T, int C, int NH, int NKV) override {
    check_heads(C, NH, NKV);
    const size_t nqkv = qkv_elements(B, T, C, NH, NKV), nout = (size_t)B * T * C;
    Io<Act> io;
    cpu::flash_attention_backward(io.acc(dqkv, nqkv), io.in(dout, nout), io.in(qkv, nqkv), io.in(out, nout), lse, B,
                                  T, C, NH, NKV);
  }
  void gelu_forward(Act* out, const Act* inp, size_t N) override {
    Io<Act> io;
    cpu::gelu_forward(io.out(out, N), io.in(inp, N), N);
  }
  void gelu_backward(Act* dinp, const Act* inp, const Act* dout, size_t N) override {
    Io<Act> io;
    cpu::gelu_backward(io.acc(dinp, N), io.in(inp, N), io.in(dout, N), N);
  }
  void swiglu_forward(Act* out, const Act* inp, int N, int F) override {
    const size_t NF = (size_t)N * F;
    Io<Act> io;
    cpu::swiglu_forward(io.out(out, NF), io.in(inp, 2 * NF), N, F);
  }
  void swiglu_backward(Act* dinp, const Act* inp, const Act* dout, int N, int F) override {
    const size_t NF = (size_t)N * F;
    Io<Act> io;
    cpu::swiglu_backward(io.acc(dinp, 2 * NF), io.in(inp, 2 * NF), io.in(dout, NF), N, F);
  }
  void rope_forward(Act* qkv, int B, int T, int NH, int NKV, int hs, float theta) override {
    Io<Act> io;
    cpu::rope_forward(io.acc(qkv, (size_t)B * T * (NH + 2 * NKV) * hs), B, T, NH, NKV, hs, (double)theta);
  }
  void rope_backward(Act* dqkv, int B, int T, int NH, int NKV, int hs, float theta) override {
    Io<Act> io;
    cpu::rope_backward(io.acc(dqkv, (size_t)B * T * (NH + 2 * NKV) * hs), B, T, NH, NKV, hs, (double)theta);
  }
  void residual_forward(Act* out, const Act* a, const Act* b, size_t N) override {
    Io<Act> io;
    cpu::residual_forward(io.out(out, N), io.in(a, N), io.in(b, N), N);
  }
  void softmax_cross_entropy(float* losses, Act* dlogits, const Act* logits, const int32_t* targets, int N, int V,
                             float grad_scale) override {
    const size_t NV = (size_t)N * V;
    Io<Act> io;
    cpu::softmax_cross_entropy(losses, io.out(dlogits, NV), io.in(logits, NV), targets, N, V, grad_scale);
  }
  void cross_entropy_shard_stats(float* lse, float* target_logit, const Act* logits, const int32_t* targets, int N, int V,
                                 int v0) override {
    Io<Act> io;
    cpu::cross_entropy_shard_stats(lse, target_logit, io.in(logits, (size_t)N * V), targets, N, V, v0);
  }
  void cross_entropy_shard_backward(Act* dlogits, const Act* logits, const float* lse, const int32_t* targets, int N, int V,
                                    int v0, float grad_scale) override {
    const size_t NV = (size_t)N * V;
    Io<Act> io;
    cpu::cross_entropy_shard_backward(io.out(dlogits, NV), io.in(logits, NV), lse, targets, N, V, v0, grad_scale);
  }

 private:
  std::vector<float> scratch_;  // (B,NH,T,T) gradient of the attention scores
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  bool supports(Op op, DType dtype) const override {
    if (op == Op::kCount) return false;
    if (op == Op::kConvert) return dtype == DType::kBF16;  // fp32 -> bf16 only
    if (op == Op::kAdamW || op == Op::kGradNormSquared || op == Op::kScale) return dtype == DType::kF32;
    return true;
  }
  DeviceInfo device_info() const override {
    DeviceInfo d;
    d.name = "cpu";
    return d;
  }

  void* alloc(size_t bytes) override {
    // 64-byte aligned for vector loads; zeroed so fresh buffers are deterministic.
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!p) fail("out of memory: could not allocate " + std::to_string(bytes) + " bytes; use a smaller model or micro_batch (see `traindeck-engine plan`)");
    std::memset(p, 0, rounded);
    return p;
  }
  void free(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void zero(void* p, size_t bytes) override { std::memset(p, 0, bytes); }
  void synchronize() override {}

  // ---- fp32 only ----
  void convert(bf16* dst, const float* src, size_t n) override {
    for (size_t i = 0; i < n; i++) dst[i] = to_bf16(src[i]);
  }
  void adamw(float* params, const float* grads, float* m, float* v, const AdamWSpan* spans, size_t n_spans, float lr,
             float beta1, float beta2, float eps, float weight_decay, int t) override {
    for (size_t k = 0; k < n_spans; k++) {
      const AdamWSpan& s = spans[k];
      cpu::adamw(params + s.offset, grads + s.offset, m + s.offset, v + s.offset, s.numel, lr, beta1, beta2, eps,
                 s.decay ? weight_decay : 0.0f, t);
    }
  }
  double grad_norm_squared(const float* g, size_t n) override { return cpu::grad_norm_squared(g, n); }
  void scale(float* x, float s, size_t n) override { cpu::scale(x, s, n); }

 protected:
  ActivationOps<float>& ops_f32() override { return f32_; }
  ActivationOps<bf16>& ops_bf16() override { return bf16_; }

 private:
  CpuOps<float> f32_;
  CpuOps<bf16> bf16_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace td
