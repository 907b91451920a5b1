// One SSH connection to a node (libssh2): connect with a timeout, check the host key against a
// known_hosts file, authenticate, run commands. SFTP transfers on a Session are in sftp.h.
//
// Threading rule: a Session is used by one thread at a time (libssh2 sessions are not thread
// safe); different Sessions may be used on different threads at once. Every call that waits
// on the network has a timeout (ConnectOptions::timeout_ms per libssh2 call, ExecOptions for a
// whole command): a hung node raises td::Error, never blocks forever.
//
// Secrets (passwords, passphrases) are only passed to libssh2; they never appear in a message.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "remote/ssh_config.h"

struct _LIBSSH2_SESSION;
struct _LIBSSH2_SFTP;

namespace td::remote {

/// Result of checking the node's host key against known_hosts.
enum class HostKeyStatus {
  Match,     ///< known and equal: authentication may proceed
  Unknown,   ///< no entry for this host: show the fingerprint, ask, then accept_host_key()
  Mismatch,  ///< an entry with a different key: refused, never authenticates
};

struct HostKeyInfo {
  HostKeyStatus status = HostKeyStatus::Unknown;
  std::string key_type;     ///< "ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", ...
  std::string fingerprint;  ///< "SHA256:<base64 without padding>", as ssh-keygen -l prints it
  std::string host_token;   ///< the known_hosts name: "host", or "[host]:port" when port != 22
  std::string known_hosts;  ///< the file that was checked
};

/// How to authenticate. Secrets live here only as long as the caller keeps this struct.
struct Auth {
  enum class Method { Agent, KeyFile, Password };
  Method method = Method::Agent;
  std::string key_file;    ///< KeyFile: private key path (PEM, or OpenSSH format where libssh2 reads it)
  std::string passphrase;  ///< KeyFile: passphrase, empty for none (secret)
  std::string password;    ///< Password: also answers keyboard-interactive prompts (secret)

  static Auth agent() { return {}; }
  static Auth key(std::string file, std::string passphrase = {}) {
    return {Method::KeyFile, std::move(file), std::move(passphrase), {}};
  }
  static Auth pass(std::string password) { return {Method::Password, {}, {}, std::move(password)}; }
};

struct ConnectOptions {
  std::string host;             ///< name or address to connect to (HostSpec::hostname)
  int port = 22;
  std::string user;             ///< remote user (HostSpec::user)
  /// The TCP connection and the node's SSH greeting (together), then the least time each later
  /// libssh2 call (handshake, auth, SFTP, ...) may take: on a slow link every later call gets
  /// kRoundTripsPerCall × the greeting time when that is more (Session::greeting_ms()).
  /// Users set it per node (NodeSpec::connect_timeout_s) or with ConnectTimeout in ~/.ssh/config.
  int timeout_ms = 15000;
  std::string known_hosts;      ///< empty: $HOME/.ssh/known_hosts
  std::string ciphers;          ///< libssh2 cipher preference both ways, e.g. "aes128-ctr"; empty: default
  std::string macs;             ///< MAC preference both ways, e.g. "hmac-sha2-256"; empty: default
};

/// A libssh2 call waits at most this many greeting times (Session::greeting_ms(), about one to
/// one and a half round trips) when that is longer than ConnectOptions::timeout_ms: the SSH
/// handshake takes about three round trips (RFC 4253: version, KEXINIT, key exchange, NEWKEYS),
/// one call never more than that, so ten leaves room for a link whose delay varies.
inline constexpr int kRoundTripsPerCall = 10;
/// A greeting slower than this (ms) is called "a slow link" in messages.
inline constexpr int kSlowLinkMs = 400;

/// Output of one remote command.
struct ExecResult {
  int exit_status = -1;     ///< the command's exit code; -1 when it died from a signal
  std::string exit_signal;  ///< "KILL", "TERM", ... when killed by a signal, else empty
  std::string out;          ///< stdout bytes (at most ExecOptions::max_output)
  std::string err;          ///< stderr bytes (at most ExecOptions::max_output)
  bool truncated = false;   ///< some output was dropped at the cap
  bool cancelled = false;   ///< stopped through ExecOptions::cancel (exit_status stays -1)
};

struct ExecOptions {
  int timeout_ms = 60000;                  ///< whole command, from channel open to exit; <= 0: none. On a slow link (Session::slow_link()) at least kRoundTripsPerCall greeting times
  size_t max_output = 16u << 20;           ///< bytes kept per stream; more is dropped (truncated)
  const std::atomic<bool>* cancel = nullptr;  ///< set from any thread to stop waiting (checked every 100 ms)
  std::string stdin_data;                  ///< written to the command's stdin, then EOF
};

enum class Stream { Out, Err };

class Session {
 public:
  /// Opens the TCP connection (non-blocking connect, poll with timeout_ms), does the SSH
  /// handshake and checks the host key (host_key()). Does not authenticate.
  /// Errors: td::Error naming user@host:port and the step (resolve, connect, handshake) with a hint.
  static Session connect(const ConnectOptions& opts);

