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
  if (std::getenv("TRAINDECK_BLAS_REEXEC")) return;  // never loop, even if OpenBLAS ignores the hints
  bool reexec = false;
  std::string old_path;
#ifdef TD_OPENBLAS_OPENMP_DIR
  // openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP (OpenBLAS's cblas.h).
  const std::string omp_lib = std::string(TD_OPENBLAS_OPENMP_DIR) + "/libopenblas.so.0";
  if (openblas_get_parallel() != 2 && access(omp_lib.c_str(), R_OK) == 0) {
    const char* p = std::getenv("LD_LIBRARY_PATH");
    old_path = p ? p : "";
    const std::string path = std::string(TD_OPENBLAS_OPENMP_DIR) + (old_path.empty() ? "" : ":" + old_path);
    setenv("LD_LIBRARY_PATH", path.c_str(), 1);
    reexec = true;
  }
#endif
  bool set_core = false;
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    const std::string want = best_blas_coretype();
    const std::string have = blas_corename();
    if (!want.empty() && !(want == "SkylakeX" ? is_avx512_kernel(have) : is_avx2_kernel(have))) {
      setenv("OPENBLAS_CORETYPE", want.c_str(), 1);
      set_core = reexec = true;
    }
  }
  if (!reexec) return;
  setenv("TRAINDECK_BLAS_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);
  // exec failed: carry on with what is loaded, and leave the environment as it was.
  if (set_core) unsetenv("OPENBLAS_CORETYPE");
  unsetenv("TRAINDECK_BLAS_REEXEC");
}

}  // namespace td
