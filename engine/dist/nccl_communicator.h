// The NCCL backend of Communicator (GPU ranks, one GPU each), as the engine sees it.
//
// The collectives themselves run in the CUDA module (cuda/nccl_communicator.cu: on the CUDA
// backend's stream, non-blocking NCCL with a watchdog that aborts a collective stuck longer
// than the timeout). This side does what needs no GPU, exactly as for Gloo: the rendezvous at
// rank 0's store (kv_store.h: host names, heartbeats), the exchange of NCCL's unique id through
// it (key "nccl/unique_id", set by rank 0), and, when a collective fails, the name of the rank
// at fault from the store's liveness table (diagnose()). NCCL's sockets use NCCL_SOCKET_IFNAME;
// when unset, CommOptions::gloo_ifname (train.dist_ifname) or TRAINDECK_GLOO_IFNAME if given.
// split(): the ranks exchange (color, key) through the store (split_plan in kv_store.h, so that
// each knows its group's members and hosts), then the module's ncclCommSplit; the group's
// collectives run on the same stream.
#pragma once

#include <memory>

#include "engine/dist/communicator.h"
#include "engine/ops/ops.h"

namespace td::dist {

/// The NCCL communicator of this rank on `backend` (a CUDA backend; it must outlive the
/// communicator). Collective over env's ranks. Throws td::Error when the rendezvous times out
/// (naming the ranks that never arrived), when rank 0 could not make the NCCL id (NCCL missing:
/// the message says what to install), or when NCCL cannot connect the ranks within
/// opt.timeout_s (naming the rank at fault when the store can tell).
std::unique_ptr<Communicator> make_nccl_communicator(Backend& backend, const DistEnv& env, const CommOptions& opt);

}  // namespace td::dist
