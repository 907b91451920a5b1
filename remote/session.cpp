#include "remote/session.h"

#include <fcntl.h>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "engine/common/error.h"
#include "remote/quote.h"
#include "remote/tunnel.h"

namespace td::remote {

namespace {

std::string base64(const unsigned char* p, size_t n, bool pad) {
  std::string out(4 * ((n + 2) / 3) + 1, '\0');
  int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), p, static_cast<int>(n));
  out.resize(static_cast<size_t>(len));
  if (!pad)
    while (!out.empty() && out.back() == '=') out.pop_back();
  return out;
}

void libssh2_global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (libssh2_init(0) != 0) throw Error("libssh2_init failed: the SSH library cannot start");
  });
}

std::string key_type_name(int type) {
  switch (type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA: return "ssh-rsa";
    case LIBSSH2_HOSTKEY_TYPE_DSS: return "ssh-dss";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return "ecdsa-sha2-nistp256";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return "ecdsa-sha2-nistp384";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return "ecdsa-sha2-nistp521";
    case LIBSSH2_HOSTKEY_TYPE_ED25519: return "ssh-ed25519";
    default: return "unknown";
  }
}

int knownhost_key_mask(int type) {
  switch (type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA: return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
    case LIBSSH2_HOSTKEY_TYPE_DSS: return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
    case LIBSSH2_HOSTKEY_TYPE_ED25519: return LIBSSH2_KNOWNHOST_KEY_ED25519;
    default: return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
  }
}

std::string home_dir() {
  const char* h = std::getenv("HOME");
  return h ? h : "";
}

using Clock = std::chrono::steady_clock;

}  // namespace

std::string sha256_fingerprint(std::string_view blob) {
  unsigned char md[32];
  unsigned int len = 0;
  EVP_Digest(blob.data(), blob.size(), md, &len, EVP_sha256(), nullptr);
  return "SHA256:" + base64(md, len, false);
}

ConnectOptions connect_options(const HostSpec& h) {
  ConnectOptions o;
  o.host = h.hostname;
  o.port = h.port;
  o.user = h.user;
  if (h.connect_timeout_s > 0) o.timeout_ms = 1000 * h.connect_timeout_s;
  return o;
}

struct Session::Impl {
  ConnectOptions opts;
  int sock = -1;
  LIBSSH2_SESSION* s = nullptr;
  LIBSSH2_SFTP* sftp = nullptr;
  HostKeyInfo host_key;
  std::string key_blob;  // the server's raw host key
  bool authed = false;
  const std::string* kbd_password = nullptr;  // set only during keyboard-interactive auth
  std::unique_ptr<Tunnel> tunnel;  // through a jump host: destroyed after the socket is closed
  Clock::time_point started = Clock::now();  // the TCP connect (or the tunnel) began
  int greeting_ms = 0;

  ~Impl() {
    if (sftp) libssh2_sftp_shutdown(sftp);
    if (s) {
      libssh2_session_set_blocking(s, 1);
      libssh2_session_set_timeout(s, 500);  // a hung node must not hold up the caller
      libssh2_session_disconnect(s, "TrainDeck closes the connection");
      libssh2_session_free(s);
    }
    if (sock >= 0) ::close(sock);
  }

  std::string where() const {
    return opts.user + "@" + opts.host + ":" + std::to_string(opts.port);
  }
  // ", on a slow link: ..." when the greeting was slow, else empty.
  std::string slow_note() const {
    if (greeting_ms < kSlowLinkMs) return "";
    return ", on a slow link: the node's SSH greeting took " + std::to_string(greeting_ms) +
           " ms; raise the node's connect timeout (connect_timeout_s, or ConnectTimeout in ~/.ssh/config)";
  }
  std::string last_error() const {
    char* msg = nullptr;
    int len = 0;
    int code = s ? libssh2_session_last_error(s, &msg, &len, 0) : 0;
    std::string m = msg && len > 0 ? std::string(msg, static_cast<size_t>(len)) : "";
    if (code == LIBSSH2_ERROR_TIMEOUT) m += " (timed out after " + std::to_string(opts.timeout_ms) + " ms" + slow_note() + ")";
    if (m.empty()) m = "error " + std::to_string(code);
    if (tunnel) {
      const std::string why = tunnel->reason();
      m += why.empty() ? " (through the jump host " + tunnel->jump_where() + ")" : " (" + why + ")";
    }
    return m;
  }
};

