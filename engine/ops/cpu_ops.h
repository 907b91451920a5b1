// The CPU backend: the Backend interface (engine/ops/ops.h) over the reference ops.
//
// The reference ops, the definition of every op, live in engine/ops/reference/<op>.h (namespace
// td::cpu, templated on the real type: float here, double in the gradient checks). fp32; GEMMs
// through OpenBLAS, everything else plain loops parallelised with OpenMP (static schedules, so
// results are bitwise reproducible for a fixed thread count). cpu_ops.cpp only adapts them.
#pragma once

#include <memory>

#include "engine/ops/ops.h"

namespace td {

/// Sets the thread count of OpenMP and OpenBLAS (0: all cores). Returns the count in effect.
int set_cpu_threads(int threads);

/// The CPU backend (fp32, and bf16 emulated: see cpu_ops.cpp). Thread-compatible: one instance
/// per training loop.
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace td
