// CPU reference ops. Each function walks the maths it names; shapes are in ops.h.
#include "engine/ops/cpu_ops.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/common/error.h"
#include "engine/ops/cpu_math.h"

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

namespace cpu {
namespace {

constexpr double kLayerNormEps = 1e-5;
// sqrt(2 / pi), the constant of the tanh approximation of GELU.
constexpr double kGeluScale = 0.7978845608028654;

// C (M,N) = alpha op(A) op(B) + beta C, row-major; the BLAS routine of the precision.
void gemm(CBLAS_ORDER o, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha,
          const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(o, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
void gemm(CBLAS_ORDER o, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, double alpha,
          const double* A, int lda, const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(o, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
// y = alpha op(A) x + beta y.
void gemv(CBLAS_ORDER o, CBLAS_TRANSPOSE t, int M, int N, float alpha, const float* A, int lda, const float* x,
          int incx, float beta, float* y, int incy) {
  cblas_sgemv(o, t, M, N, alpha, A, lda, x, incx, beta, y, incy);
}
void gemv(CBLAS_ORDER o, CBLAS_TRANSPOSE t, int M, int N, double alpha, const double* A, int lda, const double* x,
          int incx, double beta, double* y, int incy) {
  cblas_dgemv(o, t, M, N, alpha, A, lda, x, incx, beta, y, incy);
}

}  // namespace

template <class R>
void encoder_forward(R* out, const int32_t* inp, const R* wte, const R* wpe, int B,
                     int T, int C) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      R* o = out + ((size_t)b * T + t) * C;
      const R* te = wte + (size_t)inp[b * T + t] * C;
      const R* pe = wpe + (size_t)t * C;
      for (int c = 0; c < C; c++) o[c] = te[c] + pe[c];
    }
  }
}

template <class R>
void encoder_backward(R* dwte, R* dwpe, const R* dout, const int32_t* inp, int B,
                      int T, int C) {
  // Parallel over channels: every thread owns whole columns, so tokens that repeat never race
  // and the summation order is fixed (deterministic).
#pragma omp parallel for schedule(static)
  for (int c = 0; c < C; c++) {
    for (int b = 0; b < B; b++) {
      for (int t = 0; t < T; t++) {
        R d = dout[((size_t)b * T + t) * C + c];
        dwte[(size_t)inp[b * T + t] * C + c] += d;
        dwpe[(size_t)t * C + c] += d;
      }
    }
  }
}

template <class R>
void layernorm_forward(R* out, R* mean, R* rstd, const R* inp,
                       const R* weight, const R* bias, int N, int C) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* x = inp + (size_t)i * C;
    R m = R(0.0);
    for (int c = 0; c < C; c++) m += x[c];
    m /= C;
    R var = R(0.0);  // biased variance, as PyTorch's layer_norm
    for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
    var /= C;
    R s = R(1.0) / std::sqrt(var + R(kLayerNormEps));
    R* o = out + (size_t)i * C;
    for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

template <class R>
void layernorm_backward(R* dinp, R* dweight, R* dbias, const R* dout,
                        const R* inp, const R* weight, const R* mean,
                        const R* rstd, int N, int C) {
  // dinp = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = dout * weight.
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* x = inp + (size_t)i * C;
    const R* dy = dout + (size_t)i * C;
    R* dx = dinp + (size_t)i * C;
    R m = mean[i], s = rstd[i];
    R dnorm_mean = R(0.0), dnorm_norm_mean = R(0.0);
    for (int c = 0; c < C; c++) {
      R norm = (x[c] - m) * s;
      R dnorm = weight[c] * dy[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int c = 0; c < C; c++) {
      R norm = (x[c] - m) * s;
      R dnorm = weight[c] * dy[c];
      dx[c] += s * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
    }
  }
  // dweight, dbias: column sums over rows. Rows are summed in fixed chunks of 64 (contiguous
  // reads), then the chunks in order: the result does not depend on the thread count.
  const int chunk = 64, nchunks = (N + chunk - 1) / chunk;
  std::vector<R> part((size_t)nchunks * 2 * C, R(0));
#pragma omp parallel for schedule(static)
  for (int k = 0; k < nchunks; k++) {
    R* pw = part.data() + (size_t)k * 2 * C;
    R* pb = pw + C;
    for (int i = k * chunk; i < std::min(N, (k + 1) * chunk); i++) {
      const R* x = inp + (size_t)i * C;
      const R* dy = dout + (size_t)i * C;
      const R m = mean[i], s = rstd[i];
      for (int c = 0; c < C; c++) {
        pw[c] += (x[c] - m) * s * dy[c];
        pb[c] += dy[c];
      }
    }
  }
  for (int k = 0; k < nchunks; k++)
    for (int c = 0; c < C; c++) {
      dweight[c] += part[(size_t)k * 2 * C + c];
      dbias[c] += part[(size_t)k * 2 * C + C + c];
    }
}

template <class R>
void matmul_forward(R* out, const R* inp, const R* weight, const R* bias, int N,
                    int C, int OC) {
  R beta = R(0.0);
  if (bias) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) std::memcpy(out + (size_t)i * OC, bias, sizeof(R) * OC);
    beta = R(1.0);
  }
  gemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, R(1.0), inp, C, weight, C, beta,
              out, OC);
}

