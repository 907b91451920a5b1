// Text generation from a model: autoregressive sampling with temperature and top-k.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/common/rng.h"
#include "engine/model/gpt.h"
#include "engine/tokenizer/tokenizer.h"

namespace td {

struct SampleOptions {
  int max_new_tokens = 200;
  double temperature = 0.8;  // 0: greedy (argmax)
  int top_k = 40;            // 0: all tokens
};

/// Samples one token from logits (V floats, host): softmax(logits / temperature) restricted to
/// the top_k largest logits (ties broken by the lower id). Deterministic for a given rng state.
int sample_token(const float* logits, int V, double temperature, int top_k, Rng& rng);

/// Continues `prompt` (token ids; empty: starts from the end-of-text token) by max_new_tokens,
/// feeding at most seq_len tokens of context (no KV cache: a forward pass per token).
/// Returns the generated ids (without the prompt). The model must have max_B >= 1.
/// `on_token`, when given, is called with each generated id as soon as it is sampled (before the
/// next forward pass), in order, on the calling thread: `sample --stream` prints from it. The ids
/// it sees are exactly the returned ones; an exception it throws stops the generation.
std::vector<uint32_t> generate(GPT& model, const std::vector<uint32_t>& prompt, int eot_id,
                               const SampleOptions& opt, Rng& rng,
                               const std::function<void(uint32_t id)>& on_token = {});

}  // namespace td