  /// Same as connect() but reached through `jump` (ProxyJump): an authenticated Session to a
  /// jump host, which opens a direct-tcpip channel to target.host:target.port (names are
  /// resolved by the jump host). The new Session owns `jump` and a pump thread that copies bytes
  /// between the channel and a local socket pair; from now on only that thread uses `jump`, and
  /// the destructor stops it and disconnects both. Chains: pass a Session made by connect_via
  /// as `jump`. Host key check, authenticate(), exec and SFTP work as for connect(), timeouts
  /// and cancel too; when the jump connection drops, the next call fails at once with a message
  /// naming the jump host (no hang). The known_hosts token is the target's ("[host]:port").
  /// Errors: td::Error when `jump` is not authenticated, when the jump host refuses or cannot
  /// reach the target (AllowTcpForwarding, firewall, name), or from the handshake.
  static Session connect_via(std::unique_ptr<Session> jump, const ConnectOptions& target);

  /// connect(), then refuses unless the host key is a Match (td::Error with the fingerprint for
  /// an unknown host, the attack warning for a changed one), then authenticate(auth).
  static Session open(const ConnectOptions& opts, const Auth& auth);

  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();  ///< closes SFTP, sends disconnect, closes the socket

  /// The host key check done by connect().
  const HostKeyInfo& host_key() const;

  /// Appends this host's key to the known_hosts file (creating it and its folder, mode 0600/0700)
  /// as a plain "host key-type base64" line or, with hashed, an OpenSSH "|1|salt|hmac|" line.
  /// Only for an Unknown host (td::Error otherwise: a Mismatch is never overwritten; remove the
  /// old entry with ssh-keygen -R first). Afterwards host_key().status is Match.
  void accept_host_key(bool hashed = false);

  /// Authenticates as ConnectOptions::user. Refuses (td::Error, nothing sent) unless the host key
  /// is a Match. Password falls back to keyboard-interactive when the server offers only that.
  /// Errors: td::Error saying which method failed, why, and what to do.
  void authenticate(const Auth& auth);
  bool authenticated() const;

  /// Runs argv (quoted with command_line()) on the node and collects its output.
  /// Errors: td::Error when the channel cannot be opened or on timeout (the remote process may
  /// keep running; stop it by other means).
  ExecResult exec(const std::vector<std::string>& argv, const ExecOptions& opts = {});
  /// Same with an already quoted shell command line (build it with command_line()).
  ExecResult exec_command(const std::string& command, const ExecOptions& opts = {});
  /// Streaming: on_chunk(stream, bytes) for every chunk as it arrives (on the calling thread);
  /// out/err in the result stay empty. For tailing logs: stop with opts.cancel.
  ExecResult exec_stream(const std::string& command,
                         const std::function<void(Stream, std::string_view)>& on_chunk,
                         const ExecOptions& opts = {});

  /// Milliseconds from the start of the TCP connect (or of the jump host's channel) until the
  /// node's SSH greeting arrived: about one round trip of the link (1 to 1.5 on a direct TCP
  /// link, 0.5 to 1 through a proxy that answers the TCP connect itself).
  int greeting_ms() const;
  /// greeting_ms() >= kSlowLinkMs.
  bool slow_link() const;

  /// "user@host:port", for messages.
  std::string where() const;
  const ConnectOptions& options() const;

  /// The libssh2 handles, for remote/ internals (sftp.cpp). sftp() starts the SFTP subsystem
  /// on first use (td::Error when the server has none).
  _LIBSSH2_SESSION* raw() const;
  int socket_fd() const;  ///< the TCP socket, for poll() in non-blocking loops
  _LIBSSH2_SFTP* sftp();
  /// Throws td::Error("<where>: <what>: <libssh2's last error>. <hint>").
  [[noreturn]] void fail(const std::string& what, const std::string& hint = {}) const;

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  static Session handshake(std::unique_ptr<Impl> d);  // SSH handshake + host key on d->sock
  std::unique_ptr<Impl> d_;
};

/// ConnectOptions for a resolved ~/.ssh/config alias (hostname, port, user; the rest default).
/// HostSpec::identity_files are for Auth::key(); HostSpec::proxy_jump hops are followed by
/// cluster.h's resolve_node() + open_node() (each hop through Session::connect_via()).
ConnectOptions connect_options(const HostSpec& host);

/// "SHA256:<base64 without padding>" of a raw key blob (as OpenSSH prints fingerprints).
std::string sha256_fingerprint(std::string_view key_blob);

}  // namespace td::remote
