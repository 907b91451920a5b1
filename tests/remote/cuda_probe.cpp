// A stand-in for a CUDA build of the engine (issue 5 links CUDA later): a tiny program linked
// against the CUDA toolkit's libcudart and libcublas, bundled by test_remote_cuda with
// make_bundle. Whatever its arguments (make_bundle and deploy run `--version`), it prints the
// runtime and cuBLAS versions and the files they were loaded from, e.g.
//   cuda-probe
//   cudart=13000
//   cublas=13.0
//   cudart_path=/usr/local/cuda/lib64/libcudart.so.13
//   cublas_path=/usr/local/cuda/lib64/libcublas.so.13
// Neither call needs a GPU or a driver.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>

static const char* loaded_from(const char* symbol) {
  void* p = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "?";
}

int main() {
  int runtime = 0, major = 0, minor = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) return 3;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS) return 4;
  if (cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS) return 4;
  std::printf("cuda-probe\ncudart=%d\ncublas=%d.%d\ncudart_path=%s\ncublas_path=%s\n", runtime, major, minor,
              loaded_from("cudaRuntimeGetVersion"), loaded_from("cublasGetProperty"));
  return 0;
}
