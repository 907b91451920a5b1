// The data loader (loader.h): shuffled non-overlapping windows, disjoint per rank, pread,
// one micro batch prefetched on a thread.
#include "engine/data/loader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <chrono>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/rng.h"
#include "engine/data/manifest.h"
#include "engine/data/shard.h"

namespace td {
namespace fs = std::filesystem;
using json = nlohmann::json;

json LoaderState::to_json() const { return {{"epoch", epoch}, {"cursor", cursor}, {"micro", micro}}; }

LoaderState LoaderState::from_json(const json& j) {
  LoaderState s;
  try {
    s.epoch = j.at("epoch").get<uint64_t>();
    s.cursor = j.at("cursor").get<uint64_t>();
    s.micro = j.value("micro", uint64_t{0});
  } catch (const std::exception& e) {
    fail(std::string("data loader state in the checkpoint is malformed (") + e.what() +
         "): it needs integer fields epoch and cursor");
  }
  return s;
}

/// Windows of an epoch in the order they are read: Fisher–Yates shuffle of 0..n-1 driven by
/// splitmix64 seeded from (seed, epoch); j is drawn in [0, i] by a 128-bit multiply-shift.
std::vector<uint32_t> epoch_permutation(uint64_t n, uint64_t seed, uint64_t epoch) {
  std::vector<uint32_t> p(n);
  for (uint64_t i = 0; i < n; ++i) p[i] = static_cast<uint32_t>(i);
  // splitmix64 (td::Rng), the same order on every platform and standard library.
  Rng rng(seed);
  rng.set_state(rng.next_u64() ^ (epoch * 0xD1B54A32D192ED03ull));
  for (uint64_t i = n; i-- > 1;) {
    uint64_t r = rng.next_u64();
    uint64_t j = static_cast<uint64_t>((static_cast<unsigned __int128>(r) * (i + 1)) >> 64);
    std::swap(p[i], p[j]);
  }
  return p;
}

struct DataLoader::Impl {
  LoaderOptions opt;
  std::vector<ShardInfo> shards;
  std::vector<int> fds;
  std::vector<uint64_t> win_prefix;  // windows before shard s (size shards+1)
  uint64_t W = 0;                    // windows per epoch
  uint64_t G = 0;                    // windows per global batch
  uint64_t per_rank = 0;             // windows of one rank per step

  uint64_t epoch = 0, cursor = 0, micro = 0;
  std::vector<uint32_t> perm;
  uint64_t perm_epoch = UINT64_MAX;

  // Prefetch: the thread fills pf_* for pf_ids; pending while it works, ready when done.
  std::thread th;
  std::mutex m;
  std::condition_variable cv;
  bool stop = false, pending = false, ready = false;
  std::vector<uint64_t> pf_ids;
  std::vector<int32_t> pf_in, pf_tg;
  std::exception_ptr pf_err;
  uint64_t pf_bytes = 0;  // what the prefetched batch's reads cost (LoaderStats)
  double pf_seconds = 0;
  LoaderStats stats;      // of the batches returned so far

  ~Impl() {
    if (th.joinable()) {
      {
        std::lock_guard<std::mutex> g(m);
        stop = true;
      }
      cv.notify_all();
      th.join();
    }
    for (int fd : fds) ::close(fd);
  }

  std::vector<uint64_t> ids_at(uint64_t ep, uint64_t cur, uint64_t mi) {
    if (opt.shuffle && perm_epoch != ep) {
      perm = epoch_permutation(W, opt.seed, ep);
      perm_epoch = ep;
    }
    std::vector<uint64_t> ids(opt.micro_batch);
    uint64_t base = cur + static_cast<uint64_t>(opt.rank) * per_rank + mi * opt.micro_batch;
    for (int j = 0; j < opt.micro_batch; ++j) ids[j] = opt.shuffle ? perm[base + j] : base + j;
    return ids;
  }

