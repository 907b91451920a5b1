// Choosing a backend by device name: "cpu", "cuda" (device 0) or "cuda:N".
//
// The CUDA backend is a separate shared module, libtraindeck-cuda.so (cuda/), loaded with
// dlopen when a CUDA device is asked for. The engine itself therefore starts and trains on the
// CPU on machines without the CUDA libraries (and the Debian package needs none of NVIDIA's).
// The module is looked for, in order: $TRAINDECK_CUDA_MODULE (a path), the engine executable's
// folder, and <prefix>/lib/traindeck/ beside <prefix>/bin/. It must come from the same build
// (its ABI version is checked).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/ops/ops.h"

namespace td::dist {
class Communicator;
}

namespace td {

/// A parsed device string: kind "cpu" or "cuda", ordinal N of "cuda:N" (0 for "cuda").
struct DeviceSpec {
  std::string kind;
  int ordinal = 0;
};
/// Parses "cpu", "cuda", "cuda:N" (N >= 0). Throws td::Error naming the allowed forms.
DeviceSpec parse_device(const std::string& device);

/// The backend for `device`. Throws td::Error when the device string is malformed, when the
/// CUDA module is missing or from another build, or when the CUDA backend cannot start (no
/// device, driver too old, unsupported compute capability: the module's message says which).
std::unique_ptr<Backend> make_backend(const std::string& device);

/// Whether a CUDA backend could be created now (module found and at least one device); when
/// not, *why says what is missing. Never throws. For tests that skip without a GPU.
bool cuda_available(std::string* why = nullptr);

/// Where make_backend found (or would look for) the CUDA module: the path that loaded, or the
/// list of places tried.
std::string cuda_module_search_description();

/// A new NCCL unique id (kNcclUniqueIdBytes bytes), made by the CUDA module for rank 0 of a
/// world of GPU ranks to share. Throws td::Error when the module or NCCL is missing (the
/// message says what to install).
std::vector<unsigned char> nccl_unique_id();

/// The CUDA module's NCCL communicator for `backend` (made by make_backend for a CUDA device:
/// the communicator enqueues on its stream, so `backend` must outlive it), rank `rank` of
/// `world_size`, in the world of `id` (from rank 0's nccl_unique_id()). Connects the ranks
/// (collective: every rank calls it) within timeout_s seconds. It knows no host names (hosts()
/// is empty) and names no culprit: dist::make_nccl_communicator (engine/dist/nccl_communicator.h)
/// wraps it with the rendezvous. Throws td::Error when NCCL is missing or cannot connect.
std::unique_ptr<dist::Communicator> make_nccl_device_communicator(Backend& backend, int rank, int world_size,
                                                                  const std::vector<unsigned char>& id, double timeout_s);

/// The ABI version the engine and libtraindeck-cuda.so must share; bump it whenever ops.h or
/// activation_ops.def, the Backend class, dist::Communicator or the exported functions below change, and record it with
/// the headers' hash in engine/ops/backend_abi.txt (tests/engine/test_backend_abi.cpp fails until
/// then). 3: the NCCL communicator's functions. 4: the activation ops behind Backend::ops<Act>().
/// 5: the Llama ops (RMSNorm, SwiGLU, RoPE) and attention's NKV. 6: Communicator::split.
/// 7: the vocabulary-parallel cross-entropy, fused attention, the GEMM-epilogue GELU and the
/// multi-span AdamW ops, CommStats by collective kind (changed at 6 without a bump).
/// 8: the activation ops declared from activation_ops.def (the same virtuals, in the same order).
constexpr int kBackendAbiVersion = 8;

/// sizeof(ncclUniqueId) (NCCL_UNIQUE_ID_BYTES), without the engine needing nccl.h.
constexpr unsigned long kNcclUniqueIdBytes = 128;

}  // namespace td

/// The CUDA module's exported functions (cuda/backend.cu, cuda/nccl_communicator.cu). abi must be
/// kBackendAbiVersion; on failure they return null (or -1) with a message in err (NUL-terminated,
/// at most err_len bytes) and never throw.
extern "C" {
/// A new backend for device `ordinal`.
typedef td::Backend* (*TraindeckCreateCudaBackendFn)(int abi, int ordinal, char* err, unsigned long err_len);
/// Writes a new NCCL unique id to id (id_len = kNcclUniqueIdBytes); returns 0, or -1.
typedef int (*TraindeckNcclUniqueIdFn)(int abi, unsigned char* id, unsigned long id_len, char* err, unsigned long err_len);
/// A new NCCL communicator on `backend`'s GPU and stream (a backend the same module made).
typedef td::dist::Communicator* (*TraindeckCreateNcclCommunicatorFn)(int abi, td::Backend* backend, int rank, int world_size,
                                                                      const unsigned char* id, unsigned long id_len, double timeout_s,
                                                                      char* err, unsigned long err_len);
}
