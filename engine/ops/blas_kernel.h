// Choosing OpenBLAS's kernel for this CPU.
//
// Debian's OpenBLAS picks its GEMM kernel when it is loaded, from the CPU model. A CPU newer than
// the library (here: Xeon model 207, unknown to OpenBLAS 0.3.21) falls back to the generic
// "Prescott" SSE3 kernel, about 8x slower than the AVX-512 one on the same core. Only the
// environment variable OPENBLAS_CORETYPE, read at load time, changes that choice.
#pragma once

#include <string>

namespace td {

/// The kernel family the CPU's features allow: "SkylakeX" (AVX-512 F/CD/BW/DQ/VL), "Haswell"
/// (AVX2 + FMA), or "" (leave OpenBLAS's own choice).
std::string best_blas_coretype();

/// OpenBLAS's kernel in this process (openblas_get_corename()).
std::string blas_corename();

/// If OPENBLAS_CORETYPE is unset and OpenBLAS chose a kernel weaker than best_blas_coretype(),
/// re-executes this program (/proc/self/exe, same argv) with OPENBLAS_CORETYPE set, once.
/// A user's OPENBLAS_CORETYPE always wins. Returns normally when nothing is to be done.
void ensure_blas_kernel(char** argv);

}  // namespace td
