#include "engine/metrics/op_profile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "engine/common/error.h"
#include "engine/model/gpt.h"
#include "engine/ops/backend.h"
#include "engine/ops/profile.h"
#include "engine/optim/adamw.h"

namespace td {

OpProfileReport profile_training_steps(const RunConfig& c, int steps) {
  TD_ASSERT(steps >= 1);
  const TrainConfig& tc = c.train;
  if (tc.tensor_parallel > 1)
    throw ConfigError("train.tensor_parallel", "profile runs one process; set it to 1 (the per-op figures of a TP rank "
                                               "are those of its shard's widths)");
  const int B = tc.micro_batch, T = c.model.seq_len, accum = tc.grad_accum;
  const DType act = resolved_precision(tc) == "bf16" ? DType::kBF16 : DType::kF32;
  std::unique_ptr<Backend> device = make_backend(tc.device);
  OpTimes times;
  std::unique_ptr<Backend> be = make_profiling_backend(*device, &times);
  GPT model(c.model, *be, B, act, nullptr, parse_attention_kernel(tc.attention), parse_gelu_fusion(tc.gelu_fusion));
  model.init_weights(tc.seed);
  AdamW opt(*be, model.tensors(), model.num_params(), tc.beta1, tc.beta2, tc.eps, tc.weight_decay);
  std::vector<int32_t> inputs((size_t)B * T), targets((size_t)B * T);
  uint32_t x = 12345;  // the speed does not depend on the ids
  for (size_t i = 0; i < inputs.size(); ++i) {
    x = x * 1664525u + 1013904223u;
    inputs[i] = int32_t(x % (uint32_t)c.model.vocab_size);
    targets[i] = int32_t((x >> 8) % (uint32_t)c.model.vocab_size);
  }
  const size_t N = model.num_params();
  auto step = [&](int t) {
    model.zero_grad();
    for (int a = 0; a < accum; a++) {
      const float scale = 1.0f / float((size_t)B * T * accum);
      model.forward(inputs.data(), targets.data(), B, T, scale);  // as the trainer: the fused classifier
      model.backward(scale);
    }
    if (tc.grad_clip > 0) clip_grad_norm(*be, model.grads(), N, tc.grad_clip);  // as the trainer
    opt.step(model.params(), model.grads(), tc.lr, t);
    be->synchronize();
  };
  step(1);  // warm-up: allocator growth, cuBLAS heuristics, page faults
  times.clear();
  using clk = std::chrono::steady_clock;
  const auto t0 = clk::now();
  for (int t = 0; t < steps; t++) step(2 + t);
  const double wall_ms = std::chrono::duration<double, std::milli>(clk::now() - t0).count();

  OpProfileReport r;
  r.device = tc.device;
  r.precision = dtype_name(act);
  r.attention = tc.attention;
  r.gelu_fusion = gelu_fusion_name(model.gelu_fusion());  // "none" for Llama whatever the config says
  r.micro_batch = B;
  r.grad_accum = accum;
  r.seq_len = T;
  r.steps = steps;
  r.step_ms = wall_ms / steps;
  r.op_ms = times.total_seconds() * 1e3 / steps;
  r.tokens_per_s = (double)B * accum * T / (r.step_ms / 1e3);
  for (const auto& [name, e] : times.by_op)
    r.rows.push_back({name, (double)e.calls / steps, e.seconds * 1e3 / steps, r.op_ms > 0 ? e.seconds * 1e3 / steps / r.op_ms : 0});
  std::sort(r.rows.begin(), r.rows.end(), [](const OpProfileRow& a, const OpProfileRow& b) { return a.ms_per_step > b.ms_per_step; });
  return r;
}

nlohmann::json to_json(const OpProfileReport& r) {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& row : r.rows)
    ops.push_back({{"op", row.op}, {"calls_per_step", row.calls_per_step}, {"ms_per_step", row.ms_per_step}, {"share", row.share}});
  return {{"device", r.device},   {"precision", r.precision}, {"attention", r.attention}, {"gelu_fusion", r.gelu_fusion}, {"micro_batch", r.micro_batch},
          {"grad_accum", r.grad_accum}, {"seq_len", r.seq_len}, {"steps", r.steps},   {"step_ms", r.step_ms},
          {"op_ms", r.op_ms},     {"tokens_per_s", r.tokens_per_s}, {"ops", ops}};
}

std::string format_table(const OpProfileReport& r) {
  char buf[256];
  std::string s;
  std::snprintf(buf, sizeof buf, "%s, %s, attention %s, gelu_fusion %s, micro_batch %d x grad_accum %d x seq_len %d, %d timed steps\n",
                r.device.c_str(), r.precision.c_str(), r.attention.c_str(), r.gelu_fusion.c_str(), r.micro_batch, r.grad_accum, r.seq_len, r.steps);
  s += buf;
  std::snprintf(buf, sizeof buf, "%-28s %12s %12s %7s\n", "op", "calls/step", "ms/step", "share");
  s += buf;
  for (const auto& row : r.rows) {
    std::snprintf(buf, sizeof buf, "%-28s %12.0f %12.3f %6.1f%%\n", row.op.c_str(), row.calls_per_step, row.ms_per_step,
                  100.0 * row.share);
    s += buf;
  }
  std::snprintf(buf, sizeof buf,
                "ops %.3f ms of a %.3f ms step (the rest is the host's own work); %.0f tokens/s while profiled "
                "(each op synchronised: a little slower than training)\n",
                r.op_ms, r.step_ms, r.tokens_per_s);
  s += buf;
  return s;
}

}  // namespace td
