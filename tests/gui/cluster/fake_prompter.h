// A Prompter for tests: answers from fields instead of dialogs and records what it was asked.
// Called on the GUI thread by NodeAccess (the test's main thread).
#pragma once

#include <QString>
#include <QThread>
#include <QtTest>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "gui/cluster/node_access.h"

namespace tdclustertest {

struct FakePrompter : td::gui::Prompter {
  bool accept = true;                 // answer to acceptHostKey
  std::optional<QString> secret;      // answer to askSecret (nullopt: cancel)
  std::function<std::optional<QString>(const td::gui::SecretRequest&)> secretFor;  // overrides `secret`
  bool remember = false;
  std::vector<td::remote::HostKeyInfo> hostKeys;  // every acceptHostKey question
  std::vector<QString> hostWheres;
  std::vector<td::gui::SecretRequest> secretRequests;
  bool onGuiThread = true;            // every call came on the main thread

  std::optional<td::gui::SecretAnswer> askSecret(const td::gui::SecretRequest& r) override {
    onGuiThread = onGuiThread && QThread::currentThread() == qApp->thread();
    secretRequests.push_back(r);
    const std::optional<QString> s = secretFor ? secretFor(r) : secret;
    if (!s) return std::nullopt;
    return td::gui::SecretAnswer{*s, remember};
  }
  bool acceptHostKey(const td::remote::HostKeyInfo& info, const QString& where) override {
    onGuiThread = onGuiThread && QThread::currentThread() == qApp->thread();
    hostKeys.push_back(info);
    hostWheres.push_back(where);
    return accept;
  }
};

/// Runs fn on a worker thread while the main thread keeps its event loop running (the prompts
/// need it); returns "" on success or the exception's message.
inline QString onWorker(const std::function<void()>& fn, int timeout_ms = 30000) {
  std::atomic<bool> done{false};
  QString error;
  std::thread t([&] {
    try {
      fn();
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
      if (error.isEmpty()) error = QStringLiteral("(empty error)");
    }
    done = true;
  });
  QElapsedTimer timer;
  timer.start();
  while (!done && timer.elapsed() < timeout_ms) QTest::qWait(10);
  if (!done) qFatal("worker did not finish");
  t.join();
  return error;
}

}  // namespace tdclustertest
