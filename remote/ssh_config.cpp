#include "remote/ssh_config.h"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "engine/common/error.h"

namespace td::remote {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits a config line into words: whitespace separated, "double quoted" words kept whole,
// the keyword may be followed by '=' (Port=22, Port = 22).
std::vector<std::string> split_words(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  auto skip_space = [&] {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
  };
  skip_space();
  while (i < line.size()) {
    if (line[i] == '#') break;
    std::string w;
    if (line[i] == '"') {
      ++i;
      while (i < line.size() && line[i] != '"') w += line[i++];
      if (i < line.size()) ++i;
    } else {
      while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i])) &&
             !(words.empty() && line[i] == '='))
        w += line[i++];
    }
    words.push_back(std::move(w));
    skip_space();
    if (words.size() == 1 && i < line.size() && line[i] == '=') {
      ++i;
      skip_space();
    }
  }
  return words;
}

bool match_here(std::string_view p, std::string_view s) {
  // Iterative '*' matching with backtracking to the last star.
  size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || std::tolower(static_cast<unsigned char>(p[pi])) ==
                                              std::tolower(static_cast<unsigned char>(s[si])))) {
      ++pi;
      ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

// Host line: applies when some positive pattern matches and no negated one does.
bool host_line_applies(const std::vector<std::string>& words, std::string_view alias) {
  bool any = false;
  for (size_t i = 1; i < words.size(); ++i) {
    std::string_view p = words[i];
    if (!p.empty() && p[0] == '!') {
      if (match_here(p.substr(1), alias)) return false;
    } else if (match_here(p, alias)) {
      any = true;
    }
  }
  return any;
}

std::string expand(std::string_view s, const HostSpec& h, const LocalEnv& env) {
  std::string out;
  if (s.size() >= 1 && s[0] == '~' && (s.size() == 1 || s[1] == '/')) {
    out = env.home;
    s.remove_prefix(1);
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    char t = s[++i];
    switch (t) {
      case 'h': out += h.hostname; break;
      case 'n': out += h.alias; break;
      case 'u': out += env.user; break;
      case 'r': out += h.user; break;
      case 'p': out += std::to_string(h.port); break;
      case 'd': out += env.home; break;
      case '%': out += '%'; break;
      default: out += '%'; out += t; break;  // unknown token: kept as written
    }
  }
  return out;
}

LocalEnv filled(LocalEnv env) {
  if (env.user.empty()) {
    if (const char* u = std::getenv("USER"); u && *u) env.user = u;
    else if (const passwd* pw = getpwuid(getuid())) env.user = pw->pw_name;
  }
  if (env.home.empty()) {
    if (const char* h = std::getenv("HOME"); h && *h) env.home = h;
    else if (const passwd* pw = getpwuid(getuid())) env.home = pw->pw_dir;
  }
  return env;
}

}  // namespace

bool host_pattern_match(std::string_view pattern, std::string_view host) {
  return match_here(pattern, host);
}

HostSpec resolve_host_text(std::string_view alias, std::string_view text, const LocalEnv& env_in) {
  const LocalEnv env = filled(env_in);
  std::optional<std::string> hostname, user, port;
  std::vector<std::string> identity_files;
  std::optional<std::string> proxy_jump;
  std::optional<int> connect_timeout;
  bool applies = true;  // lines before the first Host apply to every host
  bool matched = false;
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::vector<std::string> w = split_words(line);
    if (w.empty()) continue;
    const std::string key = lower(w[0]);
    if (key == "host") {
      applies = host_line_applies(w, alias);
      if (applies && !(w.size() == 2 && w[1] == "*")) matched = true;
      continue;
    }
    if (key == "match") {
      applies = false;  // Match criteria are not evaluated: such a block never applies
      continue;
    }
    if (!applies || w.size() < 2) continue;
    if (key == "hostname" && !hostname) hostname = w[1];
    else if (key == "user" && !user) user = w[1];
    else if (key == "port" && !port) {
      char* end = nullptr;
      long v = std::strtol(w[1].c_str(), &end, 10);
      if (!end || *end || v < 1 || v > 65535)
        throw Error("ssh config line " + std::to_string(line_no) + ": Port '" + w[1] +
                    "' is not a port number 1..65535; fix the line in the config file");
      port = w[1];
    } else if (key == "identityfile") {
      identity_files.push_back(w[1]);
    } else if (key == "proxyjump" && !proxy_jump) {
      proxy_jump = w[1];
    } else if (key == "connecttimeout" && !connect_timeout) {
      char* end = nullptr;
      long v = std::strtol(w[1].c_str(), &end, 10);
      if (!end || *end || v < 1 || v > 86400)
        throw Error("ssh config line " + std::to_string(line_no) + ": ConnectTimeout '" + w[1] +
                    "' is not a number of seconds 1..86400; fix the line in the config file");
      connect_timeout = static_cast<int>(v);
    }
  }
  HostSpec h;
  h.alias = std::string(alias);
  h.matched = matched;
  h.connect_timeout_s = connect_timeout.value_or(0);
  h.port = port ? std::stoi(*port) : 22;
  h.hostname = std::string(alias);
  if (hostname) h.hostname = expand(*hostname, h, env);  // %h here is the alias
  h.user = user ? expand(*user, h, env) : env.user;
  for (const std::string& f : identity_files) h.identity_files.push_back(expand(f, h, env));
  if (proxy_jump && lower(*proxy_jump) != "none") {
    std::string hop;
    std::istringstream hops(*proxy_jump);
    while (std::getline(hops, hop, ','))
      if (!hop.empty()) h.proxy_jump.push_back(hop);
  }
  return h;
}

HostSpec resolve_host(std::string_view alias, const std::filesystem::path& config_path,
                      const LocalEnv& env) {
  std::error_code ec;
  if (!std::filesystem::exists(config_path, ec)) return resolve_host_text(alias, "", env);
  std::ifstream f(config_path);
  if (!f) throw Error("cannot read the ssh config '" + config_path.string() +
                      "': check its permissions");
  std::stringstream ss;
  ss << f.rdbuf();
  return resolve_host_text(alias, ss.str(), env);
}

std::filesystem::path default_ssh_config_path() {
  return std::filesystem::path(filled({}).home) / ".ssh" / "config";
}

}  // namespace td::remote