namespace {

// Non-blocking connect to each address of host:port in turn, polling up to timeout_ms overall.
int tcp_connect(const ConnectOptions& o, const std::string& where) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(o.host.c_str(), std::to_string(o.port).c_str(), &hints, &res);
  if (rc != 0)
    throw Error(where + ": cannot resolve host '" + o.host + "': " + gai_strerror(rc) +
                ". Check the host name (or the HostName in ~/.ssh/config) and the network.");
  const auto deadline = Clock::now() + std::chrono::milliseconds(o.timeout_ms);
  std::string last = "no address";
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    int s = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (s < 0) {
      last = std::strerror(errno);
      continue;
    }
    rc = ::connect(s, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{s, POLLOUT, 0};
      rc = left > 0 ? ::poll(&p, 1, static_cast<int>(left)) : 0;
      if (rc == 0) {
        last = "timed out after " + std::to_string(o.timeout_ms) + " ms";
        ::close(s);
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err ? -1 : 0;
      errno = err;
    }
    if (rc != 0) {
      last = std::strerror(errno);
      ::close(s);
      continue;
    }
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fd = s;
  }
  freeaddrinfo(res);
  if (fd < 0)
    throw Error(where + ": cannot connect: " + last +
                ". Check that the node is up, that sshd listens on port " + std::to_string(o.port) +
                " and that no firewall blocks it.");
  return fd;
}

}  // namespace

Session::Session(std::unique_ptr<Impl> impl) : d_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

const HostKeyInfo& Session::host_key() const { return d_->host_key; }
bool Session::authenticated() const { return d_->authed; }
std::string Session::where() const { return d_->where(); }
const ConnectOptions& Session::options() const { return d_->opts; }
_LIBSSH2_SESSION* Session::raw() const { return d_->s; }
int Session::socket_fd() const { return d_->sock; }
int Session::greeting_ms() const { return d_->greeting_ms; }
bool Session::slow_link() const { return d_->greeting_ms >= kSlowLinkMs; }

void Session::fail(const std::string& what, const std::string& hint) const {
  std::string msg = d_->where() + ": " + what + ": " + d_->last_error();
  if (!hint.empty()) msg += ". " + hint;
  throw Error(msg);
}

_LIBSSH2_SFTP* Session::sftp() {
  if (!d_->authed) throw Error(where() + ": SFTP before authentication (internal)");
  if (!d_->sftp) {
    d_->sftp = libssh2_sftp_init(d_->s);
    if (!d_->sftp)
      fail("cannot start SFTP", "The node's sshd needs an sftp Subsystem (Subsystem sftp "
                                "/usr/lib/openssh/sftp-server or internal-sftp in sshd_config)");
  }
  return d_->sftp;
}

Session Session::connect(const ConnectOptions& o) {
  libssh2_global_init();
  auto d = std::make_unique<Impl>();
  d->opts = o;
  if (d->opts.known_hosts.empty()) d->opts.known_hosts = home_dir() + "/.ssh/known_hosts";
  d->started = Clock::now();
  d->sock = tcp_connect(o, d->where());
  return handshake(std::move(d));
}

Session Session::connect_via(std::unique_ptr<Session> jump, const ConnectOptions& o) {
  libssh2_global_init();
  auto d = std::make_unique<Impl>();
  d->opts = o;
  if (d->opts.known_hosts.empty()) d->opts.known_hosts = home_dir() + "/.ssh/known_hosts";
  d->started = Clock::now();
  d->tunnel = Tunnel::open(std::move(jump), o.host, o.port, o.timeout_ms, &d->sock);
  return handshake(std::move(d));
}

