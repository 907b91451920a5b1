// ConnectionTester: "Test connection" for cluster nodes, off the GUI thread.
//
// test(id, node) starts a worker thread that opens the node through NodeAccess (host key
// prompts and secrets included) and runs td::remote::probe_node(node.work_dir) on it; the
// result arrives as finished(id, report) with td::remote::format_report's text (OS, CPUs,
// memory, free disk in the work directory, glibc, GPUs with memory and driver) or failed(id,
// message). Every network step is bounded by the per-node timeout (connect, handshake, auth and
// each libssh2 call: timeoutMs(); the probe command: 2 × timeoutMs()), so a blackholed node
// fails after about timeoutMs(), never hangs.
//
// testSlurm(id, login, slurm) tests a Slurm cluster's login node the same way (the free disk
// is that of the shared work directory), then asks `sinfo` about its partition on the same
// Session (td::remote::partition_info): the report gets one more line, slurmReportLine() ("Slurm:
// partition gpu (default) up: 2 idle, 1 allocated, 0 other node(s); 16 GPUs; time limit
// 1-00:00:00"); when sinfo fails (not installed, no controller, no such partition) the test
// fails with the node's report and slurmFailureLine().
//
// cancel(id) reports cancelled(id) at once and drops the worker's late result; the worker
// itself stops at its next check or timeout (a connect in progress cannot be interrupted).
//
// Threading rule: create, call and destroy on the GUI thread; signals are emitted there. The
// GUI thread never waits on a worker (not even in the destructor: workers left running finish
// on their own and their results are dropped).
#pragma once

#include <QHash>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

#include "remote/cluster.h"
#include "remote/probe.h"

namespace td::gui {

class GuiMailbox;
class NodeAccess;

class ConnectionTester : public QObject {
  Q_OBJECT
 public:
  /// `access` must outlive the tester's workers' start (it is only used in test()).
  explicit ConnectionTester(NodeAccess* access, QObject* parent = nullptr);
  ~ConnectionTester() override;

  /// Per-node timeout in milliseconds (default 15000).
  void setTimeoutMs(int ms);
  int timeoutMs() const { return timeout_ms_; }
  /// Test hook: ProbeOptions::extra_path (a folder put first on the node's PATH, e.g. a fake
  /// nvidia-smi).
  void setProbeExtraPath(const QString& path) { extra_path_ = path; }

  /// Starts testing `node` under `id` (the caller's key, e.g. a node row's id); a test already
  /// running under `id` is cancelled first. Emits started(id) at once.
  void test(const QString& id, const td::remote::NodeSpec& node);
  /// As test() for the login node of a Slurm cluster with settings `slurm` (see above).
  void testSlurm(const QString& id, const td::remote::NodeSpec& login, const td::remote::SlurmSpec& slurm);
  void cancel(const QString& id);
  void cancelAll();
  /// The report's Slurm line for what sinfo said: "Slurm: " + td::remote::partition_summary(p).
  static QString slurmReportLine(const td::remote::PartitionInfo& p);
  /// The report's Slurm line when sinfo failed: "Slurm: FAILED: <message> (...what to check)".
  static QString slurmFailureLine(const QString& message);
  bool isRunning(const QString& id) const { return jobs_.contains(id); }
  int running() const { return static_cast<int>(jobs_.size()); }

 signals:
  void started(const QString& id);
  /// Success: format_report(report) as `text`; `report` has the parsed facts.
  void finished(const QString& id, const QString& text, const td::remote::NodeReport& report);
  /// Connecting, authenticating or probing failed: the message says which and what to do.
  void failed(const QString& id, const QString& message);
  void cancelled(const QString& id);

 private:
  struct Job {
    quint64 serial = 0;
    std::shared_ptr<std::atomic<bool>> cancel;
  };
  void start(const QString& id, const td::remote::NodeSpec& node, const td::remote::SlurmSpec* slurm);
  void deliver(const QString& id, quint64 serial, bool ok, const QString& text, const td::remote::NodeReport& r);

  NodeAccess* access_;
  std::unique_ptr<GuiMailbox> mailbox_;
  QHash<QString, Job> jobs_;
  quint64 next_serial_ = 1;
  int timeout_ms_ = 15000;
  QString extra_path_;
};

}  // namespace td::gui

Q_DECLARE_METATYPE(td::remote::NodeReport)