template <class R>
void matmul_backward(R* dinp, R* dweight, R* dbias, const R* dout,
                     const R* inp, const R* weight, int N, int C, int OC) {
  if (dinp)
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, R(1.0), dout, OC, weight, C,
                R(1.0), dinp, C);
  gemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, R(1.0), dout, OC, inp, C, R(1.0),
              dweight, C);
  if (dbias) {
    // dbias (OC) += dout^T (OC,N) @ ones (N): a GEMV, contiguous reads instead of a strided column walk.
    std::vector<R> ones((size_t)N, R(1));
    gemv(CblasRowMajor, CblasTrans, N, OC, R(1), dout, OC, ones.data(), 1, R(1), dbias, 1);
  }
}

// Attention runs one (batch, head) pair per OpenMP iteration: its GEMMs are small (T x T x hs),
// and the OpenMP build of OpenBLAS runs a GEMM called inside a parallel region on the calling
// thread, so the pairs proceed in parallel with no synchronisation inside a GEMM.
template <class R>
void attention_forward(R* out, R* att, const R* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH, C3 = 3 * C;
  const R scale = R(1.0) / std::sqrt((R)hs);
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; bh++) {
    const int b = bh / NH, h = bh % NH;
    const R* q = qkv + (size_t)b * T * C3 + h * hs;  // (T,hs), row stride 3C; k = q + C, v = q + 2C
    R* a = att + (size_t)bh * T * T;
    // scores (T,T) = scale * q @ k^T (only t2 <= t is used).
    gemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, C3, q + C, C3, R(0.0), a, T);
    // Causal softmax of every row; entries above the diagonal become 0.
    for (int t = 0; t < T; t++) {
      R* row = a + (size_t)t * T;
      R mx = row[0];
      for (int j = 1; j <= t; j++) mx = std::max(mx, row[j]);
      R sum = R(0.0);
      for (int j = 0; j <= t; j++) {
        row[j] = std::exp(row[j] - mx);
        sum += row[j];
      }
      const R inv = R(1.0) / sum;
      for (int j = 0; j <= t; j++) row[j] *= inv;
      for (int j = t + 1; j < T; j++) row[j] = R(0.0);
    }
    // out[b, :, h*hs:(h+1)*hs] (T,hs) = att (T,T) @ v (T,hs).
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, R(1.0), a, T, q + 2 * C, C3, R(0.0),
         out + (size_t)b * T * C + h * hs, C);
  }
}