  // inputs/targets (B, T): window w's tokens t[0..T] give inputs t[0..T-1], targets t[1..T].
  // Adds the bytes read to `bytes` and the reads' wall time to `seconds`.
  void fill(const std::vector<uint64_t>& ids, std::vector<int32_t>& in, std::vector<int32_t>& tg,
            std::vector<uint32_t>& tok, uint64_t& bytes, double& seconds) const {
    const auto t0 = std::chrono::steady_clock::now();
    const size_t T = static_cast<size_t>(opt.seq_len);
    in.resize(ids.size() * T);
    tg.resize(ids.size() * T);
    tok.resize(T + 1);
    for (size_t b = 0; b < ids.size(); ++b) {
      size_t s = static_cast<size_t>(std::upper_bound(win_prefix.begin(), win_prefix.end(), ids[b]) -
                                     win_prefix.begin()) - 1;
      uint64_t local = ids[b] - win_prefix[s];
      read_shard_tokens(shards[s], fds[s], local * T, T + 1, tok.data());
      bytes += (T + 1) * static_cast<uint64_t>(shards[s].width);
      for (size_t t = 0; t < T; ++t) {
        in[b * T + t] = static_cast<int32_t>(tok[t]);
        tg[b * T + t] = static_cast<int32_t>(tok[t + 1]);
      }
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void run() {
    std::vector<uint32_t> tok;
    std::unique_lock<std::mutex> l(m);
    for (;;) {
      cv.wait(l, [&] { return stop || (pending && !ready); });
      if (stop) return;
      std::vector<uint64_t> ids = pf_ids;
      l.unlock();
      std::exception_ptr err;
      uint64_t bytes = 0;
      double seconds = 0;
      try {
        fill(ids, pf_in, pf_tg, tok, bytes, seconds);
      } catch (...) {
        err = std::current_exception();
      }
      l.lock();
      pf_err = err;
      pf_bytes = bytes;
      pf_seconds = seconds;
      ready = true;
      cv.notify_all();
    }
  }

  // Waits for an in-flight prefetch and forgets it.
  void cancel_prefetch() {
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return !pending || ready; });
    pending = ready = false;
    pf_err = nullptr;
  }

  void request_prefetch() {
    std::vector<uint64_t> ids = ids_at(epoch, cursor, micro);
    {
      std::lock_guard<std::mutex> g(m);
      pf_ids = std::move(ids);
      pending = true;
      ready = false;
    }
    cv.notify_all();
  }

  void advance() {
    if (++micro == static_cast<uint64_t>(opt.grad_accum)) {
      micro = 0;
      cursor += G;
      if (cursor + G > W) {  // the rest of the epoch is less than a global batch: next epoch
        cursor = 0;
        ++epoch;
      }
    }
  }
};

DataLoader::DataLoader(const LoaderOptions& opt) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.opt = opt;
  if (opt.split != "train" && opt.split != "val")
    fail("data split '" + opt.split + "' is not known: use train or val");
  if (opt.seq_len < 1) fail("seq_len must be at least 1 (got " + std::to_string(opt.seq_len) + ")");
  if (opt.micro_batch < 1) fail("micro_batch must be at least 1 (got " + std::to_string(opt.micro_batch) + ")");
  if (opt.grad_accum < 1) fail("grad_accum must be at least 1 (got " + std::to_string(opt.grad_accum) + ")");
  if (opt.world_size < 1 || opt.rank < 0 || opt.rank >= opt.world_size)
    fail("rank " + std::to_string(opt.rank) + " is outside world_size " + std::to_string(opt.world_size));
  const DatasetManifest m = read_dataset_manifest(opt.dataset_dir);
  const uint64_t T = static_cast<uint64_t>(opt.seq_len);
  uint64_t tokens = 0;
  d.win_prefix.push_back(0);
  for (const DatasetManifest::Shard& s : m.split(opt.split)) {
    std::string path = (fs::path(opt.dataset_dir) / s.file).string();
    ShardInfo info = read_shard_header(path);
    if (opt.verify_checksums) verify_shard(info);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail_errno("cannot open shard", path);
    d.fds.push_back(fd);
    tokens += info.count;
    uint64_t n = info.count >= T + 1 ? (info.count - 1) / T : 0;
    d.win_prefix.push_back(d.win_prefix.back() + n);
    d.shards.push_back(std::move(info));
  }
  d.W = d.win_prefix.back();
  if (d.W == 0)
    fail("the " + opt.split + " split of '" + opt.dataset_dir + "' has " + std::to_string(tokens) +
         " tokens" + (d.shards.size() > 1 ? " in shards that are each" : "") +
         " shorter than one window (seq_len+1 = " + std::to_string(T + 1) +
         "): use a bigger corpus (or val_fraction) or a smaller seq_len");
  if (d.W > UINT32_MAX) fail("the split has more than 2^32 windows: use a larger seq_len");
  d.per_rank = static_cast<uint64_t>(opt.micro_batch) * opt.grad_accum;
  d.G = d.per_rank * opt.world_size;
  if (d.G > d.W)
    fail("the " + opt.split + " split of '" + opt.dataset_dir + "' has " + std::to_string(d.W) +
         " windows of seq_len+1 = " + std::to_string(T + 1) + " tokens, fewer than one global batch (" +
         "micro_batch*grad_accum*world_size = " + std::to_string(d.G) +
         "): use a bigger corpus (or val_fraction), a smaller batch or a smaller seq_len");
  d.th = std::thread([&d] { d.run(); });
  d.request_prefetch();
}

