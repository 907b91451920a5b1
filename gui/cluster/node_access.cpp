// NodeAccess (node_access.h): resolve, host key policy with prompts, secrets, authenticate.
#include "gui/cluster/node_access.h"

#include <QCoreApplication>
#include <QFile>
#include <QThread>

#include <algorithm>
#include <chrono>
#include <future>
#include <mutex>

#include "engine/common/error.h"
#include "gui/cluster/gui_mailbox.h"
#include "gui/cluster/secret_store.h"

namespace td::gui {

using td::remote::AuthMethod;
using td::remote::HostKeyInfo;
using td::remote::HostKeyStatus;
using td::remote::NodeSpec;
using td::remote::Session;

namespace {

// lupdate files a free tr() in this namespace under the context "td::gui": look it up there.
QString tr(const char* text) { return QCoreApplication::translate("td::gui", text); }

[[noreturn]] void fail(const QString& message) { throw td::Error(message.toStdString()); }

void checkCancel(const std::atomic<bool>* cancel, const QString& where) {
  if (cancel && cancel->load()) fail(tr("%1: cancelled").arg(where));
}

// Overwrites a secret's bytes before the string is freed (best effort: copies made by libssh2
// or the allocator are out of reach).
void wipe(std::string& s) {
  std::fill(s.begin(), s.end(), '\0');
  s.clear();
}

}  // namespace

QString whereOf(const td::remote::ConnectOptions& t) {
  return QStringLiteral("%1@%2:%3").arg(QString::fromStdString(t.user), QString::fromStdString(t.host)).arg(t.port);
}

bool keyFileEncrypted(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return false;
  const QByteArray text = f.read(1 << 20);
  if (text.contains("Proc-Type: 4,ENCRYPTED") || text.contains("BEGIN ENCRYPTED PRIVATE KEY")) return true;
  static const QByteArray begin = "-----BEGIN OPENSSH PRIVATE KEY-----";
  static const QByteArray end = "-----END OPENSSH PRIVATE KEY-----";
  const qsizetype b = text.indexOf(begin), e = text.indexOf(end);
  if (b < 0 || e < b) return false;
  // PROTOCOL.key: "openssh-key-v1\0", then string ciphername (uint32 big-endian length + bytes).
  const QByteArray blob = QByteArray::fromBase64(text.mid(b + begin.size(), e - b - begin.size()).simplified());
  static const QByteArray magic("openssh-key-v1\0", 15);
  if (!blob.startsWith(magic) || blob.size() < 19) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(blob.constData()) + 15;
  const quint32 n = (quint32(p[0]) << 24) | (quint32(p[1]) << 16) | (quint32(p[2]) << 8) | quint32(p[3]);
  if (n > 64 || 19 + qsizetype(n) > blob.size()) return false;
  return blob.mid(19, n) != "none";
}

struct NodeAccess::Core {
  mutable std::mutex mu;  // the settings below
  std::string ssh_config = td::remote::default_ssh_config_path().string();
  std::string known_hosts;
  int timeout_ms = 15000;
  std::shared_ptr<SecretStore> secrets;

  GuiMailbox mailbox{nullptr};  // to the NodeAccess object (GUI thread)
  Prompter* prompter = nullptr;  // read and written on the GUI thread only
  std::mutex prompt_mu;          // one question at a time

  // Asks the Prompter on the GUI thread; `refused` when there is none, it threw, or NodeAccess is gone.
  template <class T>
  T ask(std::function<T(Prompter&)> question, T refused, const std::atomic<bool>* cancel, const QString& where) {
    std::lock_guard<std::mutex> one(prompt_mu);
    auto promise = std::make_shared<std::promise<T>>();
    std::future<T> future = promise->get_future();
    // Runs only while NodeAccess (which owns this Core) is alive: the mailbox closes with it.
    const bool posted = mailbox.post([this, question = std::move(question), promise, refused] {
      T answer = refused;
      try {
        if (prompter) answer = question(*prompter);
      } catch (...) {
      }
      promise->set_value(std::move(answer));
    });
    if (!posted) return refused;
    while (future.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) checkCancel(cancel, where);
    try {
      return future.get();
    } catch (const std::future_error&) {  // dropped undelivered: NodeAccess was destroyed
      return refused;
    }
  }