template <class R>
void attention_backward(R* dqkv, R* datt, const R* dout, const R* qkv, const R* att, int B, int T,
                        int C, int NH) {
  const int hs = C / NH, C3 = 3 * C;
  const R scale = R(1.0) / std::sqrt((R)hs);
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; bh++) {
    const int b = bh / NH, h = bh % NH;
    const R* q = qkv + (size_t)b * T * C3 + h * hs;
    const R* a = att + (size_t)bh * T * T;
    const R* dy = dout + (size_t)b * T * C + h * hs;
    R* dq = dqkv + (size_t)b * T * C3 + h * hs;  // dk = dq + C, dv = dq + 2C
    R* d = datt + (size_t)bh * T * T;
    // datt (T,T) = dy (T,hs) @ v^T; dv (T,hs) += att^T @ dy.
    gemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, R(1.0), dy, C, q + 2 * C, C3, R(0.0), d, T);
    gemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, R(1.0), a, T, dy, C, R(1.0), dq + 2 * C, C3);
    // Softmax backward in place: dpre[t,j] = att[t,j] * (datt[t,j] - sum_k att[t,k] datt[t,k]).
    for (int t = 0; t < T; t++) {
      const R* ar = a + (size_t)t * T;
      R* dr = d + (size_t)t * T;
      R dot = R(0.0);
      for (int j = 0; j <= t; j++) dot += ar[j] * dr[j];
      for (int j = 0; j <= t; j++) dr[j] = ar[j] * (dr[j] - dot);
      for (int j = t + 1; j < T; j++) dr[j] = R(0.0);
    }
    // dq (T,hs) += scale * dpre @ k; dk (T,hs) += scale * dpre^T @ q.
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, d, T, q + C, C3, R(1.0), dq, C3);
    gemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, d, T, q, C3, R(1.0), dq + C, C3);
  }
}

template <class R>
void gelu_forward(R* out, const R* inp, size_t N) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < N; i++) {
    R x = inp[i];
    out[i] = R(0.5) * x * (R(1.0) + std::tanh(R(kGeluScale) * (x + R(0.044715) * x * x * x)));
  }
}

template <class R>
void gelu_backward(R* dinp, const R* inp, const R* dout, size_t N) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < N; i++) {
    R x = inp[i];
    R u = R(kGeluScale) * (x + R(0.044715) * x * x * x);
    R th = std::tanh(u);
    R sech2 = R(1.0) - th * th;
    R du = R(kGeluScale) * (R(1.0) + R(3.0) * R(0.044715) * x * x);
    dinp[i] += (R(0.5) * (R(1.0) + th) + R(0.5) * x * sech2 * du) * dout[i];
  }
}

// The fp32 GELU loops, vectorised with tanh_f32 and built for AVX-512 / AVX2 / baseline.
TD_SIMD_CLONES static void gelu_forward_f32(float* out, const float* inp, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanh_f32((float)kGeluScale * (x + 0.044715f * x * x * x)));
  }
}
TD_SIMD_CLONES static void gelu_backward_f32(float* dinp, const float* inp, const float* dout, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float x = inp[i];
    float th = tanh_f32((float)kGeluScale * (x + 0.044715f * x * x * x));
    float du = (float)kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du) * dout[i];
  }
}
// Splits [0, n) into one contiguous block per thread.
template <class F>
static void parallel_blocks(size_t n, F&& f) {
#pragma omp parallel
  {
    size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
    size_t per = (n + nt - 1) / nt, begin = std::min(n, id * per), end = std::min(n, begin + per);
    if (end > begin) f(begin, end - begin);
  }
}
template <>
void gelu_forward<float>(float* out, const float* inp, size_t N) {
  parallel_blocks(N, [&](size_t b, size_t n) { gelu_forward_f32(out + b, inp + b, n); });
}
template <>
void gelu_backward<float>(float* dinp, const float* inp, const float* dout, size_t N) {
  parallel_blocks(N, [&](size_t b, size_t n) { gelu_backward_f32(dinp + b, inp + b, dout + b, n); });
}

template <class R>
void residual_forward(R* out, const R* a, const R* b, size_t N) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}

