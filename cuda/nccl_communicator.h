// The NCCL communicator of the CUDA module (nccl_communicator.cu): td::dist::Communicator between
// GPU ranks, one GPU per rank, on the CUDA backend's own stream. The engine reaches it through
// two exported C functions, traindeck_nccl_unique_id and traindeck_create_nccl_communicator
// (declared in engine/ops/backend.h); the rendezvous, the exchange of the unique id and the
// naming of a dead rank happen on the engine's side (engine/dist/nccl_communicator.h).
#pragma once

#include <cuda_runtime.h>

#include "engine/ops/ops.h"

namespace td::cuda {

/// The stream and device ordinal of a CUDA backend made by this module (backend.cu); false, and
/// nothing written, when `backend` is not one.
bool backend_stream(Backend* backend, cudaStream_t* stream, int* ordinal);

}  // namespace td::cuda
