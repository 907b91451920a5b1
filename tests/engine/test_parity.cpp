// Backend parity: every (op, dtype) that a backend supports, run on random inputs and compared
// with the double instantiation of the CPU reference ops (td::cpu::<op><double>), plus the whole
// GPT model (one training step's loss, logits and every gradient; a 20-step loss curve) against
// the CPU fp32 backend.
//
// Backends: "cpu" always (fp32, and bf16 = the CPU's emulation of mixed precision), "cuda" when
// td::cuda_available() (else one "SKIP cuda: <why>" line; --require-cuda makes that a failure).
// The run fails when a backend supports an (op, dtype) that has no row here, or does not
// support a row's (op, dtype): adding an op to ops.h means adding a row below.
//
// Inputs are rounded to the row's dtype before the reference sees them, so the reference and
// the backend compute on the same values and the error measures the op alone. Error metric,
// per output tensor: max_i |got_i - want_i| / (max_i |want_i| + 1e-30); a row's error is the
// largest over its output tensors and shapes. Backward ops accumulate (+=): their outputs start
// at random values, not zero, so a backend that overwrites fails.
//
// A plain executable (no Qt): it must build and run on GPU machines without Qt.
//   test_parity [--json PATH] [--require-cuda] [--cpu-path-rows]
// Exit status 0 when every row that ran passed (and, with --require-cuda, CUDA ran), else 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model/gpt.h"
#include "engine/ops/backend.h"
#include "engine/ops/cpu_ops.h"
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
#include "engine/optim/adamw.h"
#include "parity_util.h"

using namespace td;
using namespace parity;

namespace {

// ---- shapes ---------------------------------------------------------------------------------
// B, T, C, NH, V, OC, NKV. Small odd sizes (no loop is accidentally a multiple of a vector width or a
// tile), then one of GPT-like size.
// NKV: key/value heads of the Llama ops (RoPE, grouped-query attention): multi-query (1), as
// many as NH, and groups of 2.
struct Shape {
  int B, T, C, NH, V, OC, NKV;
};
const Shape kShapes[] = {{2, 5, 12, 3, 7, 9, 1}, {3, 17, 40, 5, 67, 33, 5}, {4, 64, 64, 4, 1000, 96, 2}};

// ---- one check per op, templated on the activation type Act -----------------------------------
// Each returns the largest error over its output tensors for one shape.

template <class Act> double check_encoder_forward(Backend& be, const Shape& s) {
  Rand r(11);
  Mem m(be);
  auto ids = r.ids((size_t)s.B * s.T, s.V);
  for (size_t i = 0; i < ids.size(); i += 5) ids[i] = -1;  // another tensor-parallel rank's row: wpe only
  Vec wte = r.normal<Act>((size_t)s.V * s.C), wpe = r.normal<Act>((size_t)s.T * s.C);
  Vec want((size_t)s.B * s.T * s.C);
  cpu::encoder_forward(want.data(), ids.data(), wte.data(), wpe.data(), s.B, s.T, s.C);
  Act* out = m.put<Act>(Vec(want.size()));
  be.ops<Act>().encoder_forward(out, m.upload(ids), m.put<Act>(wte), m.put<Act>(wpe), s.B, s.T, s.C);
  return rel_error(m.get(out, want.size()), want);
}

template <class Act> double check_encoder_backward(Backend& be, const Shape& s) {
  Rand r(12);
  Mem m(be);
  auto ids = r.ids((size_t)s.B * s.T, s.V);
  for (size_t i = 0; i < ids.size(); i += 5) ids[i] = -1;  // no dwte row
  Vec dout = r.normal<Act>((size_t)s.B * s.T * s.C);
  Vec dwte = r.normal<float>((size_t)s.V * s.C), dwpe = r.normal<float>((size_t)s.T * s.C);
  float* g_dwte = m.put<float>(dwte);
  float* g_dwpe = m.put<float>(dwpe);
  cpu::encoder_backward(dwte.data(), dwpe.data(), dout.data(), ids.data(), s.B, s.T, s.C);
  be.ops<Act>().encoder_backward(g_dwte, g_dwpe, m.put<Act>(dout), m.upload(ids), s.B, s.T, s.C);
  return std::max(rel_error(m.get(g_dwte, dwte.size()), dwte), rel_error(m.get(g_dwpe, dwpe.size()), dwpe));
}

template <class Act> double check_layernorm_forward(Backend& be, const Shape& s) {
  Rand r(13);
  Mem m(be);
  const int N = s.B * s.T;
  // Rows with a nonzero mean and a scale other than 1, as residual streams have.
  Vec x = r.normal<Act>((size_t)N * s.C, 2.0), w = r.normal<Act>(s.C), b = r.normal<Act>(s.C);
  for (auto& v : x) v = to_float(from_double<Act>(v + 0.5));
  Vec want((size_t)N * s.C), mean(N), rstd(N);
  cpu::layernorm_forward(want.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, s.C);
  Act* out = m.put<Act>(Vec(want.size()));
  float* g_mean = m.put<float>(Vec(N));
  float* g_rstd = m.put<float>(Vec(N));
  be.ops<Act>().layernorm_forward(out, g_mean, g_rstd, m.put<Act>(x), m.put<Act>(w), m.put<Act>(b), N, s.C);
  return std::max({rel_error(m.get(out, want.size()), want), rel_error(m.get(g_mean, N), mean),
                   rel_error(m.get(g_rstd, N), rstd)});
}

template <class Act> double check_layernorm_backward(Backend& be, const Shape& s) {
  Rand r(14);
  Mem m(be);
  const int N = s.B * s.T;
  const size_t NC = (size_t)N * s.C;
  Vec x = r.normal<Act>(NC, 2.0), w = r.normal<Act>(s.C), b = r.normal<Act>(s.C), dout = r.normal<Act>(NC);
  // mean and rstd as a forward would have saved them: fp32, and the same for both sides.
  Vec y(NC), mean(N), rstd(N);
  cpu::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, s.C);
  for (auto* v : {&mean, &rstd})
    for (auto& e : *v) e = (float)e;
  Vec dx = r.normal<Act>(NC), dw = r.normal<float>(s.C), db = r.normal<float>(s.C);
  Act* g_dx = m.put<Act>(dx);
  float* g_dw = m.put<float>(dw);
  float* g_db = m.put<float>(db);
  cpu::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(), rstd.data(), N, s.C);
  be.ops<Act>().layernorm_backward(g_dx, g_dw, g_db, m.put<Act>(dout), m.put<Act>(x), m.put<Act>(w), m.put<float>(mean),
                        m.put<float>(rstd), N, s.C);
  return std::max({rel_error(m.get(g_dx, NC), dx), rel_error(m.get(g_dw, s.C), dw), rel_error(m.get(g_db, s.C), db)});
}

// RMSNorm's eps (as model.rms_norm_eps would give it): fp32 on the backend, the same value in double.
constexpr float kRmsEps = 1e-5f;

