// ConnectionTester (connection_tester.h): one detached worker thread per node test.
#include "gui/cluster/connection_tester.h"

#include <QPointer>

#include <thread>

#include "gui/cluster/gui_mailbox.h"
#include "gui/cluster/node_access.h"

namespace td::gui {

ConnectionTester::ConnectionTester(NodeAccess* access, QObject* parent)
    : QObject(parent), access_(access), mailbox_(std::make_unique<GuiMailbox>(this)) {
  qRegisterMetaType<td::remote::NodeReport>();
}

ConnectionTester::~ConnectionTester() {
  mailbox_->close();
  for (const Job& j : std::as_const(jobs_)) j.cancel->store(true);
}

void ConnectionTester::setTimeoutMs(int ms) { timeout_ms_ = ms > 0 ? ms : 15000; }

void ConnectionTester::test(const QString& id, const td::remote::NodeSpec& node) { start(id, node, nullptr); }

void ConnectionTester::testSlurm(const QString& id, const td::remote::NodeSpec& login,
                                 const td::remote::SlurmSpec& slurm) {
  start(id, login, &slurm);
}

QString ConnectionTester::slurmReportLine(const td::remote::PartitionInfo& p) {
  return tr("Slurm: %1").arg(QString::fromStdString(td::remote::partition_summary(p)));
}

QString ConnectionTester::slurmFailureLine(const QString& message) {
  return tr("Slurm: FAILED: %1 (check that sinfo runs on the login node and the partition is right)").arg(message);
}

void ConnectionTester::start(const QString& id, const td::remote::NodeSpec& node, const td::remote::SlurmSpec* slurm) {
  cancel(id);
  Job job;
  job.serial = next_serial_++;
  job.cancel = std::make_shared<std::atomic<bool>>(false);
  jobs_.insert(id, job);
  emit started(id);

  if (!access_) {
    deliver(id, job.serial, false, tr("No node access is configured (internal error)."), {});
    return;
  }
  // The worker holds only shared pieces (NodeAccess's opener, the mailbox), never this object.
  GuiMailbox mailbox = *mailbox_;
  NodeAccess::Opener open = access_->opener();
  const int timeout = timeout_ms_;
  const std::string extra = extra_path_.toStdString();
  const quint64 serial = job.serial;
  const bool is_slurm = slurm != nullptr;
  const std::string partition = slurm ? slurm->partition : std::string();
  // A Slurm cluster's runs live in its shared work directory, not in the login node's own.
  const std::string work_dir = slurm && !slurm->work_dir.empty() ? slurm->work_dir : node.work_dir;
  std::shared_ptr<std::atomic<bool>> cancel_flag = job.cancel;
  QPointer<ConnectionTester> self(this);
  std::thread([=] {
    bool ok = false;
    QString text;
    td::remote::NodeReport report;
    try {
      td::remote::Session s = open(node, cancel_flag.get(), timeout);
      td::remote::ProbeOptions po;
      po.extra_path = extra;
      po.timeout_ms = 2 * timeout;
      if (!cancel_flag->load()) {
        report = td::remote::probe_node(s, work_dir, po);
        text = QString::fromStdString(td::remote::format_report(report));
        ok = true;
      }
      if (ok && is_slurm && !cancel_flag->load()) {
        try {
          text += QLatin1Char('\n') + slurmReportLine(td::remote::partition_info(s, partition));
        } catch (const std::exception& e) {
          text += QLatin1Char('\n') + slurmFailureLine(QString::fromStdString(e.what()));
          ok = false;
        }
      }
    } catch (const std::exception& e) {
      text = QString::fromStdString(e.what());
    }
    mailbox.post([self, id, serial, ok, text, report] {  // runs only while the tester lives
      if (self) self->deliver(id, serial, ok, text, report);
    });
  }).detach();
}

void ConnectionTester::deliver(const QString& id, quint64 serial, bool ok, const QString& text,
                               const td::remote::NodeReport& r) {
  const auto it = jobs_.constFind(id);
  if (it == jobs_.constEnd() || it->serial != serial) return;  // cancelled or restarted meanwhile
  jobs_.erase(it);
  if (ok) emit finished(id, text, r);
  else emit failed(id, text);
}

void ConnectionTester::cancel(const QString& id) {
  const auto it = jobs_.constFind(id);
  if (it == jobs_.constEnd()) return;
  it->cancel->store(true);
  jobs_.erase(it);
  emit cancelled(id);
}

void ConnectionTester::cancelAll() {
  const QStringList ids = jobs_.keys();
  for (const QString& id : ids) cancel(id);
}

}  // namespace td::gui
