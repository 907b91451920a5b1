// SlurmSubmitDialog (gui/cluster/slurm_submit_dialog.h): what Start run shows before a Slurm
// submission — the summary (cluster, login node, partition, nodes, ranks, time limit, requeue)
// and the batch script with these settings' directives — Submit / Cancel, and a cluster whose
// settings cannot be used, which cannot be submitted and says why.
#include <QApplication>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTimer>
#include <QtTest>

#include "gui/cluster/slurm_submit_dialog.h"

using namespace td::gui;

namespace {

td::remote::ClusterSpec cluster() {
  td::remote::ClusterSpec c;
  c.name = "hpc";
  c.kind = "slurm";
  td::remote::NodeSpec login;
  login.name = "login1";
  login.host = "login1.example.org";
  login.user = "ana";
  c.nodes.push_back(login);
  c.slurm.partition = "gpu";
  c.slurm.time_limit = "00:30:00";
  c.slurm.nodes = 2;
  c.slurm.gpus_per_node = 2;
  c.slurm.requeue = true;
  c.slurm.work_dir = "/scratch/ana/td";
  return c;
}

// Clicks `button` of the dialog that is open when the event loop runs next.
void click_when_open(const char* button) {
  QTimer::singleShot(0, [button] {
    for (QWidget* w : QApplication::topLevelWidgets())
      if (auto* d = qobject_cast<SlurmSubmitDialog*>(w); d && d->isVisible()) {
        if (QByteArray(button) == "submit") d->submitButton()->click();
        else d->reject();
      }
  });
}

}  // namespace

class TestSlurmSubmitDialog : public QObject {
  Q_OBJECT
 private slots:
  void summaryAndScript() {
    SlurmSubmitDialog d(cluster());
    const QString summary = d.summaryLabel()->text();
    for (const char* part : {"Cluster hpc through the login node login1", "partition gpu", "2 node(s)", "4 rank(s)",
                             "time limit 00:30:00", "continues in a new job", "/scratch/ana/td"})
      QVERIFY2(summary.contains(QString::fromLatin1(part)), qPrintable(part + QStringLiteral(" not in: ") + summary));
    const QString script = d.scriptView()->toPlainText();
    QVERIFY(script.startsWith(QStringLiteral("#!")));
    for (const char* line : {"#SBATCH --partition=gpu\n", "#SBATCH --time=00:30:00\n", "#SBATCH --nodes=2\n",
                             "#SBATCH --ntasks-per-node=2\n", "#SBATCH --gpus-per-node=2\n",
                             "#SBATCH --output=/scratch/ana/td/runs/"})
      QVERIFY2(script.contains(QString::fromLatin1(line)), line);
    QVERIFY(d.submitButton()->isEnabled());
  }

  void unusableSettings() {
    td::remote::ClusterSpec c = cluster();
    c.slurm.nodes = 0;
    SlurmSubmitDialog d(c);
    QVERIFY(!d.submitButton()->isEnabled());
    QVERIFY2(d.summaryLabel()->text().startsWith(QStringLiteral("This run cannot be submitted: ")), qPrintable(d.summaryLabel()->text()));
    QVERIFY2(d.summaryLabel()->text().contains(QStringLiteral("nodes")), qPrintable(d.summaryLabel()->text()));
    QVERIFY(d.scriptView()->toPlainText().isEmpty());
    td::remote::ClusterSpec ssh = cluster();
    ssh.kind = "ssh";
    SlurmSubmitDialog e(ssh);
    QVERIFY(!e.submitButton()->isEnabled());
    QVERIFY(e.summaryLabel()->text().contains(QStringLiteral("not a Slurm cluster")));
  }

  void confirmSubmitAndCancel() {
    click_when_open("submit");
    QVERIFY(SlurmSubmitDialog::confirm(cluster(), nullptr));
    click_when_open("cancel");
    QVERIFY(!SlurmSubmitDialog::confirm(cluster(), nullptr));
  }
};

QTEST_MAIN(TestSlurmSubmitDialog)
#include "test_slurm_submit_dialog.moc"
