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

/// Re-executes this program (/proc/self/exe, same argv) once when OpenBLAS as loaded is not what
/// training needs: (1) not the OpenMP build (openblas_get_parallel() != 2, e.g. an installed
/// engine whose libopenblas.so.0 alternative is the pthread build) while the OpenMP build's
/// folder exists: that folder is put first on LD_LIBRARY_PATH; (2) OPENBLAS_CORETYPE is unset
/// and OpenBLAS chose a kernel weaker than best_blas_coretype(): OPENBLAS_CORETYPE is set.
/// A user's OPENBLAS_CORETYPE always wins. Returns normally when nothing is to be done or the
/// exec fails (the run then goes on with the slower library).
void ensure_blas_kernel(char** argv);

}  // namespace td
