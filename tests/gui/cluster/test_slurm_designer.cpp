// The Clusters page for a Slurm cluster, driven like a person would: the kind switched to
// "Slurm cluster", the login node filled in the table and every Slurm field through its widget,
// the batch-script preview following the partition, invalid fields (nodes 0, a relative work
// directory) shown with validate()'s message and Save disabled, Save → the stored JSON read back
// to the same SlurmSpec field by field (no secret), a fresh panel showing it again, revert and
// switching back to SSH. Test connection: the report's Slurm line from sinfo output parsed by
// td::remote::parse_sinfo, and through the panel against a real sshd (the partition asked for is
// not there on any machine, so sinfo's answer fails the test whether or not Slurm is installed,
// and the node's own report stays). Then a screenshot of the page.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QGroupBox>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "../../remote/sshd_fixture.h"
#include "fake_prompter.h"
#include "gui/cluster/cluster_designer.h"
#include "gui/cluster/connection_tester.h"
#include "gui/cluster/node_access.h"
#include "gui/cluster/node_table_model.h"
#include "gui/cluster/slurm_settings.h"
#include "gui/core/store_client.h"
#include "store/store.h"

using namespace td::gui;
using tdclustertest::FakePrompter;

namespace {

template <class T>
T* child(QWidget& w, const char* name) {
  T* c = w.findChild<T*>(QString::fromLatin1(name));
  if (!c) qFatal("no child %s", name);
  return c;
}

void edit(NodeTableModel* m, int row, int column, const QVariant& v) {
  QVERIFY(m->setData(m->index(row, column), v));
}

}  // namespace

class TestSlurmDesigner : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void slurmFieldsSaveReload() {
    const QString db = dir_.filePath("slurm.db");
    StoreClient store(db);
    NodeAccess access(nullptr, nullptr);
    access.setSshConfigPath(dir_.filePath("no_ssh_config"));
    ClusterDesigner d(&store, &access);
    d.resize(1250, 900);
    d.show();
    QSignalSpy changed(&d, &ClusterDesigner::clustersChanged), saved(&d, &ClusterDesigner::saved);
    QTRY_COMPARE(changed.count(), 1);

    QVERIFY(d.newCluster());
    QTest::keyClicks(child<QLineEdit>(d, "clusterName"), "hpc");
    auto* kind = child<QComboBox>(d, "clusterKind");
    auto* box = child<QGroupBox>(d, "slurmBox");
    auto* table = child<QTableView>(d, "nodeTable");
    QCOMPARE(d.kind(), QString("ssh"));
    QVERIFY(!box->isVisible());
    QVERIFY(!table->isColumnHidden(NodeTableModel::Gpus));
    kind->setCurrentIndex(kind->findData("slurm"));
    QCOMPARE(d.kind(), QString("slurm"));
    QVERIFY(box->isVisible());
    for (int c : {NodeTableModel::Gpus, NodeTableModel::WorkDir, NodeTableModel::Address, NodeTableModel::IfName})
      QVERIFY(table->isColumnHidden(c));
    QVERIFY(!table->isColumnHidden(NodeTableModel::Host) && !table->isColumnHidden(NodeTableModel::Jump));
    QVERIFY(d.isDirty());
    // One login node and no more: Add node and Duplicate are off.
    NodeTableModel* m = d.nodeModel();
    QCOMPARE(m->rowCount(), 1);
    QVERIFY(!child<QPushButton>(d, "addNodeButton")->isEnabled());
    QVERIFY(!child<QPushButton>(d, "duplicateNodeButton")->isEnabled());
    auto* save = child<QPushButton>(d, "saveButton");
    QVERIFY(!save->isEnabled());  // no host, no work directory yet
    QVERIFY2(d.problems().contains("Slurm: the work directory is empty: give a folder every node shares (e.g. "
                                   "/scratch/<you>/traindeck)"),
             qPrintable(d.problems().join('\n')));

