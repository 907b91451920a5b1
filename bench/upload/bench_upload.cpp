// bench_upload: a file of random bytes uploaded over loopback to a private sshd, by td_remote's
// upload() (several pipelining depths) and by OpenSSH's sftp in batch mode, in the same run and
// with the same cipher and MAC (libssh2 1.10 has no AES-GCM, ChaCha20 or -etm MACs). Prints
// MB/s (1 MB = 1e6 bytes, connect + auth + transfer) and the ratio to OpenSSH (target >= 0.8).
// Then the same through one jump host (a second sshd as the target, reached through the first:
// two SSH hops, the inner one inside a direct-tcpip channel of the outer): connect_via beside
// OpenSSH's `sftp -J`, both hops with the same cipher and MAC; prints jump vs sftp -J and jump
// vs direct (target: a deploy through a jump costs about what a direct one does).
// With --delay-ms N: only a far link instead, i.e. the sshd behind a user-space proxy that holds
// every byte N ms each way (tests/remote/delay_proxy.h; this kernel has no netem): connect +
// handshake + login time and upload MB/s of td_remote beside OpenSSH's sftp on the same proxy.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>

#include "remote/session.h"
#include "remote/sftp.h"
#include "delay_proxy.h"
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
// OpenSSH's sftp in batch mode to 127.0.0.1:port running `batch_lines`; seconds taken.
double openssh_batch(const testing::SshdFixture& sshd, int port, const std::string& batch_lines) {
  const std::string batch = (sshd.dir / "batch_delay").string();
  std::ofstream(batch) << batch_lines;
  const double t0 = now_s();
  std::string out;
  int rc = run_cmd({"sftp", "-q", "-b", batch, "-c", kCipher, "-o", std::string("MACs=") + kMac, "-i", sshd.user_key,
                    "-P", std::to_string(port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o",
                    "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", sshd.user + "@127.0.0.1"}, &out);
  if (rc != 0) {
    std::fprintf(stderr, "bench_upload: sftp through the delay proxy failed: %s\n", out.c_str());
    std::exit(1);
  }
  return now_s() - t0;
}

// The far-link rounds: td_remote and OpenSSH through one DelayProxy.
int delayed_link(const testing::SshdFixture& sshd, ConnectOptions o, const fs::path& local, uint64_t size,
                 int delay_ms) {
  testing::DelayProxy proxy;
  if (!proxy.start(sshd.port, delay_ms)) {
    std::fprintf(stderr, "bench_upload: %s\n", proxy.error.c_str());
    return 1;
  }
  o.port = proxy.port;
  o.known_hosts = (sshd.dir / "known_hosts_delay").string();
  { Session::connect(o).accept_host_key(); }
  const std::string remote = (sshd.dir / "delay.bin").string();
  // td_remote: connect + handshake + login, then the upload alone (its default buffer, which a
  // far link raises to kFarLinkBuffer); OpenSSH: an empty batch, then a put, in the same rounds.
  double best_login = 1e30, best_total = 1e30, best_rate = 0;
  double ssh_login = 1e30, ssh_total = 1e30;
  for (int round = 0; round < 2; ++round) {
    fs::remove(remote);
    const double t0 = now_s();
    Session s = Session::open(o, Auth::key(sshd.user_key));
    s.sftp();  // the SFTP subsystem's start (three round trips) counts as login, as in OpenSSH's empty batch
    const double t1 = now_s();
    TransferOptions t;
    t.skip_same = false;
    t.verify = false;
    upload(s, local, remote, t);
    const double t2 = now_s();
    best_login = std::min(best_login, t1 - t0);
    best_rate = std::max(best_rate, size / (t2 - t1) / 1e6);
    best_total = std::min(best_total, t2 - t0);
    ssh_login = std::min(ssh_login, openssh_batch(sshd, proxy.port, "pwd\n"));
    ssh_total = std::min(ssh_total, openssh_batch(sshd, proxy.port, "put " + local.string() + " " + remote + ".ssh\n"));
  }
  const double ssh_rate = size / std::max(1e-3, ssh_total - ssh_login) / 1e6;
  std::printf("far link: %d ms each way (%d ms round trip) through a user-space delay proxy, %.1f MB, best of 2\n",
              delay_ms, 2 * delay_ms, size / 1e6);
  std::printf("  connect + handshake + login + SFTP start: td_remote %.2f s, OpenSSH sftp (an empty batch) %.2f s\n", best_login,
              ssh_login);
  std::printf("  upload alone: td_remote %.2f MB/s, OpenSSH sftp %.2f MB/s (its put batch minus its empty batch)\n",
              best_rate, ssh_rate);
  std::printf("  whole: td_remote %.2f s, OpenSSH %.2f s\n", best_total, ssh_total);
  std::printf("ratio td_remote / OpenSSH on the far link: upload %.2f, whole %.2f (target >= 0.80)\n",
              best_rate / ssh_rate, ssh_total / best_total);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const uint64_t mb = argc > 1 ? std::stoull(argv[1]) : 200;
  const bool jump_only = argc > 2 && std::string(argv[2]) == "--jump-only";  // only the jump-host rounds
  const int delay_ms = argc > 3 && std::string(argv[2]) == "--delay-ms" ? std::stoi(argv[3]) : -1;
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
  if (delay_ms >= 0) return delayed_link(sshd, o, local, size, delay_ms);

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