template <class R>
void softmax_cross_entropy(R* losses, R* dlogits, const R* logits,
                           const int32_t* targets, int N, int V, R grad_scale) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) {
    const R* z = logits + (size_t)i * V;
    R mx = -INFINITY;
    for (int j = 0; j < V; j++) mx = std::max(mx, z[j]);
    double sum = 0.0;
    for (int j = 0; j < V; j++) sum += std::exp((double)(z[j] - mx));
    R logsum = (R)std::log(sum) + mx;
    int y = targets[i];
    losses[i] = logsum - z[y];
    if (dlogits) {
      R* dz = dlogits + (size_t)i * V;  // may alias z: each element is read before written
      for (int j = 0; j < V; j++) {
        R p = std::exp(z[j] - logsum);
        dz[j] = (p - (j == y ? R(1.0) : R(0.0))) * grad_scale;
      }
    }
  }
}

template <class R>
void adamw(R* params, const R* grads, R* m, R* v, size_t n, R lr,
           R beta1, R beta2, R eps, R weight_decay, int t) {
  const R bc1 = R(1.0) - std::pow(beta1, (R)t);
  const R bc2 = R(1.0) - std::pow(beta2, (R)t);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) {
    R g = grads[i];
    R mi = beta1 * m[i] + (R(1.0) - beta1) * g;
    R vi = beta2 * v[i] + (R(1.0) - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    R mhat = mi / bc1, vhat = vi / bc2;
    params[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + weight_decay * params[i]);
  }
}

template <class R>
double grad_norm_squared(const R* g, size_t n) {
  double total = 0.0;
  // Fixed-size chunks summed in order: the result does not depend on the thread count.
  const size_t chunk = 1 << 16;
  const size_t nchunks = (n + chunk - 1) / chunk;
  std::vector<double> partial(nchunks, 0.0);
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < nchunks; k++) {
    double s = 0.0;
    size_t end = std::min(n, (k + 1) * chunk);
    for (size_t i = k * chunk; i < end; i++) s += (double)g[i] * g[i];
    partial[k] = s;
  }
  for (double s : partial) total += s;
  return total;
}

template <class R>
void scale(R* x, R s, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) x[i] *= s;
}


#define TD_INSTANTIATE(R)                                                                         \
  template void encoder_forward<R>(R*, const int32_t*, const R*, const R*, int, int, int);        \
  template void encoder_backward<R>(R*, R*, const R*, const int32_t*, int, int, int);             \
  template void layernorm_forward<R>(R*, R*, R*, const R*, const R*, const R*, int, int);         \
  template void layernorm_backward<R>(R*, R*, R*, const R*, const R*, const R*, const R*,         \
                                      const R*, int, int);                                        \
  template void matmul_forward<R>(R*, const R*, const R*, const R*, int, int, int);               \
  template void matmul_backward<R>(R*, R*, R*, const R*, const R*, const R*, int, int, int);      \
  template void attention_forward<R>(R*, R*, const R*, int, int, int, int);                       \
  template void attention_backward<R>(R*, R*, const R*, const R*, const R*, int, int, int, int);  \
  template void gelu_forward<R>(R*, const R*, size_t);                                            \
  template void gelu_backward<R>(R*, const R*, const R*, size_t);                                 \
  template void residual_forward<R>(R*, const R*, const R*, size_t);                              \
  template void softmax_cross_entropy<R>(R*, R*, const R*, const int32_t*, int, int, R);          \
  template void adamw<R>(R*, const R*, R*, R*, size_t, R, R, R, R, R, int);                       \
  template double grad_norm_squared<R>(const R*, size_t);                                         \
  template void scale<R>(R*, R, size_t);
TD_INSTANTIATE(float)
TD_INSTANTIATE(double)
#undef TD_INSTANTIATE

}  // namespace cpu

