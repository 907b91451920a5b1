#include "engine/metrics/calibrate.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "engine/ops/cpu_ops.h"

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

}  // namespace td
