// bench_upload: a file of random bytes uploaded over loopback to a private sshd, by td_remote's
// upload() (several pipelining depths) and by OpenSSH's sftp in batch mode, in the same run and
// with the same cipher and MAC (libssh2 1.10 has no AES-GCM, ChaCha20 or -etm MACs). Prints
// MB/s (1 MB = 1e6 bytes, connect + auth + transfer) and the ratio to OpenSSH (target >= 0.8).
// Then the same through one jump host (a second sshd as the target, reached through the first:
// two SSH hops, the inner one inside a direct-tcpip channel of the outer): connect_via beside
// OpenSSH's `sftp -J`, both hops with the same cipher and MAC; prints jump vs sftp -J and jump
// vs direct (target: a deploy through a jump costs about what a direct one does).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>

#include "remote/session.h"
#include "remote/sftp.h"
#include "sshd_fixture.h"

using namespace td::remote;
using td::remote::testing::run_cmd;
namespace fs = std::filesystem;

namespace {
constexpr const char* kCipher = "aes128-ctr";
constexpr const char* kMac = "hmac-sha2-256";
constexpr int kRounds = 3;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds (user + system) of this process (all threads), or of its waited-for children
// and their descendants (sftp and the ssh processes it starts): the client's cost of a
// transfer, which a machine busy with other work does not change the way it changes MB/s.
double cpu_s(int who) {
  rusage u{};
  getrusage(who, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}
}  // namespace

int main(int argc, char** argv) {
  const uint64_t mb = argc > 1 ? std::stoull(argv[1]) : 200;
  const bool jump_only = argc > 2 && std::string(argv[2]) == "--jump-only";  // only the jump-host rounds
  const uint64_t size = mb * 1000 * 1000;
  testing::SshdFixture sshd;
  if (!sshd.start(false)) {
    std::fprintf(stderr, "bench_upload: %s\n", sshd.skip_reason.c_str());
    return 1;
  }
  const fs::path local = sshd.dir / "payload.bin";
  {
    std::mt19937_64 rng(1);
    std::vector<uint64_t> buf((size + 7) / 8);
    for (auto& v : buf) v = rng();
    std::ofstream(local, std::ios::binary).write(reinterpret_cast<const char*>(buf.data()), size);
  }
  ConnectOptions o;
  o.host = "127.0.0.1";
  o.port = sshd.port;
  o.user = sshd.user;
  o.known_hosts = sshd.known_hosts;
  o.ciphers = kCipher;
  o.macs = kMac;
  o.timeout_ms = 60000;
  { Session::connect(o).accept_host_key(); }

  auto lib_upload = [&](size_t buffer_bytes, bool verify = false) {
    const std::string remote = (sshd.dir / "lib.bin").string();
    fs::remove(remote);
    const double t0 = now_s();
    Session s = Session::open(o, Auth::key(sshd.user_key));
    TransferOptions t;
    t.skip_same = false;
    t.verify = verify;
    t.buffer_bytes = buffer_bytes;
    upload(s, local, remote, t);
    const double dt = now_s() - t0;
    if (fs::file_size(remote) != size) {
      std::fprintf(stderr, "bench_upload: wrong size after upload\n");
      std::exit(1);
    }
    return size / dt / 1e6;
  };
  auto openssh_upload = [&] {
    const std::string remote = (sshd.dir / "openssh.bin").string();
    fs::remove(remote);
    const std::string batch = (sshd.dir / "batch").string();
    std::ofstream(batch) << "put " << local.string() << " " << remote << "\n";
    const double t0 = now_s();
    std::string out;
    int rc = run_cmd({"sftp", "-q", "-b", batch, "-c", kCipher, "-o", std::string("MACs=") + kMac, "-i", sshd.user_key,
                      "-P", std::to_string(sshd.port), "-o", "BatchMode=yes", "-o", "UserKnownHostsFile=" + sshd.known_hosts,
                      "-o", "StrictHostKeyChecking=yes", sshd.user + "@127.0.0.1"}, &out);
    const double dt = now_s() - t0;
    if (rc != 0 || fs::file_size(remote) != size) {
      std::fprintf(stderr, "bench_upload: sftp failed: %s\n", out.c_str());
      std::exit(1);
    }
    return size / dt / 1e6;
  };

  const size_t default_buffer = TransferOptions{}.buffer_bytes;
  if (!jump_only) {
    std::printf("upload of %llu MB over loopback, %s + %s, connect + auth + transfer, best of %d rounds\n",
                static_cast<unsigned long long>(mb), kCipher, kMac, kRounds);
    // Interleaved rounds (best of each), so that a busy moment on a shared machine hits all alike.
    const std::vector<size_t> buffers = {size_t(256) << 10, size_t(1) << 20, size_t(2) << 20, size_t(4) << 20};
    std::vector<double> lib_best(buffers.size(), 0.0);
    double ssh_best = 0;
    for (int round = 0; round < kRounds; ++round) {
      ssh_best = std::max(ssh_best, openssh_upload());
      for (size_t i = 0; i < buffers.size(); ++i) lib_best[i] = std::max(lib_best[i], lib_upload(buffers[i]));
    }
    std::printf("  OpenSSH sftp (batch)             %8.1f MB/s\n", ssh_best);
    double lib_default = 0;
    for (size_t i = 0; i < buffers.size(); ++i) {
      std::printf("  td_remote upload, %5zu KiB buffer %8.1f MB/s  (%.2fx OpenSSH)%s\n", buffers[i] >> 10, lib_best[i],
                  lib_best[i] / ssh_best, buffers[i] == default_buffer ? "  <- default" : "");
      if (buffers[i] == default_buffer) lib_default = lib_best[i];
    }
    const double verified = lib_upload(default_buffer, true);
    std::printf("  td_remote upload, default, verify=true (sha256 on both sides) %.1f MB/s (one run)\n", verified);
    {  // Downloads, for checkpoints later (one run each; informative).
      const fs::path back = sshd.dir / "back.bin";
      fs::remove(back);
      double t0 = now_s();
      Session s = Session::open(o, Auth::key(sshd.user_key));
      TransferOptions t;
      t.skip_same = false;
      t.verify = false;
      download(s, (sshd.dir / "lib.bin").string(), back, t);
      const double lib_dl = size / (now_s() - t0) / 1e6;
      const std::string batch = (sshd.dir / "batch_get").string();
      std::ofstream(batch) << "get " << (sshd.dir / "openssh.bin").string() << " " << (sshd.dir / "back2.bin").string() << "\n";
      t0 = now_s();
      run_cmd({"sftp", "-q", "-b", batch, "-c", kCipher, "-o", std::string("MACs=") + kMac, "-i", sshd.user_key,
               "-P", std::to_string(sshd.port), "-o", "BatchMode=yes", "-o", "UserKnownHostsFile=" + sshd.known_hosts,
               sshd.user + "@127.0.0.1"});
      const double ssh_dl = size / (now_s() - t0) / 1e6;
      std::printf("  download: td_remote %.1f MB/s, OpenSSH sftp %.1f MB/s (%.2fx, one run each)\n", lib_dl, ssh_dl,
                  lib_dl / ssh_dl);
    }
    std::printf("ratio td_remote (default buffer) / OpenSSH: %.2f (target >= 0.80)\n", lib_default / ssh_best);
  }  // !jump_only

  // Through one jump host: `sshd` is the jump host, a second sshd the target (OpenSSH refuses a
  // jump host that is its own target: "jumphost loop"). OpenSSH reads both hops' settings from
  // one config file (ProxyJump passes -F down to the ssh it starts for the jump); both sides
  // use one known_hosts file with both host keys, and each sshd's own user key.
  testing::SshdFixture target;
  if (!target.start(false)) {
    std::fprintf(stderr, "bench_upload: %s\n", target.skip_reason.c_str());
    return 1;
  }
  const std::string known = (sshd.dir / "known_hosts_both").string();
  fs::copy_file(sshd.known_hosts, known, fs::copy_options::overwrite_existing);
  ConnectOptions jo = o, to = o;
  jo.known_hosts = to.known_hosts = known;
  to.port = target.port;
  { Session::connect(to).accept_host_key(); }
  const std::string cfg = (sshd.dir / "ssh_config_bench").string();
  std::ofstream(cfg) << "Host *\n  User " << sshd.user << "\n  IdentityFile " << sshd.user_key << "\n  IdentityFile "
                     << target.user_key << "\n  UserKnownHostsFile " << known << "\n  StrictHostKeyChecking yes\n"
                     << "  BatchMode yes\n  Ciphers " << kCipher << "\n  MACs " << kMac << "\n";
  const fs::path target_dir = target.dir / "uploads";
  fs::create_directories(target_dir);
  auto lib_jump_upload = [&] {
    const std::string remote = (target_dir / "lib_jump.bin").string();
    fs::remove(remote);
    const double t0 = now_s();
    auto jump = std::make_unique<Session>(Session::open(jo, Auth::key(sshd.user_key)));
    Session s = Session::connect_via(std::move(jump), to);
    s.authenticate(Auth::key(target.user_key));
    TransferOptions t;
    t.skip_same = false;
    t.verify = false;
    upload(s, local, remote, t);
    const double dt = now_s() - t0;
    if (fs::file_size(remote) != size) {
      std::fprintf(stderr, "bench_upload: wrong size after the upload through the jump host\n");
      std::exit(1);
    }
    return size / dt / 1e6;
  };
  auto openssh_jump_upload = [&] {
    const std::string remote = (target_dir / "openssh_jump.bin").string();
    fs::remove(remote);
    const std::string batch = (sshd.dir / "batch_jump").string();
    std::ofstream(batch) << "put " << local.string() << " " << remote << "\n";
    const double t0 = now_s();
    std::string out;
    int rc = run_cmd({"sftp", "-q", "-F", cfg, "-b", batch, "-J", sshd.user + "@127.0.0.1:" + std::to_string(sshd.port),
                      "-P", std::to_string(target.port), target.user + "@127.0.0.1"}, &out);
    const double dt = now_s() - t0;
    std::error_code ec;
    if (rc != 0 || fs::file_size(remote, ec) != size) {
      std::fprintf(stderr, "bench_upload: sftp -J failed: %s\n", out.c_str());
      std::exit(1);
    }
    return size / dt / 1e6;
  };
  // Best MB/s and least client CPU per MB of each, over interleaved rounds.
  struct Best {
    double mbps = 0, cpu_ms_per_mb = 1e30;
    void add(double rate, double cpu, uint64_t bytes) {
      mbps = std::max(mbps, rate);
      cpu_ms_per_mb = std::min(cpu_ms_per_mb, 1000.0 * cpu / (bytes / 1e6));
    }
  };
  Best lib_jump, ssh_jump, lib_direct, ssh_direct;
  for (int round = 0; round < kRounds; ++round) {
    double c = cpu_s(RUSAGE_CHILDREN);
    double r = openssh_jump_upload();
    ssh_jump.add(r, cpu_s(RUSAGE_CHILDREN) - c, size);
    c = cpu_s(RUSAGE_SELF);
    r = lib_jump_upload();
    lib_jump.add(r, cpu_s(RUSAGE_SELF) - c, size);
    c = cpu_s(RUSAGE_CHILDREN);
    r = openssh_upload();
    ssh_direct.add(r, cpu_s(RUSAGE_CHILDREN) - c, size);
    c = cpu_s(RUSAGE_SELF);
    r = lib_upload(default_buffer);
    lib_direct.add(r, cpu_s(RUSAGE_SELF) - c, size);
  }
  std::printf("through one jump host (same cipher and MAC on both hops), best of %d rounds; client CPU ms per MB "
              "(this process / sftp and its ssh processes):\n", kRounds);
  std::printf("  OpenSSH sftp -J                  %8.1f MB/s  %5.2f ms/MB  (%.2fx its direct %.1f MB/s, %.2f ms/MB)\n",
              ssh_jump.mbps, ssh_jump.cpu_ms_per_mb, ssh_jump.mbps / ssh_direct.mbps, ssh_direct.mbps,
              ssh_direct.cpu_ms_per_mb);
  std::printf("  td_remote connect_via + upload   %8.1f MB/s  %5.2f ms/MB  (%.2fx its direct %.1f MB/s, %.2f ms/MB)\n",
              lib_jump.mbps, lib_jump.cpu_ms_per_mb, lib_jump.mbps / lib_direct.mbps, lib_direct.mbps,
              lib_direct.cpu_ms_per_mb);
  std::printf("ratio td_remote / OpenSSH through the jump host: %.2f (target >= 0.80); td_remote jump / direct: %.2f; "
              "client CPU td_remote / OpenSSH through the jump: %.2f\n",
              lib_jump.mbps / ssh_jump.mbps, lib_jump.mbps / lib_direct.mbps,
              lib_jump.cpu_ms_per_mb / ssh_jump.cpu_ms_per_mb);
  return 0;
}
