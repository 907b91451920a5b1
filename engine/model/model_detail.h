// Internals shared by the model's two families (gpt.cpp: GPT-2, llama.cpp: Llama): the
// activation buffer carver and the Llama activation layout (shape.cpp plans a tensor-parallel
// rank with it). Not an interface for code outside engine/model.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "engine/common/error.h"

#include "engine/config.h"
#include "engine/ops/dtype.h"
#include "engine/ops/ops.h"

namespace td {
struct TpWidths;  // engine/model/tensor_parallel.h
}

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
// w: a tensor-parallel rank's widths (tp_widths); null: the full model's.
size_t llama_acts_bytes(const ModelConfig& m, int B, int T, DType act, const TpWidths* w = nullptr,
                        AttentionKernel attn = AttentionKernel::kSimple);
size_t llama_dacts_bytes(const ModelConfig& m, int B, int T, DType act, const TpWidths* w = nullptr);
// Where the logits (B,T,V) lie in a Llama activation buffer `base` laid out for (B, T).
void* llama_logits(const ModelConfig& m, int B, int T, void* base, DType act, const TpWidths* w = nullptr,
                   AttentionKernel attn = AttentionKernel::kSimple);

// What attention keeps for backward, carved from k for NH heads at (B, T): att (B,NH,T,T) Act
// with attention "simple" (lse null), lse (B,NH,T) fp32 with "fused" (att null). Both families.
template <class Act>
void attention_saved(Carver& k, AttentionKernel attn, int B, int NH, int T, Act** att, float** lse) {
  *att = attn == AttentionKernel::kSimple ? k.take<Act>((size_t)B * NH * T * T) : nullptr;
  *lse = attn == AttentionKernel::kFused ? k.take<float>((size_t)B * NH * T) : nullptr;
}
// The attention ops of the kernel the layout chose (att non-null: simple, else fused).
template <class Act>
void attention_forward(ActivationOps<Act>& ops, Act* out, Act* att, float* lse, const Act* qkv, int B, int T, int C,
                       int NH, int NKV) {
  if (att)
    ops.attention_forward(out, att, qkv, B, T, C, NH, NKV);
  else
    ops.flash_attention_forward(out, lse, qkv, B, T, C, NH, NKV);
}
template <class Act>
void attention_backward(ActivationOps<Act>& ops, Act* dqkv, const Act* dout, const Act* qkv, const Act* out,
                        const Act* att, const float* lse, int B, int T, int C, int NH, int NKV) {
  if (att)
    ops.attention_backward(dqkv, dout, qkv, att, B, T, C, NH, NKV);
  else
    ops.flash_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH, NKV);
}

// The weights a forward or backward reads (both families): `all` (the model's params_act_)
// when there is no ParamSource; with one (ZeRO-3, engine/model/gpt.h), bucket b's lent buffer
// between need(b) and done(b). at(offset): the weights from element `offset` of the layout on.
template <class Act, class Source>
class WeightView {
 public:
  WeightView(const Act* all, Source* src, std::vector<std::pair<size_t, size_t>> buckets)
      : all_(all), src_(src), buckets_(std::move(buckets)), lent_(buckets_.size(), nullptr) {}
  void need(int b) {
    if (src_) lent_[b] = reinterpret_cast<const Act*>(src_->need(b));
  }
  void done(int b) {
    if (!src_) return;
    src_->done(b);
    lent_[b] = nullptr;
  }
  const Act* at(size_t offset) const {
    if (!src_) return all_ + offset;
    for (size_t b = 0; b < buckets_.size(); b++)
      if (offset >= buckets_[b].first && offset < buckets_[b].second) {
        TD_ASSERT(lent_[b]);  // read outside need(b) ... done(b)
        return lent_[b] + (offset - buckets_[b].first);
      }
    TD_ASSERT(false);
    return nullptr;
  }

 private:
  const Act* all_;
  Source* src_;
  std::vector<std::pair<size_t, size_t>> buckets_;
  std::vector<const Act*> lent_;
};

}  // namespace td::model_detail
