// Every op of the backend interface, three ways:
//  1. gradients: the double instantiation of the CPU reference against central finite
//     differences (h = 1e-6), for the scalar L = sum(out * r) with a fixed random r;
//  2. hand-computed values written out below;
//  3. parity: each backend (today: the CPU backend, fp32) against the double reference with a
//     tolerance per dtype. The table has one row per Op; a test fails when an Op has no row.
#include <QtTest>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "engine/ops/cpu_ops.h"

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
std::vector<float> to_f(const Vec& v) { return std::vector<float>(v.begin(), v.end()); }
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

double max_rel(const std::vector<float>& got, const Vec& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); i++) {
    num = std::max(num, std::abs((double)got[i] - want[i]));
    den = std::max(den, std::abs(want[i]));
  }
  return num / std::max(den, 1e-12);
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
    cs.push_back({"matmul", {randn((size_t)N * C, 6), randn((size_t)OC * C, 7), randn(OC, 8)},
                  [=](const std::vector<Vec>& in) {
                    Vec out((size_t)N * OC);
                    cpu::matmul_forward(out.data(), in[0].data(), in[1].data(), in[2].data(), N, C, OC);
                    return out;
                  },
                  [=](const std::vector<Vec>& in, const Vec& d) {
                    Vec dx(in[0].size(), 0.0), dw(in[1].size(), 0.0), db(OC, 0.0);
                    cpu::matmul_backward(dx.data(), dw.data(), db.data(), d.data(), in[0].data(), in[1].data(), N, C, OC);
                    return std::vector<Vec>{dx, dw, db};
                  }});
    cs.push_back({"attention", {randn((size_t)N * 3 * C, 9)},
                  [=](const std::vector<Vec>& in) {
                    Vec out((size_t)N * C), att((size_t)B * NH * T * T);
                    cpu::attention_forward(out.data(), att.data(), in[0].data(), B, T, C, NH);
                    return out;
                  },
                  [=](const std::vector<Vec>& in, const Vec& d) {
                    Vec out((size_t)N * C), att((size_t)B * NH * T * T), scratch(att.size());
                    cpu::attention_forward(out.data(), att.data(), in[0].data(), B, T, C, NH);
                    Vec dqkv(in[0].size(), 0.0);
                    cpu::attention_backward(dqkv.data(), scratch.data(), d.data(), in[0].data(), att.data(), B, T, C, NH);
                    return std::vector<Vec>{dqkv};
                  }});
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
  void gelu_by_hand() {
    // GELU_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.8411920; GELU(0) = 0; GELU(-1) = -0.1588080.
    double x[3] = {1, 0, -1}, y[3];
    cpu::gelu_forward(y, x, 3);
    QVERIFY(std::abs(y[0] - 0.8411920) < 1e-6);
    QCOMPARE(y[1], 0.0);
    QVERIFY(std::abs(y[2] + 0.1588080) < 1e-6);
  }
  void attention_by_hand() {
    // One head of width 1, T = 2. q = [*, 1], k = [0, ln 3], v = [2, 6].
    // t = 0 sees itself only: out0 = v0 = 2. t = 1: scores [0, ln 3] -> p = [1/4, 3/4]:
    // out1 = 2/4 + 3*6/4 = 5.
    double qkv[6] = {/*t0*/ 0.5, 0.0, 2.0, /*t1*/ 1.0, std::log(3.0), 6.0}, out[2], att[4];
    cpu::attention_forward(out, att, qkv, 1, 2, 1, 1);
    QVERIFY(std::abs(out[0] - 2.0) < 1e-12);
    QVERIFY(std::abs(out[1] - 5.0) < 1e-12);
    QVERIFY(std::abs(att[2] - 0.25) < 1e-12 && std::abs(att[3] - 0.75) < 1e-12);
    QCOMPARE(att[1], 0.0);  // masked
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

  // ---- backend parity: every Op, every backend, against the double reference ----------------
  void backend_parity() {
    std::vector<std::unique_ptr<Backend>> backends;
    backends.push_back(make_cpu_backend());
    const int N = B * T;
    auto ids = rand_ids(N, V, 21);
    auto x = randn((size_t)N * C, 22), w = randn((size_t)OC * C, 23), bias = randn(OC, 24);
    auto qkv = randn((size_t)N * 3 * C, 25), dout_c = randn((size_t)N * C, 26), dout_oc = randn((size_t)N * OC, 27);
    auto lnw = randn(C, 28), lnb = randn(C, 29), wte = randn((size_t)V * C, 30), wpe = randn((size_t)T * C, 31);
    auto logits = randn((size_t)N * V, 32, 3.0);
    const double tol_f32 = 2e-5;
    for (auto& be : backends) {
      std::map<Op, double> err;  // worst relative error per op
      auto run = [&](Op op, double e) { err[op] = std::max(err[op], e); };
      {  // encoder
        Vec want((size_t)N * C);
        cpu::encoder_forward(want.data(), ids.data(), wte.data(), wpe.data(), B, T, C);
        std::vector<float> got(want.size()), fwte = to_f(wte), fwpe = to_f(wpe);
        be->encoder_forward(got.data(), ids.data(), fwte.data(), fwpe.data(), B, T, C);
        run(Op::kEncoderForward, max_rel(got, want));
        Vec dw(wte.size(), 0), dp(wpe.size(), 0);
        cpu::encoder_backward(dw.data(), dp.data(), dout_c.data(), ids.data(), B, T, C);
        std::vector<float> gw(dw.size(), 0), gp(dp.size(), 0), fd = to_f(dout_c);
        be->encoder_backward(gw.data(), gp.data(), fd.data(), ids.data(), B, T, C);
        run(Op::kEncoderBackward, std::max(max_rel(gw, dw), max_rel(gp, dp)));
      }
      {  // layernorm
        Vec want((size_t)N * C), m(N), s(N);
        cpu::layernorm_forward(want.data(), m.data(), s.data(), x.data(), lnw.data(), lnb.data(), N, C);
        std::vector<float> got(want.size()), fm(N), fs(N), fx = to_f(x), fw = to_f(lnw), fb = to_f(lnb);
        be->layernorm_forward(got.data(), fm.data(), fs.data(), fx.data(), fw.data(), fb.data(), N, C);
        run(Op::kLayerNormForward, max_rel(got, want));
        Vec dx(x.size(), 0), dw(C, 0), db(C, 0);
        cpu::layernorm_backward(dx.data(), dw.data(), db.data(), dout_c.data(), x.data(), lnw.data(), m.data(), s.data(), N, C);
        std::vector<float> gx(dx.size(), 0), gw(C, 0), gb(C, 0), fd = to_f(dout_c);
        be->layernorm_backward(gx.data(), gw.data(), gb.data(), fd.data(), fx.data(), fw.data(), fm.data(), fs.data(), N, C);
        run(Op::kLayerNormBackward, std::max({max_rel(gx, dx), max_rel(gw, dw), max_rel(gb, db)}));
      }
      {  // matmul
        Vec want((size_t)N * OC);
        cpu::matmul_forward(want.data(), x.data(), w.data(), bias.data(), N, C, OC);
        std::vector<float> got(want.size()), fx = to_f(x), fw = to_f(w), fb = to_f(bias);
        be->matmul_forward(got.data(), fx.data(), fw.data(), fb.data(), N, C, OC);
        run(Op::kMatmulForward, max_rel(got, want));
        Vec dx(x.size(), 0), dw(w.size(), 0), db(OC, 0);
        cpu::matmul_backward(dx.data(), dw.data(), db.data(), dout_oc.data(), x.data(), w.data(), N, C, OC);
        std::vector<float> gx(dx.size(), 0), gw(dw.size(), 0), gb(OC, 0), fd = to_f(dout_oc);
        be->matmul_backward(gx.data(), gw.data(), gb.data(), fd.data(), fx.data(), fw.data(), N, C, OC);
        run(Op::kMatmulBackward, std::max({max_rel(gx, dx), max_rel(gw, dw), max_rel(gb, db)}));
      }
      {  // attention
        Vec want((size_t)N * C), att((size_t)B * NH * T * T), scratch(att.size());
        cpu::attention_forward(want.data(), att.data(), qkv.data(), B, T, C, NH);
        std::vector<float> got(want.size()), fatt(att.size()), fq = to_f(qkv);
        be->attention_forward(got.data(), fatt.data(), fq.data(), B, T, C, NH);
        run(Op::kAttentionForward, std::max(max_rel(got, want), max_rel(fatt, att)));
        Vec dq(qkv.size(), 0);
        cpu::attention_backward(dq.data(), scratch.data(), dout_c.data(), qkv.data(), att.data(), B, T, C, NH);
        std::vector<float> gq(dq.size(), 0), fd = to_f(dout_c);
        be->attention_backward(gq.data(), fd.data(), fq.data(), fatt.data(), B, T, C, NH);
        run(Op::kAttentionBackward, max_rel(gq, dq));
      }
      {  // gelu, residual
        Vec want(x.size()), dx(x.size(), 0), sum(x.size());
        cpu::gelu_forward(want.data(), x.data(), x.size());
        cpu::gelu_backward(dx.data(), x.data(), dout_c.data(), x.size());
        cpu::residual_forward(sum.data(), x.data(), dout_c.data(), x.size());
        std::vector<float> got(x.size()), gx(x.size(), 0), gs(x.size()), fx = to_f(x), fd = to_f(dout_c);
        be->gelu_forward(got.data(), fx.data(), x.size());
        be->gelu_backward(gx.data(), fx.data(), fd.data(), x.size());
        be->residual_forward(gs.data(), fx.data(), fd.data(), x.size());
        run(Op::kGeluForward, max_rel(got, want));
        run(Op::kGeluBackward, max_rel(gx, dx));
        run(Op::kResidualForward, max_rel(gs, sum));
      }
      {  // softmax + cross-entropy
        auto tg = rand_ids(N, V, 33);
        Vec losses(N), dz(logits.size());
        cpu::softmax_cross_entropy(losses.data(), dz.data(), logits.data(), tg.data(), N, V, 0.25);
        std::vector<float> gl(N), gz(logits.size()), fz = to_f(logits);
        be->softmax_cross_entropy(gl.data(), gz.data(), fz.data(), tg.data(), N, V, 0.25f);
        run(Op::kSoftmaxCrossEntropy, std::max(max_rel(gl, losses), max_rel(gz, dz)));
      }
      {  // adamw, grad norm, scale
        Vec p = randn(100, 34), g = randn(100, 35), m = randn(100, 36, 0.1), v(100);
        for (size_t i = 0; i < v.size(); i++) v[i] = 0.01 + 0.001 * i;
        std::vector<float> fp = to_f(p), fg = to_f(g), fm = to_f(m), fv = to_f(v);
        cpu::adamw(p.data(), g.data(), m.data(), v.data(), 100, 1e-3, 0.9, 0.95, 1e-8, 0.1, 7);
        be->adamw(fp.data(), fg.data(), fm.data(), fv.data(), 100, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 7);
        run(Op::kAdamW, std::max(max_rel(fp, p), max_rel(fm, m)));
        double n2 = cpu::grad_norm_squared(g.data(), g.size());
        run(Op::kGradNormSquared, std::abs(be->grad_norm_squared(fg.data(), fg.size()) - n2) / n2);
        cpu::scale(g.data(), 0.3, g.size());
        be->scale(fg.data(), 0.3f, fg.size());
        run(Op::kScale, max_rel(fg, g));
      }
      for (int o = 0; o < (int)Op::kCount; o++) {
        Op op = (Op)o;
        QVERIFY2(err.count(op), qPrintable(QString("op %1 has no row in the parity table").arg(op_name(op))));
        QVERIFY2(be->supports(op, DType::kF32), op_name(op));
        qInfo("%s %-24s fp32 max rel error %.2e", be->name().c_str(), op_name(op), err[op]);
        QVERIFY2(err[op] < tol_f32, qPrintable(QString("%1: %2").arg(op_name(op)).arg(err[op])));
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestOps)
#include "test_ops.moc"
