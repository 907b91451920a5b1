// CUDA libraries on deploy and the NVIDIA driver check, against the real sshd, with a small
// program linked to the CUDA toolkit's libcudart and libcublas (cuda_probe.cpp) as the bundled
// "engine": the manifest lists the CUDA libraries as node libraries and the bundle does not
// carry them; deploy finds them on the node (/usr/local/cuda here) and the launcher loads them
// from there; with a search path that lacks libcudart it is uploaded once to <work>/cuda/ and
// loaded from there, and the next deploy sends 0 bytes; a fake nvidia-smi on the node's PATH
// with driver 575.57.08 is refused before anything is uploaded (both versions named), 580.65.06
// is accepted. Skips where the CUDA toolkit is absent (a fresh Debian root).
#include <QtTest>

#include <sys/stat.h>

#include <fstream>
#include <regex>
#include <set>

#include "engine/common/error.h"
#include "remote/bundle.h"
#include "remote/deploy.h"
#include "remote/session.h"
#include "sshd_fixture.h"
#include "user_session.h"

using namespace td::remote;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
using td::remote::testing::error_message;
using td::remote::testing::SshdFixture;
using td::remote::testing::user_session;
namespace fs = std::filesystem;
namespace {


// A fake nvidia-smi that answers only the driver query deploy makes, with `version` per GPU.
void write_fake_smi(const fs::path& dir, const std::string& version) {
  fs::create_directories(dir);
  std::ofstream f(dir / "nvidia-smi");
  f << "#!/bin/sh\n"
       "if [ \"$*\" != '--query-gpu=driver_version --format=csv,noheader' ]; then echo \"unexpected: $*\" >&2; exit 2; fi\n"
       "echo '" << version << "'\necho '" << version << "'\n";
  f.close();
  chmod((dir / "nvidia-smi").c_str(), 0755);
}

// The value of a "key=value" line of the probe's output.
std::string field(const std::string& out, const std::string& key) {
  const size_t p = ("\n" + out).find("\n" + key + "=");
  if (p == std::string::npos) return "";
  const size_t b = p + key.size() + 1;
  return out.substr(b, out.find('\n', b) - b);
}

}  // namespace

class TestCudaDeploy : public QObject {
  Q_OBJECT
  SshdFixture sshd_;
  fs::path bundle_, dataset_, smi_old_, smi_new_;
  BundleManifest m_;
  std::string probe_out_;  // the probe run locally
  std::vector<std::pair<std::string, std::string>> cuda_libs_;  // soname, path as ldd resolves them here

  DeployResult deploy_to(Session& s, const std::string& work, const DeployOptions& o) {
    return deploy(s, bundle_, dataset_, R"({"train":{"device":"cuda"},"data":{"path":"x"}})", work, "cuda-run", {}, nullptr, o);
  }

 private slots:
  void initTestCase() {
    const std::string probe = TD_CUDA_PROBE_EXE;
    if (probe.empty())
      QSKIP("the CUDA toolkit (libcudart, libcublas) was not found when configuring: install it "
            "(/usr/local/cuda) to test deploying CUDA libraries");
    if (!sshd_.start(false)) QSKIP(sshd_.skip_reason.c_str());
    QCOMPARE(run_cmd({probe}, &probe_out_), 0);
    for (const auto& [so, path] : resolve_libraries(probe))
      if (std::regex_match(so, std::regex(R"(lib(cudart|cublas|cublasLt|nccl)\.so.*)"))) cuda_libs_.emplace_back(so, path);
    QVERIFY2(cuda_libs_.size() >= 2, "the probe should need libcudart and libcublas");
    bundle_ = sshd_.dir / "bundle";
    m_ = make_bundle(probe, bundle_);
    dataset_ = sshd_.dir / "dataset";
    fs::create_directories(dataset_);
    std::ofstream(dataset_ / "manifest.json") << "{}\n";
    smi_old_ = sshd_.dir / "smi 575";
    smi_new_ = sshd_.dir / "smi 580";
    write_fake_smi(smi_old_, "575.57.08");
    write_fake_smi(smi_new_, "580.65.06");
  }
  void cleanupTestCase() { sshd_.stop(); }

  void manifest_lists_cuda_libraries_without_copying_them() {
    std::set<std::string> want, got;
    for (const auto& [so, path] : cuda_libs_) want.insert(so);
    for (const NodeLibrary& l : m_.node_libs) {
      got.insert(l.soname);
      QVERIFY2(fs::path(l.source).is_absolute(), l.source.c_str());
      QCOMPARE(l.size, uint64_t(fs::file_size(l.source)));
      QVERIFY(!fs::exists(bundle_ / "lib" / l.soname));  // not copied
    }
    QCOMPARE(got, want);
    // The same libraries ldd resolves here (sizes of the files behind the links).
    for (const auto& [so, path] : cuda_libs_)
      for (const NodeLibrary& l : m_.node_libs)
        if (l.soname == so) QCOMPARE(l.source, fs::canonical(path).string());
    // The runtime major from the soname equals what cudaRuntimeGetVersion says (13000 -> 13).
    const int runtime = std::atoi(field(probe_out_, "cudart").c_str());
    QCOMPARE(m_.cuda_major, std::to_string(runtime / 1000));
    // The manifest on disk says the same; the bundle holds no CUDA library at all.
    const BundleManifest back = read_bundle_manifest(bundle_);
    QCOMPARE(back.cuda_major, m_.cuda_major);
    QCOMPARE(back.node_libs.size(), m_.node_libs.size());
    uint64_t bundled = 0;
    for (const BundleFile& f : m_.files) {
      QVERIFY2(!is_node_library(fs::path(f.path).filename().string()), f.path.c_str());
      bundled += f.size;
    }
    qInfo("bundle: %llu bytes in %zu files; left to the node: %zu CUDA libraries", (unsigned long long)bundled,
          m_.files.size(), m_.node_libs.size());
  }

