// The CPU reference ops (td::cpu::*, double instantiation), two ways:
//  1. gradients against central finite differences (h = 1e-6), for the scalar L = sum(out * r)
//     with a fixed random r;
//  2. hand-computed values written out below.
// Backends (CPU fp32 and bf16, CUDA) are checked against this reference op by op in
// tests/engine/test_parity.cpp (a plain executable, so that it runs where Qt is not installed).
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <functional>
#include <random>
#include <vector>

#include "engine/ops/cpu_ops.h"
#include "engine/ops/reference/attention.h"
#include "engine/ops/reference/flash_attention.h"
#include "engine/ops/reference/encoder.h"
#include "engine/ops/reference/gelu.h"
#include "engine/ops/reference/layernorm.h"
#include "engine/ops/reference/matmul.h"
#include "engine/ops/reference/optimizer.h"
#include "engine/ops/reference/rmsnorm.h"
#include "engine/ops/reference/rope.h"
#include "engine/ops/reference/softmax_cross_entropy.h"
#include "engine/ops/reference/swiglu.h"

using namespace td;
using Vec = std::vector<double>;

namespace {

Vec randn(size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> d(0.0, scale);
  Vec v(n);
  for (auto& x : v) x = d(g);
  return v;
}
std::vector<int32_t> rand_ids(size_t n, int V, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = (int32_t)(g() % V);
  return v;
}

// A differentiable op in double: forward(inputs) -> out; backward(inputs, dout) -> d(inputs).
struct GradCase {
  std::string name;
  std::vector<Vec> inputs;
  std::function<Vec(const std::vector<Vec>&)> forward;
  std::function<std::vector<Vec>(const std::vector<Vec>&, const Vec&)> backward;
};

// Worst error of analytic vs central-difference gradients over (a sample of) coordinates,
// relative to the largest analytic gradient of the same input (finite differences carry an
// absolute round-off of about 1e-16 |L| / h, which a per-element ratio would blow up).
double grad_check(GradCase& c) {
  Vec out = c.forward(c.inputs);
  Vec r = randn(out.size(), 99);
  auto L = [&](const std::vector<Vec>& in) {
    Vec o = c.forward(in);
    double s = 0;
    for (size_t i = 0; i < o.size(); i++) s += o[i] * r[i];
    return s;
  };
  auto grads = c.backward(c.inputs, r);
  double worst = 0;
  const double h = 1e-6;
  for (size_t k = 0; k < c.inputs.size(); k++) {
    size_t n = c.inputs[k].size();
    double scale = 1e-12;
    for (double g : grads[k]) scale = std::max(scale, std::abs(g));
    size_t stride = n > 97 ? n / 97 : 1;  // about 100 coordinates per input
    for (size_t j = 0; j < n; j += stride) {
      auto in = c.inputs;
      in[k][j] += h;
      double lp = L(in);
      in[k][j] -= 2 * h;
      double lm = L(in);
      double fd = (lp - lm) / (2 * h);
      double a = grads[k][j];
      double err = std::abs(a - fd) / scale;
      worst = std::max(worst, err);
    }
  }
  return worst;
}

}  // namespace

class TestOps : public QObject {
  Q_OBJECT

 private:
  // Shapes: small, odd-sized so that no loop is accidentally a multiple of a vector width.
  static constexpr int B = 2, T = 5, C = 12, NH = 3, V = 7, OC = 9;

