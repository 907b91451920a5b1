// The engine bundle (remote/bundle.h) and deploy (remote/deploy.h) against a real sshd whose
// "node" is this machine: every library the bundled binary needs is in the bundle or is glibc,
// the bundled launcher runs, the manifest lists each file's size and sha256; a deploy uploads
// bundle + dataset + config, a second deploy uploads nothing, mismatches are clear errors.
#include <QtTest>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "remote/bundle.h"
#include "remote/deploy.h"
#include "remote/session.h"
#include "remote/sftp.h"
#include "sshd_fixture.h"
#include "user_session.h"

using namespace td::remote;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
using td::remote::testing::SshdFixture;
namespace fs = std::filesystem;

namespace {
const fs::path kOpenblasOpenmp = "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0";

std::string sha256sum(const fs::path& p) {
  std::string out;
  run_cmd({"sha256sum", p.string()}, &out);
  return out.substr(0, 64);
}
}  // namespace

class TestBundle : public QObject {
  Q_OBJECT
  SshdFixture sshd_;
  fs::path bundle_, dataset_;
  std::optional<Session> s_;

 private slots:
  void initTestCase() {
    if (!sshd_.start(/*with_password_user=*/false)) QSKIP(sshd_.skip_reason.c_str());
    bundle_ = sshd_.dir / "local" / "bundle";
    // A tiny prepared dataset, made by the engine itself.
    const fs::path corpus = sshd_.dir / "local" / "corpus";
    fs::create_directories(corpus);
    {
      std::ofstream f(corpus / "text.txt");
      for (int i = 0; i < 300; ++i) f << "Line " << i << ": the quick brown fox jumps over the lazy dog.\n";
    }
    dataset_ = sshd_.dir / "local" / "tiny data";
    std::string out;
    QCOMPARE(run_cmd({TD_ENGINE_EXE, "prepare", "--input", corpus.string(), "--out", dataset_.string(), "--tokenizer",
                      "byte", "--quiet"}, &out), 0);
    s_.emplace(td::remote::testing::user_session(sshd_));
  }
  void cleanupTestCase() {
    s_.reset();
    sshd_.stop();
  }

  void glibc_names_and_versions() {
    QVERIFY(is_glibc_library("libc.so.6"));
    QVERIFY(is_glibc_library("libm.so.6"));
    QVERIFY(is_glibc_library("ld-linux-x86-64.so.2"));
    QVERIFY(is_glibc_library("libpthread.so.0"));
    QVERIFY(!is_glibc_library("libstdc++.so.6"));
    QVERIFY(!is_glibc_library("libgcc_s.so.1"));
    QVERIFY(!is_glibc_library("libopenblas.so.0"));
    QVERIFY(!is_glibc_library("libmagic.so.1"));
    QVERIFY(compare_versions("2.9", "2.34") < 0);
    QVERIFY(compare_versions("2.34", "2.34") == 0);
    QVERIFY(compare_versions("2.36", "2.4") > 0);
    QVERIFY(compare_versions("3", "2.99") > 0);
  }