    edit(m, 0, NodeTableModel::Name, "login");
    edit(m, 0, NodeTableModel::Host, "login1.hpc.example");
    edit(m, 0, NodeTableModel::Port, 2222);
    edit(m, 0, NodeTableModel::User, "ana");
    edit(m, 0, NodeTableModel::Jump, "bastion.hpc.example");
    QTest::keyClicks(child<QLineEdit>(d, "slurmPartition"), "gpu");
    QTest::keyClicks(child<QLineEdit>(d, "slurmAccount"), "proj-42");
    QTest::keyClicks(child<QLineEdit>(d, "slurmQos"), "normal");
    QTest::keyClicks(child<QLineEdit>(d, "slurmTimeLimit"), "1-00:00:00");
    child<QSpinBox>(d, "slurmNodes")->setValue(2);
    child<QSpinBox>(d, "slurmGpusPerNode")->setValue(4);
    child<QSpinBox>(d, "slurmCpusPerTask")->setValue(8);
    child<QPlainTextEdit>(d, "slurmExtraSbatch")->setPlainText("#SBATCH --mem=0\n\n  #SBATCH --exclusive  \n");
    child<QPlainTextEdit>(d, "slurmSetup")->setPlainText("module load cuda/12.4\nexport NCCL_DEBUG=INFO\n");
    QTest::keyClicks(child<QLineEdit>(d, "slurmWorkDir"), "/scratch/ana/traindeck");
    child<QCheckBox>(d, "slurmRequeue")->setChecked(true);
    child<QSpinBox>(d, "slurmSignalLead")->setValue(300);
    QVERIFY2(d.problems().isEmpty(), qPrintable(d.problems().join('\n')));
    QVERIFY(save->isEnabled());

    // The preview is the script of these settings.
    auto* preview = child<QPlainTextEdit>(d, "slurmScriptPreview");
    QVERIFY(preview->isReadOnly());
    const QString script = preview->toPlainText();
    for (const char* line : {"#SBATCH --partition=gpu\n", "#SBATCH --account=proj-42\n", "#SBATCH --qos=normal\n",
                             "#SBATCH --time=1-00:00:00\n", "#SBATCH --nodes=2\n", "#SBATCH --ntasks-per-node=4\n",
                             "#SBATCH --gpus-per-node=4\n", "#SBATCH --cpus-per-task=8\n",
                             "#SBATCH --chdir=/scratch/ana/traindeck/runs/example-run\n", "#SBATCH --signal=USR1@300\n",
                             "#SBATCH --requeue\n", "#SBATCH --mem=0\n#SBATCH --exclusive\n",
                             "\nmodule load cuda/12.4\nexport NCCL_DEBUG=INFO\n"})
      QVERIFY2(script.contains(QLatin1String(line)), line);
    auto* partition = child<QLineEdit>(d, "slurmPartition");
    partition->setText("a100");
    QVERIFY(preview->toPlainText().contains("#SBATCH --partition=a100\n"));
    QVERIFY(!preview->toPlainText().contains("--partition=gpu"));
    partition->setText("gpu");

    // Invalid fields: validate()'s message, Save off, no script; fixed: all back.
    auto* problems = child<QLabel>(d, "problemsLabel");
    auto* nodes = child<QSpinBox>(d, "slurmNodes");
    nodes->setValue(0);
    QVERIFY2(problems->text().contains("Slurm: nodes must be 1 or more (got 0)"), qPrintable(problems->text()));
    QVERIFY(!save->isEnabled());
    QVERIFY(!d.save());
    QVERIFY2(preview->toPlainText().startsWith("No batch script yet: the Slurm settings cannot be used: nodes must be 1"),
             qPrintable(preview->toPlainText()));
    nodes->setValue(2);
    auto* work = child<QLineEdit>(d, "slurmWorkDir");
    work->setText("scratch/ana/traindeck");
    QVERIFY2(problems->text().contains(
                 "Slurm: the work directory 'scratch/ana/traindeck' must be an absolute path on the shared filesystem"),
             qPrintable(problems->text()));
    QVERIFY(!save->isEnabled());
    work->setText("/scratch/ana/traindeck");
    QVERIFY(problems->text().isEmpty());
    QVERIFY(save->isEnabled());
    QVERIFY(preview->toPlainText().contains("#SBATCH --partition=gpu\n"));

    save->click();
    QTRY_COMPARE(saved.count(), 1);
    QVERIFY(!d.isDirty());
    QCOMPARE(d.kind(), QString("slurm"));

