// CPU reference: The linear layer (torch.nn.functional.linear) through BLAS, forward and backward.
// Shapes, accumulation (+=) and sources: the matching ActivationOps / Backend method in
// engine/ops/ops.h. Instantiated for float (the CPU backend) and double (the gradient checks of
// tests/engine/test_ops.cpp and the parity harness's reference).
#pragma once

#include <cstddef>
#include <cstdint>

namespace td::cpu {

template <class R> void matmul_forward(R* out, const R* inp, const R* weight, const R* bias, int N, int C, int OC);
// overwrite_dinp: dinp = dout @ weight (beta 0) instead of +=.
template <class R> void matmul_backward(R* dinp, R* dweight, R* dbias, const R* dout, const R* inp, const R* weight, int N, int C, int OC,
                                        bool overwrite_dinp = false);
// matmul_forward into pre, then out = GELU(pre) (the tanh approximation of gelu.h), in R.
template <class R> void matmul_gelu_forward(R* out, R* pre, const R* inp, const R* weight, const R* bias, int N, int C,
                                            int OC);
// dpre = GELU'(pre) * (dout @ weight) (overwritten), dweight and dbias += as matmul_backward, in R.
template <class R> void matmul_backward_dgelu(R* dpre, R* dweight, R* dbias, const R* dout, const R* inp,
                                              const R* weight, const R* pre, int N, int C, int OC);

}  // namespace td::cpu
