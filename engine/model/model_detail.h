// Internals shared by the model's two families (gpt.cpp: GPT-2, llama.cpp: Llama): the
// activation buffer carver and the Llama activation layout. Not an interface for other code.
#pragma once

#include <cstddef>

#include "engine/config.h"
#include "engine/ops/dtype.h"

namespace td::model_detail {

// Hands out 64-byte aligned pieces of one buffer; with base == nullptr it only counts bytes.
class Carver {
 public:
  explicit Carver(void* base) : base_(static_cast<char*>(base)) {}
  template <class T> T* take(size_t count) {
    T* p = base_ ? reinterpret_cast<T*>(base_ + n_) : nullptr;
    n_ += (count * sizeof(T) + 63) / 64 * 64;
    return p;
  }
  size_t bytes() const { return n_; }

 private:
  char* base_;
  size_t n_ = 0;
};

// Bytes of the Llama family's forward activations and backward scratch at micro batch B and
// length T, activations of type act (the layout of engine/model/shape.h llama_activation_bytes).
size_t llama_acts_bytes(const ModelConfig& m, int B, int T, DType act);
size_t llama_dacts_bytes(const ModelConfig& m, int B, int T, DType act);
// Where the logits (B,T,V) lie in a Llama activation buffer `base` laid out for (B, T).
void* llama_logits(const ModelConfig& m, int B, int T, void* base, DType act);

}  // namespace td::model_detail