template <class Act> double check_rmsnorm_forward(Backend& be, const Shape& s) {
  Rand r(27);
  Mem m(be);
  const int N = s.B * s.T;
  Vec x = r.normal<Act>((size_t)N * s.C, 2.0), w = r.normal<Act>(s.C);
  Vec want((size_t)N * s.C), rstd(N);
  cpu::rmsnorm_forward(want.data(), rstd.data(), x.data(), w.data(), N, s.C, (double)kRmsEps);
  Act* out = m.put<Act>(Vec(want.size()));
  float* g_rstd = m.put<float>(Vec(N));
  be.ops<Act>().rmsnorm_forward(out, g_rstd, m.put<Act>(x), m.put<Act>(w), N, s.C, kRmsEps);
  return std::max(rel_error(m.get(out, want.size()), want), rel_error(m.get(g_rstd, N), rstd));
}

template <class Act> double check_rmsnorm_backward(Backend& be, const Shape& s) {
  Rand r(28);
  Mem m(be);
  const int N = s.B * s.T;
  const size_t NC = (size_t)N * s.C;
  Vec x = r.normal<Act>(NC, 2.0), w = r.normal<Act>(s.C), dout = r.normal<Act>(NC);
  // rstd as a forward would have saved it: fp32, and the same for both sides.
  Vec y(NC), rstd(N);
  cpu::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, s.C, (double)kRmsEps);
  for (auto& e : rstd) e = (float)e;
  Vec dx = r.normal<Act>(NC), dw = r.normal<float>(s.C);
  Act* g_dx = m.put<Act>(dx);
  float* g_dw = m.put<float>(dw);
  cpu::rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, s.C);
  be.ops<Act>().rmsnorm_backward(g_dx, g_dw, m.put<Act>(dout), m.put<Act>(x), m.put<Act>(w), m.put<float>(rstd), N, s.C);
  return std::max(rel_error(m.get(g_dx, NC), dx), rel_error(m.get(g_dw, s.C), dw));
}

template <class Act> double check_matmul_forward(Backend& be, const Shape& s) {
  Rand r(15);
  Mem m(be);
  const int N = s.B * s.T;
  Vec x = r.normal<Act>((size_t)N * s.C), w = r.normal<Act>((size_t)s.OC * s.C), b = r.normal<Act>(s.OC);
  // The bias in its own buffer (16-byte aligned: a cuBLASLt epilogue may add it), one element
  // into a buffer (2 or 4 bytes past alignment: the backend must add it some other way, as for
  // a bias at an odd offset of the parameter buffer), and none (the LM head has no bias).
  Vec b_shifted(b.size() + 1, 0.0);
  std::copy(b.begin(), b.end(), b_shifted.begin() + 1);
  double err = 0;
  for (int bias : {0, 1, 2}) {
    Vec want((size_t)N * s.OC);
    cpu::matmul_forward(want.data(), x.data(), w.data(), bias < 2 ? b.data() : nullptr, N, s.C, s.OC);
    Act* out = m.put<Act>(Vec(want.size()));
    const Act* g_b = bias == 0 ? m.put<Act>(b) : bias == 1 ? m.put<Act>(b_shifted) + 1 : nullptr;
    be.ops<Act>().matmul_forward(out, m.put<Act>(x), m.put<Act>(w), g_b, N, s.C, s.OC);
    err = std::max(err, rel_error(m.get(out, want.size()), want));
  }
  return err;
}

template <class Act> double check_matmul_backward(Backend& be, const Shape& s) {
  Rand r(16);
  Mem m(be);
  const int N = s.B * s.T;
  Vec x = r.normal<Act>((size_t)N * s.C), w = r.normal<Act>((size_t)s.OC * s.C), dout = r.normal<Act>((size_t)N * s.OC);
  double err = 0;
  // dinp accumulated; dinp and dbias null (both may be); dinp overwritten (beta 0), where it
  // holds NaN before so that a kernel which reads it fails the row.
  enum Mode { kAccumulate, kNoInputGradient, kOverwrite };
  for (Mode mode : {kAccumulate, kNoInputGradient, kOverwrite}) {
    const bool all = mode != kNoInputGradient, overwrite = mode == kOverwrite;
    Vec dx = overwrite ? Vec((size_t)N * s.C, NAN) : r.normal<Act>((size_t)N * s.C);
    Vec dw = r.normal<float>(w.size()), db = r.normal<float>(s.OC);
    Act* g_dx = all ? m.put<Act>(dx) : nullptr;
    float* g_dw = m.put<float>(dw);
    float* g_db = all ? m.put<float>(db) : nullptr;
    cpu::matmul_backward(all ? dx.data() : nullptr, dw.data(), all ? db.data() : nullptr, dout.data(), x.data(),
                         w.data(), N, s.C, s.OC, overwrite);
    be.ops<Act>().matmul_backward(g_dx, g_dw, g_db, m.put<Act>(dout), m.put<Act>(x), m.put<Act>(w), N, s.C, s.OC,
                                  overwrite);
    err = std::max(err, rel_error(m.get(g_dw, dw.size()), dw));
    if (all) err = std::max({err, rel_error(m.get(g_dx, dx.size()), dx), rel_error(m.get(g_db, db.size()), db)});
  }
  return err;
}

// The up-projection with its GELU: out and pre against the reference in double, with the bias
// aligned, one element into a buffer (no cuBLASLt epilogue may read it) and none; OC a
// multiple of 8 takes the CUDA epilogue, other OC the GEMM then the GELU kernel.
template <class Act> double check_matmul_gelu_forward(Backend& be, const Shape& s) {
  Rand r(30);
  Mem m(be);
  const int N = s.B * s.T;
  Vec x = r.normal<Act>((size_t)N * s.C), w = r.normal<Act>((size_t)s.OC * s.C, 0.5), b = r.normal<Act>(s.OC);
  Vec b_shifted(b.size() + 1, 0.0);
  std::copy(b.begin(), b.end(), b_shifted.begin() + 1);
  double err = 0;
  for (int bias : {0, 1, 2}) {
    Vec want((size_t)N * s.OC), want_pre(want.size());
    cpu::matmul_gelu_forward(want.data(), want_pre.data(), x.data(), w.data(), bias < 2 ? b.data() : nullptr, N, s.C,
                             s.OC);
    Act* out = m.put<Act>(Vec(want.size(), NAN));
    Act* pre = m.put<Act>(Vec(want.size(), NAN));
    const Act* g_b = bias == 0 ? m.put<Act>(b) : bias == 1 ? m.put<Act>(b_shifted) + 1 : nullptr;
    be.ops<Act>().matmul_gelu_forward(out, pre, m.put<Act>(x), m.put<Act>(w), g_b, N, s.C, s.OC);
    err = std::max({err, rel_error(m.get(out, want.size()), want), rel_error(m.get(pre, want.size()), want_pre)});
  }
  return err;
}

