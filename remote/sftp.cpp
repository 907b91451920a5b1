#include "remote/sftp.h"

#include <fcntl.h>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <openssl/evp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/fileio.h"
#include "remote/quote.h"

namespace td::remote {

namespace {

struct Sha256 {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  Sha256() { EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr); }
  ~Sha256() { EVP_MD_CTX_free(ctx); }
  Sha256(const Sha256&) = delete;
  void update(const void* p, size_t n) { EVP_DigestUpdate(ctx, p, n); }
  std::string hex() {  // of everything so far; the context goes on
    EVP_MD_CTX* c = EVP_MD_CTX_new();
    EVP_MD_CTX_copy_ex(c, ctx);
    unsigned char md[32];
    unsigned int len = 0;
    EVP_DigestFinal_ex(c, md, &len);
    EVP_MD_CTX_free(c);
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
      out += digits[md[i] >> 4];
      out += digits[md[i] & 15];
    }
    return out;
  }
};

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Hashes the first `n` bytes of an open local file from offset 0 into h.
void hash_prefix(int fd, uint64_t n, Sha256& h, const std::string& path) {
  std::vector<char> buf(1 << 20);
  uint64_t off = 0;
  while (off < n) {
    ssize_t r = ::pread(fd, buf.data(), std::min<uint64_t>(buf.size(), n - off), static_cast<off_t>(off));
    if (r <= 0) fail_errno("cannot read", path);
    h.update(buf.data(), static_cast<size_t>(r));
    off += static_cast<uint64_t>(r);
  }
}

struct Handle {
  LIBSSH2_SFTP_HANDLE* h = nullptr;
  void close() {
    if (h) libssh2_sftp_close_handle(h);
    h = nullptr;
  }
  ~Handle() { close(); }
};

std::string parent_of(const std::string& p) {
  size_t slash = p.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return "";
  return p.substr(0, slash);
}

void sftp_fail(Session& s, const std::string& what, const std::string& path) {
  unsigned long code = libssh2_sftp_last_error(s.sftp());
  std::string hint;
  if (code == LIBSSH2_FX_PERMISSION_DENIED) hint = "permission denied on the node: choose a folder the user may write";
  else if (code == LIBSSH2_FX_NO_SUCH_FILE) hint = "no such file or folder on the node";
  else if (code == LIBSSH2_FX_FAILURE) hint = "the node refused (a full disk, or a folder in the way?)";
  s.fail(what + " '" + path + "' (SFTP status " + std::to_string(code) + ")", hint);
}

// `to` may exist: false when it surely does not (one SFTP round trip instead of a command's four).
void remote_rename(Session& s, const std::string& from, const std::string& to, bool to_may_exist = true) {
  // SFTP v3's rename (OpenSSH: link + unlink, so the final name appears whole) fails when the
  // target exists; mv -f is rename(2): atomic and overwriting.
  if (!to_may_exist &&
      libssh2_sftp_rename_ex(s.sftp(), from.c_str(), static_cast<unsigned>(from.size()), to.c_str(),
                             static_cast<unsigned>(to.size()), LIBSSH2_SFTP_RENAME_ATOMIC | LIBSSH2_SFTP_RENAME_NATIVE) == 0)
    return;
  ExecResult r = s.exec({"mv", "-f", "--", from, to});
  if (r.exit_status != 0)
    throw Error(s.where() + ": cannot rename '" + from + "' to '" + to + "': " + r.err);
}

}  // namespace

std::string sha256_file(const std::filesystem::path& path, std::optional<uint64_t> prefix) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) fail_errno("cannot open", path.string());
  Sha256 h;
  uint64_t n = prefix ? *prefix : std::filesystem::file_size(path);
  hash_prefix(f.fd, n, h, path.string());
  return h.hex();
}

std::optional<uint64_t> remote_file_size(Session& s, const std::string& path) {
  LIBSSH2_SFTP_ATTRIBUTES a{};
  int rc = libssh2_sftp_stat_ex(s.sftp(), path.c_str(), static_cast<unsigned>(path.size()),
                                LIBSSH2_SFTP_STAT, &a);
  if (rc != 0) {
    if (rc == LIBSSH2_ERROR_SFTP_PROTOCOL) return std::nullopt;  // no such file (or no access)
    s.fail("cannot stat '" + path + "'");
  }
  if ((a.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) && !LIBSSH2_SFTP_S_ISREG(a.permissions))
    throw Error(s.where() + ": '" + path + "' exists and is not a regular file");
  return a.filesize;
}

std::string remote_sha256(Session& s, const std::string& path, std::optional<uint64_t> prefix) {
  std::string cmd = prefix ? command_line({"head", "-c", std::to_string(*prefix), "--", path}) + " | sha256sum"
                           : command_line({"sha256sum", "--", path});
  ExecOptions eo;
  eo.timeout_ms = 600000;  // hashing 10 GB takes a while
  ExecResult r = s.exec_command(cmd, eo);
  std::string out = r.out;
  if (!out.empty() && out[0] == '\\') out.erase(0, 1);  // sha256sum escapes odd names this way
  if (r.exit_status != 0 || out.size() < 64)
    throw Error(s.where() + ": cannot hash '" + path + "' on the node" +
                (r.exit_status == 127 ? std::string(" (it needs sha256sum from coreutils)") : std::string()) + ": " +
                r.err);
  return out.substr(0, 64);
}

