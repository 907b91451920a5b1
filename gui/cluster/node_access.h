// NodeAccess: the one way GUI workers open an authenticated td::remote::Session to a node.
//
// open(node) resolves the node through ~/.ssh/config (resolve_node), connects, checks the host
// key against known_hosts (Match: go on; Unknown: the Prompter shows key type and SHA256
// fingerprint, accepted keys are appended to known_hosts; Mismatch: refused with the changed-key
// warning, never a prompt), gets the secret the node needs (a password, or the passphrase of an
// encrypted key file) from the SecretStore or else from the Prompter (which may ask to remember
// it), and authenticates. When the node refuses the secret, a kept one is forgotten and the
// person is asked once more on the same connection.
//
// Threading rule: construct, configure and destroy NodeAccess on the GUI thread. open() and the
// function from connector() run on WORKER threads only (they wait on the network and on the
// person; on the GUI thread open() throws at once). Prompts run on the GUI thread, one at a
// time: the worker posts the question there and waits for the answer; the GUI thread never
// waits on a worker. A worker may outlive NodeAccess: its prompts are then refused.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "remote/cluster.h"

namespace td::gui {

class SecretStore;

/// What a secret prompt is about.
struct SecretRequest {
  td::remote::NodeSpec node;
  QString where;             ///< "user@host:port" after ~/.ssh/config
  QString kind;              ///< "password" or "passphrase"
  QString keyFile;           ///< kind "passphrase": the private key file
  bool retry = false;        ///< the node refused the previous secret
  bool canRemember = false;  ///< a keyring is available: offer "Remember in the system keyring"
};

/// The person's answer to a secret prompt.
struct SecretAnswer {
  QString secret;
  bool remember = false;  ///< keep it in the keyring (only honoured when canRemember)
};

/// Asks the person. Called on the GUI thread only (NodeAccess posts there), may show a modal
/// dialog. Tests implement it without dialogs.
class Prompter {
 public:
  virtual ~Prompter() = default;
  /// The secret for request.node; nullopt when the person cancels.
  virtual std::optional<SecretAnswer> askSecret(const SecretRequest& request) = 0;
  /// Whether to trust the unknown host key `info` (key_type, fingerprint "SHA256:...",
  /// host_token, known_hosts) of `where` ("user@host:port").
  virtual bool acceptHostKey(const td::remote::HostKeyInfo& info, const QString& where) = 0;
};

class NodeAccess : public QObject {
  Q_OBJECT
 public:
  /// `secrets`: where secrets are kept (SecretStore::system() in the app); nullptr: never kept.
  /// `prompter`: not owned, must outlive its use (setPrompter(nullptr) before destroying it);
  /// nullptr: secrets cannot be asked for and unknown host keys are refused.
  NodeAccess(std::shared_ptr<SecretStore> secrets, Prompter* prompter, QObject* parent = nullptr);
  ~NodeAccess() override;

  void setPrompter(Prompter* prompter);
  /// The ssh_config to resolve nodes with (default: ~/.ssh/config).
  void setSshConfigPath(const QString& path);
  QString sshConfigPath() const;
  /// The known_hosts file (default: empty = ~/.ssh/known_hosts).
  void setKnownHostsPath(const QString& path);
  QString knownHostsPath() const;
  /// Timeout of each connect, handshake and authentication step, and of every later libssh2
  /// call of the session, in milliseconds (default 15000).
  void setTimeoutMs(int ms);
  int timeoutMs() const;
  std::shared_ptr<SecretStore> secretStore() const;

  /// Opens an authenticated session to `node` (see the file comment). WORKER THREADS ONLY.
  /// `cancel` (may be null) is checked between steps and while waiting for the person;
  /// `timeout_ms` > 0 overrides timeoutMs() for this session.
  /// Errors: td::Error naming the node and the failing step (resolve, connect, host key
  /// refused or changed, no secret given, authentication), never containing a secret.
  td::remote::Session open(const td::remote::NodeSpec& node, const std::atomic<bool>* cancel = nullptr,
                           int timeout_ms = 0) const;

  /// open() as a function for other workers (e.g. the remote-run controller); it keeps what it
  /// needs alive on its own, so it may outlive this object (prompts are then refused).
  std::function<td::remote::Session(const td::remote::NodeSpec&)> connector() const;
  /// The same with open()'s cancel flag and timeout (ConnectionTester's workers use it).
  using Opener = std::function<td::remote::Session(const td::remote::NodeSpec&, const std::atomic<bool>*, int)>;
  Opener opener() const;

  /// resolve_node() through sshConfigPath(). Errors: td::Error (bad jump, bad config Port).
  td::remote::ResolvedNode resolve(const td::remote::NodeSpec& node) const;

  struct Core;

 private:
  std::shared_ptr<Core> core_;
};

/// "user@host:port" of a resolved target (what Session::where() prints).
QString whereOf(const td::remote::ConnectOptions& target);

/// Whether the private key file at `path` is encrypted (PEM "Proc-Type: 4,ENCRYPTED" or
/// "ENCRYPTED PRIVATE KEY", or an OpenSSH-format key whose cipher is not "none"). False for a
/// missing or unreadable file.
bool keyFileEncrypted(const QString& path);

}  // namespace td::gui