Session Session::handshake(std::unique_ptr<Impl> d) {
  const ConnectOptions o = d->opts;
  const std::string where = d->where();
  d->s = libssh2_session_init_ex(nullptr, nullptr, nullptr, d.get());
  if (!d->s) throw Error(where + ": cannot create an SSH session (out of memory?)");
  libssh2_session_set_blocking(d->s, 1);
  libssh2_session_set_timeout(d->s, o.timeout_ms);
  if (!o.ciphers.empty()) {
    if (libssh2_session_method_pref(d->s, LIBSSH2_METHOD_CRYPT_CS, o.ciphers.c_str()) ||
        libssh2_session_method_pref(d->s, LIBSSH2_METHOD_CRYPT_SC, o.ciphers.c_str()))
      throw Error(where + ": cipher '" + o.ciphers + "' is not supported by libssh2 " +
                  LIBSSH2_VERSION + "; use aes128-ctr or aes256-ctr");
  }
  if (!o.macs.empty()) {
    if (libssh2_session_method_pref(d->s, LIBSSH2_METHOD_MAC_CS, o.macs.c_str()) ||
        libssh2_session_method_pref(d->s, LIBSSH2_METHOD_MAC_SC, o.macs.c_str()))
      throw Error(where + ": MAC '" + o.macs + "' is not supported by libssh2 " + LIBSSH2_VERSION +
                  "; use hmac-sha2-256 or hmac-sha2-512");
  }
  Session session(std::move(d));
  Impl& im = *session.d_;
  // The server speaks first (RFC 4253 4.2: its version line): the time until it does is the
  // link's round trip, near enough, and what every later call's timeout scales with.
  for (;;) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - im.started).count();
    pollfd p{im.sock, POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, o.timeout_ms - waited)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0)
      throw Error(where + ": SSH handshake timed out: connected, but the node sent no SSH greeting within " + std::to_string(o.timeout_ms) +
                  " ms. A hung or overloaded node, a port that is not SSH, or a slow link (a distant region, "
                  "a VPN): for a slow link raise the node's connect timeout (connect_timeout_s, or "
                  "ConnectTimeout in ~/.ssh/config)");
    break;
  }
  im.greeting_ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - im.started).count());
  im.opts.timeout_ms = std::max(o.timeout_ms, kRoundTripsPerCall * im.greeting_ms);
  libssh2_session_set_timeout(im.s, im.opts.timeout_ms);
  if (libssh2_session_handshake(im.s, im.sock) != 0)
    session.fail("SSH handshake failed",
                 im.greeting_ms >= kSlowLinkMs
                     ? "The link is slow (the node's greeting took " + std::to_string(im.greeting_ms) +
                           " ms): raise the node's connect timeout (connect_timeout_s, or ConnectTimeout in ~/.ssh/config)"
                     : "Check that the port is an SSH server that answers (a hung or overloaded node "
                       "times out here) and that it offers a cipher libssh2 " LIBSSH2_VERSION " knows");

  // Host key against known_hosts.
  size_t len = 0;
  int type = 0;
  const char* key = libssh2_session_hostkey(im.s, &len, &type);
  if (!key) session.fail("the server sent no host key");
  im.key_blob.assign(key, len);
  HostKeyInfo& hk = im.host_key;
  hk.key_type = key_type_name(type);
  hk.known_hosts = im.opts.known_hosts;
  hk.host_token = o.port == 22 ? o.host : "[" + o.host + "]:" + std::to_string(o.port);
  if (const char* h = libssh2_hostkey_hash(im.s, LIBSSH2_HOSTKEY_HASH_SHA256))
    hk.fingerprint = "SHA256:" + base64(reinterpret_cast<const unsigned char*>(h), 32, false);
  else
    hk.fingerprint = sha256_fingerprint(im.key_blob);
  hk.status = HostKeyStatus::Unknown;
  std::error_code ec;
  if (std::filesystem::exists(hk.known_hosts, ec)) {
    LIBSSH2_KNOWNHOSTS* kh = libssh2_knownhost_init(im.s);
    if (!kh) session.fail("cannot check known hosts");
    if (libssh2_knownhost_readfile(kh, hk.known_hosts.c_str(), LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0) {
      libssh2_knownhost_free(kh);
      session.fail("cannot read known_hosts '" + hk.known_hosts + "'",
                   "Fix or move the file (a line libssh2 cannot parse stops the check)");
    }
    libssh2_knownhost* entry = nullptr;
    int r = libssh2_knownhost_checkp(
        kh, o.host.c_str(), o.port, key, len,
        LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | knownhost_key_mask(type), &entry);
    libssh2_knownhost_free(kh);
    if (r == LIBSSH2_KNOWNHOST_CHECK_MATCH) hk.status = HostKeyStatus::Match;
    else if (r == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) hk.status = HostKeyStatus::Mismatch;
  }
  return session;
}

Session Session::open(const ConnectOptions& opts, const Auth& auth) {
  Session s = connect(opts);
  const HostKeyInfo& hk = s.host_key();
  if (hk.status == HostKeyStatus::Unknown)
    throw Error(s.where() + ": the host is not in " + hk.known_hosts + " (its " + hk.key_type +
                " key has fingerprint " + hk.fingerprint +
                "). Compare it with the node's `ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub` and "
                "accept it first.");
  s.authenticate(auth);
  return s;
}