namespace {

// Mixed precision is emulated on the CPU: the bf16 ops widen their bf16 inputs to fp32
// temporaries, run the fp32 reference op and round each Act output to bf16 once (an output
// the op accumulates into is widened first, so the += happens in fp32). Slow, but it gives
// the model's bf16 plumbing and the parity harness a reference without a GPU.
std::vector<float> widen(const bf16* p, size_t n) {
  std::vector<float> v(p ? n : 0);
  for (size_t i = 0; i < v.size(); i++) v[i] = to_float(p[i]);
  return v;
}
// The data of a widened span, or null for an absent (null) argument.
float* ptr(std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }
void narrow(bf16* dst, const std::vector<float>& v) {
  for (size_t i = 0; i < v.size(); i++) dst[i] = to_bf16(v[i]);
}

// The Backend adapter over the fp32 instantiation of the reference ops (bf16: emulated, above).
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

  // ---- fp32: the reference ops ----
  void encoder_forward(float* out, const int32_t* inp, const float* wte, const float* wpe, int B, int T, int C) override {
    cpu::encoder_forward(out, inp, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* inp, int B, int T, int C) override {
    cpu::encoder_backward(dwte, dwpe, dout, inp, B, T, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, int N, int C) override {
    cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight, const float* mean, const float* rstd, int N, int C) override {
    cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC) override {
    cpu::matmul_forward(out, inp, weight, bias, N, C, OC);
  }
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight, int N, int C, int OC) override {
    cpu::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) override {
    cpu::attention_forward(out, att, qkv, B, T, C, NH);
  }
  void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C, int NH) override {
    scratch_.resize((size_t)B * NH * T * T);
    cpu::attention_backward(dqkv, scratch_.data(), dout, qkv, att, B, T, C, NH);
  }
  void gelu_forward(float* out, const float* inp, size_t N) override { cpu::gelu_forward(out, inp, N); }
  void gelu_backward(float* dinp, const float* inp, const float* dout, size_t N) override { cpu::gelu_backward(dinp, inp, dout, N); }
  void residual_forward(float* out, const float* a, const float* b, size_t N) override { cpu::residual_forward(out, a, b, N); }
  void softmax_cross_entropy(float* losses, float* dlogits, const float* logits, const int32_t* targets, int N, int V, float grad_scale) override {
    cpu::softmax_cross_entropy(losses, dlogits, logits, targets, N, V, grad_scale);
  }