  void bundle_is_complete() {
    const BundleManifest m = make_bundle(TD_ENGINE_EXE, bundle_);
    // What ldd resolves for the bundled binary when the bundle's lib folder comes first (as the
    // launcher arranges): each library is in the bundle or is glibc. The binary's RUNPATH to
    // openblas-openmp is searched only after LD_LIBRARY_PATH, so nothing resolves there.
    const std::string lib = (bundle_ / "lib").string();
    const auto libs = resolve_libraries(bundle_ / "bin" / "traindeck-engine.bin", {"LD_LIBRARY_PATH=" + lib});
    QVERIFY(!libs.empty());
    int bundled = 0;
    for (const auto& [name, path] : libs) {
      if (is_glibc_library(name)) {
        QVERIFY2(!fs::exists(bundle_ / "lib" / name), name.c_str());  // glibc comes from the node
        continue;
      }
      QVERIFY2(path.rfind(lib + "/", 0) == 0, (name + " resolves to " + path + ", outside the bundle").c_str());
      ++bundled;
    }
    // The original binary's non-glibc libraries all went into the bundle.
    int needed = 0;
    for (const auto& [name, path] : resolve_libraries(TD_ENGINE_EXE)) {
      if (is_glibc_library(name)) continue;
      ++needed;
      QVERIFY2(fs::exists(bundle_ / "lib" / name), name.c_str());
      QCOMPARE(sha256sum(bundle_ / "lib" / name), sha256sum(path));
    }
    QCOMPARE(bundled, needed);
    if (fs::exists(bundle_ / "lib" / "libopenblas.so.0") && fs::exists(kOpenblasOpenmp))
      QCOMPARE(sha256sum(bundle_ / "lib" / "libopenblas.so.0"), sha256sum(kOpenblasOpenmp));  // the OpenMP build

    // The launcher runs the binary, also from a copy of the bundle elsewhere (relocatable).
    std::string out;
    QCOMPARE(run_cmd({(bundle_ / "bin" / "traindeck-engine").string(), "--version"}, &out), 0);
    QVERIFY2(out.rfind("traindeck-engine ", 0) == 0, out.c_str());
    const fs::path moved = sshd_.dir / "local" / "moved bundle";
    fs::copy(bundle_, moved, fs::copy_options::recursive);
    QCOMPARE(run_cmd({(moved / "bin" / "traindeck-engine").string(), "--version"}, &out), 0);
    QVERIFY2(out.rfind("traindeck-engine ", 0) == 0, out.c_str());

    // The manifest: every file once, with its size and sha256; arch and glibc requirement.
    const BundleManifest r = read_bundle_manifest(bundle_);
    QCOMPARE(r.hash, m.hash);
    QCOMPARE(r.hash.size(), size_t(16));
    QCOMPARE(r.arch, std::string("x86_64"));
    QVERIFY2(compare_versions(r.glibc, "2.2.5") >= 0, r.glibc.c_str());
    std::string glibc;
    run_cmd({"getconf", "GNU_LIBC_VERSION"}, &glibc);  // "glibc 2.36"
    QVERIFY(compare_versions(r.glibc, glibc.substr(6)) <= 0);
    size_t files = 0;
    for (const auto& e : fs::recursive_directory_iterator(bundle_))
      if (e.is_regular_file() && e.path().filename() != "manifest.json") ++files;
    QCOMPARE(r.files.size(), files);
    // The CUDA backend module travels beside the engine binary where the build made one; its
    // cuBLAS libraries are node libraries (listed, not copied), its others are bundled.
    const fs::path module = fs::path(TD_ENGINE_EXE).parent_path() / "libtraindeck-cuda.so";
    size_t module_files = 0;
    if (fs::exists(module)) {
      QVERIFY(fs::exists(bundle_ / "bin" / "libtraindeck-cuda.so"));
      QCOMPARE(sha256sum(bundle_ / "bin" / "libtraindeck-cuda.so"), sha256sum(module));
      module_files = 1;
      std::set<std::string> engine_libs;
      for (const auto& [name, path] : resolve_libraries(TD_ENGINE_EXE)) engine_libs.insert(name);
      for (const auto& [name, path] : resolve_libraries(module)) {
        if (is_glibc_library(name) || engine_libs.count(name)) continue;
        if (is_node_library(name)) {
          QVERIFY2(std::any_of(r.node_libs.begin(), r.node_libs.end(), [&](const NodeLibrary& l) { return l.soname == name; }), name.c_str());
          QVERIFY2(!fs::exists(bundle_ / "lib" / name), name.c_str());
        } else {
          QVERIFY2(fs::exists(bundle_ / "lib" / name), name.c_str());
          ++module_files;
        }
      }
    }
    QCOMPARE(files, size_t(2 + bundled) + module_files);
    for (const BundleFile& f : r.files) {
      QCOMPARE(f.size, uint64_t(fs::file_size(bundle_ / f.path)));
      QCOMPARE(f.sha256, sha256sum(bundle_ / f.path));
    }
  }

