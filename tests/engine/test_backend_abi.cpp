// The backend ABI is enforced (issue 36): the engine calls libtraindeck-cuda.so through the
// classes and functions of the ABI-bearing headers below, and refuses a module whose
// kBackendAbiVersion differs. This test fails when those headers change without a version bump:
// engine/ops/backend_abi.txt records, per version, the SHA-256 of the headers' code (comments
// and whitespace removed, so a comment edit does not count), and
//   - the record's last version must be kBackendAbiVersion,
//   - its hash must be the headers' hash now,
//   - no version may be recorded twice (a new hash needs a new version).
// After an interface change: bump kBackendAbiVersion in engine/ops/backend.h, run this test, and
// append the line it prints.
#include <QtTest>

#include <openssl/evp.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/ops/backend.h"

namespace {

// What the CUDA module includes from the engine (cuda/*.cu, *.h) and calls through.
const std::vector<std::string> kAbiHeaders = {"engine/ops/ops.h", "engine/ops/activation_ops.def",
                                              "engine/ops/dtype.h", "engine/ops/backend.h",
                                              "engine/dist/communicator.h"};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The code without comments ("//" to the end of the line, "/* */"), string literals kept as
// they are, every run of whitespace one space.
std::string code_of(const std::string& text) {
  std::string out;
  bool space = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' || c == '\'') {  // a literal: copied whole (escapes included)
      const size_t start = i;
      for (++i; i < text.size() && text[i] != c; ++i)
        if (text[i] == '\\') ++i;
      if (space && !out.empty()) out += ' ';
      space = false;
      out.append(text, start, i - start + 1);
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      space = true;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string::npos ? text.size() : end + 1;
      space = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string sha256_hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex += digits[md[i] >> 4];
    hex += digits[md[i] & 15];
  }
  return hex;
}

}  // namespace

class TestBackendAbi : public QObject {
  Q_OBJECT

 private slots:
  void comments_and_spaces_do_not_count() {
    QCOMPARE(code_of("int  a; // one\n/* two\n three */ int b;\n"), std::string("int a; int b;"));
    QCOMPARE(code_of("const char* s = \"// not a comment\";"), std::string("const char* s = \"// not a comment\";"));
    QVERIFY(code_of("virtual void f(int);") != code_of("virtual void f(long);"));
  }

  void headers_match_the_recorded_version() {
    std::string all;
    for (const std::string& h : kAbiHeaders) {
      const std::string text = read_file(std::string(TD_SOURCE_DIR) + "/" + h);
      QVERIFY2(!text.empty(), ("cannot read " + h).c_str());
      all += h + "\n" + code_of(text) + "\n";
    }
    const std::string now = sha256_hex(all);
    const std::string record_path = std::string(TD_SOURCE_DIR) + "/engine/ops/backend_abi.txt";
    std::istringstream record(read_file(record_path));
    std::map<int, std::string> seen;
    int last_version = -1;
    std::string last_hash;
    for (std::string line; std::getline(record, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream words(line);
      int version = -1;
      std::string hash;
      QVERIFY2(words >> version >> hash && hash.size() == 64, ("a malformed line in backend_abi.txt: " + line).c_str());
      QVERIFY2(seen.emplace(version, hash).second,
               ("backend_abi.txt records version " + std::to_string(version) +
                " twice: a changed interface needs a new kBackendAbiVersion, not a new hash for the old one")
                   .c_str());
      QVERIFY2(version > last_version, ("backend_abi.txt: version " + std::to_string(version) + " after " +
                                        std::to_string(last_version) + " (versions only grow)").c_str());
      last_version = version;
      last_hash = hash;
    }
    const std::string line = std::to_string(td::kBackendAbiVersion) + " " + now;
    QVERIFY2(last_version == td::kBackendAbiVersion,
             ("engine/ops/backend.h says kBackendAbiVersion " + std::to_string(td::kBackendAbiVersion) +
              " but engine/ops/backend_abi.txt ends at " + std::to_string(last_version) + ": append the line '" + line +
              "'").c_str());
    QVERIFY2(last_hash == now,
             ("the ABI-bearing headers (engine/ops/ops.h, activation_ops.def, dtype.h, backend.h, "
              "engine/dist/communicator.h) changed "
              "since version " + std::to_string(last_version) +
              " was recorded: an older libtraindeck-cuda.so would pass the version check and then be called "
              "through a mismatched vtable. Bump kBackendAbiVersion in engine/ops/backend.h, run this test again "
              "and append the line it prints to engine/ops/backend_abi.txt (hash now: " + now + ")").c_str());
  }
};

QTEST_GUILESS_MAIN(TestBackendAbi)
#include "test_backend_abi.moc"