  bool askHostKey(const HostKeyInfo& hk, const QString& where, const std::atomic<bool>* cancel) {
    return ask<bool>([hk, where](Prompter& p) { return p.acceptHostKey(hk, where); }, false, cancel, where);
  }

  struct Secret {
    std::string value;
    bool from_store = false;
    bool remember = false;
  };

  Secret obtain(const NodeSpec& node, const QString& where, const QString& kind, const QString& key_file, bool retry,
                const std::atomic<bool>* cancel) {
    if (!retry && secrets)
      if (std::optional<QString> kept = secrets->read(where, kind)) return {kept->toStdString(), true, false};
    SecretRequest req;
    req.node = node;
    req.where = where;
    req.kind = kind;
    req.keyFile = key_file;
    req.retry = retry;
    req.canRemember = secrets && secrets->canRemember();
    const std::optional<SecretAnswer> answer = ask<std::optional<SecretAnswer>>(
        [req](Prompter& p) { return p.askSecret(req); }, std::nullopt, cancel, where);
    if (!answer)
      fail(kind == QStringLiteral("password")
               ? tr("%1: no password was given, so TrainDeck did not log in. Connect again and enter it.").arg(where)
               : tr("%1: no passphrase was given for the key %2, so TrainDeck did not log in. Connect again and "
                    "enter it.").arg(where, key_file));
    return {answer->secret.toStdString(), false, answer->remember && req.canRemember};
  }

  // The host key policy: Match proceeds; Unknown asks (accepted: appended to known_hosts);
  // Mismatch is refused without asking.
  void checkHostKey(Session& s, const std::atomic<bool>* cancel) {
    const HostKeyInfo& hk = s.host_key();
    const QString where = QString::fromStdString(s.where());
    const QString type = QString::fromStdString(hk.key_type), fp = QString::fromStdString(hk.fingerprint);
    const QString token = QString::fromStdString(hk.host_token), file = QString::fromStdString(hk.known_hosts);
    if (hk.status == HostKeyStatus::Match) return;
    if (hk.status == HostKeyStatus::Mismatch)
      fail(tr("WARNING: the host key of %1 has CHANGED (it is now %2 %3, unlike the entry in %4). Someone may be "
              "intercepting the connection (a man-in-the-middle attack), or the node was reinstalled. TrainDeck "
              "refuses to connect. When you know the new key is right, remove the old entry with "
              "`ssh-keygen -R '%5' -f %4` and connect again.")
               .arg(token, type, fp, file, token));
    if (!askHostKey(hk, where, cancel))
      fail(tr("%1: the host key (%2 %3) was not accepted, so TrainDeck did not connect. Compare it with the node's "
              "`ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub`, then connect again and accept it.")
               .arg(where, type, fp));
    checkCancel(cancel, where);
    s.accept_host_key();
  }

  Session open(const NodeSpec& node, const std::atomic<bool>* cancel, int timeout_override) {
    if (mailbox.onContextThread())
      fail(tr("NodeAccess::open was called on the GUI thread; call it from a worker thread (internal error)"));
    std::string cfg, known;
    int timeout = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      cfg = ssh_config;
      known = known_hosts;
      timeout = timeout_override > 0 ? timeout_override : timeout_ms;
    }
    const td::remote::ResolvedNode r = td::remote::resolve_node(node, cfg);
    const QString where = whereOf(r.target);
    checkCancel(cancel, where);

    QString kind, key_file;
    if (node.auth == AuthMethod::Password) {
      kind = QStringLiteral("password");
    } else if (node.auth == AuthMethod::KeyFile) {
      key_file = QString::fromStdString(td::remote::node_auth(node, r, {}).key_file);
      if (keyFileEncrypted(key_file)) kind = QStringLiteral("passphrase");
    }
    auto secretsFor = [&](const Secret& sec) {
      td::remote::NodeSecrets ns;
      (kind == QStringLiteral("password") ? ns.password : ns.passphrase) = sec.value;
      return ns;
    };