  void deploy_then_second_deploy_sends_nothing() {
    const std::string work = (sshd_.dir / "node work").string();
    nlohmann::json cfg = {{"model", {{"vocab_size", 257}}}, {"data", {{"path", dataset_.string()}}}};
    std::vector<std::pair<uint64_t, uint64_t>> seen;
    DeployResult d = deploy(*s_, bundle_, dataset_, cfg.dump(), work, "run one",
                            [&](uint64_t done, uint64_t total) { seen.emplace_back(done, total); });
    const BundleManifest m = read_bundle_manifest(bundle_);
    QCOMPARE(d.engine, work + "/engine/" + m.hash + "/bin/traindeck-engine");
    QCOMPARE(d.dataset_dir, work + "/datasets/tiny data-" + sha256sum(dataset_ / "manifest.json").substr(0, 12));
    QCOMPARE(d.run_dir, work + "/runs/run one");
    uint64_t expect = 0;
    for (const BundleFile& f : m.files) {
      expect += f.size;
      QCOMPARE(sha256sum(work + "/engine/" + m.hash + "/" + f.path), f.sha256);
    }
    for (const auto& e : fs::recursive_directory_iterator(dataset_))
      if (e.is_regular_file()) {
        expect += e.file_size();
        QCOMPARE(sha256sum(d.dataset_dir + "/" + fs::relative(e.path(), dataset_).string()), sha256sum(e.path()));
      }
    QVERIFY(d.bytes_sent >= expect);  // + manifest.json
    QVERIFY(d.files_sent > 0);
    QVERIFY(!seen.empty());
    QCOMPARE(seen.back().first, expect);
    QCOMPARE(seen.back().second, expect);
    for (size_t i = 1; i < seen.size(); ++i) QVERIFY(seen[i].first >= seen[i - 1].first);
    const nlohmann::json written = nlohmann::json::parse(read_text(d.config_path));
    QCOMPARE(written["data"]["path"].get<std::string>(), d.dataset_dir);
    QCOMPARE(written["model"]["vocab_size"].get<int>(), 257);
    QVERIFY2(d.engine_version.rfind("traindeck-engine ", 0) == 0, d.engine_version.c_str());
    QVERIFY(!d.node_glibc.empty());
    QVERIFY((fs::status(d.engine).permissions() & fs::perms::owner_exec) != fs::perms::none);
    QVERIFY((fs::status(d.engine + ".bin").permissions() & fs::perms::owner_exec) != fs::perms::none);

    DeployResult d2 = deploy(*s_, bundle_, dataset_, cfg.dump(), work, "run two");
    QCOMPARE(d2.bytes_sent, uint64_t(0));
    QCOMPARE(d2.files_sent, 0);
    QVERIFY(d2.files_skipped >= int(m.files.size()) + 1);
    QVERIFY(fs::exists(work + "/runs/run two/config.json"));

    // Another corpus prepared into a folder of the same name ("tiny data") gets its own folder on
    // the node: run one's dataset stays byte for byte what run one trained on.
    const fs::path other = sshd_.dir / "local2" / "tiny data";
    fs::create_directories(other.parent_path());
    std::ofstream(sshd_.dir / "corpus2.txt") << std::string(3000, 'z') << "\nanother corpus\n";
    QCOMPARE(run_cmd({TD_ENGINE_EXE, "prepare", "--input", (sshd_.dir / "corpus2.txt").string(), "--out", other.string(),
                      "--tokenizer", "byte", "--quiet"}), 0);
    const std::string before = sha256sum(d.dataset_dir + "/manifest.json");
    DeployResult d3 = deploy(*s_, bundle_, other, cfg.dump(), work, "run three");
    QVERIFY(d3.dataset_dir != d.dataset_dir);
    QCOMPARE(d3.dataset_dir, work + "/datasets/tiny data-" + sha256sum(other / "manifest.json").substr(0, 12));
    QCOMPARE(sha256sum(d3.dataset_dir + "/manifest.json"), sha256sum(other / "manifest.json"));
    QCOMPARE(sha256sum(d.dataset_dir + "/manifest.json"), before);
    QCOMPARE(before, sha256sum(dataset_ / "manifest.json"));
    QCOMPARE(nlohmann::json::parse(read_text(work + "/runs/run one/config.json"))["data"]["path"].get<std::string>(),
             d.dataset_dir);
  }

  void mismatches_are_clear_errors() {
    const std::string work = (sshd_.dir / "node work").string();
    const fs::path other = sshd_.dir / "local" / "other arch";
    fs::copy(bundle_, other, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    nlohmann::json man = nlohmann::json::parse(read_text(other / "manifest.json"));
    man["arch"] = "riscv64";
    std::ofstream(other / "manifest.json", std::ios::trunc) << man.dump();
    const std::string fresh = (sshd_.dir / "fresh work").string();
    try {
      deploy(*s_, other, dataset_, "{}", fresh, "r", {});
      QFAIL("no error for another architecture");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("architecture is x86_64 but the engine bundle is built for riscv64") !=
                   std::string::npos, e.what());
    }
    man["arch"] = "x86_64";
    man["glibc"] = "99.1";
    std::ofstream(other / "manifest.json", std::ios::trunc) << man.dump();
    try {
      deploy(*s_, other, dataset_, "{}", fresh, "r", {});
      QFAIL("no error for a newer glibc");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("needs glibc 99.1 or newer") != std::string::npos, e.what());
    }
    QVERIFY(!fs::exists(fresh));  // checked before anything was uploaded

    // A bundle whose engine cannot start on the node: its error output is in the message.
    const fs::path broken = sshd_.dir / "local" / "broken";
    fs::create_directories(broken / "bin");
    std::ofstream(broken / "bin" / "traindeck-engine")
        << "#!/bin/sh\necho 'error while loading shared libraries: libfoo.so.1' >&2\nexit 127\n";
    const std::string sha = sha256sum(broken / "bin" / "traindeck-engine");
    const uint64_t size = fs::file_size(broken / "bin" / "traindeck-engine");
    nlohmann::json bm = {{"format", "traindeck-engine-bundle"}, {"arch", "x86_64"}, {"glibc", "2.2.5"},
                         {"hash", "brokenbundle0000"},
                         {"files", {{{"path", "bin/traindeck-engine"}, {"size", size}, {"sha256", sha}}}}};
    std::ofstream(broken / "manifest.json") << bm.dump();
    try {
      deploy(*s_, broken, dataset_, "{}", fresh, "r", {});
      QFAIL("no error for an engine that does not run");
    } catch (const td::Error& e) {
      const std::string w = e.what();
      QVERIFY2(w.find("the bundled engine does not run on the node") != std::string::npos, e.what());
      QVERIFY2(w.find("exit 127") != std::string::npos, e.what());
      QVERIFY2(w.find("libfoo.so.1") != std::string::npos, e.what());
    }
    try {
      deploy(*s_, bundle_, dataset_, "{not json", work, "r", {});
      QFAIL("no error for a bad config");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("not JSON") != std::string::npos, e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestBundle)
#include "test_bundle.moc"
