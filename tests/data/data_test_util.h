// Helpers shared by the tests/data suites: writing small files, reading a split back.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <QtTest>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/data/shard.h"

namespace tdtest {

inline void write_file(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

inline nlohmann::json read_manifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  return nlohmann::json::parse(in);
}

/// All tokens of a split, shards concatenated in manifest order.
inline std::vector<uint32_t> read_split(const std::string& dir, const std::string& split) {
  std::vector<uint32_t> all;
  nlohmann::json m = read_manifest(dir);  // (a temporary's member would dangle in the loop)
  for (const auto& s : m["splits"][split]["shards"]) {
    td::ShardInfo info = td::read_shard_header(dir + "/" + s["file"].get<std::string>());
    std::vector<uint32_t> t(info.count);
    int fd = ::open(info.path.c_str(), O_RDONLY);
    td::read_shard_tokens(info, fd, 0, t.size(), t.data());
    ::close(fd);
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

/// The real corpus for tests: tinyshakespeare beside the repository, else Debian's fortunes.
/// TD_TEST_CORPUS in the environment overrides it.
inline std::string real_corpus() {
  if (const char* e = std::getenv("TD_TEST_CORPUS")) return e;
  std::string shakespeare = TD_SOURCE_DIR "/../shared/data/tinyshakespeare.txt";
  if (std::filesystem::exists(shakespeare)) return shakespeare;
  return "/usr/share/games/fortunes";
}

}  // namespace tdtest
