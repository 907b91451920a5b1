// The CUDA backend: td::Backend (engine/ops/ops.h) on one NVIDIA GPU, built as the module
// libtraindeck-cuda.so that the engine loads with dlopen (engine/ops/backend.h). Its one
// exported symbol is traindeck_create_cuda_backend (bottom of this file).
//
// One non-blocking stream carries every kernel, GEMM and copy in order; download() and
// synchronize() are the only points where the host waits. The kernels are in the .cu files
// named in cuda/ops.h; the GEMMs in matmul.cu (cuBLASLt) and attention.cu (cuBLAS).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda/attention.h"
#include "cuda/common.cuh"
#include "cuda/matmul.h"
#include "cuda/nccl_communicator.h"
#include "cuda/ops.h"
#include "engine/common/error.h"
#include "engine/ops/backend.h"
#include "engine/ops/ops.h"

namespace td::cuda {

void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::string msg = std::string("CUDA error in ") + what + ": " + cudaGetErrorName(err) + " (" +
                    cudaGetErrorString(err) + ")";
  switch (err) {
    case cudaErrorMemoryAllocation:
      msg += "; lower train.micro_batch or the model size (traindeck-engine plan shows what a "
             "config needs)";
      break;
    case cudaErrorNoKernelImageForDevice:
      msg += "; this libtraindeck-cuda.so has no code for this GPU (built for sm_80 and sm_90 "
             "plus sm_90 PTX): update the NVIDIA driver or rebuild TrainDeck for this GPU";
      break;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
      msg += "; the GPU context is lost (a bug in TrainDeck's CUDA backend, or a faulty GPU: "
             "see nvidia-smi and dmesg for Xid errors); restart the run from its last checkpoint";
      break;
    default:
      break;
  }
  fail(msg);
}

namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;  // cuBLASLt + cuBLAS, Hopper's recommended size

std::string human_bytes(double bytes) {
  char buf[64];
  if (bytes >= double(1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ull << 20));
  return buf;
}

std::string cuda_version_string(int v) {  // 13000 -> "13.0"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string architecture_name(int cc) {
  if (cc >= 70 && cc < 75) return "Volta, e.g. V100";
  if (cc == 75) return "Turing, e.g. T4";
  if (cc >= 60 && cc < 70) return "Pascal, e.g. P100";
  if (cc >= 50 && cc < 60) return "Maxwell";
  return "older than Maxwell";
}