DataLoader::~DataLoader() = default;

void DataLoader::next_batch(std::vector<int32_t>& inputs, std::vector<int32_t>& targets) {
  Impl& d = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<uint64_t> ids = d.ids_at(d.epoch, d.cursor, d.micro);
  bool used = false;
  {
    std::unique_lock<std::mutex> l(d.m);
    if (d.pending && d.pf_ids == ids) {
      d.cv.wait(l, [&] { return d.ready; });
      d.stats.bytes_read += d.pf_bytes;
      d.stats.read_seconds += d.pf_seconds;
      d.pending = d.ready = false;
      if (d.pf_err) {
        std::exception_ptr e = d.pf_err;
        d.pf_err = nullptr;
        std::rethrow_exception(e);
      }
      inputs.swap(d.pf_in);
      targets.swap(d.pf_tg);
      used = true;
    }
  }
  if (!used) {
    d.cancel_prefetch();
    std::vector<uint32_t> tok;
    d.fill(ids, inputs, targets, tok, d.stats.bytes_read, d.stats.read_seconds);
  }
  d.stats.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  d.advance();
  d.request_prefetch();
}

LoaderStats DataLoader::stats() const { return impl_->stats; }

uint64_t DataLoader::num_windows() const { return impl_->W; }

std::vector<uint64_t> DataLoader::peek_window_ids() const {
  return impl_->ids_at(impl_->epoch, impl_->cursor, impl_->micro);
}

LoaderState DataLoader::state() const {
  LoaderState s;
  s.epoch = impl_->epoch;
  s.cursor = impl_->cursor;
  s.micro = impl_->micro;
  return s;
}

void DataLoader::restore(const LoaderState& s) {
  Impl& d = *impl_;
  if (s.micro >= static_cast<uint64_t>(d.opt.grad_accum))
    fail("data loader state has micro batch " + std::to_string(s.micro) + " but grad_accum is " +
         std::to_string(d.opt.grad_accum) + ": restore with the batch settings of the checkpoint");
  d.cancel_prefetch();
  d.epoch = s.epoch;
  d.cursor = s.cursor;
  d.micro = s.micro;
  if (d.cursor + d.G > d.W) {  // saved with other batch settings: continue at the next epoch
    d.cursor = 0;
    d.micro = 0;
    ++d.epoch;
  }
  d.request_prefetch();
}

void DataLoader::reset() { restore(LoaderState{}); }

int dataset_vocab_size(const std::string& dataset_dir) {
  return read_dataset_manifest(dataset_dir).vocab_size;
}

}  // namespace td
