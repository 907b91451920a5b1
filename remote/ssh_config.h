// ~/.ssh/config-style host aliases: Host sections with HostName, User, Port, IdentityFile and
// ProxyJump, resolved the way OpenSSH does (the first value obtained for a keyword wins;
// IdentityFile accumulates).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace td::remote {

/// Where and as whom to connect, after the alias went through the config.
struct HostSpec {
  std::string alias;                        ///< the name the person typed
  std::string hostname;                     ///< HostName, else the alias (%h, %% expanded)
  std::string user;                         ///< User, else the local user
  int port = 22;                            ///< Port, else 22
  std::vector<std::string> identity_files;  ///< IdentityFile values in order, ~ and %h/%u/%r/%p/%% expanded
  std::vector<std::string> proxy_jump;      ///< ProxyJump hops "[user@]host[:port]" in order; empty for none
  int connect_timeout_s = 0;                ///< ConnectTimeout in seconds; 0 when the config sets none
  bool matched = false;                     ///< true when some Host section other than "*" applied
};

/// What the %u and ~ tokens expand to; empty fields are taken from $USER/getpwuid and $HOME.
struct LocalEnv {
  std::string user;
  std::string home;
};

/// True when `host` matches an OpenSSH pattern with '*' (any run) and '?' (one character),
/// compared case-insensitively like OpenSSH does for host names.
bool host_pattern_match(std::string_view pattern, std::string_view host);

/// Resolves `alias` with the text of an ssh_config file. Unknown keywords, Match blocks and
/// Include are ignored (Match sections never apply). Errors: td::Error for a Port that is not
/// 1..65535, naming the line.
HostSpec resolve_host_text(std::string_view alias, std::string_view config_text,
                           const LocalEnv& env = {});

/// Same, reading the file at `config_path`; a missing file gives the defaults (as OpenSSH).
/// Errors: td::Error when the file exists but cannot be read.
HostSpec resolve_host(std::string_view alias, const std::filesystem::path& config_path,
                      const LocalEnv& env = {});

/// The default config: $HOME/.ssh/config.
std::filesystem::path default_ssh_config_path();

}  // namespace td::remote