// Checks that device `ordinal` can run this module; returns its properties or throws td::Error
// saying what is missing (driver, device, driver version, compute capability).
cudaDeviceProp probe_device(int ordinal) {
  const std::string cpu_hint = "use train.device=\"cpu\"";
  int driver = 0;
  cudaError_t e = cudaDriverGetVersion(&driver);
  if (e != cudaSuccess || driver == 0)
    fail(std::string("no CUDA device: no NVIDIA driver found (") +
         (e != cudaSuccess ? cudaGetErrorString(e) : "libcuda.so.1 is not installed") +
         "); is the NVIDIA driver loaded (nvidia-smi)? " + cpu_hint);
  const std::string too_old =
      "the NVIDIA driver here supports CUDA up to " + cuda_version_string(driver) +
      ", but TrainDeck's CUDA backend uses the CUDA " + cuda_version_string(CUDART_VERSION) +
      " runtime, which needs driver version 580 or newer; update the NVIDIA driver, or " + cpu_hint;
  // Minor version compatibility: any CUDA 13.x driver runs a CUDA 13.y runtime (the GPU code is
  // precompiled SASS for sm_80 and sm_90), so only the major version must match.
  if (driver / 1000 < CUDART_VERSION / 1000) fail(too_old);
  int count = 0;
  e = cudaGetDeviceCount(&count);
  if (e == cudaErrorInsufficientDriver) fail(too_old);
  if (e != cudaSuccess || count == 0)
    fail(std::string("no CUDA device: ") +
         (e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports no GPU") +
         "; is the NVIDIA driver loaded (nvidia-smi)? " + cpu_hint);
  if (ordinal < 0 || ordinal >= count)
    fail("cuda:" + std::to_string(ordinal) + " asked for but this machine has " +
         std::to_string(count) + (count == 1 ? " GPU" : " GPUs") + " (cuda:0" +
         (count > 1 ? " to cuda:" + std::to_string(count - 1) : std::string()) + ")");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
  const int cc = prop.major * 10 + prop.minor;
  if (cc < 80)
    fail(std::string(prop.name) + " has compute capability " + std::to_string(prop.major) + "." +
         std::to_string(prop.minor) + " (" + architecture_name(cc) + "): " +
         (cc < 75 ? "CUDA 13 cannot build for sm_" + std::to_string(cc) + " and " : std::string()) +
         "TrainDeck's CUDA backend needs 8.0 or newer (A100, H100, H200); train on the CPU "
         "(train.device=\"cpu\") or a newer GPU");
  return prop;
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int ordinal) : ordinal_(ordinal), prop_(probe_device(ordinal)) {
    try {
      bind();
      check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      workspace_ = raw_alloc(kWorkspaceBytes, false);
      TD_CUBLAS_CHECK(cublasCreate(&blas_));
      // cublasSetStream resets the workspace to cuBLAS's own pool: set the stream first.
      TD_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
      TD_CUBLAS_CHECK(cublasSetWorkspace(blas_, workspace_, kWorkspaceBytes));
      // No TF32 (fp32 stays fp32 for the parity test); bf16 split-K sums in fp32.
      TD_CUBLAS_CHECK(cublasSetMathMode(
          blas_, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
      TD_CUBLAS_CHECK(cublasLtCreate(&lt_));
      matmul_ = std::make_unique<Matmul>(blas_, lt_, workspace_, kWorkspaceBytes);
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaBackend() override { release(); }

  std::string name() const override { return "cuda:" + std::to_string(ordinal_); }
  // For the NCCL communicator (nccl_communicator.cu), which enqueues on this same stream.
  cudaStream_t stream() const { return stream_; }
  int ordinal() const { return ordinal_; }

  bool supports(Op op, DType dtype) const override {
    switch (op) {
      case Op::kAdamW:
      case Op::kGradNormSquared:
      case Op::kScale:
        return dtype == DType::kF32;
      case Op::kConvert:
        return dtype == DType::kBF16;
      case Op::kCount:
        return false;
      default:
        return dtype == DType::kF32 || dtype == DType::kBF16;
    }
  }

  DeviceInfo device_info() const override {
    DeviceInfo d;
    d.name = prop_.name;
    d.compute_capability = prop_.major * 10 + prop_.minor;
    d.memory_total = prop_.totalGlobalMem;
    // The runtime's own figures: free counts every process's allocations and this process's
    // context and library workspaces; total is what the driver makes available (it can be a
    // little below totalGlobalMem). Unreadable: free stays 0 and total the property.
    size_t free_bytes = 0, total_bytes = 0;
    bind();
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      d.memory_total = total_bytes;
      d.memory_free = free_bytes;
    } else {
      (void)cudaGetLastError();  // clear the (non-sticky) error so that the next check is not blamed
    }
    d.memory_allocated = allocated_;
    d.memory_peak = peak_;
    // The device's PCI address, which names the same GPU in NVML whatever CUDA's numbering
    // (the telemetry's exact mapping, engine/metrics/nvml.h telemetry_device).
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal_) == cudaSuccess) d.pci_bus_id = bus;
    return d;  // peak_bf16_tflops: filled by the engine from its device catalogue
  }

  // ---- memory ----
  void* alloc(size_t bytes) override {
    bind();
    return raw_alloc(bytes, true);
  }
  // Never throws (it runs in destructors): a failure is printed; the next op reports it too.
  void free(void* p) override {
    if (!p) return;
    if (cudaSetDevice(ordinal_) != cudaSuccess) return;
    raw_free(p);
  }
  void upload(void* dst, const void* src_host, size_t bytes) override {
    if (bytes == 0) return;
    bind();
    // From pageable memory the copy is staged before this returns: src_host may be reused.
    check(cudaMemcpyAsync(dst, src_host, bytes, cudaMemcpyHostToDevice, stream_), "upload (cudaMemcpyAsync)");
  }
  void download(void* dst_host, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    bind();
    check(cudaMemcpyAsync(dst_host, src, bytes, cudaMemcpyDeviceToHost, stream_), "download (cudaMemcpyAsync)");
    check(cudaStreamSynchronize(stream_), "download (cudaStreamSynchronize)");
  }
  void zero(void* p, size_t bytes) override {
    if (bytes == 0) return;
    bind();
    check(cudaMemsetAsync(p, 0, bytes, stream_), "zero (cudaMemsetAsync)");
  }
  void synchronize() override {
    bind();
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  // ---- optimizer ops (fp32) ----
  void convert(bf16* dst, const float* src, size_t n) override {
    if (n == 0) return;
    bind();
    td::cuda::convert_to_bf16(dev(dst), src, n, stream_);
  }
  void adamw(float* params, const float* grads, float* m, float* v, const AdamWSpan* spans, size_t n_spans, float lr,
             float beta1, float beta2, float eps, float weight_decay, int t) override {
    if (n_spans == 0) return;
    bind();
    td::cuda::adamw(params, grads, m, v, spans, n_spans, lr, beta1, beta2, eps, weight_decay, t, stream_);
  }
  // The kernel writes fp32 partial sums in a fixed order; they are added here in double.
  double grad_norm_squared(const float* g, size_t n) override {
    if (n == 0) return 0.0;
    bind();
    const size_t count = td::cuda::grad_norm_partials_count(n);
    float* partials = static_cast<float*>(scratch(count * sizeof(float)));
    td::cuda::grad_norm_partials(partials, g, n, stream_);
    std::vector<float> host(count);
    download(host.data(), partials, count * sizeof(float));
    double sum = 0.0;
    for (float p : host) sum += (double)p;
    return sum;
  }
  void scale(float* x, float s, size_t n) override {
    if (n == 0) return;
    bind();
    td::cuda::scale(x, s, n, stream_);
  }

 private:
  // Makes this backend's GPU current for the calling thread (cheap when it already is); a
  // process may hold backends for several GPUs.
  void bind() const { check(cudaSetDevice(ordinal_), "cudaSetDevice"); }

  // cudaMalloc, counted in allocated/peak; zeroed on the stream when zero is set.
  void* raw_alloc(size_t bytes, bool zero) {
    const size_t n = bytes == 0 ? 1 : bytes;
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: clear it so the next call does not see it
      fail("out of GPU memory on " + std::string(prop_.name) + ": asked for " + human_bytes((double)n) +
           " with " + human_bytes((double)allocated_) + " already allocated of " +
           human_bytes((double)prop_.totalGlobalMem) +
           "; lower train.micro_batch or the model size (traindeck-engine plan shows what a "
           "config needs)");
    }
    check(e, "cudaMalloc");
    if (zero) {
      const cudaError_t z = cudaMemsetAsync(p, 0, n, stream_);
      if (z != cudaSuccess) {
        cudaFree(p);
        check(z, "cudaMemsetAsync (zeroing new memory)");
      }
    }
    sizes_[p] = n;
    allocated_ += n;
    if (allocated_ > peak_) peak_ = allocated_;
    return p;
  }
  // Waits for the stream (kernels may still read p), frees p, uncounts it. Never throws.
  void raw_free(void* p) noexcept {
    cudaError_t e = stream_ ? cudaStreamSynchronize(stream_) : cudaSuccess;
    const cudaError_t f = cudaFree(p);
    if (e == cudaSuccess) e = f;
    if (e != cudaSuccess)
      std::fprintf(stderr, "traindeck: CUDA backend: freeing GPU memory failed: %s\n",
                   cudaGetErrorString(e));
    auto it = sizes_.find(p);
    if (it != sizes_.end()) {
      allocated_ -= it->second;
      sizes_.erase(it);
    }
  }
  // The one scratch buffer the ops share (layernorm partials, attention's scores, bias and
  // grad-norm partials). Ops run one after another on the stream, so one buffer serves all;
  // it grows to the largest request and is counted in allocated/peak.
  void* scratch(size_t bytes) {
    if (bytes <= scratch_bytes_) return scratch_;
    if (scratch_) {
      void* old = scratch_;
      scratch_ = nullptr;
      scratch_bytes_ = 0;
      raw_free(old);
    }
    const size_t rounded = (bytes + (size_t(1) << 20) - 1) & ~((size_t(1) << 20) - 1);
    scratch_ = raw_alloc(rounded, false);
    scratch_bytes_ = rounded;
    return scratch_;
  }
  void release() noexcept {
    if (cudaSetDevice(ordinal_) != cudaSuccess) return;
    if (stream_) cudaStreamSynchronize(stream_);
    matmul_.reset();
    if (lt_) cublasLtDestroy(lt_);
    if (blas_) cublasDestroy(blas_);
    lt_ = nullptr;
    blas_ = nullptr;
    // Everything still allocated (scratch, workspace, buffers the engine did not free).
    for (auto& [p, n] : sizes_) cudaFree(p);
    sizes_.clear();
    allocated_ = 0;
    scratch_ = workspace_ = nullptr;
    scratch_bytes_ = 0;
    if (stream_) cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }

  // The activation ops, once for both element types Act = float or td::bf16 (dev() gives the
  // device type the launchers take). They enqueue on the backend's stream.
  template <class Act>
  class Ops final : public ActivationOps<Act> {
   public:
    explicit Ops(CudaBackend& be) : be_(be) {}
    void encoder_forward(Act* out, const int32_t* inp, const Act* wte, const Act* wpe, int B, int T, int C) override {
      be_.bind();
      td::cuda::encoder_forward(dev(out), inp, dev(wte), dev(wpe), B, T, C, be_.stream_);
    }
    void encoder_backward(float* dwte, float* dwpe, const Act* dout, const int32_t* inp, int B, int T, int C) override {
      be_.bind();
      td::cuda::encoder_backward(dwte, dwpe, dev(dout), inp, B, T, C, be_.stream_);
    }
    void layernorm_forward(Act* out, float* mean, float* rstd, const Act* inp, const Act* weight, const Act* bias, int N, int C) override {
      be_.bind();
      td::cuda::layernorm_forward(dev(out), mean, rstd, dev(inp), dev(weight), dev(bias), N, C, be_.stream_);
    }
    void layernorm_backward(Act* dinp, float* dweight, float* dbias, const Act* dout, const Act* inp, const Act* weight, const float* mean, const float* rstd, int N, int C) override {
      be_.bind();
      float* s = static_cast<float*>(be_.scratch(td::cuda::layernorm_backward_scratch_floats(N, C) * sizeof(float)));
      td::cuda::layernorm_backward(dev(dinp), dweight, dbias, dev(dout), dev(inp), dev(weight), mean, rstd, N, C, s, be_.stream_);
    }
    void rmsnorm_forward(Act* out, float* rstd, const Act* inp, const Act* weight, int N, int C, float eps) override {
      be_.bind();
      td::cuda::rmsnorm_forward(dev(out), rstd, dev(inp), dev(weight), N, C, eps, be_.stream_);
    }
    void rmsnorm_backward(Act* dinp, float* dweight, const Act* dout, const Act* inp, const Act* weight, const float* rstd, int N, int C) override {
      be_.bind();
      float* s = static_cast<float*>(be_.scratch(td::cuda::rmsnorm_backward_scratch_floats(N, C) * sizeof(float)));
      td::cuda::rmsnorm_backward(dev(dinp), dweight, dev(dout), dev(inp), dev(weight), rstd, N, C, s, be_.stream_);
    }
    void matmul_forward(Act* out, const Act* inp, const Act* weight, const Act* bias, int N, int C, int OC) override {
      be_.bind();
      be_.matmul_->forward(dev(out), dev(inp), dev(weight), dev(bias), N, C, OC, be_.stream_);
    }
    void matmul_backward(Act* dinp, float* dweight, float* dbias, const Act* dout, const Act* inp, const Act* weight, int N, int C, int OC,
                         bool overwrite_dinp) override {
      be_.bind();
      void* s = dbias ? be_.scratch(Matmul::backward_scratch_bytes(N, OC)) : nullptr;
      be_.matmul_->backward(dev(dinp), dweight, dbias, dev(dout), dev(inp), dev(weight), N, C, OC, s, be_.stream_, overwrite_dinp);
    }
    void matmul_gelu_forward(Act* out, Act* pre, const Act* inp, const Act* weight, const Act* bias, int N, int C,
                             int OC) override {
      be_.bind();
      be_.matmul_->forward_gelu(dev(out), dev(pre), dev(inp), dev(weight), dev(bias), N, C, OC, be_.stream_);
    }
    void matmul_backward_dgelu(Act* dpre, float* dweight, float* dbias, const Act* dout, const Act* inp,
                               const Act* weight, const Act* pre, int N, int C, int OC) override {
      be_.bind();
      void* s = dbias ? be_.scratch(Matmul::backward_scratch_bytes(N, OC)) : nullptr;
      be_.matmul_->backward_dgelu(dev(dpre), dweight, dbias, dev(dout), dev(inp), dev(weight), dev(pre), N, C, OC, s,
                                  be_.stream_);
    }
    void attention_forward(Act* out, Act* att, const Act* qkv, int B, int T, int C, int NH, int NKV) override {
      be_.bind();
      const size_t bytes = attention_scratch_bytes(B, T, C, NH, sizeof(Act), false);
      void* s = be_.scratch(bytes);
      td::cuda::attention_forward(be_.blas_, dev(out), dev(att), dev(qkv), B, T, C, NH, NKV, s, bytes, be_.stream_);
    }
    void attention_backward(Act* dqkv, const Act* dout, const Act* qkv, const Act* att, int B, int T, int C, int NH, int NKV) override {
      be_.bind();
      const size_t bytes = attention_scratch_bytes(B, T, C, NH, sizeof(Act), true);
      void* s = be_.scratch(bytes);
      td::cuda::attention_backward(be_.blas_, dev(dqkv), dev(dout), dev(qkv), dev(att), B, T, C, NH, NKV, s, bytes, be_.stream_);
    }
    void flash_attention_forward(Act* out, float* lse, const Act* qkv, int B, int T, int C, int NH, int NKV) override {
      be_.bind();
      td::cuda::flash_attention_forward(dev(out), lse, dev(qkv), B, T, C, NH, NKV, be_.stream_);
    }
    void flash_attention_backward(Act* dqkv, const Act* dout, const Act* qkv, const Act* out, const float* lse, int B,
                                  int T, int C, int NH, int NKV) override {
      be_.bind();
      const size_t bytes = flash_attention_scratch_bytes(B, T, NH);
      void* s = be_.scratch(bytes);
      td::cuda::flash_attention_backward(dev(dqkv), dev(dout), dev(qkv), dev(out), lse, B, T, C, NH, NKV, s, bytes,
                                         be_.stream_);
    }
    void gelu_forward(Act* out, const Act* inp, size_t N) override {
      if (N == 0) return;
      be_.bind();
      td::cuda::gelu_forward(dev(out), dev(inp), N, be_.stream_);
    }
    void gelu_backward(Act* dinp, const Act* inp, const Act* dout, size_t N) override {
      if (N == 0) return;
      be_.bind();
      td::cuda::gelu_backward(dev(dinp), dev(inp), dev(dout), N, be_.stream_);
    }
    void swiglu_forward(Act* out, const Act* inp, int N, int F) override {
      be_.bind();
      td::cuda::swiglu_forward(dev(out), dev(inp), N, F, be_.stream_);
    }
    void swiglu_backward(Act* dinp, const Act* inp, const Act* dout, int N, int F) override {
      be_.bind();
      td::cuda::swiglu_backward(dev(dinp), dev(inp), dev(dout), N, F, be_.stream_);
    }
    void rope_forward(Act* qkv, int B, int T, int NH, int NKV, int hs, float theta) override {
      be_.bind();
      td::cuda::rope_forward(dev(qkv), B, T, NH, NKV, hs, theta, be_.stream_);
    }
    void rope_backward(Act* dqkv, int B, int T, int NH, int NKV, int hs, float theta) override {
      be_.bind();
      td::cuda::rope_backward(dev(dqkv), B, T, NH, NKV, hs, theta, be_.stream_);
    }
    void residual_forward(Act* out, const Act* a, const Act* b, size_t N) override {
      if (N == 0) return;
      be_.bind();
      td::cuda::residual_forward(dev(out), dev(a), dev(b), N, be_.stream_);
    }
    void softmax_cross_entropy(float* losses, Act* dlogits, const Act* logits, const int32_t* targets, int N, int V, float grad_scale) override {
      be_.bind();
      td::cuda::softmax_cross_entropy(losses, dev(dlogits), dev(logits), targets, N, V, grad_scale, be_.stream_);
    }
    void cross_entropy_shard_stats(float* lse, float* target_logit, const Act* logits, const int32_t* targets, int N, int V,
                                   int v0) override {
      be_.bind();
      td::cuda::cross_entropy_shard_stats(lse, target_logit, dev(logits), targets, N, V, v0, be_.stream_);
    }
    void cross_entropy_shard_backward(Act* dlogits, const Act* logits, const float* lse, const int32_t* targets, int N, int V,
                                      int v0, float grad_scale) override {
      be_.bind();
      td::cuda::cross_entropy_shard_backward(dev(dlogits), dev(logits), lse, targets, N, V, v0, grad_scale, be_.stream_);
    }

   private:
    CudaBackend& be_;
  };

 protected:
  ActivationOps<float>& ops_f32() override { return f32_; }
  ActivationOps<bf16>& ops_bf16() override { return bf16_; }

 private:
  const int ordinal_;
  const cudaDeviceProp prop_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;  // kWorkspaceBytes, shared by cuBLAS and cuBLASLt
  std::unique_ptr<Matmul> matmul_;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::unordered_map<void*, size_t> sizes_;  // every live cudaMalloc of this backend
  uint64_t allocated_ = 0;
  uint64_t peak_ = 0;
  Ops<float> f32_{*this};
  Ops<bf16> bf16_{*this};
};

}  // namespace

