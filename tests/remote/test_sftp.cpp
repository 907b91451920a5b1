// remote/ SFTP transfers against a real OpenSSH sshd: upload with progress, skip on a second
// upload, resume after a cancel, mkdir -p with odd names, download likewise. The node's files
// are in the fixture's temporary folder, so the test checks them directly on disk.
#include <QtTest>

#include <fstream>
#include <iterator>
#include <random>

#include "engine/common/error.h"
#include "remote/session.h"
#include "remote/sftp.h"
#include "delay_proxy.h"
#include "sshd_fixture.h"
#include "user_session.h"

using namespace td::remote;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
using td::remote::testing::SshdFixture;
namespace fs = std::filesystem;

class TestSftp : public QObject {
  Q_OBJECT
  SshdFixture sshd_;
  std::optional<Session> s_;
  fs::path local_;  // a 24 MiB file of pseudo-random bytes
  uint64_t size_ = 24u << 20;

  // sha256 by the coreutils tool, independent of the library.
  static std::string sha256sum(const fs::path& p) {
    std::string out;
    run_cmd({"sha256sum", p.string()}, &out);
    return out.substr(0, 64);
  }

 private slots:
  void initTestCase() {
    if (!sshd_.start(/*with_password_user=*/false)) QSKIP(sshd_.skip_reason.c_str());
    s_.emplace(td::remote::testing::user_session(sshd_));
    local_ = sshd_.dir / "local" / "data.bin";
    fs::create_directories(local_.parent_path());
    std::mt19937_64 rng(42);
    std::vector<uint64_t> buf(size_ / 8);
    for (auto& v : buf) v = rng();
    std::ofstream(local_, std::ios::binary).write(reinterpret_cast<const char*>(buf.data()), size_);
  }
  void cleanupTestCase() {
    s_.reset();
    sshd_.stop();
  }

