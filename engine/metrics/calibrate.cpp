#include "engine/metrics/calibrate.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "engine/common/error.h"
#include "engine/config.h"
#include "engine/model/gpt.h"
#include "engine/ops/backend.h"
#include "engine/ops/cpu_ops.h"
#include "engine/optim/adamw.h"
#include "engine/plan/plan.h"

namespace td {

double measure_sgemm_flops(int threads, double seconds, int n) {
  set_cpu_threads(threads);
  std::vector<float> a((size_t)n * n, 0.5f), b((size_t)n * n, 0.25f), c((size_t)n * n, 0.0f);
  const double flops = 2.0 * n * n * (double)n;
  using clk = std::chrono::steady_clock;
  // Warm-up: thread pool start, page faults, clock ramp-up (about a fifth of the time).
  auto warm_until = clk::now() + std::chrono::duration<double>(seconds * 0.2);
  do {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  } while (clk::now() < warm_until);
  double best = 0.0;
  auto start = clk::now();
  do {
    auto t0 = clk::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    double dt = std::chrono::duration<double>(clk::now() - t0).count();
    best = std::max(best, flops / dt);
  } while (std::chrono::duration<double>(clk::now() - start).count() < seconds);
  return best;
}

double measure_engine_mfu(int threads, double peak_flops, double seconds) {
  if (!(peak_flops > 0)) fail("the engine's share of the peak needs a calibrated peak (got " + std::to_string(peak_flops) + " FLOP/s)");
  set_cpu_threads(threads);
  using R = EngineMfuReference;
  RunConfig c;
  c.model.vocab_size = R::vocab_size;
  c.model.seq_len = R::seq_len;
  c.model.n_layer = R::n_layer;
  c.model.n_head = R::n_head;
  c.model.d_model = R::d_model;
  c.model.d_ff = 4 * R::d_model;
  c.train.micro_batch = R::micro_batch;
  const int B = R::micro_batch, T = R::seq_len;
  const double flops_per_step = make_plan(c, 1).flops_per_token * B * T;

  std::unique_ptr<Backend> be = make_backend("cpu");
  GPT model(c.model, *be, B);
  model.init_weights(1337);
  AdamW opt(*be, model.tensors(), model.num_params(), c.train.beta1, c.train.beta2, c.train.eps, c.train.weight_decay);
  // Tokens: a fixed pseudo-random stream (the speed does not depend on the ids).
  std::vector<int32_t> inputs((size_t)B * T), targets((size_t)B * T);
  uint32_t x = 12345;
  for (size_t i = 0; i < inputs.size(); ++i) {
    x = x * 1664525u + 1013904223u;
    inputs[i] = int32_t(x % R::vocab_size);
    targets[i] = int32_t((x >> 8) % R::vocab_size);
  }
  auto step = [&](int t) {
    model.zero_grad();
    model.forward(inputs.data(), targets.data(), B, T, 1.0f / float(B * T));
    model.backward(1.0f / float(B * T));
    opt.step(model.params(), model.grads(), c.train.lr, t);
    be->synchronize();
  };
  using clk = std::chrono::steady_clock;
  step(1);  // warm-up: thread pool, page faults of the activations
  // The best of the timed steps, as measure_sgemm_flops keeps its best repetition.
  double best = 0.0;
  int t = 2;
  const auto start = clk::now();
  do {
    const auto t0 = clk::now();
    step(t++);
    const double dt = std::chrono::duration<double>(clk::now() - t0).count();
    best = std::max(best, flops_per_step / dt);
  } while (std::chrono::duration<double>(clk::now() - start).count() < seconds || t < 4);
  return best / peak_flops;
}

}  // namespace td
