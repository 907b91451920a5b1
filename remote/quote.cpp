#include "remote/quote.h"

#include "engine/common/error.h"

namespace td::remote {

namespace {
// Characters that never mean anything to sh inside a word (no globbing, no expansion, no
// splitting, no tilde at the start since '~' is not in the set). A word made only of them
// is written bare, for readable command lines in error messages.
bool is_plain(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == '/' || c == ':' || c == '@' || c == '%' || c == '+' ||
         c == ',' || c == '-' || c == '=';
}
}  // namespace

std::string shell_quote(std::string_view arg) {
  if (arg.find('\0') != std::string_view::npos)
    throw Error("a remote command argument contains a NUL byte, which no shell can pass on; "
                "remove it from the name or path");
  if (arg.empty()) return "''";
  bool plain = true;
  for (unsigned char c : arg) plain = plain && is_plain(c);
  // A bare word with '=' before any '/' in the first word could read as an assignment; quote
  // every word containing '=' to be safe.
  if (plain && arg.find('=') == std::string_view::npos) return std::string(arg);
  std::string out;
  out.reserve(arg.size() + 2);
  out += '\'';
  for (char c : arg) {
    if (c == '\'')
      out += "'\\''";  // close the quote, an escaped quote, reopen
    else
      out += c;
  }
  out += '\'';
  return out;
}

std::string command_line(const std::vector<std::string>& argv) {
  if (argv.empty()) throw Error("internal: a remote command needs at least the program name");
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i) out += ' ';
    out += shell_quote(argv[i]);
  }
  return out;
}

}  // namespace td::remote
