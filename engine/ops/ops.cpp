// Names of the backend interface's ops (engine/ops/ops.h), for messages and the parity table.
#include "engine/ops/ops.h"

#include "engine/common/error.h"

namespace td {

const char* op_name(Op op) {
  switch (op) {
#define TD_ACTIVATION_OP(name, op, params, args) \
  case Op::op:                                   \
    return #name;
#include "engine/ops/activation_ops.def"
#define TD_OP_NAME(e, name) \
  case Op::e:               \
    return name;
    TD_BACKEND_OPS(TD_OP_NAME)
#undef TD_OP_NAME
    case Op::kCount: break;
  }
  return "?";
}

const char* attention_kernel_name(AttentionKernel a) { return a == AttentionKernel::kFused ? "fused" : "simple"; }

AttentionKernel parse_attention_kernel(const std::string& name) {
  if (name == "simple") return AttentionKernel::kSimple;
  if (name == "fused") return AttentionKernel::kFused;
  throw Error("unknown attention kernel \"" + name + "\": use \"simple\" or \"fused\" (train.attention)");
}

const char* gelu_fusion_name(GeluFusion g) { return g == GeluFusion::kEpilogue ? "epilogue" : "none"; }

GeluFusion parse_gelu_fusion(const std::string& name) {
  if (name == "none") return GeluFusion::kNone;
  if (name == "epilogue") return GeluFusion::kEpilogue;
  throw Error("unknown GELU fusion \"" + name + "\": use \"none\" or \"epilogue\" (train.gelu_fusion)");
}

}  // namespace td
