// Names of the backend interface's ops (engine/ops/ops.h), for messages and the parity table.
#include "engine/ops/ops.h"

namespace td {

const char* op_name(Op op) {
  switch (op) {
#define TD_OP_NAME(e, name) \
  case Op::e:               \
    return name;
    TD_OPS(TD_OP_NAME)
#undef TD_OP_NAME
    case Op::kCount: break;
  }
  return "?";
}

}  // namespace td