// The down-projection's backward through the GELU: dpre holds NaN before (it is overwritten and
// must not be read); dweight and dbias accumulate; with and without dbias. pre and inp =
// GELU(pre) as a forward would have saved them (Act).
template <class Act> double check_matmul_backward_dgelu(Backend& be, const Shape& s) {
  Rand r(31);
  Mem m(be);
  const int N = s.B * s.T;
  const size_t NC = (size_t)N * s.C;
  Vec pre = r.normal<Act>(NC, 2.0), inp(NC), w = r.normal<Act>((size_t)s.OC * s.C), dout = r.normal<Act>((size_t)N * s.OC);
  cpu::gelu_forward(inp.data(), pre.data(), NC);
  for (auto& v : inp) v = to_float(from_double<Act>(v));
  double err = 0;
  for (bool with_bias : {true, false}) {
    Vec dpre(NC, NAN), dw = r.normal<float>(w.size()), db = r.normal<float>(s.OC);
    Act* g_dpre = m.put<Act>(dpre);
    float* g_dw = m.put<float>(dw);
    float* g_db = with_bias ? m.put<float>(db) : nullptr;
    cpu::matmul_backward_dgelu(dpre.data(), dw.data(), with_bias ? db.data() : nullptr, dout.data(), inp.data(), w.data(),
                               pre.data(), N, s.C, s.OC);
    be.ops<Act>().matmul_backward_dgelu(g_dpre, g_dw, g_db, m.put<Act>(dout), m.put<Act>(inp), m.put<Act>(w),
                                        m.put<Act>(pre), N, s.C, s.OC);
    err = std::max({err, rel_error(m.get(g_dpre, NC), dpre), rel_error(m.get(g_dw, dw.size()), dw)});
    if (with_bias) err = std::max(err, rel_error(m.get(g_db, db.size()), db));
  }
  return err;
}

// Attention runs with NKV = NH (multi-head, GPT-2) and with the shape's NKV (grouped-query).
std::vector<int> kv_heads(const Shape& s) {
  return s.NKV == s.NH ? std::vector<int>{s.NH} : std::vector<int>{s.NH, s.NKV};
}
size_t qkv_size(const Shape& s, int nkv) { return (size_t)s.B * s.T * (s.C + 2 * nkv * (s.C / s.NH)); }

template <class Act> double check_attention_forward(Backend& be, const Shape& s) {
  Rand r(17);
  Mem m(be);
  double err = 0;
  for (int nkv : kv_heads(s)) {
    Vec qkv = r.normal<Act>(qkv_size(s, nkv));
    Vec want((size_t)s.B * s.T * s.C), att((size_t)s.B * s.NH * s.T * s.T);
    cpu::attention_forward(want.data(), att.data(), qkv.data(), s.B, s.T, s.C, s.NH, nkv);
    Act* out = m.put<Act>(Vec(want.size()));
    Act* g_att = m.put<Act>(Vec(att.size(), 0.5));  // the masked half must be written (zeros)
    be.ops<Act>().attention_forward(out, g_att, m.put<Act>(qkv), s.B, s.T, s.C, s.NH, nkv);
    err = std::max({err, rel_error(m.get(out, want.size()), want), rel_error(m.get(g_att, att.size()), att)});
  }
  return err;
}

template <class Act> double check_attention_backward(Backend& be, const Shape& s) {
  Rand r(18);
  Mem m(be);
  double err = 0;
  for (int nkv : kv_heads(s)) {
    Vec qkv = r.normal<Act>(qkv_size(s, nkv)), dout = r.normal<Act>((size_t)s.B * s.T * s.C);
    Vec out(dout.size()), att((size_t)s.B * s.NH * s.T * s.T), scratch(att.size());
    cpu::attention_forward(out.data(), att.data(), qkv.data(), s.B, s.T, s.C, s.NH, nkv);
    for (auto& a : att) a = to_float(from_double<Act>(a));  // the saved probabilities, as Act
    Vec dqkv = r.normal<Act>(qkv.size());
    Act* g_dqkv = m.put<Act>(dqkv);
    cpu::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), s.B, s.T, s.C, s.NH, nkv);
    be.ops<Act>().attention_backward(g_dqkv, m.put<Act>(dout), m.put<Act>(qkv), m.put<Act>(att), s.B, s.T, s.C, s.NH,
                                     nkv);
    err = std::max(err, rel_error(m.get(g_dqkv, dqkv.size()), dqkv));
  }
  return err;
}

// Fused attention: out and lse against the fused reference in double (which equals the simple
// one, test_ops flash_attention_is_attention_across_tiles).
template <class Act> double check_flash_attention_forward(Backend& be, const Shape& s) {
  Rand r(27);
  Mem m(be);
  double err = 0;
  for (int nkv : kv_heads(s)) {
    Vec qkv = r.normal<Act>(qkv_size(s, nkv));
    Vec want((size_t)s.B * s.T * s.C), lse((size_t)s.B * s.NH * s.T);
    cpu::flash_attention_forward(want.data(), lse.data(), qkv.data(), s.B, s.T, s.C, s.NH, nkv);
    Act* out = m.put<Act>(Vec(want.size()));
    float* g_lse = m.put<float>(Vec(lse.size()));
    be.ops<Act>().flash_attention_forward(out, g_lse, m.put<Act>(qkv), s.B, s.T, s.C, s.NH, nkv);
    err = std::max({err, rel_error(m.get(out, want.size()), want), rel_error(m.get(g_lse, lse.size()), lse)});
  }
  return err;
}

// Backward from the saved out (as Act) and lse (fp32) of the reference's forward; accumulates.
template <class Act> double check_flash_attention_backward(Backend& be, const Shape& s) {
  Rand r(28);
  Mem m(be);
  double err = 0;
  for (int nkv : kv_heads(s)) {
    Vec qkv = r.normal<Act>(qkv_size(s, nkv)), dout = r.normal<Act>((size_t)s.B * s.T * s.C);
    Vec out(dout.size()), lse((size_t)s.B * s.NH * s.T);
    cpu::flash_attention_forward(out.data(), lse.data(), qkv.data(), s.B, s.T, s.C, s.NH, nkv);
    for (auto& o : out) o = to_float(from_double<Act>(o));
    for (auto& l : lse) l = (float)l;
    Vec dqkv = r.normal<Act>(qkv.size());
    Act* g_dqkv = m.put<Act>(dqkv);
    cpu::flash_attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), s.B, s.T, s.C, s.NH,
                                  nkv);
    be.ops<Act>().flash_attention_backward(g_dqkv, m.put<Act>(dout), m.put<Act>(qkv), m.put<Act>(out),
                                           m.put<float>(lse), s.B, s.T, s.C, s.NH, nkv);
    err = std::max(err, rel_error(m.get(g_dqkv, dqkv.size()), dqkv));
  }
  return err;
}

template <class Act> double check_gelu_forward(Backend& be, const Shape& s) {
  Rand r(19);
  Mem m(be);
  const size_t n = (size_t)s.B * s.T * 4 * s.C;
  Vec x = r.normal<Act>(n, 3.0), want(n);
  cpu::gelu_forward(want.data(), x.data(), n);
  Act* out = m.put<Act>(Vec(n));
  be.ops<Act>().gelu_forward(out, m.put<Act>(x), n);
  return rel_error(m.get(out, n), want);
}

template <class Act> double check_gelu_backward(Backend& be, const Shape& s) {
  Rand r(20);
  Mem m(be);
  const size_t n = (size_t)s.B * s.T * 4 * s.C;
  Vec x = r.normal<Act>(n, 3.0), dout = r.normal<Act>(n), dx = r.normal<Act>(n);
  Act* g_dx = m.put<Act>(dx);
  cpu::gelu_backward(dx.data(), x.data(), dout.data(), n);
  be.ops<Act>().gelu_backward(g_dx, m.put<Act>(x), m.put<Act>(dout), n);
  return rel_error(m.get(g_dx, n), dx);
}