  void upload_skip_and_odd_names() {
    const std::string remote = (sshd_.dir / "node" / "dir with 'quote'" / "$(touch x) run;1" / "data.bin").string();
    std::vector<uint64_t> seen;
    TransferOptions o;
    o.progress = [&](uint64_t done, uint64_t total) {
      QCOMPARE(total, size_);
      seen.push_back(done);
    };
    TransferResult r = upload(*s_, local_, remote, o);
    QCOMPARE(r.outcome, TransferResult::Outcome::Transferred);
    QCOMPARE(r.bytes_sent, size_);
    QCOMPARE(r.resumed_from, uint64_t(0));
    QCOMPARE(fs::file_size(remote), size_);
    QCOMPARE(sha256sum(remote), sha256sum(local_));
    QCOMPARE(r.sha256, sha256sum(local_));
    QVERIFY(!fs::exists(remote + ".part"));
    QVERIFY(seen.size() > 2);
    QVERIFY(std::is_sorted(seen.begin(), seen.end()));
    QCOMPARE(seen.back(), size_);
    QVERIFY(!fs::exists(sshd_.dir / "x") && !fs::exists("x"));

    // Same bytes already there: nothing is sent.
    r = upload(*s_, local_, remote);
    QCOMPARE(r.outcome, TransferResult::Outcome::Skipped);
    QCOMPARE(r.bytes_sent, uint64_t(0));

    // Same size, different bytes: uploaded again.
    {
      std::fstream f(remote, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(1000);
      f.put('\x7f');
    }
    r = upload(*s_, local_, remote);
    QCOMPARE(r.outcome, TransferResult::Outcome::Transferred);
    QCOMPARE(sha256sum(remote), sha256sum(local_));
  }

  void far_link_upload_and_download() {
    // A 60 ms round trip (delay_proxy.h): the upload keeps kFarLinkBuffer in flight, makes the
    // missing folder only after the open says so, renames over SFTP when the target is new and
    // falls back to mv when it exists (skip_same off: not looked at); the bytes must be exact.
    td::remote::testing::DelayProxy far;
    QVERIFY2(far.start(sshd_.port, 30), far.error.c_str());
    ConnectOptions c;
    c.host = "127.0.0.1";
    c.port = far.port;
    c.user = sshd_.user;
    c.known_hosts = (sshd_.dir / "known_hosts_far").string();
    { Session::connect(c).accept_host_key(); }
    Session s = Session::connect(c);
    s.authenticate(Auth::key(sshd_.user_key));
    QVERIFY2(s.greeting_ms() >= td::remote::kFarLinkMs, std::to_string(s.greeting_ms()).c_str());
    const std::string remote = (sshd_.dir / "node" / "far" / "deeper" / "data.bin").string();
    TransferOptions o;
    o.skip_same = false;
    for (int round = 0; round < 2; ++round) {  // 0: a new file in new folders; 1: over it
      const TransferResult r = upload(s, local_, remote, o);
      QCOMPARE(r.outcome, TransferResult::Outcome::Transferred);
      QCOMPARE(r.bytes_sent, size_);
      QCOMPARE(sha256sum(remote), sha256sum(local_));
      QVERIFY(!fs::exists(remote + ".part"));
    }
    const fs::path back = sshd_.dir / "local" / "far_back.bin";
    const TransferResult d = download(s, remote, back, o);
    QCOMPARE(d.bytes_sent, size_);
    QCOMPARE(sha256sum(back), sha256sum(local_));
  }

  void upload_resumes_after_cancel() {
    const std::string remote = (sshd_.dir / "node" / "resume" / "data.bin").string();
    std::atomic<bool> cancel{false};
    TransferOptions o;
    o.cancel = &cancel;
    uint64_t at_cancel = 0;
    o.progress = [&](uint64_t done, uint64_t total) {
      if (!cancel && done >= total / 2) {
        at_cancel = done;
        cancel = true;
      }
    };
    TransferResult r = upload(*s_, local_, remote, o);
    QCOMPARE(r.outcome, TransferResult::Outcome::Cancelled);
    QVERIFY(!fs::exists(remote));
    const uint64_t part = fs::file_size(remote + ".part");
    QVERIFY(part >= at_cancel && part < size_);

    uint64_t first_progress = UINT64_MAX;
    TransferOptions again;
    again.progress = [&](uint64_t done, uint64_t) {
      if (first_progress == UINT64_MAX) first_progress = done;
    };
    r = upload(*s_, local_, remote, again);
    QCOMPARE(r.outcome, TransferResult::Outcome::Transferred);
    QCOMPARE(r.resumed_from, part);
    QCOMPARE(r.bytes_sent, size_ - part);  // only the rest is sent
    QCOMPARE(first_progress, part);
    QCOMPARE(sha256sum(remote), sha256sum(local_));
    QVERIFY(!fs::exists(remote + ".part"));

    // A .part whose bytes differ from the file is not trusted: everything is sent again.
    {
      std::ofstream(remote + ".part", std::ios::binary) << std::string(1000, 'z');
    }
    fs::remove(remote);
    r = upload(*s_, local_, remote);
    QCOMPARE(r.resumed_from, uint64_t(0));
    QCOMPARE(r.bytes_sent, size_);
    QCOMPARE(sha256sum(remote), sha256sum(local_));
  }

  void download_skip_and_resume() {
    const std::string remote = (sshd_.dir / "node" / "ckpt" / "model.bin").string();
    fs::create_directories(fs::path(remote).parent_path());
    fs::copy_file(local_, remote);
    const fs::path dst = sshd_.dir / "downloads" / "sub dir" / "model.bin";
    TransferResult r = download(*s_, remote, dst);
    QCOMPARE(r.outcome, TransferResult::Outcome::Transferred);
    QCOMPARE(r.bytes_sent, size_);
    QCOMPARE(sha256sum(dst), sha256sum(local_));
    r = download(*s_, remote, dst);
    QCOMPARE(r.outcome, TransferResult::Outcome::Skipped);
    QCOMPARE(r.bytes_sent, uint64_t(0));

    fs::remove(dst);
    std::atomic<bool> cancel{false};
    TransferOptions o;
    o.cancel = &cancel;
    o.progress = [&](uint64_t done, uint64_t total) {
      if (done >= total / 3) cancel = true;
    };
    r = download(*s_, remote, dst, o);
    QCOMPARE(r.outcome, TransferResult::Outcome::Cancelled);
    const uint64_t part = fs::file_size(dst.string() + ".part");
    QVERIFY(part > 0 && part < size_);
    r = download(*s_, remote, dst);
    QCOMPARE(r.resumed_from, part);
    QCOMPARE(r.bytes_sent, size_ - part);
    QCOMPARE(sha256sum(dst), sha256sum(local_));
  }

  void download_never_writes_through_a_planted_link() {
    // A link planted at <local>.part (or a hard link to another file) must not make the download
    // write into the file it names: refused, that file byte for byte unchanged.
    const std::string remote = (sshd_.dir / "node" / "ckpt2" / "model.bin").string();
    fs::create_directories(fs::path(remote).parent_path());
    fs::copy_file(local_, remote, fs::copy_options::overwrite_existing);
    const fs::path dst = sshd_.dir / "downloads" / "planted" / "model.bin";
    fs::create_directories(dst.parent_path());
    const fs::path victim = sshd_.dir / "victim.txt";
    std::ofstream(victim) << "keep me";
    for (bool hard : {false, true}) {
      const fs::path part = dst.string() + ".part";
      fs::remove(part);
      if (hard) fs::create_hard_link(victim, part);
      else fs::create_symlink(victim, part);
      std::string err;
      try {
        download(*s_, remote, dst);
      } catch (const td::Error& e) {
        err = e.what();
      }
      QVERIFY2(err.find(hard ? "hard link" : "symbolic link") != std::string::npos, err.c_str());
      std::ifstream in(victim);
      QCOMPARE(std::string(std::istreambuf_iterator<char>(in), {}), std::string("keep me"));
      QVERIFY(!fs::exists(dst));
    }
  }

  void empty_file() {
    const fs::path empty = sshd_.dir / "local" / "empty.txt";
    std::ofstream(empty).flush();
    const std::string remote = (sshd_.dir / "node" / "empty" / "empty.txt").string();
    TransferResult r = upload(*s_, empty, remote);
    QCOMPARE(r.outcome, TransferResult::Outcome::Transferred);
    QCOMPARE(fs::file_size(remote), uint64_t(0));
    QCOMPARE(upload(*s_, empty, remote).outcome, TransferResult::Outcome::Skipped);
    const fs::path back = sshd_.dir / "downloads" / "empty.txt";
    QCOMPARE(download(*s_, remote, back).outcome, TransferResult::Outcome::Transferred);
    QVERIFY(fs::exists(back) && fs::file_size(back) == 0);
  }

  void errors_name_the_file() {
    std::string err;
    try {
      download(*s_, (sshd_.dir / "no-such-file").string(), sshd_.dir / "x.bin");
    } catch (const td::Error& e) {
      err = e.what();
    }
    QVERIFY2(err.find("no-such-file") != std::string::npos, err.c_str());
    err.clear();
    try {
      upload(*s_, local_, "/proc/forbidden/data.bin");
    } catch (const td::Error& e) {
      err = e.what();
    }
    QVERIFY2(err.find("/proc/forbidden") != std::string::npos, err.c_str());
    QVERIFY(!remote_file_size(*s_, (sshd_.dir / "nothing").string()));
    err.clear();
    try {
      upload(*s_, sshd_.dir, (sshd_.dir / "node" / "a-folder").string());
    } catch (const td::Error& e) {
      err = e.what();
    }
    QVERIFY2(err.find("not a file") != std::string::npos, err.c_str());
    // A missing file is not a missing sha256sum: the error says what sha256sum said, no install hint.
    err.clear();
    try {
      remote_sha256(*s_, (sshd_.dir / "gone.part").string());
    } catch (const td::Error& e) {
      err = e.what();
    }
    QVERIFY2(err.find("gone.part") != std::string::npos && err.find("No such file") != std::string::npos &&
                 err.find("coreutils") == std::string::npos,
             err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestSftp)
#include "test_sftp.moc"
