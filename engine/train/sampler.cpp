#include "engine/train/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace td {

int sample_token(const float* logits, int V, double temperature, int top_k, Rng& rng) {
  if (temperature <= 0.0) return (int)(std::max_element(logits, logits + V) - logits);
  std::vector<int> idx(V);
  std::iota(idx.begin(), idx.end(), 0);
  int k = (top_k <= 0 || top_k > V) ? V : top_k;
  auto by_logit = [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), by_logit);
  std::vector<double> p(k);
  double mx = logits[idx[0]], sum = 0.0;
  for (int i = 0; i < k; i++) sum += (p[i] = std::exp((logits[idx[i]] - mx) / temperature));
  double u = rng.uniform() * sum, acc = 0.0;
  for (int i = 0; i < k; i++) {
    acc += p[i];
    if (u < acc) return idx[i];
  }
  return idx[k - 1];
}

std::vector<uint32_t> generate(GPT& model, const std::vector<uint32_t>& prompt, int eot_id,
                               const SampleOptions& opt, Rng& rng, const std::function<void(uint32_t)>& on_token) {
  const ModelConfig& m = model.config();
  std::vector<int32_t> ctx(prompt.begin(), prompt.end());
  if (ctx.empty()) ctx.push_back(eot_id);
  std::vector<uint32_t> out;
  std::vector<float> row(m.vocab_size);
  for (int i = 0; i < opt.max_new_tokens; i++) {
    int T = std::min<int>((int)ctx.size(), m.seq_len);
    const int32_t* window = ctx.data() + ctx.size() - T;
    model.forward(window, nullptr, 1, T);
    model.download_logits(row.data(), (size_t)(T - 1), 1);
    int next = sample_token(row.data(), m.vocab_size, opt.temperature, opt.top_k, rng);
    out.push_back((uint32_t)next);
    ctx.push_back(next);
    if (on_token) on_token((uint32_t)next);
  }
  return out;
}

}  // namespace td
