// bench_upload: a file of random bytes uploaded over loopback to a private sshd, by td_remote's
// upload() (several pipelining depths) and by OpenSSH's sftp in batch mode, in the same run and
// with the same cipher and MAC (libssh2 1.10 has no AES-GCM, ChaCha20 or -etm MACs). Prints
// MB/s (1 MB = 1e6 bytes, connect + auth + transfer) and the ratio to OpenSSH (target >= 0.8).
#include <chrono>
#include <cstdio>
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
}  // namespace

int main(int argc, char** argv) {
  const uint64_t mb = argc > 1 ? std::stoull(argv[1]) : 200;
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
  const size_t default_buffer = TransferOptions{}.buffer_bytes;
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
  return 0;
}