  std::vector<GradCase> grad_cases() {
    std::vector<GradCase> cs;
    const int N = B * T;
    auto ids = rand_ids(N, V, 5);
    cs.push_back({"encoder", {randn((size_t)V * C, 1), randn((size_t)T * C, 2)},
                  [=](const std::vector<Vec>& in) {
                    Vec out((size_t)N * C);
                    cpu::encoder_forward(out.data(), ids.data(), in[0].data(), in[1].data(), B, T, C);
                    return out;
                  },
                  [=](const std::vector<Vec>& in, const Vec& d) {
                    Vec dw(in[0].size(), 0.0), dp(in[1].size(), 0.0);
                    cpu::encoder_backward(dw.data(), dp.data(), d.data(), ids.data(), B, T, C);
                    return std::vector<Vec>{dw, dp};
                  }});
    cs.push_back({"layernorm", {randn((size_t)N * C, 3), randn(C, 4), randn(C, 5)},
                  [=](const std::vector<Vec>& in) {
                    Vec out((size_t)N * C), m(N), s(N);
                    cpu::layernorm_forward(out.data(), m.data(), s.data(), in[0].data(), in[1].data(), in[2].data(), N, C);
                    return out;
                  },
                  [=](const std::vector<Vec>& in, const Vec& d) {
                    Vec out((size_t)N * C), m(N), s(N);
                    cpu::layernorm_forward(out.data(), m.data(), s.data(), in[0].data(), in[1].data(), in[2].data(), N, C);
                    Vec dx(in[0].size(), 0.0), dw(C, 0.0), db(C, 0.0);
                    cpu::layernorm_backward(dx.data(), dw.data(), db.data(), d.data(), in[0].data(), in[1].data(), m.data(), s.data(), N, C);
                    return std::vector<Vec>{dx, dw, db};
                  }});
    cs.push_back({"rmsnorm", {randn((size_t)N * C, 13), randn(C, 14)},
                  [=](const std::vector<Vec>& in) {
                    Vec out((size_t)N * C), s(N);
                    cpu::rmsnorm_forward(out.data(), s.data(), in[0].data(), in[1].data(), N, C, 1e-5);
                    return out;
                  },
                  [=](const std::vector<Vec>& in, const Vec& d) {
                    Vec out((size_t)N * C), s(N);
                    cpu::rmsnorm_forward(out.data(), s.data(), in[0].data(), in[1].data(), N, C, 1e-5);
                    Vec dx(in[0].size(), 0.0), dw(C, 0.0);
                    cpu::rmsnorm_backward(dx.data(), dw.data(), d.data(), in[0].data(), in[1].data(), s.data(), N, C);
                    return std::vector<Vec>{dx, dw};
                  }});
    cs.push_back({"matmul", {randn((size_t)N * C, 6), randn((size_t)OC * C, 7), randn(OC, 8)},
                  [=](const std::vector<Vec>& in) {
                    Vec out((size_t)N * OC);
                    cpu::matmul_forward(out.data(), in[0].data(), in[1].data(), in[2].data(), N, C, OC);
                    return out;
                  },
                  [=](const std::vector<Vec>& in, const Vec& d) {
                    Vec dx(in[0].size(), 0.0), dw(in[1].size(), 0.0), db(OC, 0.0);
                    cpu::matmul_backward(dx.data(), dw.data(), db.data(), d.data(), in[0].data(), in[1].data(), N, C, OC, false);
                    return std::vector<Vec>{dx, dw, db};
                  }});
    // GPT-2's MLP through the fused GELU ops: y = GELU(x W1^T + b1) W2^T + b2, x (N,C), W1 (OC,C),
    // W2 (C,OC); matmul_gelu_forward then matmul_forward, and back through matmul_backward_dgelu
    // (dW2, db2 and d pre) then matmul_backward (dx, dW1, db1).
    cs.push_back({"mlp_gelu_fused",
                  {randn((size_t)N * C, 21), randn((size_t)OC * C, 22), randn(OC, 23), randn((size_t)C * OC, 24), randn(C, 25)},
                  [=](const std::vector<Vec>& in) {
                    Vec h((size_t)N * OC), pre(h.size()), out((size_t)N * C);
                    cpu::matmul_gelu_forward(h.data(), pre.data(), in[0].data(), in[1].data(), in[2].data(), N, C, OC);
                    cpu::matmul_forward(out.data(), h.data(), in[3].data(), in[4].data(), N, OC, C);
                    return out;
                  },
                  [=](const std::vector<Vec>& in, const Vec& d) {
                    Vec h((size_t)N * OC), pre(h.size());
                    cpu::matmul_gelu_forward(h.data(), pre.data(), in[0].data(), in[1].data(), in[2].data(), N, C, OC);
                    Vec dpre(pre.size(), NAN), dw2(in[3].size(), 0.0), db2(C, 0.0);  // dpre overwritten, never read
                    cpu::matmul_backward_dgelu(dpre.data(), dw2.data(), db2.data(), d.data(), h.data(), in[3].data(),
                                               pre.data(), N, OC, C);
                    Vec dx(in[0].size(), 0.0), dw1(in[1].size(), 0.0), db1(OC, 0.0);
                    cpu::matmul_backward(dx.data(), dw1.data(), db1.data(), dpre.data(), in[0].data(), in[1].data(), N, C,
                                         OC, false);
                    return std::vector<Vec>{dx, dw1, db1, dw2, db2};
                  }});
    // Multi-head (NKV = NH = 3, GPT-2) and multi-query (NKV = 1: dk, dv summed over 3 heads).
    for (int nkv : {NH, 1}) {
      cs.push_back({nkv == NH ? "attention" : "attention_mqa", {randn((size_t)N * (C + 2 * nkv * (C / NH)), 9)},
                    [=](const std::vector<Vec>& in) {
                      Vec out((size_t)N * C), att((size_t)B * NH * T * T);
                      cpu::attention_forward(out.data(), att.data(), in[0].data(), B, T, C, NH, nkv);
                      return out;
                    },
                    [=](const std::vector<Vec>& in, const Vec& d) {
                      Vec out((size_t)N * C), att((size_t)B * NH * T * T), scratch(att.size());
                      cpu::attention_forward(out.data(), att.data(), in[0].data(), B, T, C, NH, nkv);
                      Vec dqkv(in[0].size(), 0.0);
                      cpu::attention_backward(dqkv.data(), scratch.data(), d.data(), in[0].data(), att.data(), B, T, C,
                                              NH, nkv);
                      return std::vector<Vec>{dqkv};
                    }});
    }
    // The fused (FlashAttention-2) reference, multi-head and multi-query.
    for (int nkv : {NH, 1}) {
      cs.push_back({nkv == NH ? "flash_attention" : "flash_attention_mqa", {randn((size_t)N * (C + 2 * nkv * (C / NH)), 19)},
                    [=](const std::vector<Vec>& in) {
                      Vec out((size_t)N * C), lse((size_t)B * NH * T);
                      cpu::flash_attention_forward(out.data(), lse.data(), in[0].data(), B, T, C, NH, nkv);
                      return out;
                    },
                    [=](const std::vector<Vec>& in, const Vec& d) {
                      Vec out((size_t)N * C), lse((size_t)B * NH * T);
                      cpu::flash_attention_forward(out.data(), lse.data(), in[0].data(), B, T, C, NH, nkv);
                      Vec dqkv(in[0].size(), 0.0);
                      cpu::flash_attention_backward(dqkv.data(), d.data(), in[0].data(), out.data(), lse.data(), B, T,
                                                    C, NH, nkv);
                      return std::vector<Vec>{dqkv};
                    }});
    }
    cs.push_back({"gelu", {randn(64, 10, 2.0)},
                  [=](const std::vector<Vec>& in) {
                    Vec out(in[0].size());
                    cpu::gelu_forward(out.data(), in[0].data(), out.size());
                    return out;
                  },
                  [=](const std::vector<Vec>& in, const Vec& d) {
                    Vec dx(in[0].size(), 0.0);
                    cpu::gelu_backward(dx.data(), in[0].data(), d.data(), dx.size());
                    return std::vector<Vec>{dx};
                  }});
    const int F = OC;
    cs.push_back({"swiglu", {randn((size_t)N * 2 * F, 15, 2.0)},
                  [=](const std::vector<Vec>& in) {
                    Vec out((size_t)N * F);
                    cpu::swiglu_forward(out.data(), in[0].data(), N, F);
                    return out;
                  },
                  [=](const std::vector<Vec>& in, const Vec& d) {
                    Vec dx(in[0].size(), 0.0);
                    cpu::swiglu_backward(dx.data(), in[0].data(), d.data(), N, F);
                    return std::vector<Vec>{dx};
                  }});
    // RoPE on qkv with NH = 3 q heads, NKV = 1 k/v head of hs = C / NH = 4; theta 500000.
    const int hs = C / NH, NKV = 1;
    const size_t nqkv = (size_t)N * (NH + 2 * NKV) * hs;
    cs.push_back({"rope", {randn(nqkv, 16)},
                  [=](const std::vector<Vec>& in) {
                    Vec x = in[0];
                    cpu::rope_forward(x.data(), B, T, NH, NKV, hs, 500000.0);
                    return x;
                  },
                  [=](const std::vector<Vec>& in, const Vec& d) {
                    Vec dx = d;
                    cpu::rope_backward(dx.data(), B, T, NH, NKV, hs, 500000.0);
                    return std::vector<Vec>{dx};
                  }});
    auto targets = rand_ids(N, V, 11);
    // Softmax + cross-entropy: L = 0.37 * sum(losses); its backward is the op's dlogits with
    // grad_scale 0.37 (the fused op takes a uniform scale, so r is constant here).
    cs.push_back({"softmax_cross_entropy", {randn((size_t)N * V, 12, 3.0)},
                  [=](const std::vector<Vec>& in) {
                    Vec losses(N);
                    cpu::softmax_cross_entropy(losses.data(), (double*)nullptr, in[0].data(), targets.data(), N, V, 0.0);
                    double s = 0;
                    for (double l : losses) s += 0.37 * l;
                    return Vec{s};
                  },
                  [=](const std::vector<Vec>& in, const Vec& d) {
                    Vec losses(N), dz(in[0].size());
                    cpu::softmax_cross_entropy(losses.data(), dz.data(), in[0].data(), targets.data(), N, V, 0.37 * d[0]);
                    return std::vector<Vec>{dz};
                  }});
    return cs;
  }

