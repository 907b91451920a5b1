// The Gloo backend of Communicator (CPU ranks, TCP transport).
//
// Rendezvous: rank 0 serves the KvServer on TRAINDECK_MASTER_PORT; every rank connects a
// KvClient, registers its host name (HELLO) and waits for all ranks' "host/<r>" keys; then
// Gloo's full-mesh connect runs through the same store (keys prefixed "gloo/").
// Network interface: CommOptions::gloo_ifname, else TRAINDECK_GLOO_IFNAME, else 127.0.0.1 when
// the master address is a loopback one (all ranks on this machine), else this host's name.
// all_reduce is Gloo's ring all-reduce; reduce_scatter and all_gather are rings written here
// over Gloo's unbound buffers (Gloo's own all-gather needs equal chunks), with the same timeout.
// split(): the ranks exchange (color, key) through the store (split_plan in kv_store.h), then
// each group of two or more connects its own Gloo context (full mesh through the store under
// "gloo/split<n>/<color>", on the world's TCP device); the group's collectives are the same code
// on that context. A group names a lost rank by its world rank and host, as the world does.
#pragma once

#include <memory>

#include "engine/dist/communicator.h"

namespace td::dist {

/// Throws td::Error when the rendezvous fails (the message names the ranks that never arrived).
std::unique_ptr<Communicator> make_gloo_communicator(const DistEnv& env, const CommOptions& opt);

}  // namespace td::dist