void mkdir_p(Session& s, const std::string& dir) {
  if (dir.empty()) return;
  {  // Most often the folder is there: one round trip, not one per path component.
    LIBSSH2_SFTP_ATTRIBUTES a{};
    if (libssh2_sftp_stat_ex(s.sftp(), dir.c_str(), static_cast<unsigned>(dir.size()), LIBSSH2_SFTP_STAT, &a) == 0 &&
        (a.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) && LIBSSH2_SFTP_S_ISDIR(a.permissions))
      return;
  }
  std::string cur;
  size_t pos = 0;
  while (pos <= dir.size()) {
    size_t slash = dir.find('/', pos);
    if (slash == std::string::npos) slash = dir.size();
    cur = dir.substr(0, slash);
    pos = slash + 1;
    if (cur.empty() || cur == "." || cur == "..") continue;
    LIBSSH2_SFTP_ATTRIBUTES a{};
    if (libssh2_sftp_stat_ex(s.sftp(), cur.c_str(), static_cast<unsigned>(cur.size()), LIBSSH2_SFTP_STAT, &a) == 0) {
      if ((a.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) && !LIBSSH2_SFTP_S_ISDIR(a.permissions))
        throw Error(s.where() + ": cannot create folder '" + dir + "': '" + cur + "' is a file");
      continue;
    }
    if (libssh2_sftp_mkdir_ex(s.sftp(), cur.c_str(), static_cast<unsigned>(cur.size()), 0755) != 0)
      sftp_fail(s, "cannot create folder", cur);
  }
}

TransferResult upload(Session& s, const std::filesystem::path& local, const std::string& remote,
                      const TransferOptions& opts) {
  TransferResult res;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(local, ec))
    throw Error("cannot upload '" + local.string() + "': it is not a file (missing, or a folder?)");
  Fd in{::open(local.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) fail_errno("cannot open the file to upload", local.string());
  res.size = std::filesystem::file_size(local, ec);
  const uint64_t total = res.size;
  std::string local_hash;  // of the whole file, computed at most once
  auto whole_hash = [&] {
    if (local_hash.empty()) local_hash = sha256_file(local);
    return local_hash;
  };

  bool remote_may_exist = true;  // unknown unless skip_same looked
  if (opts.skip_same) {
    const auto size = remote_file_size(s, remote);
    if (size && *size == total && remote_sha256(s, remote) == whole_hash()) {
      res.outcome = TransferResult::Outcome::Skipped;
      res.sha256 = local_hash;
      if (opts.progress) opts.progress(total, total);
      return res;
    }
    remote_may_exist = size.has_value();
  }

  // Round trips matter on a far link (each costs the link's round trip): the .part is looked
  // at, opened, written, closed and renamed; its folder is made only when the open says it
  // is missing.
  const std::string part = remote + ".part";
  Sha256 hash;  // of the local bytes up to the write position
  uint64_t offset = 0;
  if (auto psize = remote_file_size(s, part); psize && *psize > 0 && *psize <= total) {
    Sha256 prefix;
    hash_prefix(in.fd, *psize, prefix, local.string());
    if (remote_sha256(s, part) == prefix.hex()) {
      offset = *psize;
      if (opts.verify) hash_prefix(in.fd, offset, hash, local.string());
    }
  }
  res.resumed_from = offset;

  Handle h;
  long flags = LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | (offset ? 0 : LIBSSH2_FXF_TRUNC);
  auto open_part = [&] {
    return libssh2_sftp_open_ex(s.sftp(), part.c_str(), static_cast<unsigned>(part.size()), flags, 0644,
                                LIBSSH2_SFTP_OPENFILE);
  };
  h.h = open_part();
  if (!h.h && libssh2_sftp_last_error(s.sftp()) == LIBSSH2_FX_NO_SUCH_FILE) {
    mkdir_p(s, parent_of(remote));
    h.h = open_part();
  }
  if (!h.h) sftp_fail(s, "cannot create", part);
  if (offset) libssh2_sftp_seek64(h.h, offset);

  // The file is mapped, and each call hands libssh2 the next `window` bytes from the write
  // position. libssh2 1.10 splits them into 30000-byte SFTP writes, keeps all of them in
  // flight, and returns as acks come back; the next call starts at the first unacknowledged
  // byte (libssh2 skips what it already sent). No copy, no read() on our side.
  const size_t window = std::max<size_t>(s.slow_link() || s.greeting_ms() >= kFarLinkMs ? std::max(opts.buffer_bytes, kFarLinkBuffer)
                                                                                         : opts.buffer_bytes,
                                          64 << 10);
  const char* data = nullptr;
  if (total > 0) {
    void* m = ::mmap(nullptr, total, PROT_READ, MAP_SHARED, in.fd, 0);
    if (m == MAP_FAILED) fail_errno("cannot map the file to upload", local.string());
    ::madvise(m, total, MADV_SEQUENTIAL);
    data = static_cast<const char*>(m);
  }
  struct Unmap {
    const char* p;
    uint64_t n;
    ~Unmap() {
      if (p) ::munmap(const_cast<char*>(p), n);
    }
  } unmap{data, total};
  uint64_t done = offset, hashed = offset;
  if (opts.progress) opts.progress(done, total);
  while (done < total) {
    if (opts.cancel && opts.cancel->load()) {
      res.outcome = TransferResult::Outcome::Cancelled;
      return res;  // the handle closes; the .part keeps what the node acknowledged
    }
    const size_t len = static_cast<size_t>(std::min<uint64_t>(window, total - done));
    ssize_t n = libssh2_sftp_write(h.h, data + done, len);
    if (n < 0) sftp_fail(s, "cannot write", part);
    done += static_cast<uint64_t>(n);
    res.bytes_sent += static_cast<uint64_t>(n);
    if (opts.verify) {  // hash what was acknowledged (the bytes are hot in the cache)
      hash.update(data + hashed, done - hashed);
      hashed = done;
    }
    if (opts.progress) opts.progress(done, total);
  }
  h.close();
  if (opts.verify) res.sha256 = hash.hex();
  if (opts.verify && remote_sha256(s, part) != res.sha256)
    throw Error(s.where() + ": the uploaded '" + part + "' differs from '" + local.string() +
                "' (sha256); it was kept for inspection. Upload again to start over.");
  remote_rename(s, part, remote, remote_may_exist);
  return res;
}

