#include "engine/ops/blas_kernel.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace td {

std::string best_blas_coretype() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return "";
}

std::string blas_corename() {
  const char* n = openblas_get_corename();
  return n ? n : "";
}

static bool is_avx512_kernel(const std::string& core) {
  for (const char* k : {"skylakex", "cooperlake", "sapphirerapids"})
    if (strcasecmp(core.c_str(), k) == 0) return true;
  return false;
}

static bool is_avx2_kernel(const std::string& core) {
  for (const char* k : {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"})
    if (strcasecmp(core.c_str(), k) == 0) return true;
  return false;
}

void ensure_blas_kernel(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("TRAINDECK_BLAS_REEXEC")) return;
  const std::string want = best_blas_coretype();
  const std::string have = blas_corename();
  if (want.empty()) return;
  if (want == "SkylakeX" ? is_avx512_kernel(have) : is_avx2_kernel(have)) return;
  setenv("OPENBLAS_CORETYPE", want.c_str(), 1);
  setenv("TRAINDECK_BLAS_REEXEC", "1", 1);  // never loop, even if OpenBLAS ignores the hint
  execv("/proc/self/exe", argv);
  // exec failed: carry on with the slower kernel.
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace td
