// SecretStore: node passwords and key passphrases, kept in the system keyring (qtkeychain,
// service "TrainDeck") where one is running, else not kept at all (the person is asked each
// time). Secrets are never written to SQLite, QSettings, logs or error messages.
//
// A secret is keyed by the node's identity after ~/.ssh/config, "user@host:port", and its kind,
// "password" or "passphrase": key("ana@10.1.2.3:2200", "password") == "ana@10.1.2.3:2200 password".
//
// Backends: KeychainSecretBackend (the system keyring through qtkeychain's Read/Write/
// DeletePasswordJob, never qtkeychain's plain-text QSettings fallback) and MemorySecretBackend
// (a process-local map: tests, and the "remembered" path without a desktop keyring).
//
// Threading rule: SecretStore and both backends may be called from any thread. The keychain
// backend must be constructed on the GUI thread: its jobs run there (posted, the GUI thread
// never waits) while a worker thread waits for the answer; called on the GUI thread itself it
// waits in a local event loop (avoid: use a worker).
#pragma once

#include <QHash>
#include <QString>

#include <memory>
#include <mutex>
#include <optional>

namespace td::gui {

/// Where secrets are kept. Every method may be called from any thread.
class SecretBackend {
 public:
  virtual ~SecretBackend() = default;
  /// Whether secrets can be kept at all; false: nothing is kept, the person is asked each time.
  virtual bool available() = 0;
  /// The secret under `key`, nullopt when there is none or the backend is unavailable.
  virtual std::optional<QString> read(const QString& key) = 0;
  /// Keeps `secret` under `key`; false when it could not be kept.
  virtual bool write(const QString& key, const QString& secret) = 0;
  /// Forgets `key` (nothing when absent).
  virtual void remove(const QString& key) = 0;
  /// For messages: "system keyring", "memory".
  virtual QString name() const = 0;
};

/// Secrets in a process-local map (lost at exit). Counts reads/writes/removes for tests.
class MemorySecretBackend : public SecretBackend {
 public:
  bool available() override { return true; }
  std::optional<QString> read(const QString& key) override;
  bool write(const QString& key, const QString& secret) override;
  void remove(const QString& key) override;
  QString name() const override { return QStringLiteral("memory"); }

  bool contains(const QString& key) const;
  int writes() const;
  int removes() const;

 private:
  mutable std::mutex mu_;
  QHash<QString, QString> map_;
  int writes_ = 0, removes_ = 0;
};

/// The system keyring through qtkeychain (Secret Service / KWallet over D-Bus on Linux).
/// Availability is found out once: no D-Bus session bus (neither DBUS_SESSION_BUS_ADDRESS nor
/// $XDG_RUNTIME_DIR/bus) → unavailable without trying; else a read of a probe entry must answer
/// NoError or EntryNotFound (NoBackendAvailable, OtherError, ... → unavailable). Construct on
/// the GUI thread; each job waits at most `timeout_ms` (an unlock dialog of the keyring counts).
class KeychainSecretBackend : public SecretBackend {
 public:
  explicit KeychainSecretBackend(const QString& service = QStringLiteral("TrainDeck"), int timeout_ms = 120000);
  ~KeychainSecretBackend() override;
  bool available() override;
  std::optional<QString> read(const QString& key) override;
  bool write(const QString& key, const QString& secret) override;
  void remove(const QString& key) override;
  QString name() const override { return QStringLiteral("system keyring"); }

  struct Impl;

 private:
  std::shared_ptr<Impl> d_;
};

/// Secrets by node identity and kind over a backend.
class SecretStore {
 public:
  explicit SecretStore(std::unique_ptr<SecretBackend> backend);
  /// The system keyring (KeychainSecretBackend); call on the GUI thread.
  static std::shared_ptr<SecretStore> system();

  /// "user@host:port kind" (kind: "password" or "passphrase").
  static QString key(const QString& where, const QString& kind);

  /// Whether remembering is possible (the backend is available).
  bool canRemember();
  /// The kept secret of `where` and `kind`, nullopt when none is kept.
  std::optional<QString> read(const QString& where, const QString& kind);
  /// Keeps a secret; false when the backend is unavailable or refused (nothing kept then).
  bool remember(const QString& where, const QString& kind, const QString& secret);
  /// Forgets a kept secret (after the node refused it).
  void forget(const QString& where, const QString& kind);

  SecretBackend* backend() { return backend_.get(); }

 private:
  std::unique_ptr<SecretBackend> backend_;
};

}  // namespace td::gui