TransferResult download(Session& s, const std::string& remote, const std::filesystem::path& local,
                        const TransferOptions& opts) {
  TransferResult res;
  auto size = remote_file_size(s, remote);
  if (!size) sftp_fail(s, "cannot download", remote);
  res.size = *size;
  const uint64_t total = res.size;
  std::error_code ec;
  if (opts.skip_same && std::filesystem::is_regular_file(local, ec) && std::filesystem::file_size(local, ec) == total) {
    std::string h = sha256_file(local);
    if (h == remote_sha256(s, remote)) {
      res.outcome = TransferResult::Outcome::Skipped;
      res.sha256 = h;
      if (opts.progress) opts.progress(total, total);
      return res;
    }
  }
  if (local.has_parent_path()) std::filesystem::create_directories(local.parent_path(), ec);
  const std::filesystem::path part = local.string() + ".part";
  Sha256 hash;
  uint64_t offset = 0;
  if (std::filesystem::exists(part, ec)) {
    uint64_t psize = std::filesystem::file_size(part, ec);
    if (psize > 0 && psize <= total && sha256_file(part) == remote_sha256(s, remote, psize)) offset = psize;
  }
  // Never through a planted link or hard link (open_private_file: O_NOFOLLOW, a regular file of
  // one name, new files 0600); the rename below replaces `local` itself, never what it names.
  Fd out{td::open_private_file(part.string(), O_WRONLY | O_CREAT | (offset ? 0 : O_TRUNC), "the download")};
  if (offset && opts.verify) {
    Fd rd{::open(part.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)};
    hash_prefix(rd.fd, offset, hash, part.string());
  }
  res.resumed_from = offset;

  Handle h;
  h.h = libssh2_sftp_open_ex(s.sftp(), remote.c_str(), static_cast<unsigned>(remote.size()), LIBSSH2_FXF_READ, 0,
                             LIBSSH2_SFTP_OPENFILE);
  if (!h.h) sftp_fail(s, "cannot open", remote);
  if (offset) libssh2_sftp_seek64(h.h, offset);
  // libssh2 1.10 keeps read-ahead requests in flight for up to the buffer size handed to it.
  std::vector<char> buf(std::max<size_t>(opts.buffer_bytes, 64 << 10));
  uint64_t done = offset;
  if (opts.progress) opts.progress(done, total);
  while (done < total) {
    if (opts.cancel && opts.cancel->load()) {
      res.outcome = TransferResult::Outcome::Cancelled;
      return res;
    }
    ssize_t n = libssh2_sftp_read(h.h, buf.data(), buf.size());
    if (n < 0) sftp_fail(s, "cannot read", remote);
    if (n == 0) throw Error(s.where() + ": '" + remote + "' shrank while downloading it; try again");
    if (::pwrite(out.fd, buf.data(), static_cast<size_t>(n), static_cast<off_t>(done)) != n)
      fail_errno("cannot write (is the disk full?)", part.string());
    if (opts.verify) hash.update(buf.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
    res.bytes_sent += static_cast<uint64_t>(n);
    if (opts.progress) opts.progress(done, total);
  }
  h.close();
  if (opts.verify) res.sha256 = hash.hex();
  if (opts.verify && remote_sha256(s, remote) != res.sha256)
    throw Error(s.where() + ": the downloaded '" + part.string() + "' differs from '" + remote +
                "' (sha256; did it change on the node meanwhile?). Download again.");
  ::fsync(out.fd);
  std::filesystem::rename(part, local, ec);
  if (ec) throw Error("cannot rename '" + part.string() + "' to '" + local.string() + "': " + ec.message());
  return res;
}

}  // namespace td::remote