// SwiGLU with F = OC hidden channels: inp (N,2F) = [gate | up].
template <class Act> double check_swiglu_forward(Backend& be, const Shape& s) {
  Rand r(29);
  Mem m(be);
  const int N = s.B * s.T, F = s.OC;
  Vec x = r.normal<Act>((size_t)N * 2 * F, 3.0), want((size_t)N * F);
  cpu::swiglu_forward(want.data(), x.data(), N, F);
  Act* out = m.put<Act>(Vec(want.size()));
  be.ops<Act>().swiglu_forward(out, m.put<Act>(x), N, F);
  return rel_error(m.get(out, want.size()), want);
}

template <class Act> double check_swiglu_backward(Backend& be, const Shape& s) {
  Rand r(30);
  Mem m(be);
  const int N = s.B * s.T, F = s.OC;
  Vec x = r.normal<Act>((size_t)N * 2 * F, 3.0), dout = r.normal<Act>((size_t)N * F), dx = r.normal<Act>(x.size());
  Act* g_dx = m.put<Act>(dx);
  cpu::swiglu_backward(dx.data(), x.data(), dout.data(), N, F);
  be.ops<Act>().swiglu_backward(g_dx, m.put<Act>(x), m.put<Act>(dout), N, F);
  return rel_error(m.get(g_dx, dx.size()), dx);
}

// RoPE on qkv (B,T,(NH+2NKV)hs), in place, for Llama 2's and Llama 3's theta; forward = true
// checks rope_forward, else rope_backward (the inverse rotation).
template <class Act> double check_rope(Backend& be, const Shape& s, bool forward) {
  Rand r(forward ? 31 : 32);
  Mem m(be);
  const int hs = s.C / s.NH;
  double err = 0;
  for (float theta : {10000.0f, 500000.0f}) {
    Vec x = r.normal<Act>((size_t)s.B * s.T * (s.NH + 2 * s.NKV) * hs);
    Act* g_x = m.put<Act>(x);
    if (forward) {
      cpu::rope_forward(x.data(), s.B, s.T, s.NH, s.NKV, hs, (double)theta);
      be.ops<Act>().rope_forward(g_x, s.B, s.T, s.NH, s.NKV, hs, theta);
    } else {
      cpu::rope_backward(x.data(), s.B, s.T, s.NH, s.NKV, hs, (double)theta);
      be.ops<Act>().rope_backward(g_x, s.B, s.T, s.NH, s.NKV, hs, theta);
    }
    err = std::max(err, rel_error(m.get(g_x, x.size()), x));
  }
  return err;
}
template <class Act> double check_rope_forward(Backend& be, const Shape& s) { return check_rope<Act>(be, s, true); }
template <class Act> double check_rope_backward(Backend& be, const Shape& s) { return check_rope<Act>(be, s, false); }

template <class Act> double check_residual_forward(Backend& be, const Shape& s) {
  Rand r(21);
  Mem m(be);
  const size_t n = (size_t)s.B * s.T * s.C;
  Vec a = r.normal<Act>(n), b = r.normal<Act>(n), want(n);
  cpu::residual_forward(want.data(), a.data(), b.data(), n);
  Act* out = m.put<Act>(Vec(n));
  be.ops<Act>().residual_forward(out, m.put<Act>(a), m.put<Act>(b), n);
  return rel_error(m.get(out, n), want);
}

template <class Act> double check_softmax_cross_entropy(Backend& be, const Shape& s) {
  Rand r(22);
  Mem m(be);
  const int N = s.B * s.T;
  const size_t NV = (size_t)N * s.V;
  Vec z = r.normal<Act>(NV, 3.0);
  auto tg = r.ids(N, s.V);
  const float grad_scale = 1.0f / (float)N;
  Vec losses(N), dz(NV);
  cpu::softmax_cross_entropy(losses.data(), dz.data(), z.data(), tg.data(), N, s.V, (double)grad_scale);
  const int32_t* g_tg = m.upload(tg);
  double err = 0;
  for (int mode = 0; mode < 3; mode++) {  // separate dlogits, dlogits aliasing logits (as GPT), none
    Act* g_z = m.put<Act>(z);
    Act* g_dz = mode == 0 ? m.put<Act>(Vec(NV)) : mode == 1 ? g_z : nullptr;
    float* g_l = m.put<float>(Vec(N));
    be.ops<Act>().softmax_cross_entropy(g_l, g_dz, g_z, g_tg, N, s.V, grad_scale);
    err = std::max(err, rel_error(m.get(g_l, N), losses));
    if (g_dz) err = std::max(err, rel_error(m.get(g_dz, NV), dz));
  }
  return err;
}

// The vocabulary-parallel halves on a middle shard [v0, v0 + Vs) of the vocabulary, targets
// global (some inside the shard, most outside); backward with dlogits separate and aliased.
template <class Act> double check_cross_entropy_shard_stats(Backend& be, const Shape& s) {
  Rand r(27);
  Mem m(be);
  const int N = s.B * s.T, v0 = s.V / 3, Vs = s.V / 2;
  Vec z = r.normal<Act>((size_t)N * Vs, 3.0), lse(N), tl(N);
  auto tg = r.ids(N, s.V);
  cpu::cross_entropy_shard_stats(lse.data(), tl.data(), z.data(), tg.data(), N, Vs, v0);
  float* g_lse = m.put<float>(Vec(N));
  float* g_tl = m.put<float>(Vec(N));
  be.ops<Act>().cross_entropy_shard_stats(g_lse, g_tl, m.put<Act>(z), m.upload(tg), N, Vs, v0);
  return std::max(rel_error(m.get(g_lse, N), lse), rel_error(m.get(g_tl, N), tl));
}
template <class Act> double check_cross_entropy_shard_backward(Backend& be, const Shape& s) {
  Rand r(28);
  Mem m(be);
  const int N = s.B * s.T, v0 = s.V / 3, Vs = s.V / 2;
  const size_t n = (size_t)N * Vs;
  Vec z = r.normal<Act>(n, 3.0), lse = r.normal<float>(N), dz(n);
  for (auto& l : lse) l = (float)(l + 4.0);  // a full-vocabulary lse lies above the shard's logits
  auto tg = r.ids(N, s.V);
  const float grad_scale = 1.0f / (float)N;
  cpu::cross_entropy_shard_backward(dz.data(), z.data(), lse.data(), tg.data(), N, Vs, v0, (double)grad_scale);
  const int32_t* g_tg = m.upload(tg);
  const float* g_lse = m.put<float>(lse);
  double err = 0;
  for (int alias = 0; alias < 2; alias++) {
    Act* g_z = m.put<Act>(z);
    Act* g_dz = alias ? g_z : m.put<Act>(Vec(n));
    be.ops<Act>().cross_entropy_shard_backward(g_dz, g_z, g_lse, g_tg, N, Vs, v0, grad_scale);
    err = std::max(err, rel_error(m.get(g_dz, n), dz));
  }
  return err;
}

// fp32 -> bf16. The reference rounds in double to 8 significant bits, ties to even (the
// default rounding mode of nearbyint), independently of td::to_bf16. Ties are included.
double check_convert(Backend& be, const Shape& s) {
  Rand r(23);
  Mem m(be);
  Vec x = r.normal<float>((size_t)s.B * s.T * s.C, 10.0);
  const double ties[] = {1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8, -(2.0 + 0x1p-7), 0.0, -0.0, 1e30, -3e-30, 65504.0};
  for (size_t i = 0; i < std::size(ties) && i < x.size(); i++) x[i] = ties[i];
  Vec want(x.size());
  for (size_t i = 0; i < x.size(); i++) {
    int e;
    double f = std::frexp(x[i], &e);  // |f| in [0.5, 1): 8 significant bits = f * 2^8 rounded
    want[i] = std::ldexp(std::nearbyint(f * 256.0) / 256.0, e);
  }
  bf16* out = m.put<bf16>(Vec(x.size()));
  be.convert(out, m.put<float>(x), x.size());
  return rel_error(m.get(out, x.size()), want);
}