void Session::accept_host_key(bool hashed) {
  HostKeyInfo& hk = d_->host_key;
  if (hk.status == HostKeyStatus::Mismatch)
    throw Error(where() + ": refusing to replace a CHANGED host key in " + hk.known_hosts +
                "; remove the old entry with `ssh-keygen -R '" + hk.host_token + "' -f " +
                hk.known_hosts + "` only once you know why it changed");
  if (hk.status == HostKeyStatus::Match) return;
  std::string name = hk.host_token;
  if (hashed) {
    unsigned char salt[20];
    if (RAND_bytes(salt, sizeof salt) != 1) throw Error("no random bytes for a hashed known_hosts entry");
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    HMAC(EVP_sha1(), salt, sizeof salt, reinterpret_cast<const unsigned char*>(name.data()),
         name.size(), mac, &mac_len);
    name = "|1|" + base64(salt, sizeof salt, true) + "|" + base64(mac, mac_len, true);
  }
  const std::string line = name + " " + hk.key_type + " " +
      base64(reinterpret_cast<const unsigned char*>(d_->key_blob.data()), d_->key_blob.size(), true) + "\n";
  std::filesystem::path p(hk.known_hosts);
  std::error_code ec;
  if (p.has_parent_path() && !std::filesystem::exists(p.parent_path(), ec)) {
    std::filesystem::create_directories(p.parent_path(), ec);
    ::chmod(p.parent_path().c_str(), 0700);
  }
  // Append (never rewrite: lines we cannot parse stay as they were). A file that does not end
  // with a newline gets one first.
  bool need_nl = false;
  if (std::ifstream in{p, std::ios::binary | std::ios::ate}; in && in.tellg() > 0) {
    in.seekg(-1, std::ios::end);
    need_nl = in.get() != '\n';
  }
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) fail_errno("cannot add the host key to known_hosts", p.string());
  std::string data = (need_nl ? "\n" : "") + line;
  ssize_t w = ::write(fd, data.data(), data.size());
  ::close(fd);
  if (w != static_cast<ssize_t>(data.size())) fail_errno("cannot write known_hosts", p.string());
  hk.status = HostKeyStatus::Match;
}