    // The connection: through the jump hops (connect_node: each hop logged in with its own
    // keys, every host key through the same policy) or direct; then the target's login below,
    // where a refused kept secret is forgotten and asked for once more on the same connection.
    Session s = [&] {
      if (!r.jumps.empty()) {
        td::remote::OpenOptions o;
        o.timeout_ms = timeout;  // for hops and a target that set no ConnectTimeout of their own
        o.known_hosts = known;
        o.accept_unknown_host = [this, cancel](const HostKeyInfo& hk, const std::string& w) {
          return askHostKey(hk, QString::fromStdString(w), cancel);
        };
        return td::remote::connect_node(r, o);
      }
      td::remote::ConnectOptions c = r.target;
      c.timeout_ms = r.timeout_ms > 0 ? r.timeout_ms : timeout;
      if (!known.empty()) c.known_hosts = known;
      Session direct = Session::connect(c);
      checkHostKey(direct, cancel);
      return direct;
    }();
    checkCancel(cancel, where);
    for (int attempt = 0;; ++attempt) {
      Secret sec = kind.isEmpty() ? Secret{} : obtain(node, where, kind, key_file, attempt > 0, cancel);
      td::remote::NodeSecrets ns = secretsFor(sec);
      td::remote::Auth auth = td::remote::node_auth(node, r, ns);
      wipe(ns.password);
      wipe(ns.passphrase);
      try {
        s.authenticate(auth);
        wipe(auth.password);
        wipe(auth.passphrase);
        if (sec.remember) secrets->remember(where, kind, QString::fromStdString(sec.value));
        wipe(sec.value);
        return s;
      } catch (const td::Error&) {
        wipe(auth.password);
        wipe(auth.passphrase);
        wipe(sec.value);
        if (kind.isEmpty() || attempt >= 1) throw;
        if (sec.from_store && secrets) secrets->forget(where, kind);  // refused: never offered again
        checkCancel(cancel, where);
      }
    }
  }
};

NodeAccess::NodeAccess(std::shared_ptr<SecretStore> secrets, Prompter* prompter, QObject* parent)
    : QObject(parent), core_(std::make_shared<Core>()) {
  core_->secrets = std::move(secrets);
  core_->prompter = prompter;
  core_->mailbox = GuiMailbox(this);
}

NodeAccess::~NodeAccess() {
  core_->mailbox.close();
  core_->prompter = nullptr;
}

void NodeAccess::setPrompter(Prompter* prompter) { core_->prompter = prompter; }

void NodeAccess::setSshConfigPath(const QString& path) {
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->ssh_config = path.toStdString();
}

QString NodeAccess::sshConfigPath() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return QString::fromStdString(core_->ssh_config);
}

void NodeAccess::setKnownHostsPath(const QString& path) {
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->known_hosts = path.toStdString();
}

QString NodeAccess::knownHostsPath() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return QString::fromStdString(core_->known_hosts);
}

void NodeAccess::setTimeoutMs(int ms) {
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->timeout_ms = ms > 0 ? ms : 15000;
}

int NodeAccess::timeoutMs() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->timeout_ms;
}

std::shared_ptr<SecretStore> NodeAccess::secretStore() const { return core_->secrets; }

Session NodeAccess::open(const NodeSpec& node, const std::atomic<bool>* cancel, int timeout_ms) const {
  return core_->open(node, cancel, timeout_ms);
}

std::function<Session(const NodeSpec&)> NodeAccess::connector() const {
  std::shared_ptr<Core> core = core_;
  return [core](const NodeSpec& node) { return core->open(node, nullptr, 0); };
}

NodeAccess::Opener NodeAccess::opener() const {
  std::shared_ptr<Core> core = core_;
  return [core](const NodeSpec& node, const std::atomic<bool>* cancel, int timeout_ms) {
    return core->open(node, cancel, timeout_ms);
  };
}

td::remote::ResolvedNode NodeAccess::resolve(const NodeSpec& node) const {
  return td::remote::resolve_node(node, sshConfigPath().toStdString());
}

}  // namespace td::gui