// One Backend::adamw call over many spans, as the trainer makes it: random span lengths (some
// empty), gaps of 0-3 elements between spans, decay on or off per span; more than
// kAdamWSpansPerLaunch spans at the largest shape, so the CUDA path takes several launches.
// Want: td::cpu::adamw span by span; gap elements must keep their exact bits.
double check_adamw(Backend& be, const Shape& s) {
  Rand r(24);
  Mem m(be);
  const size_t n = (size_t)s.B * s.T * s.C;
  Vec p = r.normal<float>(n), g = r.normal<float>(n), mo = r.normal<float>(n, 0.1), v = r.normal<float>(n, 0.01);
  for (auto& e : v) e = (float)(e * e + 1e-4);
  std::vector<AdamWSpan> spans;
  for (size_t at = r.g() % 3; at < n;) {
    const size_t len = std::min<size_t>(n - at, r.g() % 100 == 0 ? 0 : 1 + r.g() % 100);
    spans.push_back(AdamWSpan{at, len, r.g() % 3 != 0});
    at += len + r.g() % 4;
  }
  std::vector<char> covered(n, 0);
  for (const AdamWSpan& sp : spans) std::fill(covered.begin() + sp.offset, covered.begin() + sp.offset + sp.numel, 1);
  float* gp = m.put<float>(p);
  float* gm = m.put<float>(mo);
  float* gv = m.put<float>(v);
  const Vec p0 = p, m0 = mo, v0 = v;
  for (const AdamWSpan& sp : spans)
    cpu::adamw(p.data() + sp.offset, g.data() + sp.offset, mo.data() + sp.offset, v.data() + sp.offset, sp.numel, 1e-2,
               0.9, 0.95, 1e-8, sp.decay ? 0.1 : 0.0, 7);
  be.adamw(gp, m.put<float>(g), gm, gv, spans.data(), spans.size(), 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 7);
  // The update p - p0 is what the op computes; p itself would hide its error under |p|.
  Vec got = m.get(gp, n), got_m = m.get(gm, n), got_v = m.get(gv, n), du(n), want_du(n);
  for (size_t i = 0; i < n; i++) {
    if (!covered[i] && (got[i] != p0[i] || got_m[i] != m0[i] || got_v[i] != v0[i])) return INFINITY;  // gap written
    du[i] = got[i] - p0[i];
    want_du[i] = p[i] - p0[i];
  }
  return std::max({rel_error(du, want_du), rel_error(got_m, mo), rel_error(got_v, v)});
}

double check_grad_norm_squared(Backend& be, const Shape& s) {
  Rand r(25);
  Mem m(be);
  Vec g = r.normal<float>((size_t)s.B * s.T * s.C * s.OC / 4 + 7);
  const double want = cpu::grad_norm_squared(g.data(), g.size());
  const double got = be.grad_norm_squared(m.put<float>(g), g.size());
  return rel_error({got}, {want});
}

double check_scale(Backend& be, const Shape& s) {
  Rand r(26);
  Mem m(be);
  Vec x = r.normal<float>((size_t)s.B * s.T * s.C);
  float* gx = m.put<float>(x);
  cpu::scale(x.data(), (double)0.3f, x.size());
  be.scale(gx, 0.3f, x.size());
  return rel_error(m.get(gx, x.size()), x);
}

// ---- the table --------------------------------------------------------------------------------
struct Row {
  Op op;
  DType dtype;
  double tol;
  std::function<double(Backend&, const Shape&)> check;
};

template <class Act> void add_activation_rows(std::vector<Row>& rows) {
  const DType d = dtype_of<Act>();
  const bool f32 = d == DType::kF32;
  const double once = f32 ? kF32Elementwise : kBF16Once, sum = f32 ? kF32Reduction : kBF16Once;
  // Outputs that stay fp32 in mixed precision (weight gradients, mean, rstd, losses) get the
  // bf16 tolerance anyway when they share a row with bf16 outputs: their inputs are the same
  // bf16 values as the reference's, so they are in fact as close as in fp32.
  rows.push_back({Op::kEncoderForward, d, once, check_encoder_forward<Act>});
  rows.push_back({Op::kEncoderBackward, d, kF32Reduction, check_encoder_backward<Act>});  // fp32 outputs
  rows.push_back({Op::kLayerNormForward, d, sum, check_layernorm_forward<Act>});
  rows.push_back({Op::kLayerNormBackward, d, sum, check_layernorm_backward<Act>});
  rows.push_back({Op::kRmsNormForward, d, sum, check_rmsnorm_forward<Act>});
  rows.push_back({Op::kRmsNormBackward, d, sum, check_rmsnorm_backward<Act>});
  rows.push_back({Op::kMatmulForward, d, sum, check_matmul_forward<Act>});
  rows.push_back({Op::kMatmulBackward, d, sum, check_matmul_backward<Act>});
  rows.push_back({Op::kMatmulGeluForward, d, f32 ? kF32Reduction : kBF16Once, check_matmul_gelu_forward<Act>});
  rows.push_back({Op::kMatmulBackwardDgelu, d, f32 ? kF32Reduction : kBF16Once, check_matmul_backward_dgelu<Act>});
  rows.push_back({Op::kAttentionForward, d, f32 ? kF32Reduction : kBF16Attention, check_attention_forward<Act>});
  rows.push_back({Op::kAttentionBackward, d, f32 ? kF32Reduction : kBF16Attention, check_attention_backward<Act>});
  rows.push_back({Op::kFlashAttentionForward, d, f32 ? kF32Reduction : kBF16Attention, check_flash_attention_forward<Act>});
  rows.push_back({Op::kFlashAttentionBackward, d, f32 ? kF32Reduction : kBF16Attention, check_flash_attention_backward<Act>});
  rows.push_back({Op::kGeluForward, d, f32 ? kF32Transcendental : kBF16Once, check_gelu_forward<Act>});
  rows.push_back({Op::kGeluBackward, d, f32 ? kF32Transcendental : kBF16Once, check_gelu_backward<Act>});
  rows.push_back({Op::kSwigluForward, d, f32 ? kF32Transcendental : kBF16Once, check_swiglu_forward<Act>});
  rows.push_back({Op::kSwigluBackward, d, f32 ? kF32Transcendental : kBF16Once, check_swiglu_backward<Act>});
  rows.push_back({Op::kRopeForward, d, once, check_rope_forward<Act>});
  rows.push_back({Op::kRopeBackward, d, once, check_rope_backward<Act>});
  rows.push_back({Op::kResidualForward, d, once, check_residual_forward<Act>});
  rows.push_back({Op::kSoftmaxCrossEntropy, d, sum, check_softmax_cross_entropy<Act>});
  rows.push_back({Op::kCrossEntropyShardStats, d, sum, check_cross_entropy_shard_stats<Act>});
  rows.push_back({Op::kCrossEntropyShardBackward, d, f32 ? kF32Transcendental : kBF16Once, check_cross_entropy_shard_backward<Act>});
}

