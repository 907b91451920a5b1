// remote/probe.h ("Test connection") against a real OpenSSH sshd (sshd_fixture.h): the node's
// facts equal what this machine says locally, a fake nvidia-smi first on the node's PATH that
// prints the real CSV format (and one that fails), and a work dir with attack characters.
#include <QtTest>

#include <sys/statvfs.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/common/error.h"
#include "remote/probe.h"
#include "remote/session.h"
#include "sshd_fixture.h"
#include "user_session.h"

using namespace td::remote;
using td::remote::testing::SshdFixture;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
namespace fs = std::filesystem;

namespace {

std::string local(const std::vector<std::string>& argv) {
  std::string out;
  run_cmd(argv, &out);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

uint64_t meminfo_kb(const std::string& key) {
  std::ifstream f("/proc/meminfo");
  std::string k;
  uint64_t v = 0;
  std::string unit;
  while (f >> k >> v) {
    std::getline(f, unit);
    if (k == key + ":") return v;
  }
  return 0;
}

void write_script(const fs::path& p, const std::string& body) {
  std::ofstream(p) << "#!/bin/sh\n" << body;
  fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                         fs::perms::others_read | fs::perms::others_exec);
}

}  // namespace

class TestProbe : public QObject {
  Q_OBJECT
  SshdFixture sshd_;

  Session session() {
    return td::remote::testing::user_session(sshd_, 10000);
  }

 private slots:
  void initTestCase() {
    if (!sshd_.start(/*with_password_user=*/false)) QSKIP(sshd_.skip_reason.c_str());
  }
  void cleanupTestCase() { sshd_.stop(); }

  // Every value equals what this machine reports locally (the node is this machine).
  void values_match_local_machine() {
    Session s = session();
    const std::string work = (sshd_.dir / "runs" / "not yet").string();  // does not exist
    const NodeReport r = probe_node(s, work);
    QCOMPARE(r.where, s.where());
    QCOMPARE(r.work_dir, work);
    QCOMPARE(r.arch, local({"uname", "-m"}));
    QCOMPARE(r.kernel, local({"uname", "-r"}));
    QVERIFY(r.cpu_count.has_value());
    QCOMPARE(std::to_string(*r.cpu_count), local({"nproc"}));
    QVERIFY(r.mem_total_bytes.has_value());
    QCOMPARE(*r.mem_total_bytes, meminfo_kb("MemTotal") * 1024u);
    QVERIFY(r.mem_available_bytes.has_value());
    QVERIFY(*r.mem_available_bytes > 0 && *r.mem_available_bytes <= *r.mem_total_bytes);
    const std::string glibc = local({"getconf", "GNU_LIBC_VERSION"});  // "glibc 2.36"
    QCOMPARE("glibc " + r.glibc_version, glibc);
    const std::string os_release = read_text("/etc/os-release");
    if (!os_release.empty()) {
      QVERIFY2(!r.os.empty() && os_release.find(r.os) != std::string::npos, r.os.c_str());
      QVERIFY(r.os.front() != '"');
    }
    QVERIFY(!r.cpu_model.empty());
    // Nearest existing parent measured; within 5% of a local statvfs of the same path.
    QCOMPARE(r.disk_path, sshd_.dir.string());
    QVERIFY(!r.work_dir_exists);
    struct statvfs st {};
    QCOMPARE(statvfs(r.disk_path.c_str(), &st), 0);
    const double local_free = static_cast<double>(st.f_bavail) * static_cast<double>(st.f_frsize);
    QVERIFY(r.disk_free_bytes.has_value());
    const double diff = std::fabs(static_cast<double>(*r.disk_free_bytes) - local_free);
    QVERIFY2(diff <= 0.05 * local_free + 1, (std::to_string(*r.disk_free_bytes) + " vs " + std::to_string(local_free)).c_str());
    // The default sshd PATH: whatever it finds, no error text without nvidia-smi.
    if (!r.nvidia_smi_found) {
      QVERIFY(r.gpus.empty());
      QVERIFY(r.nvidia_smi_error.empty());
    }
    const std::string text = format_report(r);
    QVERIFY2(text.find("glibc: " + r.glibc_version + "\n") != std::string::npos, text.c_str());
    QVERIFY2(text.find("does not exist yet") != std::string::npos, text.c_str());
    qInfo("%s", text.c_str());

    // An existing work dir is measured itself.
    const NodeReport r2 = probe_node(s, sshd_.dir.string());
    QCOMPARE(r2.disk_path, sshd_.dir.string());
    QVERIFY(r2.work_dir_exists);
  }