namespace {

// Keyboard-interactive: every prompt is answered with the password (sshd's PAM asks
// "Password: "). The password is reached through the session's abstract pointer (the Impl).
void kbd_callback(const char*, int, const char*, int, int num_prompts,
                  const LIBSSH2_USERAUTH_KBDINT_PROMPT*, LIBSSH2_USERAUTH_KBDINT_RESPONSE* responses,
                  void** abstract) {
  auto* im = static_cast<Session::Impl*>(*abstract);
  for (int i = 0; i < num_prompts; ++i) {
    const std::string& pw = im->kbd_password ? *im->kbd_password : std::string();
    // libssh2 frees the responses with its allocator (the default one is free()).
    responses[i].text = static_cast<char*>(std::malloc(pw.size() + 1));
    std::memcpy(responses[i].text, pw.c_str(), pw.size() + 1);
    responses[i].length = static_cast<unsigned int>(pw.size());
  }
}

// An RSA key: PEM "BEGIN RSA PRIVATE KEY", or a .pub next to it that starts with ssh-rsa.
bool is_rsa_key(const std::string& file) {
  std::string first;
  std::getline(std::ifstream(file) >> std::ws, first);
  if (first.find("RSA PRIVATE KEY") != std::string::npos) return true;
  std::string pub;
  std::getline(std::ifstream(file + ".pub"), pub);
  return pub.rfind("ssh-rsa ", 0) == 0;
}

bool has_method(const std::string& list, std::string_view m) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    if (std::string_view(list).substr(pos, end - pos) == m) return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace

void Session::authenticate(const Auth& auth) {
  Impl& im = *d_;
  const HostKeyInfo& hk = im.host_key;
  if (hk.status == HostKeyStatus::Mismatch)
    throw Error(
        "WARNING: the host key of " + hk.host_token + " has CHANGED (it is now " + hk.key_type +
        " " + hk.fingerprint + ", unlike the entry in " + hk.known_hosts +
        "). Someone may be intercepting the connection (a man-in-the-middle attack), or the node "
        "was reinstalled. TrainDeck refuses to connect. When you know the new key is right, remove "
        "the old entry with `ssh-keygen -R '" + hk.host_token + "' -f " + hk.known_hosts +
        "` and connect again.");
  if (hk.status != HostKeyStatus::Match)
    throw Error(where() + ": refusing to authenticate to an unknown host (" + hk.key_type + " " +
                hk.fingerprint + "); accept its host key first");
  if (im.authed) return;
  const std::string& user = im.opts.user;
  const char* list = libssh2_userauth_list(im.s, user.c_str(), static_cast<unsigned>(user.size()));
  if (!list) {
    if (libssh2_userauth_authenticated(im.s)) {  // "none" was accepted
      im.authed = true;
      return;
    }
    fail("cannot ask the server for its authentication methods");
  }
  const std::string methods = list;

  switch (auth.method) {
    case Auth::Method::Agent: {
      LIBSSH2_AGENT* agent = libssh2_agent_init(im.s);
      if (!agent) fail("cannot start the ssh-agent client");
      struct Free {
        LIBSSH2_AGENT* a;
        ~Free() { libssh2_agent_disconnect(a); libssh2_agent_free(a); }
      } guard{agent};
      if (libssh2_agent_connect(agent) != 0)
        fail("cannot reach ssh-agent",
             "Start an agent (eval $(ssh-agent)), add your key with ssh-add, and make sure "
             "SSH_AUTH_SOCK is set for TrainDeck; or choose a key file");
      if (libssh2_agent_list_identities(agent) != 0) fail("cannot list the keys in ssh-agent");
      libssh2_agent_publickey* prev = nullptr;
      libssh2_agent_publickey* id = nullptr;
      int tried = 0;
      while (libssh2_agent_get_identity(agent, &id, prev) == 0) {
        ++tried;
        if (libssh2_agent_userauth(agent, user.c_str(), id) == 0) {
          im.authed = true;
          return;
        }
        prev = id;
      }
      throw Error(where() + ": ssh-agent holds " + std::to_string(tried) + " key(s), none accepted for user '" +
                  user + "' (server offers: " + methods +
                  "). Add the right key with ssh-add, or put its public key in ~/.ssh/authorized_keys on the node");
    }
    case Auth::Method::KeyFile: {
      std::error_code ec;
      if (!std::filesystem::exists(auth.key_file, ec))
        throw Error(where() + ": private key file '" + auth.key_file + "' does not exist");
      if (!has_method(methods, "publickey"))
        throw Error(where() + ": the server does not accept key authentication (it offers: " + methods + ")");
      std::string pub = auth.key_file + ".pub";
      int rc = libssh2_userauth_publickey_fromfile_ex(
          im.s, user.c_str(), static_cast<unsigned>(user.size()),
          std::filesystem::exists(pub, ec) ? pub.c_str() : nullptr, auth.key_file.c_str(),
          auth.passphrase.empty() ? nullptr : auth.passphrase.c_str());
      if (rc == 0) {
        im.authed = true;
        return;
      }
      if (rc == LIBSSH2_ERROR_FILE || rc == LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED ||
          rc == LIBSSH2_ERROR_METHOD_NOT_SUPPORTED)
        fail("cannot use the private key '" + auth.key_file + "'",
             std::string(auth.passphrase.empty() ? "It may need a passphrase, or " : "The passphrase may be wrong, or ") +
                 "its format is not one libssh2 " LIBSSH2_VERSION " reads: use an RSA, ECDSA or Ed25519 key "
                 "in PEM format (ssh-keygen -p -m PEM -f KEY converts it) or OpenSSH format");
      if (is_rsa_key(auth.key_file))
        fail("the server refused the RSA key '" + auth.key_file + "' for user '" + user + "'",
             "libssh2 " LIBSSH2_VERSION " signs RSA keys with SHA-1 (ssh-rsa), which OpenSSH 8.8 and "
             "later refuse by default. Use an Ed25519 or ECDSA key (ssh-keygen -t ed25519), or "
             "check that its public key is in ~/.ssh/authorized_keys of that user on the node");
      fail("the server refused the key '" + auth.key_file + "' for user '" + user + "'",
           "Put its public key in ~/.ssh/authorized_keys of that user on the node");
    }
    case Auth::Method::Password: {
      int rc = LIBSSH2_ERROR_AUTHENTICATION_FAILED;
      if (has_method(methods, "password")) {
        rc = libssh2_userauth_password_ex(im.s, user.c_str(), static_cast<unsigned>(user.size()),
                                          auth.password.c_str(),
                                          static_cast<unsigned>(auth.password.size()), nullptr);
      } else if (has_method(methods, "keyboard-interactive")) {
        im.kbd_password = &auth.password;
        rc = libssh2_userauth_keyboard_interactive_ex(
            im.s, user.c_str(), static_cast<unsigned>(user.size()), kbd_callback);
        im.kbd_password = nullptr;
      } else {
        throw Error(where() + ": the server does not accept passwords (it offers: " + methods +
                    "); use a key or ssh-agent");
      }
      if (rc == 0) {
        im.authed = true;
        return;
      }
      if (rc == LIBSSH2_ERROR_AUTHENTICATION_FAILED)
        throw Error(where() + ": wrong password for user '" + user +
                    "' (or the account is locked). Check the user name and type the password again.");
      fail("password authentication failed");
    }
  }
}

}  // namespace td::remote