std::vector<Row> op_rows() {
  std::vector<Row> rows;
  add_activation_rows<float>(rows);
  add_activation_rows<bf16>(rows);
  rows.push_back({Op::kConvert, DType::kBF16, kExact, check_convert});
  rows.push_back({Op::kAdamW, DType::kF32, kF32Reduction, check_adamw});
  rows.push_back({Op::kGradNormSquared, DType::kF32, kF32Reduction, check_grad_norm_squared});
  rows.push_back({Op::kScale, DType::kF32, kF32Elementwise, check_scale});
  return rows;
}

// ---- whole model ----------------------------------------------------------------------------------
// A tiny GPT (2 layers, 2 heads, d_model 32, seq_len 16, vocab 67, micro batch 3) on backend X
// with activation type act, against the CPU fp32 model from the same initial weights.
// The odd-width variant (3 heads, d_model 30, d_ff 90: not multiples of 8 or 4) puts linear-layer
// biases at offsets of the parameter buffer that are not 16-byte aligned in bf16 or fp32 beside
// ones that are (test_cuda_launch counts them), so one GPU step takes both bias paths of
// Matmul::forward: the cuBLASLt epilogue and the rows-filled-with-bias GEMM.
constexpr int kModelB = 3, kModelSteps = 20;

ModelConfig tiny_model(bool odd = false) {
  ModelConfig m;
  m.vocab_size = 67;
  m.seq_len = 16;
  m.n_layer = 2;
  m.n_head = odd ? 3 : 2;
  m.d_model = odd ? 30 : 32;
  m.d_ff = odd ? 90 : 128;
  return m;
}

// A learnable batch for step s: sequences of x' = (5 x + 3) mod V from random starts; the
// targets are the next tokens.
void model_batch(int step, std::vector<int32_t>& in, std::vector<int32_t>& tg, const ModelConfig& m) {
  std::mt19937_64 g(1000 + step);
  in.resize((size_t)kModelB * m.seq_len);
  tg.resize(in.size());
  for (int b = 0; b < kModelB; b++) {
    int32_t x = (int32_t)(g() % m.vocab_size);
    for (int t = 0; t < m.seq_len; t++) {
      in[(size_t)b * m.seq_len + t] = x;
      x = (5 * x + 3) % m.vocab_size;
      tg[(size_t)b * m.seq_len + t] = x;
    }
  }
}

struct StepResult {
  double loss = 0;
  Vec logits, grads;  // host copies
};

StepResult model_step(Backend& be, DType act, const ModelConfig& cfg) {
  GPT model(cfg, be, kModelB, act);
  model.init_weights(42);
  std::vector<int32_t> in, tg;
  model_batch(0, in, tg, cfg);
  StepResult r;
  model.zero_grad();
  r.loss = model.forward(in.data(), tg.data(), kModelB, cfg.seq_len);
  std::vector<float> lg(in.size() * cfg.vocab_size), gr(model.num_params());
  model.download_logits(lg.data(), 0, in.size());
  model.backward(1.0f / (float)in.size());
  be.synchronize();
  be.download(gr.data(), model.grads(), gr.size() * sizeof(float));
  r.logits.assign(lg.begin(), lg.end());
  r.grads.assign(gr.begin(), gr.end());
  return r;
}

Vec model_losses(Backend& be, DType act, const ModelConfig& cfg) {
  GPT model(cfg, be, kModelB, act);
  model.init_weights(42);
  AdamW opt(be, model.tensors(), model.num_params(), 0.9, 0.95, 1e-8, 0.1);
  Vec losses;
  std::vector<int32_t> in, tg;
  for (int step = 1; step <= kModelSteps; step++) {
    model_batch(step, in, tg, cfg);
    model.zero_grad();
    losses.push_back(model.forward(in.data(), tg.data(), kModelB, cfg.seq_len));
    model.backward(1.0f / (float)in.size());
    clip_grad_norm(be, model.grads(), model.num_params(), 1.0);
    opt.step(model.params(), model.grads(), 1e-3, step);
  }
  return losses;
}

struct ModelRow {
  std::string name;
  DType dtype;
  double tol;
  bool odd = false;  // the odd-width model (tiny_model(true))
};
// fp32 backends differ from the CPU by summation order only: the per-op errors above (<= 1e-4)
// compound through 2 layers of ~10 ops; 1e-3 bounds that, for the step and the loss curve.
// bf16 activations round every op's output (u = 3.9e-3); a gradient passes through ~20 such
// roundings, which add like a random walk (sqrt(20) u = 1.7e-2) and are measured against the
// largest element of its tensor: 5e-2 (the CPU emulation: 1e-2). The bf16 loss curve stays
// within 2e-4 of fp32 on the CPU; 5e-3 leaves room for a GPU's extra roundings and still fails
// any plumbing bug that matters (a bf16 weight copy never refreshed leaves the loss near 4.22,
// while fp32 falls to 3.57 in 20 steps).
const ModelRow kModelRows[] = {
    {"gpt_step", DType::kF32, 1e-3},  {"gpt_step", DType::kBF16, 5e-2},
    {"gpt_train20", DType::kF32, 1e-3}, {"gpt_train20", DType::kBF16, 5e-3},
    {"gpt_step_odd", DType::kF32, 1e-3, true},  {"gpt_step_odd", DType::kBF16, 5e-2, true},
    {"gpt_train20_odd", DType::kF32, 1e-3, true}, {"gpt_train20_odd", DType::kBF16, 5e-3, true},
};

// ---- path rows ----------------------------------------------------------------------------------
// Shapes chosen to take a GPU kernel's less common path, too large for the CPU's test time: GPU
// backends only. The numbers follow the launchers in cuda/ (re-check them when those change).
struct PathRow {
  std::string name;  // the op and the path its shapes take
  DType dtype;
  double tol;
  std::vector<Shape> shapes;
  std::function<double(Backend&, const Shape&)> check;
};

// Cross-entropy over more than 2^31 logits: vocabulary 50304 (GPT-2's, padded) x B T = 42 x 1024
// = 43008 rows = 2,163,474,432 elements > 2^31 = 2,147,483,648, in a one-layer d_model 8 model
// (8.7 GB of fp32 logits): a 32-bit element index anywhere in the LM head GEMM, the loss kernel
// or the model's buffers wraps on the last 318 rows. The same tokens in 7 batches of 6 rows
// (309 M elements each, no wrap possible) must give the same mean loss and the same logits for
// the last 4 rows (all past element 2^31). Error: the larger of the two relative differences.
double check_cross_entropy_2g(Backend& be, const Shape&) {
  ModelConfig cfg;
  cfg.vocab_size = 50304;
  cfg.seq_len = 1024;
  cfg.n_layer = 1;
  cfg.n_head = 1;
  cfg.d_model = 8;
  cfg.d_ff = 32;
  constexpr int kB = 42, kSplit = 6, kTail = 4;
  const size_t T = (size_t)cfg.seq_len, V = (size_t)cfg.vocab_size, rows = kB * T;
  static_assert((size_t)kB * 1024 * 50304 > (size_t(1) << 31));
  GPT model(cfg, be, kB, DType::kF32);
  model.init_weights(42);
  Rand r(33);
  const auto in = r.ids(rows, cfg.vocab_size), tg = r.ids(rows, cfg.vocab_size);
  const double whole = model.forward(in.data(), tg.data(), kB, cfg.seq_len);
  std::vector<float> tail_whole(kTail * V), tail_split(kTail * V);
  model.download_logits(tail_whole.data(), rows - kTail, kTail);
  double split = 0;
  for (int b0 = 0; b0 < kB; b0 += kSplit)
    split += model.forward(in.data() + b0 * T, tg.data() + b0 * T, kSplit, cfg.seq_len) / (kB / kSplit);
  model.download_logits(tail_split.data(), kSplit * T - kTail, kTail);  // the same rows, last batch
  std::printf("# cross_entropy_2g: loss %.7f over %zu rows (%zu logits), %.7f in %d batches of %d\n", whole,
              rows, rows * V, split, kB / kSplit, kSplit);
  return std::max(std::abs(whole - split) / std::abs(split),
                  rel_error(Vec(tail_whole.begin(), tail_whole.end()), Vec(tail_split.begin(), tail_split.end())));
}