 private slots:
  void initTestCase() { set_cpu_threads(2); }

  void gradients_match_finite_differences_data() {
    QTest::addColumn<int>("index");
    auto cs = grad_cases();
    for (size_t i = 0; i < cs.size(); i++) QTest::newRow(cs[i].name.c_str()) << (int)i;
  }
  void gradients_match_finite_differences() {
    QFETCH(int, index);
    auto cs = grad_cases();
    double err = grad_check(cs[index]);
    qInfo("%s: worst relative error %.2e", cs[index].name.c_str(), err);
    QVERIFY2(err < 1e-6, qPrintable(QString("relative error %1").arg(err)));
  }

  // ---- values computed by hand -----------------------------------------------------------
  void layernorm_by_hand() {
    // x = [1, 2, 3]: mean 2, biased variance 2/3, rstd = 1/sqrt(2/3 + 1e-5) = 1.2247357...
    double x[3] = {1, 2, 3}, w[3] = {1, 1, 2}, b[3] = {0, 0.5, 0}, out[3], m, s;
    cpu::layernorm_forward(out, &m, &s, x, w, b, 1, 3);
    QCOMPARE(m, 2.0);
    QVERIFY(std::abs(s - 1.0 / std::sqrt(2.0 / 3.0 + 1e-5)) < 1e-12);
    QVERIFY(std::abs(out[0] + 1.2247356) < 1e-6);
    QVERIFY(std::abs(out[1] - 0.5) < 1e-12);
    QVERIFY(std::abs(out[2] - 2 * 1.2247356) < 2e-6);
  }
  void rmsnorm_by_hand() {
    // x = [3, 4], eps = 0.5: mean(x^2) + eps = 12.5 + 0.5 = 13, rstd = 1/sqrt(13) = 0.27735010;
    // w = [1, 2]: out = [3, 8] / sqrt(13) = [0.83205029, 2.21880078].
    double x[2] = {3, 4}, w[2] = {1, 2}, out[2], s;
    cpu::rmsnorm_forward(out, &s, x, w, 1, 2, 0.5);
    QVERIFY(std::abs(s - 1.0 / std::sqrt(13.0)) < 1e-15);
    QVERIFY(std::abs(out[0] - 0.83205029) < 1e-8);
    QVERIFY(std::abs(out[1] - 2.21880078) < 1e-8);
    // Backward with w = [1, 1], dout = [1, 0]: y0 = x0 rstd, so dy0/dx0 = rstd (1 - x0^2 rstd^2 / 2)
    // = rstd 17/26 = 0.18134430, dy0/dx1 = -x0 x1 rstd^3 / 2 = -rstd 6/13 = -0.12800774;
    // dweight = norm * dout = [3 rstd, 0] = [0.83205029, 0]. dinp and dweight start at 1 (+=).
    double w1[2] = {1, 1}, dy[2] = {1, 0}, dx[2] = {1, 1}, dw[2] = {1, 1};
    cpu::rmsnorm_backward(dx, dw, dy, x, w1, &s, 1, 2);
    QVERIFY(std::abs(dx[0] - 1.18134430) < 1e-8);
    QVERIFY(std::abs(dx[1] - (1 - 0.12800774)) < 1e-8);
    QVERIFY(std::abs(dw[0] - 1.83205029) < 1e-8);
    QCOMPARE(dw[1], 1.0);
  }
  void softmax_cross_entropy_by_hand() {
    // logits [0, ln 2, ln 3] -> p = [1/6, 2/6, 3/6]; target 2: loss = ln 2; dlogits = p - onehot.
    double z[3] = {0, std::log(2.0), std::log(3.0)}, loss, dz[3];
    int32_t y = 2;
    cpu::softmax_cross_entropy(&loss, dz, z, &y, 1, 3, 1.0);
    QVERIFY(std::abs(loss - std::log(2.0)) < 1e-12);
    QVERIFY(std::abs(dz[0] - 1.0 / 6) < 1e-12);
    QVERIFY(std::abs(dz[1] - 2.0 / 6) < 1e-12);
    QVERIFY(std::abs(dz[2] + 0.5) < 1e-12);
  }
  void cross_entropy_shards_equal_full_softmax() {
    // The full logits (N = 5, V = 11) cut into 2 and 3 uneven shards: the shards' stats combined
    // (lse = log sum_s exp(lse_s), loss = lse - sum_s target_logit_s) give softmax_cross_entropy's
    // losses, and the shards' gradients (from the combined lse) its dlogits, concatenated.
    const int N = 5, V = 11;
    std::mt19937 g(3);
    std::normal_distribution<double> nd(0.0, 2.0);
    std::vector<double> z((size_t)N * V), loss(N), dz(z.size());
    for (auto& x : z) x = nd(g);
    const std::vector<int32_t> tg{0, 10, 4, 7, 3};  // a target in each shard of both splits
    cpu::softmax_cross_entropy(loss.data(), dz.data(), z.data(), tg.data(), N, V, 0.25);
    for (const std::vector<int>& cuts : {std::vector<int>{0, 6, 11}, std::vector<int>{0, 4, 8, 11}}) {
      const int S = (int)cuts.size() - 1;
      std::vector<std::vector<double>> shard((size_t)S), lse((size_t)S, std::vector<double>(N)), tl((size_t)S, std::vector<double>(N));
      for (int k = 0; k < S; k++) {
        const int v0 = cuts[k], Vs = cuts[k + 1] - cuts[k];
        for (int n = 0; n < N; n++)
          for (int j = 0; j < Vs; j++) shard[k].push_back(z[(size_t)n * V + v0 + j]);
        cpu::cross_entropy_shard_stats(lse[k].data(), tl[k].data(), shard[k].data(), tg.data(), N, Vs, v0);
      }
      std::vector<double> full(N);
      for (int n = 0; n < N; n++) {
        double sum = 0, target = 0;
        for (int k = 0; k < S; k++) {
          sum += std::exp(lse[k][n]);
          target += tl[k][n];
        }
        full[n] = std::log(sum);
        QVERIFY2(std::abs(full[n] - target - loss[n]) < 1e-12, qPrintable(QString("row %1 of %2 shards").arg(n).arg(S)));
      }
      for (int k = 0; k < S; k++) {
        const int v0 = cuts[k], Vs = cuts[k + 1] - cuts[k];
        cpu::cross_entropy_shard_backward(shard[k].data(), shard[k].data(), full.data(), tg.data(), N, Vs, v0, 0.25);  // aliased
        for (int n = 0; n < N; n++)
          for (int j = 0; j < Vs; j++) QVERIFY(std::abs(shard[k][(size_t)n * Vs + j] - dz[(size_t)n * V + v0 + j]) < 1e-12);
      }
    }
  }
  void encoder_skips_other_ranks_rows() {
    // ids [1, -1] with C = 2: row 0 = wte[1] + wpe[0]; row 1 = wpe[1] (its row is on another rank).
    // Backward: dwte[1] += dout row 0 only; dwpe gets both rows.
    double wte[4] = {1, 2, 3, 4}, wpe[4] = {10, 20, 30, 40}, out[4];
    const int32_t ids[2] = {1, -1};
    cpu::encoder_forward(out, ids, wte, wpe, 1, 2, 2);
    QCOMPARE(out[0], 13.0);
    QCOMPARE(out[1], 24.0);
    QCOMPARE(out[2], 30.0);
    QCOMPARE(out[3], 40.0);
    double dout[4] = {1, 2, 3, 4}, dwte[4] = {0, 0, 0, 0}, dwpe[4] = {0, 0, 0, 0};
    cpu::encoder_backward(dwte, dwpe, dout, ids, 1, 2, 2);
    QCOMPARE(dwte[0], 0.0);
    QCOMPARE(dwte[1], 0.0);
    QCOMPARE(dwte[2], 1.0);
    QCOMPARE(dwte[3], 2.0);
    QCOMPARE(dwpe[2], 3.0);
    QCOMPARE(dwpe[3], 4.0);
  }
  void gelu_by_hand() {
    // GELU_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.8411920; GELU(0) = 0; GELU(-1) = -0.1588080.
    double x[3] = {1, 0, -1}, y[3];
    cpu::gelu_forward(y, x, 3);
    QVERIFY(std::abs(y[0] - 0.8411920) < 1e-6);
    QCOMPARE(y[1], 0.0);
    QVERIFY(std::abs(y[2] + 0.1588080) < 1e-6);
  }
  void swiglu_by_hand() {
    // Rows [gate | up] with F = 2: gate [0, 1], up [5, 2]. silu(0) = 0, silu(1) = sigmoid(1) =
    // 0.73105858: out = [0, 1.46211716]. With dout = [1, 1]: d gate = up sigmoid (1 + g (1 -
    // sigmoid)) = [5 * 0.5 * 1, 2 * 0.73105858 * 1.26894142] = [2.5, 1.85534102]; d up = silu(gate)
    // = [0, 0.73105858].
    double x[4] = {0, 1, 5, 2}, out[2], dy[2] = {1, 1}, dx[4] = {0, 0, 0, 0};
    cpu::swiglu_forward(out, x, 1, 2);
    QCOMPARE(out[0], 0.0);
    QVERIFY(std::abs(out[1] - 1.46211716) < 1e-8);
    cpu::swiglu_backward(dx, x, dy, 1, 2);
    QVERIFY(std::abs(dx[0] - 2.5) < 1e-12);
    QVERIFY(std::abs(dx[1] - 1.85534102) < 1e-8);
    QCOMPARE(dx[2], 0.0);
    QVERIFY(std::abs(dx[3] - 0.73105858) < 1e-8);
  }
  void rope_by_hand() {
    // One q, one k, one v head of hs = 4 (halves (0, 2) and (1, 3)), theta = 100: pair i turns by
    // t * 100^(-2i/4), i.e. by t and by t / 10. Position 0 is not rotated; at t = 1, q = [1, 1, 0, 0]
    // becomes [cos 1, cos 0.1, sin 1, sin 0.1] (rotate_half: x[i] cos - x[i+2] sin, x[i+2] cos +
    // x[i] sin), k = [0, 0, 2, 0] becomes [-2 sin 1, 0, 2 cos 1, 0], and v stays.
    Vec x = {1, 1, 0, 0, 0, 0, 2, 0, 5, 6, 7, 8,  /* t = 1: */ 1, 1, 0, 0, 0, 0, 2, 0, 5, 6, 7, 8};
    const Vec x0 = x;
    cpu::rope_forward(x.data(), 1, 2, 1, 1, 4, 100.0);
    for (int j = 0; j < 12; j++) QCOMPARE(x[j], x0[j]);
    const double want[12] = {0.54030231, 0.99500417, 0.84147098, 0.09983342, -2 * 0.84147098, 0, 2 * 0.54030231, 0,
                             5, 6, 7, 8};
    for (int j = 0; j < 12; j++) QVERIFY2(std::abs(x[12 + j] - want[j]) < 1e-8, qPrintable(QString::number(j)));
    // The backward rotation undoes it.
    cpu::rope_backward(x.data(), 1, 2, 1, 1, 4, 100.0);
    for (int j = 0; j < 24; j++) QVERIFY(std::abs(x[j] - x0[j]) < 1e-15);
  }
  void attention_by_hand() {
    // One head of width 1, T = 2. q = [*, 1], k = [0, ln 3], v = [2, 6].
    // t = 0 sees itself only: out0 = v0 = 2. t = 1: scores [0, ln 3] -> p = [1/4, 3/4]:
    // out1 = 2/4 + 3*6/4 = 5.
    double qkv[6] = {/*t0*/ 0.5, 0.0, 2.0, /*t1*/ 1.0, std::log(3.0), 6.0}, out[2], att[4];
    cpu::attention_forward(out, att, qkv, 1, 2, 1, 1, 1);
    QVERIFY(std::abs(out[0] - 2.0) < 1e-12);
    QVERIFY(std::abs(out[1] - 5.0) < 1e-12);
    QVERIFY(std::abs(att[2] - 0.25) < 1e-12 && std::abs(att[3] - 0.75) < 1e-12);
    QCOMPARE(att[1], 0.0);  // masked
  }
  // The fused reference computes the simple one's function: across tile boundaries (T = 1,
  // 63, 64, 65 and 150 against tiles of kFlashTile = 64 rows), for multi-head, grouped and
  // multi-query attention; lse is the log-sum-exp of the scaled causal scores computed here
  // directly; backward accumulates (+=) onto what dqkv held.
  void flash_attention_is_attention_across_tiles() {
    QCOMPARE(cpu::kFlashTile, 64);  // the T values below straddle its boundaries
    const int b = 2, nh = 4, hs = 5, c = nh * hs;
    for (int t : {1, 63, 64, 65, 150})
      for (int nkv : {4, 2, 1}) {
        const QString at = QString("T %1, NKV %2").arg(t).arg(nkv);
        const size_t n_qkv = (size_t)b * t * (c + 2 * nkv * hs), n_out = (size_t)b * t * c;
        const Vec qkv = randn(n_qkv, 60 + t + nkv, 2.0), dout = randn(n_out, 61 + t);
        Vec out1(n_out), att((size_t)b * nh * t * t), scratch(att.size()), out2(n_out), lse((size_t)b * nh * t);
        cpu::attention_forward(out1.data(), att.data(), qkv.data(), b, t, c, nh, nkv);
        cpu::flash_attention_forward(out2.data(), lse.data(), qkv.data(), b, t, c, nh, nkv);
        for (size_t i = 0; i < n_out; i++) QVERIFY2(std::abs(out1[i] - out2[i]) < 1e-12, qPrintable(at));
        const int W = c + 2 * nkv * hs;
        for (int bb = 0; bb < b; bb++)
          for (int h = 0; h < nh; h++)
            for (int i = 0; i < t; i++) {
              const double* q = qkv.data() + ((size_t)bb * t + i) * W + h * hs;
              double mx = -1e300, sum = 0.0;
              std::vector<double> sc(i + 1);
              for (int j = 0; j <= i; j++) {
                const double* k = qkv.data() + ((size_t)bb * t + j) * W + c + (h / (nh / nkv)) * hs;
                double dot = 0.0;
                for (int d = 0; d < hs; d++) dot += q[d] * k[d];
                sc[j] = dot / std::sqrt((double)hs);
                mx = std::max(mx, sc[j]);
              }
              for (double x : sc) sum += std::exp(x - mx);
              QVERIFY2(std::abs(lse[((size_t)bb * nh + h) * t + i] - (mx + std::log(sum))) < 1e-12, qPrintable(at));
            }
        const Vec base = randn(n_qkv, 62);  // what dqkv held before
        Vec d1 = base, d2 = base;
        cpu::attention_backward(d1.data(), scratch.data(), dout.data(), qkv.data(), att.data(), b, t, c, nh, nkv);
        cpu::flash_attention_backward(d2.data(), dout.data(), qkv.data(), out2.data(), lse.data(), b, t, c, nh, nkv);
        double worst = 0.0;
        for (size_t i = 0; i < n_qkv; i++) worst = std::max(worst, std::abs(d1[i] - d2[i]));
        QVERIFY2(worst < 1e-11, qPrintable(at + QString(": dqkv differs by %1").arg(worst)));
      }
  }
  void grouped_query_attention_is_attention_over_repeated_kv() {
    // GQA (Ainslie et al. 2023) defined as transformers' repeat_kv does it: NH = 4 query heads, NKV
    // = 2 k/v heads of hs = 3, heads (0, 1) share k/v head 0 and (2, 3) head 1. The same q with k/v
    // copied out to 4 heads, run as multi-head attention, must give the same out and att; dq the
    // same, and the GQA dk/dv of a k/v head the sum of its two copies' multi-head dk/dv.
    const int b = 2, t = 6, nh = 4, nkv = 2, hs = 3, c = nh * hs, G = nh / nkv;
    const Vec gqa = randn((size_t)b * t * (c + 2 * nkv * hs), 41);
    Vec mha((size_t)b * t * 3 * c);
    for (int r = 0; r < b * t; r++) {
      const double* src = gqa.data() + (size_t)r * (c + 2 * nkv * hs);
      double* dst = mha.data() + (size_t)r * 3 * c;
      for (int j = 0; j < c; j++) dst[j] = src[j];  // q
      for (int h = 0; h < nh; h++)
        for (int d = 0; d < hs; d++) {
          dst[c + h * hs + d] = src[c + (h / G) * hs + d];                 // k
          dst[2 * c + h * hs + d] = src[c + nkv * hs + (h / G) * hs + d];  // v
        }
    }
    Vec out1((size_t)b * t * c), out2(out1.size()), att1((size_t)b * nh * t * t), att2(att1.size()), scratch(att1.size());
    cpu::attention_forward(out1.data(), att1.data(), gqa.data(), b, t, c, nh, nkv);
    cpu::attention_forward(out2.data(), att2.data(), mha.data(), b, t, c, nh, nh);
    for (size_t i = 0; i < out1.size(); i++) QVERIFY(std::abs(out1[i] - out2[i]) < 1e-12);
    for (size_t i = 0; i < att1.size(); i++) QVERIFY(std::abs(att1[i] - att2[i]) < 1e-12);
    const Vec dout = randn(out1.size(), 42);
    Vec d1(gqa.size(), 0.0), d2(mha.size(), 0.0);
    cpu::attention_backward(d1.data(), scratch.data(), dout.data(), gqa.data(), att1.data(), b, t, c, nh, nkv);
    cpu::attention_backward(d2.data(), scratch.data(), dout.data(), mha.data(), att2.data(), b, t, c, nh, nh);
    for (int r = 0; r < b * t; r++) {
      const double* g1 = d1.data() + (size_t)r * (c + 2 * nkv * hs);
      const double* g2 = d2.data() + (size_t)r * 3 * c;
      for (int j = 0; j < c; j++) QVERIFY(std::abs(g1[j] - g2[j]) < 1e-12);
      for (int kh = 0; kh < nkv; kh++)
        for (int d = 0; d < hs; d++) {
          double dk = 0, dv = 0;
          for (int g = 0; g < G; g++) {
            dk += g2[c + (kh * G + g) * hs + d];
            dv += g2[2 * c + (kh * G + g) * hs + d];
          }
          QVERIFY(std::abs(g1[c + kh * hs + d] - dk) < 1e-12);
          QVERIFY(std::abs(g1[c + nkv * hs + kh * hs + d] - dv) < 1e-12);
        }
    }
  }
  // ---- the Llama ops against PyTorch (tests/reference/llama_ops_reference.py, float64) ------
  // Forward outputs and the autograd gradients of sum(out * dout), against the double reference:
  // shapes with NKV = 1 (multi-query) and 2 (groups of 2) of NH = 4, theta 500000.
  void llama_ops_match_pytorch() {
    using nlohmann::json;
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const int b = 2, t = 7, nh = 4, hs = 6, c = nh * hs, n = b * t, f = 10;
    const double eps = 1e-5, theta = 500000.0;
    json in;
    struct Ours {
      Vec out;
      std::map<std::string, Vec> grad;
    };
    std::map<std::string, Ours> ours;
    {
      Vec x = randn((size_t)n * c, 50, 2.0), w = randn(c, 51), dout = randn(x.size(), 52);
      Ours o{Vec(x.size()), {{"x", Vec(x.size(), 0.0)}, {"w", Vec(c, 0.0)}}};
      Vec rs(n);
      cpu::rmsnorm_forward(o.out.data(), rs.data(), x.data(), w.data(), n, c, eps);
      cpu::rmsnorm_backward(o.grad["x"].data(), o.grad["w"].data(), dout.data(), x.data(), w.data(), rs.data(), n, c);
      in["rmsnorm"] = {{"x", x}, {"w", w}, {"N", n}, {"C", c}, {"eps", eps}, {"dout", dout}};
      ours["rmsnorm"] = o;
    }
    for (int nkv : {1, 2}) {
      const std::string name = nkv == 1 ? "rope" : "attention";  // rope with MQA, attention with GQA
      Vec qkv = randn((size_t)n * (nh + 2 * nkv) * hs, 53 + nkv);
      if (name == "rope") {
        Vec dout = randn(qkv.size(), 55);
        Ours o{qkv, {{"qkv", dout}}};
        cpu::rope_forward(o.out.data(), b, t, nh, nkv, hs, theta);
        cpu::rope_backward(o.grad["qkv"].data(), b, t, nh, nkv, hs, theta);
        in[name] = {{"qkv", qkv}, {"B", b}, {"T", t}, {"NH", nh}, {"NKV", nkv}, {"hs", hs}, {"theta", theta}, {"dout", dout}};
        ours[name] = o;
      } else {
        Vec dout = randn((size_t)n * c, 56), att((size_t)b * nh * t * t), scratch(att.size());
        Ours o{Vec(dout.size()), {{"qkv", Vec(qkv.size(), 0.0)}}};
        cpu::attention_forward(o.out.data(), att.data(), qkv.data(), b, t, c, nh, nkv);
        cpu::attention_backward(o.grad["qkv"].data(), scratch.data(), dout.data(), qkv.data(), att.data(), b, t, c, nh, nkv);
        in[name] = {{"qkv", qkv}, {"B", b}, {"T", t}, {"NH", nh}, {"NKV", nkv}, {"hs", hs}, {"dout", dout}};
        ours[name] = o;
      }
    }
    {
      Vec x = randn((size_t)n * 2 * f, 57, 2.0), dout = randn((size_t)n * f, 58);
      Ours o{Vec(dout.size()), {{"x", Vec(x.size(), 0.0)}}};
      cpu::swiglu_forward(o.out.data(), x.data(), n, f);
      cpu::swiglu_backward(o.grad["x"].data(), x.data(), dout.data(), n, f);
      in["swiglu"] = {{"x", x}, {"N", n}, {"F", f}, {"dout", dout}};
      ours["swiglu"] = o;
    }
    const QString in_path = dir.filePath("in.json"), out_path = dir.filePath("out.json");
    std::ofstream(in_path.toStdString()) << in.dump();
    QProcess py;
    py.start(TD_SYSTEM_PYTHON, {TD_SOURCE_DIR "/tests/reference/llama_ops_reference.py", in_path, out_path});
    QVERIFY2(py.waitForFinished(120000), "waited 120 s for the PyTorch reference of the Llama ops");
    const QByteArray err = py.readAllStandardError();
    if (py.exitCode() != 0 && err.contains("No module named 'torch'"))
      QSKIP("PyTorch is not installed (Debian's python3-torch; ./traindeck.sh test installs it)");
    QVERIFY2(py.exitCode() == 0, err.constData());
    json ref;
    std::ifstream(out_path.toStdString()) >> ref;
    auto worst = [](const Vec& got, const std::vector<double>& want) -> double {
      if (got.size() != want.size()) return INFINITY;
      double num = 0, den = 1e-30;
      for (size_t i = 0; i < got.size(); i++) {
        num = std::max(num, std::abs(got[i] - want[i]));
        den = std::max(den, std::abs(want[i]));
      }
      return num / den;
    };
    for (const auto& [name, o] : ours) {
      const double e_out = worst(o.out, ref[name]["out"].get<std::vector<double>>());
      qInfo("%s: out %.1e", name.c_str(), e_out);
      QVERIFY2(e_out < 1e-12, qPrintable(QString("%1 forward differs from PyTorch by %2").arg(name.c_str()).arg(e_out)));
      for (const auto& [input, g] : o.grad) {
        const double e = worst(g, ref[name]["grad"][input].get<std::vector<double>>());
        qInfo("%s: grad %s %.1e", name.c_str(), input.c_str(), e);
        QVERIFY2(e < 1e-12, qPrintable(QString("%1 gradient of %2 differs from PyTorch by %3").arg(name.c_str(), input.c_str()).arg(e)));
      }
    }
  }
  void adamw_by_hand() {
    // p = 1, g = 0.5, lr 0.1, betas (0.9, 0.999), eps 1e-8, wd 0.01, t = 1:
    // m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25, p = 1 - 0.1 (0.5 / (0.5 + 1e-8) + 0.01) = 0.899000002
    double p = 1, g = 0.5, m = 0, v = 0;
    cpu::adamw(&p, &g, &m, &v, 1, 0.1, 0.9, 0.999, 1e-8, 0.01, 1);
    QVERIFY(std::abs(m - 0.05) < 1e-15);
    QVERIFY(std::abs(v - 0.00025) < 1e-15);
    QVERIFY(std::abs(p - 0.899000002) < 1e-12);
  }
  void grad_norm_by_hand() {
    double g[4] = {3, 4, 0, 12};  // 9 + 16 + 144 = 169
    QCOMPARE(cpu::grad_norm_squared(g, 4), 169.0);
    cpu::scale(g, 0.5, 4);
    QCOMPARE(g[3], 6.0);
  }
};

QTEST_APPLESS_MAIN(TestOps)
#include "test_ops.moc"