  void driver_check_refuses_old_and_missing_driver() {
    Session s = user_session(sshd_);
    const std::string work = (sshd_.dir / "work refused").string();
    DeployOptions o;
    o.extra_path = smi_old_.string();
    const std::string err = error_message([&] { deploy_to(s, work, o); });
    QVERIFY2(err.find("575.57.08") != std::string::npos, err.c_str());
    QVERIFY2(err.find("needs driver " + minimum_nvidia_driver(std::atoi(m_.cuda_major.c_str())) + " or newer") !=
                 std::string::npos, err.c_str());
    QVERIFY2(!fs::exists(work), "nothing may be uploaded to a node whose driver is too old");
    // Without nvidia-smi (this machine has none on sshd's PATH): a clear error too.
    if (run_cmd({"sh", "-c", "command -v nvidia-smi"}) != 0) {
      const std::string none = error_message([&] { deploy_to(s, work, DeployOptions{}); });
      QVERIFY2(none.find("no nvidia-smi") != std::string::npos, none.c_str());
    }
    QCOMPARE(minimum_nvidia_driver(13), std::string("580"));
    QCOMPARE(minimum_nvidia_driver(12), std::string("525.60.13"));
    QCOMPARE(minimum_nvidia_driver(10), std::string());
  }

  void deploy_finds_cuda_on_the_node() {
    Session s = user_session(sshd_);
    const std::string work = (sshd_.dir / "work").string();
    DeployOptions o;
    o.extra_path = smi_new_.string();
    DeployResult r = deploy_to(s, work, o);
    QCOMPARE(r.driver_version, std::string("580.65.06"));
    QCOMPARE(r.node_libs_found, int(m_.node_libs.size()));
    QCOMPARE(r.node_libs_uploaded, 0);
    QVERIFY(!fs::exists(work + "/cuda"));
    // Each found folder holds the library; the launcher loaded cudart and cuBLAS from them.
    for (const NodeLibrary& l : m_.node_libs) {
      bool in_some = false;
      for (const std::string& d : r.node_lib_dirs) in_some = in_some || fs::exists(fs::path(d) / l.soname);
      QVERIFY2(in_some, l.soname.c_str());
    }
    const std::string cudart = field(r.engine_version, "cudart_path");
    QVERIFY2(std::find(r.node_lib_dirs.begin(), r.node_lib_dirs.end(), fs::path(cudart).parent_path().string()) !=
                 r.node_lib_dirs.end(), r.engine_version.c_str());
  }

  void missing_library_uploaded_once() {
    Session s = user_session(sshd_);
    const std::string work = (sshd_.dir / "work").string();
    // A configured folder with cuBLAS but no libcudart, and no default folders.
    const fs::path partial = sshd_.dir / "partial cuda";
    fs::create_directories(partial);
    const NodeLibrary* cudart = nullptr;
    for (const NodeLibrary& l : m_.node_libs) {
      if (l.soname.rfind("libcudart.so", 0) == 0) cudart = &l;
      else fs::create_symlink(l.source, partial / l.soname);
    }
    QVERIFY(cudart);
    DeployOptions o;
    o.extra_path = smi_new_.string();
    o.search_default_dirs = false;
    o.node_lib_dirs = {partial.string()};
    DeployResult r = deploy_to(s, work, o);
    QCOMPARE(r.node_libs_uploaded, 1);
    QCOMPARE(r.node_libs_found, int(m_.node_libs.size()) - 1);
    const std::string uploaded = work + "/cuda/" + cudart->soname + "/" + cudart->soname;
    QCOMPARE(r.bytes_sent, cudart->size);  // the bundle itself was there from the last test
    QCOMPARE(td::remote::testing::read_text(uploaded), td::remote::testing::read_text(cudart->source));
    // The launcher put the uploaded copy first for libcudart, the configured folder for cuBLAS.
    // (the launcher names it relative to the bundle folder: compare canonical paths)
    QCOMPARE(fs::canonical(field(r.engine_version, "cudart_path")), fs::canonical(uploaded));
    QCOMPARE(fs::path(field(r.engine_version, "cublas_path")).parent_path(), partial);
    // Again: nothing to send.
    DeployResult again = deploy_to(s, work, o);
    QCOMPARE(again.bytes_sent, uint64_t(0));
    QCOMPARE(again.node_libs_uploaded, 1);
    QCOMPARE(fs::canonical(field(again.engine_version, "cudart_path")), fs::canonical(uploaded));
  }
};

QTEST_GUILESS_MAIN(TestCudaDeploy)
#include "test_cuda_deploy.moc"