    // The stored row, read with a store connection of our own.
    {
      td::store::Store s(db.toStdString());
      const auto row = s.find_cluster("hpc");
      QVERIFY(row.has_value());
      const td::remote::ClusterSpec c = td::remote::cluster_from_json(nlohmann::json::parse(row->spec_json));
      QCOMPARE(c.kind, std::string("slurm"));
      QCOMPARE(c.nodes.size(), size_t(1));
      QCOMPARE(c.nodes[0].name, std::string("login"));
      QCOMPARE(c.nodes[0].host, std::string("login1.hpc.example"));
      QCOMPARE(c.nodes[0].port, 2222);
      QCOMPARE(c.nodes[0].user, std::string("ana"));
      QCOMPARE(c.nodes[0].jump, std::string("bastion.hpc.example"));
      const td::remote::SlurmSpec& sl = c.slurm;
      QCOMPARE(sl.partition, std::string("gpu"));
      QCOMPARE(sl.account, std::string("proj-42"));
      QCOMPARE(sl.qos, std::string("normal"));
      QCOMPARE(sl.time_limit, std::string("1-00:00:00"));
      QCOMPARE(sl.nodes, 2);
      QCOMPARE(sl.gpus_per_node, 4);
      QCOMPARE(sl.cpus_per_task, 8);
      QCOMPARE(sl.extra_sbatch, (std::vector<std::string>{"#SBATCH --mem=0", "#SBATCH --exclusive"}));
      QCOMPARE(sl.setup, (std::vector<std::string>{"module load cuda/12.4", "export NCCL_DEBUG=INFO"}));
      QCOMPARE(sl.work_dir, std::string("/scratch/ana/traindeck"));
      QCOMPARE(sl.requeue, true);
      QCOMPARE(sl.signal_lead_s, 300);
      QVERIFY(row->spec_json.find("password\"") == std::string::npos);
      QVERIFY(row->spec_json.find("passphrase") == std::string::npos);
    }

    // A fresh panel shows it again, clean; an edit makes it dirty, Revert brings the saved one.
    ClusterDesigner again(&store, &access);
    again.show();
    QSignalSpy loaded(&again, &ClusterDesigner::clustersChanged);
    QTRY_COMPARE(loaded.count(), 1);
    QVERIFY(again.selectCluster("hpc"));
    QVERIFY(!again.isDirty());
    QCOMPARE(again.kind(), QString("slurm"));
    QVERIFY(child<QGroupBox>(again, "slurmBox")->isVisible());
    QCOMPARE(td::remote::to_json(again.spec()), td::remote::to_json(d.spec()));
    QCOMPARE(child<QLineEdit>(again, "slurmPartition")->text(), QString("gpu"));
    QCOMPARE(child<QSpinBox>(again, "slurmSignalLead")->value(), 300);
    QCOMPARE(child<QPlainTextEdit>(again, "slurmExtraSbatch")->toPlainText(), QString("#SBATCH --mem=0\n#SBATCH --exclusive"));
    QCOMPARE(child<QPlainTextEdit>(again, "slurmScriptPreview")->toPlainText(), script);
    QTest::keyClicks(child<QLineEdit>(again, "slurmQos"), "-high");
    QVERIFY(again.isDirty());
    QCOMPARE(again.spec().slurm.qos, std::string("normal-high"));
    QVERIFY(child<QPushButton>(again, "revertButton")->isEnabled());
    again.revert();
    QVERIFY(!again.isDirty());
    QCOMPARE(child<QLineEdit>(again, "slurmQos")->text(), QString("normal"));

    // Back to SSH nodes: the Slurm part hides, the spec is an SSH cluster (no "slurm" key).
    again.setKind("ssh");
    QVERIFY(again.isDirty());
    QVERIFY(!child<QGroupBox>(again, "slurmBox")->isVisible());
    QVERIFY(!child<QTableView>(again, "nodeTable")->isColumnHidden(NodeTableModel::Gpus));
    QVERIFY(child<QPushButton>(again, "addNodeButton")->isEnabled());
    QVERIFY(!td::remote::to_json(again.spec()).contains("slurm"));
    // Two nodes on a Slurm cluster: validate()'s message.
    td::remote::NodeSpec second;
    second.host = "login2";
    again.nodeModel()->addNode(second);
    again.setKind("slurm");
    QVERIFY2(again.problems().contains("a Slurm cluster has exactly one SSH node, its login node (it has 2)"),
             qPrintable(again.problems().join('\n')));
    QVERIFY(!child<QPushButton>(again, "saveButton")->isEnabled());