  // A fake nvidia-smi first on the node's PATH printing the real CSV format of two GPUs.
  void fake_nvidia_smi_two_gpus() {
    const fs::path bin = sshd_.dir / "bin-ok";
    fs::create_directories(bin);
    // Checks it was asked the exact query (else exit 2 with the arguments).
    write_script(bin / "nvidia-smi",
                 "if [ \"$*\" != '--query-gpu=index,name,memory.total,driver_version "
                 "--format=csv,noheader,nounits' ]; then echo \"bad args: $*\"; exit 2; fi\n"
                 "echo '0, NVIDIA H100 80GB HBM3, 81559, 550.54.15'\n"
                 "echo '1, NVIDIA H100 80GB HBM3, 81559, 550.54.15'\n");
    Session s = session();
    ProbeOptions po;
    po.extra_path = bin.string();
    const NodeReport r = probe_node(s, sshd_.dir.string(), po);
    QVERIFY(r.nvidia_smi_found);
    QVERIFY2(r.nvidia_smi_error.empty(), r.nvidia_smi_error.c_str());
    QCOMPARE(r.gpus.size(), size_t(2));
    for (int i = 0; i < 2; ++i) {
      QCOMPARE(r.gpus[i].index, i);
      QCOMPARE(r.gpus[i].name, std::string("NVIDIA H100 80GB HBM3"));
      QVERIFY(r.gpus[i].memory_bytes.has_value());
      QCOMPARE(*r.gpus[i].memory_bytes, uint64_t(81559) * 1048576u);
      QCOMPARE(r.gpus[i].driver_version, std::string("550.54.15"));
    }
    // The rest of the report is still there.
    QCOMPARE(r.arch, local({"uname", "-m"}));
    const std::string text = format_report(r);
    QVERIFY2(text.find("GPU 1: NVIDIA H100 80GB HBM3, 79.6 GiB, driver 550.54.15\n") != std::string::npos,
             text.c_str());
  }

  // nvidia-smi present but failing: no GPUs, its message and exit code reported.
  void fake_nvidia_smi_failing() {
    const fs::path bin = sshd_.dir / "bin-fail";
    fs::create_directories(bin);
    const std::string msg =
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.";
    write_script(bin / "nvidia-smi", "echo \"" + msg + "\"\nexit 9\n");
    Session s = session();
    ProbeOptions po;
    po.extra_path = bin.string();
    const NodeReport r = probe_node(s, sshd_.dir.string(), po);
    QVERIFY(r.nvidia_smi_found);
    QVERIFY(r.gpus.empty());
    QCOMPARE(r.nvidia_smi_error, "nvidia-smi failed (exit 9): " + msg);
    QVERIFY(r.cpu_count.has_value());
    const std::string text = format_report(r);
    QVERIFY2(text.find("GPUs: none (nvidia-smi failed (exit 9): NVIDIA-SMI has failed") != std::string::npos,
             text.c_str());
  }

  // A work dir with spaces, quotes, `;`, $() and backticks and a newline: measured, nothing run.
  void attack_work_dir_runs_nothing() {
    const fs::path pwned = sshd_.dir / "pwned";
    const std::string name = "a b $(touch " + pwned.string() + ") `touch " + pwned.string() +
                             "2`; touch " + pwned.string() + "3 'q\"\nnl";
    // The name holds '/' inside $(...): it is a chain of folders, all created here.
    const fs::path existing = sshd_.dir / name;
    fs::create_directories(existing);
    const std::string work = (existing / "sub dir $(id)").string();  // does not exist
    Session s = session();
    ProbeOptions po;
    po.extra_path = (sshd_.dir / ("bin $(touch " + pwned.string() + "4)")).string();
    const NodeReport r = probe_node(s, work, po);
    QCOMPARE(r.work_dir, work);
    QCOMPARE(r.disk_path, existing.string());
    QVERIFY(!r.work_dir_exists);
    QVERIFY(r.disk_free_bytes.has_value() && *r.disk_free_bytes > 0);
    for (const char* suffix : {"", "2", "3", "4"})
      QVERIFY2(!fs::exists(pwned.string() + suffix), (pwned.string() + suffix).c_str());
    // Measuring the existing folder itself.
    const NodeReport r2 = probe_node(s, existing.string());
    QCOMPARE(r2.disk_path, existing.string());
    QVERIFY(r2.work_dir_exists);
  }

  // Missing fields are unknown, never an error; output without the script's mark is an error.
  void parse_missing_fields() {
    const NodeReport r = parse_probe_output("td_probe=1\nos=\ncpu_count=\nmem_total_kb=x\nsmi_found=1\n"
                                            "smi_rc=0\nsmi=0, Tesla T4, [N/A], 535.1\n");
    QVERIFY(r.os.empty());
    QVERIFY(!r.cpu_count);
    QVERIFY(!r.mem_total_bytes);
    QVERIFY(!r.disk_free_bytes);
    QCOMPARE(r.gpus.size(), size_t(1));
    QCOMPARE(r.gpus[0].name, std::string("Tesla T4"));
    QVERIFY(!r.gpus[0].memory_bytes);
    QCOMPARE(r.gpus[0].driver_version, std::string("535.1"));
    const std::string text = format_report(r);
    QVERIFY2(text.find("OS: unknown") != std::string::npos, text.c_str());
    QVERIFY2(text.find("Memory: unknown total") != std::string::npos, text.c_str());
    QVERIFY2(text.find("GPU 0: Tesla T4, unknown memory, driver 535.1") != std::string::npos, text.c_str());
    bool threw = false;
    try {
      parse_probe_output("sh: not found\n");
    } catch (const td::Error&) {
      threw = true;
    }
    QVERIFY(threw);
  }
};

QTEST_GUILESS_MAIN(TestProbe)
#include "test_probe.moc"