template <class Act> void add_path_rows(std::vector<PathRow>& rows) {
  const DType d = dtype_of<Act>();
  const bool f32 = d == DType::kF32;
  // Attention batch chunking: batch_chunk (cuda/attention.cu) puts floor(256 MiB / one batch
  // row's scratch) rows in a chunk. T 512, NH 16, C 64 (hs 4): a row's scores are NH T^2 fp32 =
  // 16 MiB, plus q, k, v, y (4 x 128 KiB fp32, 64 KiB bf16): 15 rows a chunk forward, so B 17
  // runs as 15 + 2; backward adds dpre (16 MiB fp32, 8 MiB bf16) and dq, dk, dv: 7 rows a chunk
  // in fp32 (7 + 7 + 3), 10 in bf16 (10 + 7). NKV 16 and 4 (kv_heads).
  const Shape attn{17, 512, 64, 16, 7, 9, 4};
  const double attn_tol = f32 ? kF32Reduction : kBF16Attention;
  rows.push_back({"attention_forward_chunked", d, attn_tol, {attn}, check_attention_forward<Act>});
  rows.push_back({"attention_backward_chunked", d, attn_tol, {attn}, check_attention_backward<Act>});
  // Fused attention tiles (flash_attention_plan, cuda/launch.h: 64, 32 or 16 rows): T 150 ends in
  // a partial tile of every size; hs 64 with grouped k/v (the tensor-core path in bf16, GPT-2
  // 124M's head size) and hs 24 with one k/v head (not a multiple of 16: the FMA path in bf16).
  const std::vector<Shape> flash = {{2, 150, 256, 4, 7, 9, 2}, {2, 150, 72, 3, 7, 9, 1}};
  rows.push_back({"flash_attention_forward_tiles", d, attn_tol, flash, check_flash_attention_forward<Act>});
  rows.push_back({"flash_attention_backward_tiles", d, attn_tol, flash, check_flash_attention_backward<Act>});
  // LayerNorm's and RMSNorm's packed kernels (cuda/layernorm.cu, rmsnorm.cu: 16-byte packs, kN = 8 bf16 or 4 fp32, up to 8
  // packs a lane): C 768 (GPT-2 124M; 3 packs a lane in bf16, 6 in fp32), C 1000 (4 in bf16, the
  // last lane's last pack past the row; 8 in fp32), C 2056 (wider than 8 packs: the scalar
  // kernels); 66 rows, so the last block of 8 rows is partial.
  const std::vector<Shape> wide = {{2, 33, 768, 12, 7, 9, 12}, {2, 33, 1000, 8, 7, 9, 8}, {2, 33, 2056, 8, 7, 9, 8}};
  rows.push_back({"layernorm_forward_wide", d, f32 ? kF32Reduction : kBF16Once, wide, check_layernorm_forward<Act>});
  rows.push_back({"layernorm_backward_wide", d, f32 ? kF32Reduction : kBF16Once, wide, check_layernorm_backward<Act>});
  rows.push_back({"rmsnorm_forward_wide", d, f32 ? kF32Reduction : kBF16Once, wide, check_rmsnorm_forward<Act>});
  rows.push_back({"rmsnorm_backward_wide", d, f32 ? kF32Reduction : kBF16Once, wide, check_rmsnorm_backward<Act>});
  // Bias gradient slices: bias_slices(N) = clamp(ceil(N / 256), 1, 64) (cuda/matmul.cu): N 300
  // gives 2 slices, N 16411 the cap of 64 (ceil is 65; slice y then takes rows y*8.., +512, ...);
  // C 30 and OC 90 are odd widths (the unaligned-bias forward path too).
  const std::vector<Shape> dbias = {{1, 300, 30, 3, 7, 90, 3}, {1, 16411, 30, 3, 7, 90, 3}};
  rows.push_back({"matmul_backward_slices", d, f32 ? kF32Reduction : kBF16Once, dbias, check_matmul_backward<Act>});
  rows.push_back({"matmul_forward_odd", d, f32 ? kF32Reduction : kBF16Once, dbias, check_matmul_forward<Act>});
  // The GELU epilogues (cuBLASLt GELU_AUX_BIAS forward, DGELU backward) at GPT-2 widths: the MLP
  // of d_model 256 and d_ff 1024 both ways round (forward C 256 -> OC 1024 is the up-projection;
  // backward C 1024 <- OC 256 the down-projection's input gradient), 200 rows.
  const std::vector<Shape> mlp = {{2, 100, 256, 4, 7, 1024, 4}, {2, 100, 1024, 4, 7, 256, 4}};
  rows.push_back({"matmul_gelu_forward_epilogue", d, f32 ? kF32Reduction : kBF16Once, mlp, check_matmul_gelu_forward<Act>});
  rows.push_back({"matmul_backward_dgelu_epilogue", d, f32 ? kF32Reduction : kBF16Once, mlp, check_matmul_backward_dgelu<Act>});
}

std::vector<PathRow> path_rows() {
  std::vector<PathRow> rows;
  add_path_rows<float>(rows);
  add_path_rows<bf16>(rows);
  // Grad-norm block cap: grad_norm_partials_count(n) = clamp(ceil(n / 2048), 1, 1024) blocks
  // (cuda/optimizer.cu); check_grad_norm_squared takes n = B T C OC / 4 + 7 = 5,000,007 >
  // 1024 x 2048, so the grid is capped and each thread strides over ~19 elements.
  rows.push_back({"grad_norm_squared_capped", DType::kF32, kF32Reduction, {{1, 1, 1, 1, 7, 20000000, 1}},
                  check_grad_norm_squared});
  // Summation-order differences only (C = 8 terms per logit, losses summed in double): 1e-5.
  rows.push_back({"cross_entropy_2g", DType::kF32, 1e-5, {Shape{}}, check_cross_entropy_2g});
  return rows;
}

// ---- running ----------------------------------------------------------------------------------
bool g_cpu_path_rows = false;  // --cpu-path-rows

struct Result {
  std::string backend, op, dtype;
  int shapes = 0;
  double max_error = 0, tol = 0;
  bool pass = false;
  std::string note;  // the worst tensor, or why it failed
};

void print(const Result& r) {
  std::printf("%-5s %-26s %-5s %6d %10.2e %9.1e  %s%s%s\n", r.backend.c_str(), r.op.c_str(), r.dtype.c_str(),
              r.shapes, r.max_error, r.tol, r.pass ? "PASS" : "FAIL", r.note.empty() ? "" : "  ", r.note.c_str());
  std::fflush(stdout);
}