    QDir().mkpath(TD_SCREENSHOT_DIR);
    QApplication::processEvents();
    const QString path = QDir(TD_SCREENSHOT_DIR).filePath("cluster_designer_slurm.png");
    QVERIFY(d.grab().toImage().save(path));
    qInfo("screenshot: %s", qPrintable(path));
  }

  // The Slurm settings' container (the ContainerSettings fields inside them; the node's own
  // container box stays hidden): the preview's srun runs the image, validate()'s message keeps
  // Save off, and the saved cluster JSON brings it back in a fresh panel.
  void slurmContainerSaveReload() {
    const QString db = dir_.filePath("slurm-container.db");
    StoreClient store(db);
    NodeAccess access(nullptr, nullptr);
    access.setSshConfigPath(dir_.filePath("no_ssh_config"));
    ClusterDesigner d(&store, &access);
    d.show();
    QSignalSpy changed(&d, &ClusterDesigner::clustersChanged), saved(&d, &ClusterDesigner::saved);
    QTRY_COMPARE(changed.count(), 1);
    QVERIFY(d.newCluster());
    QTest::keyClicks(child<QLineEdit>(d, "clusterName"), "hpc-ctr");
    d.setKind("slurm");
    QVERIFY(!child<QGroupBox>(d, "containerBox")->isVisible());
    edit(d.nodeModel(), 0, NodeTableModel::Host, "login1.hpc.example");
    QTest::keyClicks(child<QLineEdit>(d, "slurmWorkDir"), "/scratch/ana/td");
    child<QSpinBox>(d, "slurmGpusPerNode")->setValue(2);
    auto* ctr = child<QWidget>(d, "slurmContainer");
    QVERIFY(ctr->isVisible());
    auto* runtime = child<QComboBox>(*ctr, "containerRuntime");
    runtime->setCurrentIndex(runtime->findText("apptainer"));
    auto* image = child<QLineEdit>(*ctr, "containerImage");
    QTest::keyClicks(image, "-x.sif");
    QVERIFY2(d.problems().contains("Slurm: container: the container image '-x.sif' starts with '-' (it would read as an option)"),
             qPrintable(d.problems().join('\n')));
    QVERIFY(!child<QPushButton>(d, "saveButton")->isEnabled());
    image->setText("/scratch/ana/td.sif");
    child<QPlainTextEdit>(*ctr, "containerMounts")->setPlainText("/data:/data:ro");
    QVERIFY2(d.problems().isEmpty(), qPrintable(d.problems().join('\n')));
    const QString script = child<QPlainTextEdit>(d, "slurmScriptPreview")->toPlainText();
    QVERIFY2(script.contains("\"$td_run_dir\" apptainer exec --nv --bind /scratch/ana/td:/scratch/ana/td --pwd "
                             "/scratch/ana/td --bind /data:/data:ro /scratch/ana/td.sif traindeck-engine train --config "
                             "/scratch/ana/td/runs/example-run/config.json "),
             qPrintable(script));
    QVERIFY(d.save());
    QTRY_COMPARE(saved.count(), 1);
    {
      td::store::Store s(db.toStdString());
      const auto row = s.find_cluster("hpc-ctr");
      QVERIFY(row.has_value());
      const td::remote::ClusterSpec c = td::remote::cluster_from_json(nlohmann::json::parse(row->spec_json));
      QVERIFY(c.slurm.container.runtime == td::remote::ContainerRuntime::Apptainer);
      QCOMPARE(c.slurm.container.image, std::string("/scratch/ana/td.sif"));
      QCOMPARE(c.slurm.container.mounts, std::vector<std::string>{"/data:/data:ro"});
      QVERIFY(!c.nodes[0].container.enabled());  // the login node runs nothing
    }
    ClusterDesigner again(&store, &access);
    again.show();
    QSignalSpy loaded(&again, &ClusterDesigner::clustersChanged);
    QTRY_COMPARE(loaded.count(), 1);
    QVERIFY(again.selectCluster("hpc-ctr"));
    QVERIFY(!again.isDirty());
    auto* ctr2 = child<QWidget>(again, "slurmContainer");
    QCOMPARE(child<QComboBox>(*ctr2, "containerRuntime")->currentText(), QString("apptainer"));
    QCOMPARE(child<QLineEdit>(*ctr2, "containerImage")->text(), QString("/scratch/ana/td.sif"));
    QCOMPARE(child<QPlainTextEdit>(again, "slurmScriptPreview")->toPlainText(), script);
    child<QLineEdit>(*ctr2, "containerImage")->clear();  // back to the bundle
    QVERIFY(again.isDirty());
    QVERIFY2(again.problems().contains("Slurm: container: container mounts are set but no image: enter the image, or "
                                       "remove the mounts"),
             qPrintable(again.problems().join('\n')));
    child<QPlainTextEdit>(*ctr2, "containerMounts")->clear();
    QVERIFY(again.problems().isEmpty());
    QVERIFY(!td::remote::to_json(again.spec().slurm).contains("container"));
    QVERIFY(!child<QPlainTextEdit>(again, "slurmScriptPreview")->toPlainText().contains("apptainer"));
  }

  // The report's Slurm line from sinfo's own output format (%P|%N|%T|%G|%l|%a), counted by hand:
  // gpu (default): tdn1, tdn2 idle, tdn3 mixed (allocated), 8 + 4 + 4 GPUs.
  void slurmReportLine() {
    const td::remote::PartitionInfo p = td::remote::parse_sinfo("gpu*|tdn1|idle|gpu:8|1-00:00:00|up\n"
                                                                "gpu*|tdn2|idle|gpu:a100:4(S:0-1)|1-00:00:00|up\n"
                                                                "gpu*|tdn3|mixed|gpu:4|1-00:00:00|up\n"
                                                                "cpu|tdc1|down*|(null)|infinite|up\n",
                                                                "");
    QCOMPARE(ConnectionTester::slurmReportLine(p),
             QString("Slurm: partition gpu (default) up: 2 idle, 1 allocated, 0 other node(s); 16 GPUs; time limit "
                     "1-00:00:00"));
    td::remote::PartitionInfo cpu;
    cpu.name = "cpu";
    cpu.avail = "down";
    cpu.time_limit = "infinite";
    cpu.nodes_other = 1;
    QCOMPARE(ConnectionTester::slurmReportLine(cpu),
             QString("Slurm: partition cpu down: 0 idle, 0 allocated, 1 other node(s); no GPUs; time limit infinite"));
    QCOMPARE(ConnectionTester::slurmFailureLine("sinfo failed (exit 127)"),
             QString("Slurm: FAILED: sinfo failed (exit 127) (check that sinfo runs on the login node and the partition "
                     "is right)"));
  }

  // Test connection of a Slurm cluster's login node through the panel, against a real sshd.
  void slurmTestConnection() {
    td::remote::testing::SshdFixture sshd;
    if (!sshd.start(false)) QSKIP(sshd.skip_reason.c_str());
    StoreClient store(dir_.filePath("test.db"));
    FakePrompter p;
    NodeAccess access(nullptr, &p);
    access.setSshConfigPath(dir_.filePath("no_ssh_config"));
    access.setKnownHostsPath(QString::fromStdString(sshd.known_hosts));
    ClusterDesigner d(&store, &access);
    d.tester()->setTimeoutMs(5000);
    d.show();
    td::remote::ClusterSpec c;
    c.name = "hpc";
    c.kind = "slurm";
    td::remote::NodeSpec login;
    login.name = "login";
    login.host = "127.0.0.1";
    login.port = sshd.port;
    login.user = sshd.user;
    login.auth = td::remote::AuthMethod::KeyFile;
    login.key_file = sshd.user_key;
    c.nodes.push_back(login);
    c.slurm.partition = "td-no-such-partition";
    c.slurm.work_dir = (sshd.dir / "shared").string();
    d.setSpec(c);
    QCOMPARE(d.kind(), QString("slurm"));
    QCOMPARE(child<QLineEdit>(d, "slurmPartition")->text(), QString("td-no-such-partition"));
    QVERIFY2(d.isValid(), qPrintable(d.problems().join('\n')));
    QSignalSpy failed(d.tester(), &ConnectionTester::failed);
    d.testNode(0);
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 60000);
    QCOMPARE(d.nodeModel()->testState(0), NodeTableModel::TestState::Failed);
    child<QTableView>(d, "nodeTable")->selectRow(0);
    const QString report = child<QPlainTextEdit>(d, "reportView")->toPlainText();
    QVERIFY2(report.startsWith("login: FAILED\n") && report.contains("glibc:") && report.contains("\nSlurm: FAILED: "),
             qPrintable(report));
    QVERIFY2(report.contains(QString::fromStdString(c.slurm.work_dir)), qPrintable(report));  // the shared dir's disk
  }
};

int main(int argc, char** argv) {
  qunsetenv("DBUS_SESSION_BUS_ADDRESS");  // no desktop keyring in tests
  QApplication app(argc, argv);
  TestSlurmDesigner t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_slurm_designer.moc"
