// The rendezvous: a small TCP key-value store served by rank 0, and its client, which implements
// Gloo's gloo::rendezvous::Store (set / get / wait with a timeout) so that Gloo's full-mesh
// connect (and later NCCL's unique id) travels through it.
//
// Wire protocol (one TCP connection per client; integers little-endian u32):
//   request  = op:u8  rank:u32  key_len:u32 key  value_len:u32 value
//   response = status:u8 (0 ok, 1 missing)  value_len:u32 value
// ops: SET (key = value), GET (value of key, or status 1), CHECK (key = '\n'-joined keys; ok when
// all are set, else value = the missing ones), HELLO (registers the connection as `rank`, value =
// host name), PING (a heartbeat), HEALTH (value = JSON of every rank's liveness), BYE (orderly
// close). Every request from a registered rank refreshes its heartbeat time.
//
// Liveness: each client sends a PING every second from a thread. The server keeps, per rank,
// the time of its last request and whether its connection closed without BYE (the process died).
// A rank whose last request is older than a few seconds is frozen (SIGSTOP, a hung node) or cut
// off. diagnose() turns this into "rank 1 (host h): ..." for the error a failed collective raises.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "engine/dist/communicator.h"
#include "engine/dist/env.h"

namespace td::dist {

/// The store's server. Listens on addr:port (addr "" or "0.0.0.0": all interfaces) and serves
/// on its own thread until destroyed. Throws td::Error when the port cannot be bound.
class KvServer {
 public:
  KvServer(const std::string& addr, int port, int world_size);
  ~KvServer();
  KvServer(const KvServer&) = delete;
  KvServer& operator=(const KvServer&) = delete;
  int port() const { return port_; }

 private:
  void serve();
  struct State;
  std::unique_ptr<State> st_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // self-pipe that ends serve()
  int port_ = 0;
  std::thread thread_;
};

/// Liveness of one rank as the server sees it.
struct RankHealth {
  int rank = 0;
  std::string host;       // from HELLO ("" if it never arrived)
  bool arrived = false;   // sent HELLO
  bool closed = false;    // its connection ended without BYE: the process is gone
  double silent_s = 0;    // seconds since its last request (heartbeats every second)
};

/// A client of KvServer; thread-safe (one request at a time over one connection).
/// Every call waits at most `timeout` for the server's answer and throws td::Error naming the
/// store's address when it does not come (rank 0 frozen or gone).
class KvClient : public gloo::rendezvous::Store {
 public:
  /// Connects to addr:port, retrying until `timeout` (rank 0 may start later than this rank).
  KvClient(const std::string& addr, int port, int rank, std::chrono::milliseconds timeout);
  ~KvClient() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  /// Waits (up to the timeout) for key, then returns its value.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  /// Throws td::Error listing the keys still missing when the timeout passes.
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;
  /// The keys of `keys` not yet set (one round trip).
  std::vector<std::string> missing(const std::vector<std::string>& keys);

  /// Registers this connection as the client's rank with its host name; starts the heartbeat
  /// thread (one PING per second).
  void hello(const std::string& host);
  /// Every rank's liveness (world_size entries).
  /// Every rank's liveness (world_size entries); waits at most `answer_within` for the store.
  std::vector<RankHealth> health(std::chrono::milliseconds answer_within = std::chrono::seconds(5));
  /// Orderly goodbye: the server will not report this rank as dead.
  void bye();
  const std::string& address() const { return where_; }

 private:
  // One request/response; throws td::Error on a broken connection or after timeout_.
  uint8_t request(uint8_t op, const std::string& key, const std::string& value, std::string* out,
                  std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  int fd_ = -1;
  int rank_ = 0;
  std::string where_;  // "addr:port" for messages
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::atomic<bool> stop_{false};
  std::thread heartbeat_;
};

/// The first step of every communicator between ranks (Gloo's and NCCL's): rank 0 serves the
/// store on env.master_port (port 0: any free port, for a world of one in tests); every rank
/// connects, sets "host/<rank>" to its host name, registers (HELLO, which starts its heartbeat)
/// and waits until every rank's key is there. Throws td::Error when they are not all there
/// within `timeout`: "rendezvous at ADDR:PORT timed out after T s: ranks 1, 2 of 3 never
/// arrived; ...". The server (rank 0 only) must outlive the other ranks' last requests.
struct Rendezvous {
  std::unique_ptr<KvServer> server;  // rank 0
  std::unique_ptr<KvClient> store;
  std::vector<std::string> hosts;    // host name of each rank
};
Rendezvous rendezvous(const DistEnv& env, std::chrono::milliseconds timeout);

/// The rank(s) that make a collective fail, from the store's liveness table, in rank order:
/// one that ended (its connection to the store closed without BYE: the process died), one not
/// responding (no heartbeat for more than 3 s: frozen, stopped or cut off), or, when the store
/// itself does not answer (and self_rank is not 0), rank 0. Asks again for up to 4 s while every
/// rank looks alive (the store may see a closed connection a moment after Gloo did); then
/// returns none. Never throws.
std::vector<LostRank> diagnose(KvClient* store, const std::vector<std::string>& hosts, int self_rank);

/// diagnose() for a collective of a split group (Communicator::split): `members` are the group's
/// world ranks, self_rank this rank's world rank. When one of the group's own members is at
/// fault only those are returned (a lost rank of another group is not this collective's cause);
/// otherwise everything diagnose() found. An empty `members` means the world: diagnose() as is.
std::vector<LostRank> diagnose_members(KvClient* store, const std::vector<std::string>& hosts, int self_rank,
                                       const std::vector<int>& members);

/// Who forms the group of one Communicator::split, computed alike on every rank (both
/// backends). Every rank of a communicator of `size` ranks (this one: `rank`; `world_ranks`: its
/// ranks' world ranks) sets "<prefix>/ck/<rank>" to its (color, key) and reads everyone's:
/// members = the ranks (of that communicator) whose color is this rank's, ordered by key, ties by
/// rank (MPI_Comm_split's order); index = this rank's place among them. Throws td::Error when a
/// rank's key is not there within `timeout`, or at once when the store shows one of world_ranks
/// ended (its message names the ranks missing).
struct SplitPlan {
  std::vector<int> members;
  int index = 0;
};
SplitPlan split_plan(KvClient& store, const std::string& prefix, int rank, const std::vector<int>& world_ranks, int color, int key,
                     std::chrono::milliseconds timeout);

/// The lost ranks as a failed collective's message names them: "rank 1 (host h) ended: its
/// connection to the rendezvous store closed; rank 2 (host g) is not responding: ..."; "" for none.
std::string describe(const std::vector<LostRank>& lost);

}  // namespace td::dist
