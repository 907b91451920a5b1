// SHA256SUMS: the checksum file of a checkpoint directory (docs/formats.md "Checkpoints").
//
// coreutils' sha256sum format, so that `cd step_NNNNNNNN && sha256sum -c SHA256SUMS` checks a
// checkpoint on any machine: one line per file, "<64 lowercase hex digits><2 spaces><name>\n"
// (a '*' instead of the second space, sha256sum's binary mark, is accepted when read). Names
// are plain file names of the checkpoint directory: no '/', not "." or "..", no control
// characters. Header-only (no library): remote/ checks a downloaded checkpoint with it too.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/common/error.h"

namespace td {

/// The checksum file's name inside a checkpoint directory.
inline constexpr const char* kChecksumsFile = "SHA256SUMS";

/// True for a name a checksum line may carry: a plain file name (1-255 bytes, no '/', no
/// control character, not "." or ".."), so that joining it to a directory stays inside it.
inline bool plain_file_name(const std::string& name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  for (unsigned char c : name)
    if (c == '/' || c < 0x20 || c == 0x7F) return false;
  return true;
}

/// The text of a SHA256SUMS file: one line per (name, hex sha256), in the given order.
inline std::string format_sha256sums(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out;
  for (const auto& [name, hex] : files) out += hex + "  " + name + "\n";
  return out;
}

/// Parses a SHA256SUMS text into (name, lowercase hex sha256) pairs, in file order. `where` names
/// the file in errors. Throws td::Error ("<where> line N: ...") for a line that is not
/// "<64 hex digits><space><space or *><plain file name>", or a name listed twice.
inline std::vector<std::pair<std::string, std::string>> parse_sha256sums(const std::string& text, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    line_no++;
    auto bad = [&](const std::string& why) {
      fail(where + " line " + std::to_string(line_no) + ": " + why + "; the checksum file is damaged (a checkpoint's SHA256SUMS holds "
           "\"<sha256 hex>  <file name>\" per line)");
    };
    if (line.size() < 67 || line[64] != ' ' || (line[65] != ' ' && line[65] != '*')) bad("not \"<64 hex digits>  <name>\"");
    std::string hex = line.substr(0, 64);
    for (char& c : hex) {
      if (c >= 'A' && c <= 'F') c = char(c - 'A' + 'a');
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) bad("the checksum is not 64 hex digits");
    }
    const std::string name = line.substr(66);
    if (!plain_file_name(name)) bad("\"" + name + "\" is not a plain file name");
    for (const auto& e : out)
      if (e.first == name) bad("\"" + name + "\" is listed twice");
    out.emplace_back(name, hex);
  }
  return out;
}

}  // namespace td
