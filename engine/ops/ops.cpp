// Names of the backend interface's ops (engine/ops/ops.h), for messages and the parity table.
#include "engine/ops/ops.h"

namespace td {

const char* op_name(Op op) {
  switch (op) {
    case Op::kEncoderForward: return "encoder_forward";
    case Op::kEncoderBackward: return "encoder_backward";
    case Op::kLayerNormForward: return "layernorm_forward";
    case Op::kLayerNormBackward: return "layernorm_backward";
    case Op::kMatmulForward: return "matmul_forward";
    case Op::kMatmulBackward: return "matmul_backward";
    case Op::kAttentionForward: return "attention_forward";
    case Op::kAttentionBackward: return "attention_backward";
    case Op::kGeluForward: return "gelu_forward";
    case Op::kGeluBackward: return "gelu_backward";
    case Op::kResidualForward: return "residual_forward";
    case Op::kSoftmaxCrossEntropy: return "softmax_cross_entropy";
    case Op::kConvert: return "convert";
    case Op::kAdamW: return "adamw";
    case Op::kGradNormSquared: return "grad_norm_squared";
    case Op::kScale: return "scale";
    case Op::kCount: break;
  }
  return "?";
}

}  // namespace td