void run_backend(const std::string& device, Backend& be, std::vector<Result>& out) {
  const auto rows = op_rows();
  // Coverage both ways: every supported (op, dtype) has a row, and every row is supported.
  for (int o = 0; o < (int)Op::kCount; o++)
    for (DType d : {DType::kF32, DType::kBF16}) {
      if (!be.supports((Op)o, d)) continue;
      bool has = std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.op == (Op)o && r.dtype == d; });
      if (!has) {
        Result r{device, op_name((Op)o), dtype_name(d), 0, INFINITY, 0, false, "supported but has no row in test_parity.cpp"};
        print(r);
        out.push_back(r);
      }
    }
  for (const Row& row : rows) {
    Result r{device, op_name(row.op), dtype_name(row.dtype), 0, 0, row.tol, false, ""};
    if (!be.supports(row.op, row.dtype)) {
      r.max_error = INFINITY;
      r.note = "not supported by the backend";
    } else {
      try {
        for (const Shape& s : kShapes) {
          r.max_error = std::max(r.max_error, row.check(be, s));
          r.shapes++;
        }
      } catch (const std::exception& e) {
        r.max_error = INFINITY;
        r.note = std::string("threw at shape ") + std::to_string(r.shapes) + ": " + e.what();
      }
    }
    r.pass = r.max_error <= row.tol;
    print(r);
    out.push_back(r);
  }

  // Whole model against the CPU fp32 model. On the CPU the fp32 rows would compare the CPU with
  // itself (nothing to learn): only its bf16 emulation runs there.
  auto cpu = make_cpu_backend();
  std::map<bool, StepResult> ref_steps;  // by ModelRow::odd
  std::map<bool, Vec> ref_curves;
  for (const ModelRow& mr : kModelRows) {
    const ModelConfig cfg = tiny_model(mr.odd);
    StepResult& ref_step = ref_steps[mr.odd];
    Vec& ref_losses = ref_curves[mr.odd];
    if (device == "cpu" && mr.dtype == DType::kF32) continue;
    Result r{device, mr.name, dtype_name(mr.dtype), 1, 0, mr.tol, false, ""};
    try {
      if (mr.name.starts_with("gpt_step")) {
        if (ref_step.grads.empty()) ref_step = model_step(*cpu, DType::kF32, cfg);
        StepResult got = model_step(be, mr.dtype, cfg);
        // The loss, the logits, then each gradient tensor; the note names the worst.
        r.max_error = std::abs(got.loss - ref_step.loss) / std::abs(ref_step.loss);
        r.note = "worst: loss";
        auto take = [&](double e, const std::string& what) {
          if (!(e <= r.max_error)) {
            r.max_error = e;
            r.note = "worst: " + what;
          }
        };
        take(rel_error(got.logits, ref_step.logits), "logits");
        for (const ParamTensor& t : gpt_param_tensors(cfg)) {
          Vec a(got.grads.begin() + t.offset, got.grads.begin() + t.offset + t.numel);
          Vec b(ref_step.grads.begin() + t.offset, ref_step.grads.begin() + t.offset + t.numel);
          take(rel_error(a, b), "grad " + t.name);
        }
      } else {
        if (ref_losses.empty()) ref_losses = model_losses(*cpu, DType::kF32, cfg);
        Vec got = model_losses(be, mr.dtype, cfg);
        for (size_t i = 0; i < got.size(); i++)
          r.max_error = std::max(r.max_error, std::abs(got[i] - ref_losses[i]) / std::abs(ref_losses[i]));
        char buf[96];
        std::snprintf(buf, sizeof buf, "loss %.4f -> %.4f (cpu fp32 %.4f -> %.4f)", got.front(), got.back(),
                      ref_losses.front(), ref_losses.back());
        r.note = buf;
      }
    } catch (const std::exception& e) {
      r.max_error = INFINITY;
      r.note = std::string("threw: ") + e.what();
    }
    r.pass = r.max_error <= r.tol;
    print(r);
    out.push_back(r);
  }

  // Shapes that take the GPU kernels' less common paths: GPU backends only (on the CPU too with
  // --cpu-path-rows, which checks the rows themselves: minutes and ~10 GB of memory).
  if (device == "cpu" && !g_cpu_path_rows) return;
  for (const PathRow& pr : path_rows()) {
    Result r{device, pr.name, dtype_name(pr.dtype), 0, 0, pr.tol, false, ""};
    try {
      for (const Shape& s : pr.shapes) {
        r.max_error = std::max(r.max_error, pr.check(be, s));
        r.shapes++;
      }
    } catch (const std::exception& e) {
      r.max_error = INFINITY;
      r.note = std::string("threw: ") + e.what();
    }
    r.pass = r.max_error <= r.tol;
    print(r);
    out.push_back(r);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  bool require_cuda = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--require-cuda") {
      require_cuda = true;
    } else if (a == "--cpu-path-rows") {
      g_cpu_path_rows = true;
    } else {
      std::fprintf(stderr, "usage: %s [--json PATH] [--require-cuda] [--cpu-path-rows]\n", argv[0]);
      return 2;
    }
  }
  set_cpu_threads(2);

  std::vector<std::string> backends = {"cpu"};
  std::string why;
  int skipped = 0;
  if (cuda_available(&why)) {
    backends.push_back("cuda");
  } else {
    std::printf("SKIP cuda: %s\n", why.c_str());
    skipped = (int)op_rows().size() + (int)std::size(kModelRows) + (int)path_rows().size();
  }

  std::printf("%-5s %-26s %-5s %6s %10s %9s  %s\n", "back", "op", "dtype", "shapes", "max_error", "tolerance", "result");
  std::vector<Result> results;
  for (const std::string& name : backends) {
    try {
      auto be = make_backend(name);
      if (name != "cpu") std::printf("# %s: %s\n", name.c_str(), be->device_info().name.c_str());
      run_backend(name, *be, results);
    } catch (const std::exception& e) {
      Result r{name, "make_backend", "-", 0, INFINITY, 0, false, e.what()};
      print(r);
      results.push_back(r);
    }
  }

  int failed = (int)std::count_if(results.begin(), results.end(), [](const Result& r) { return !r.pass; });
  std::printf("%zu rows run, %d failed, %d skipped\n", results.size(), failed, skipped);
  if (require_cuda && skipped > 0) std::printf("FAIL: --require-cuda and CUDA was skipped\n");

  if (!json_path.empty()) {
    nlohmann::json j;
    j["backends"] = backends;
    j["rows"] = nlohmann::json::array();
    for (const Result& r : results) {
      // JSON has no infinity: an op that threw or is missing reports null.
      nlohmann::json e = std::isfinite(r.max_error) ? nlohmann::json(r.max_error) : nlohmann::json(nullptr);
      j["rows"].push_back({{"backend", r.backend}, {"op", r.op}, {"dtype", r.dtype}, {"max_error", e},
                           {"tolerance", r.tol}, {"pass", r.pass}, {"note", r.note}});
    }
    j["skipped"] = skipped;
    j["skipped_why"] = skipped ? why : "";
    std::ofstream f(json_path);
    f << j.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return failed == 0 && !(require_cuda && skipped > 0) ? 0 : 1;
}
