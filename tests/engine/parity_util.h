// Shared pieces of the parity harness (test_parity.cpp): the tolerances,
// deterministic random inputs rounded to a dtype, the error metric, and backend buffers freed at
// the end of a check. Header-only; no Qt (the harness runs on GPU machines without it).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/ops/backend.h"
#include "engine/ops/dtype.h"

namespace parity {

using namespace td;
using Vec = std::vector<double>;

// ---- tolerances (relative to the largest reference value of each output: test_parity.cpp) ----
// docs/cuda.md ("Parity tolerances") quotes these values; change both together.
// Unit roundoff u: fp32 2^-24 = 6.0e-8 (24 significant bits); bf16 2^-8 = 3.9e-3 (8 bits).
// fp32 arithmetic per element (copies, sums of two, scale): one or two roundings, u each.
inline constexpr double kF32Elementwise = 1e-6;
// fp32 with exp/tanh (GELU): implementations differ by a few ulps (CUDA's tanhf 2 ulp, the
// CPU's tanh_f32 3e-7 absolute), amplified up to ~10x by x * du in GELU's derivative.
inline constexpr double kF32Transcendental = 1e-5;
// fp32 reductions over K terms (matmul over C, layernorm over C, weight gradients over N = 256
// rows, softmax over V = 1000, attention over T): the summation error grows like sqrt(K) u for
// random signs and is bounded by K u = 6e-5 for K = 1000 (Higham, "Accuracy and Stability of
// Numerical Algorithms", 2nd ed., sec. 4.2). TF32 GEMMs (u = 2^-11) fail this, by design.
// AdamW uses it too: p_new rounded to fp32 carries u |p| (|p| <= ~4.5) against updates of
// >= 1e-2 here: <= 3e-5.
inline constexpr double kF32Reduction = 1e-4;
// bf16 outputs after fp32 arithmetic: one rounding is <= u = 3.9e-3 of the element, hence of
// the largest element (the CPU emulation measures 3.3e-3); 8e-3 = 2u leaves room for one
// intermediate bf16 rounding inside a GPU kernel (a bias added after a rounded GEMM).
inline constexpr double kBF16Once = 8e-3;
// bf16 attention: on a GPU the scores, the probabilities and the output may each be stored in
// bf16; a score rounded by u |s| (|s| up to ~4 for N(0,1) inputs) moves exp(s) by up to 4u =
// 1.6e-2 relative, plus the output's rounding: 3e-2.
inline constexpr double kBF16Attention = 3e-2;
// fp32 -> bf16 conversion is exact arithmetic (round to nearest even): no error allowed.
inline constexpr double kExact = 0.0;


// ---- host data ------------------------------------------------------------------------------
template <class T> T from_double(double x);
template <> inline float from_double<float>(double x) { return (float)x; }
template <> inline bf16 from_double<bf16>(double x) { return to_bf16((float)x); }

// Deterministic random inputs, already rounded to the element type T (float or bf16).
struct Rand {
  std::mt19937_64 g;
  explicit Rand(uint64_t seed) : g(seed) {}
  template <class T> Vec normal(size_t n, double sd = 1.0) {
    std::normal_distribution<double> d(0.0, sd);
    Vec v(n);
    for (auto& x : v) x = to_float(from_double<T>(d(g)));
    return v;
  }
  std::vector<int32_t> ids(size_t n, int V) {
    std::vector<int32_t> v(n);
    for (auto& x : v) x = (int32_t)(g() % (uint64_t)V);
    return v;
  }
};

// max |got - want| / (max |want| + 1e-30): the error of one output tensor.
inline double rel_error(const Vec& got, const Vec& want) {
  if (got.size() != want.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); i++) {
    const double d = std::abs(got[i] - want[i]);
    if (std::isnan(d)) return INFINITY;  // std::max would drop a NaN
    num = std::max(num, d);
    den = std::max(den, std::abs(want[i]));
  }
  return num / (den + 1e-30);
}

// Backend buffers of one check, freed when it ends.
class Mem {
 public:
  explicit Mem(Backend& be) : be_(be) {}
  ~Mem() {
    for (void* p : ptrs_) be_.free(p);
  }
  Mem(const Mem&) = delete;
  Mem& operator=(const Mem&) = delete;
  // A backend copy of v as elements of type T (values already representable: see Rand).
  template <class T> T* put(const Vec& v) {
    std::vector<T> h(v.size());
    for (size_t i = 0; i < v.size(); i++) h[i] = from_double<T>(v[i]);
    return upload(h);
  }
  template <class T> T* upload(const std::vector<T>& h) {
    T* p = static_cast<T*>(alloc(h.size() * sizeof(T)));
    be_.upload(p, h.data(), h.size() * sizeof(T));
    return p;
  }
  template <class T> Vec get(const T* p, size_t n) {
    std::vector<T> h(n);
    be_.synchronize();
    be_.download(h.data(), p, n * sizeof(T));
    Vec v(n);
    for (size_t i = 0; i < n; i++) v[i] = to_float(h[i]);
    return v;
  }

 private:
  void* alloc(size_t bytes) {
    void* p = be_.alloc(std::max<size_t>(bytes, 1));
    ptrs_.push_back(p);
    return p;
  }
  Backend& be_;
  std::vector<void*> ptrs_;
};

}  // namespace parity