bool backend_stream(Backend* backend, cudaStream_t* stream, int* ordinal) {
  auto* b = dynamic_cast<CudaBackend*>(backend);
  if (!b) return false;
  *stream = b->stream();
  *ordinal = b->ordinal();
  return true;
}

}  // namespace td::cuda

/// Creates the backend for GPU `ordinal` (see engine/ops/backend.h). Never throws: a failure
/// returns null with the reason in err (NUL-terminated, truncated to err_len bytes).
extern "C" __attribute__((visibility("default"))) td::Backend* traindeck_create_cuda_backend(
    int abi, int ordinal, char* err, unsigned long err_len) {
  auto set_error = [err, err_len](const std::string& msg) {
    if (err && err_len > 0) std::snprintf(err, err_len, "%s", msg.c_str());
  };
  if (abi != td::kBackendAbiVersion) {
    set_error("libtraindeck-cuda.so is from another TrainDeck build (backend ABI " +
              std::to_string(td::kBackendAbiVersion) + ", the engine's is " + std::to_string(abi) +
              "); install the module built with this engine, or set TRAINDECK_CUDA_MODULE to it");
    return nullptr;
  }
  try {
    return new td::cuda::CudaBackend(ordinal);
  } catch (const std::exception& e) {
    set_error(e.what());
  } catch (...) {
    set_error("the CUDA backend could not start (unknown error)");
  }
  return nullptr;
}