  // ---- bf16: emulated (widen, fp32 op, round once) ----
  void encoder_forward(bf16* out, const int32_t* inp, const bf16* wte, const bf16* wpe, int B, int T, int C) override {
    const size_t BT = (size_t)B * T, BTC = BT * C;
    int32_t V = 0;  // rows of wte that the tokens reach
    for (size_t i = 0; i < BT; i++) V = std::max(V, inp[i] + 1);
    auto te = widen(wte, (size_t)V * C), pe = widen(wpe, (size_t)T * C);
    std::vector<float> o(BTC);
    cpu::encoder_forward(o.data(), inp, ptr(te), ptr(pe), B, T, C);
    narrow(out, o);
  }
  void encoder_backward(float* dwte, float* dwpe, const bf16* dout, const int32_t* inp, int B, int T, int C) override {
    auto d = widen(dout, (size_t)B * T * C);
    cpu::encoder_backward(dwte, dwpe, d.data(), inp, B, T, C);
  }
  void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight, const bf16* bias, int N, int C) override {
    auto x = widen(inp, (size_t)N * C), w = widen(weight, C), b = widen(bias, C);
    std::vector<float> o((size_t)N * C);
    cpu::layernorm_forward(o.data(), mean, rstd, x.data(), w.data(), b.data(), N, C);
    narrow(out, o);
  }
  void layernorm_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp, const bf16* weight, const float* mean, const float* rstd, int N, int C) override {
    const size_t NC = (size_t)N * C;
    auto dx = widen(dinp, NC), dy = widen(dout, NC), x = widen(inp, NC), w = widen(weight, C);
    cpu::layernorm_backward(dx.data(), dweight, dbias, dy.data(), x.data(), w.data(), mean, rstd, N, C);
    narrow(dinp, dx);
  }
  void matmul_forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, int N, int C, int OC) override {
    auto x = widen(inp, (size_t)N * C), w = widen(weight, (size_t)OC * C), b = widen(bias, OC);
    std::vector<float> o((size_t)N * OC);
    cpu::matmul_forward(o.data(), x.data(), w.data(), ptr(b), N, C, OC);
    narrow(out, o);
  }
  void matmul_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp, const bf16* weight, int N, int C, int OC) override {
    auto dx = widen(dinp, (size_t)N * C), dy = widen(dout, (size_t)N * OC), x = widen(inp, (size_t)N * C),
         w = widen(weight, (size_t)OC * C);
    cpu::matmul_backward(ptr(dx), dweight, dbias, dy.data(), x.data(), w.data(), N, C, OC);
    if (dinp) narrow(dinp, dx);
  }
  void attention_forward(bf16* out, bf16* att, const bf16* qkv, int B, int T, int C, int NH) override {
    auto q = widen(qkv, (size_t)B * T * 3 * C);
    std::vector<float> o((size_t)B * T * C), a((size_t)B * NH * T * T);
    cpu::attention_forward(o.data(), a.data(), q.data(), B, T, C, NH);
    narrow(out, o);
    narrow(att, a);
  }
  void attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* att, int B, int T, int C, int NH) override {
    const size_t n3 = (size_t)B * T * 3 * C;
    auto dq = widen(dqkv, n3), dy = widen(dout, (size_t)B * T * C), q = widen(qkv, n3),
         a = widen(att, (size_t)B * NH * T * T);
    attention_backward(dq.data(), dy.data(), q.data(), a.data(), B, T, C, NH);
    narrow(dqkv, dq);
  }
  void gelu_forward(bf16* out, const bf16* inp, size_t N) override {
    auto x = widen(inp, N);
    std::vector<float> o(N);
    cpu::gelu_forward(o.data(), x.data(), N);
    narrow(out, o);
  }
  void gelu_backward(bf16* dinp, const bf16* inp, const bf16* dout, size_t N) override {
    auto dx = widen(dinp, N), x = widen(inp, N), dy = widen(dout, N);
    cpu::gelu_backward(dx.data(), x.data(), dy.data(), N);
    narrow(dinp, dx);
  }
  void residual_forward(bf16* out, const bf16* a, const bf16* b, size_t N) override {
    auto x = widen(a, N), y = widen(b, N);
    std::vector<float> o(N);
    cpu::residual_forward(o.data(), x.data(), y.data(), N);
    narrow(out, o);
  }
  void softmax_cross_entropy(float* losses, bf16* dlogits, const bf16* logits, const int32_t* targets, int N, int V, float grad_scale) override {
    // logits are widened before dlogits is written, so the two may alias.
    auto z = widen(logits, (size_t)N * V);
    std::vector<float> dz(dlogits ? z.size() : 0);
    cpu::softmax_cross_entropy(losses, ptr(dz), z.data(), targets, N, V, grad_scale);
    if (dlogits) narrow(dlogits, dz);
  }

  // ---- fp32 only ----
  void convert(bf16* dst, const float* src, size_t n) override {
    for (size_t i = 0; i < n; i++) dst[i] = to_bf16(src[i]);
  }
  void adamw(float* params, const float* grads, float* m, float* v, size_t n, float lr, float beta1, float beta2, float eps, float weight_decay, int t) override {
    cpu::adamw(params, grads, m, v, n, lr, beta1, beta2, eps, weight_decay, t);
  }
  double grad_norm_squared(const float* g, size_t n) override { return cpu::grad_norm_squared(g, n); }
  void scale(float* x, float s, size_t n) override { cpu::scale(x, s, n); }

 private:
  std::vector<float> scratch_;  // (B,NH,T,T) gradient of the attention scores
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace td
