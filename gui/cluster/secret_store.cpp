// SecretStore and its backends (secret_store.h). Nothing here logs or formats a secret.
#include "gui/cluster/secret_store.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QThread>
#include <qt6keychain/keychain.h>

#include <chrono>
#include <future>

#include "gui/cluster/gui_mailbox.h"

namespace td::gui {

// ---- memory ------------------------------------------------------------------------------------

std::optional<QString> MemorySecretBackend::read(const QString& key) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = map_.constFind(key);
  if (it == map_.constEnd()) return std::nullopt;
  return *it;
}

bool MemorySecretBackend::write(const QString& key, const QString& secret) {
  std::lock_guard<std::mutex> lock(mu_);
  map_.insert(key, secret);
  ++writes_;
  return true;
}

void MemorySecretBackend::remove(const QString& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (map_.remove(key)) ++removes_;
}

bool MemorySecretBackend::contains(const QString& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.contains(key);
}

int MemorySecretBackend::writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writes_;
}

int MemorySecretBackend::removes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return removes_;
}

// ---- system keyring ----------------------------------------------------------------------------

namespace {

struct JobResult {
  QKeychain::Error error = QKeychain::OtherError;
  QString text;  // ReadPasswordJob's secret
};

// A desktop keyring is reached over the D-Bus session bus on Linux; without one qtkeychain
// can only fail (or, for libsecret, try to autolaunch a bus), so it is not even asked.
bool sessionBusReachable() {
#if defined(Q_OS_UNIX) && !defined(Q_OS_MACOS)
  if (!qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS")) return true;
  const QString runtime = qEnvironmentVariable("XDG_RUNTIME_DIR");
  return !runtime.isEmpty() && QFileInfo::exists(runtime + QStringLiteral("/bus"));
#else
  return true;
#endif
}

}  // namespace

struct KeychainSecretBackend::Impl {
  QString service;
  int timeout_ms = 120000;
  QObject* context = nullptr;  // GUI thread: the jobs are created and run there
  GuiMailbox mailbox{nullptr};
  std::mutex mu;
  int available = -1;  // -1: not probed yet

  // Runs the job made by `make` on the context's thread; the caller waits for its result.
  JobResult run(std::function<QKeychain::Job*()> make) {
    auto promise = std::make_shared<std::promise<JobResult>>();
    std::future<JobResult> future = promise->get_future();
    auto start = [make = std::move(make), promise] {
      QKeychain::Job* job = make();
      job->setAutoDelete(true);
      job->setInsecureFallback(false);  // never qtkeychain's plain-text QSettings store
      QObject::connect(job, &QKeychain::Job::finished, [promise](QKeychain::Job* j) {
        JobResult r;
        r.error = j->error();
        if (auto* read = qobject_cast<QKeychain::ReadPasswordJob*>(j)) r.text = read->textData();
        promise->set_value(std::move(r));
      });
      job->start();
    };
    if (mailbox.onContextThread()) {
      start();
      QElapsedTimer t;
      t.start();
      while (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready && t.elapsed() < timeout_ms)
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
      if (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return {};
    } else if (!mailbox.post(std::move(start)) ||
               future.wait_for(std::chrono::milliseconds(timeout_ms)) != std::future_status::ready) {
      return {};
    }
    try {
      return future.get();
    } catch (const std::future_error&) {  // the context died before the job ran
      return {};
    }
  }
};

KeychainSecretBackend::KeychainSecretBackend(const QString& service, int timeout_ms) : d_(std::make_shared<Impl>()) {
  d_->service = service;
  d_->timeout_ms = timeout_ms;
  d_->context = new QObject;
  d_->mailbox = GuiMailbox(d_->context);
}

KeychainSecretBackend::~KeychainSecretBackend() {
  d_->mailbox.close();
  if (d_->mailbox.onContextThread()) delete d_->context;
  else d_->context->deleteLater();
}

bool KeychainSecretBackend::available() {
  std::lock_guard<std::mutex> lock(d_->mu);
  if (d_->available < 0) {
    if (!sessionBusReachable()) {
      d_->available = 0;
      qInfo("TrainDeck: no D-Bus session bus, so no system keyring: node passwords and passphrases are asked "
            "each time");
    } else {
      const QString service = d_->service;
      const JobResult r = d_->run([service] {
        auto* job = new QKeychain::ReadPasswordJob(service);
        job->setKey(QStringLiteral("traindeck-keyring-probe"));
        return job;
      });
      d_->available = (r.error == QKeychain::NoError || r.error == QKeychain::EntryNotFound) ? 1 : 0;
      if (!d_->available)
        qInfo("TrainDeck: the system keyring does not answer (qtkeychain error %d): node passwords and "
              "passphrases are asked each time", static_cast<int>(r.error));
    }
  }
  return d_->available == 1;
}

std::optional<QString> KeychainSecretBackend::read(const QString& key) {
  if (!available()) return std::nullopt;
  const QString service = d_->service;
  const JobResult r = d_->run([service, key] {
    auto* job = new QKeychain::ReadPasswordJob(service);
    job->setKey(key);
    return job;
  });
  if (r.error != QKeychain::NoError) return std::nullopt;
  return r.text;
}

bool KeychainSecretBackend::write(const QString& key, const QString& secret) {
  if (!available()) return false;
  const QString service = d_->service;
  const JobResult r = d_->run([service, key, secret] {
    auto* job = new QKeychain::WritePasswordJob(service);
    job->setKey(key);
    job->setTextData(secret);
    return job;
  });
  return r.error == QKeychain::NoError;
}

void KeychainSecretBackend::remove(const QString& key) {
  if (!available()) return;
  const QString service = d_->service;
  d_->run([service, key] {
    auto* job = new QKeychain::DeletePasswordJob(service);
    job->setKey(key);
    return job;
  });
}

// ---- SecretStore -------------------------------------------------------------------------------

SecretStore::SecretStore(std::unique_ptr<SecretBackend> backend) : backend_(std::move(backend)) {}

std::shared_ptr<SecretStore> SecretStore::system() {
  return std::make_shared<SecretStore>(std::make_unique<KeychainSecretBackend>());
}

QString SecretStore::key(const QString& where, const QString& kind) { return where + QLatin1Char(' ') + kind; }

bool SecretStore::canRemember() { return backend_ && backend_->available(); }

std::optional<QString> SecretStore::read(const QString& where, const QString& kind) {
  if (!canRemember()) return std::nullopt;
  return backend_->read(key(where, kind));
}

bool SecretStore::remember(const QString& where, const QString& kind, const QString& secret) {
  return canRemember() && backend_->write(key(where, kind), secret);
}

void SecretStore::forget(const QString& where, const QString& kind) {
  if (canRemember()) backend_->remove(key(where, kind));
}

}  // namespace td::gui
