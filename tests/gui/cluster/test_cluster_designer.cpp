// ClusterDesigner driven like a person would: a new cluster edited in the node table is saved
// as exactly the expected JSON (no secret field), shows again after a reload, an invalid port
// disables Save with validate()'s message, "This machine" is first and not editable, the
// unsaved-changes guard asks, the "as resolved" column follows a test ~/.ssh/config, and Test
// connection against a real sshd shows the report; then a screenshot with two nodes.
#include <QApplication>
#include <QDir>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStackedWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "../../remote/sshd_fixture.h"
#include "fake_prompter.h"
#include "gui/cluster/cluster_designer.h"
#include "gui/cluster/cluster_list.h"
#include "gui/cluster/connection_tester.h"
#include "gui/cluster/node_access.h"
#include "gui/cluster/node_table_model.h"
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

class TestClusterDesigner : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString config_;

 private slots:
  void initTestCase() {
    config_ = dir_.filePath("ssh_config");
    QFile f(config_);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("Host gpu1\n  HostName 10.1.2.3\n  User ana\n  Port 2200\n  ProxyJump bastion\n"
            "Host bastion\n  HostName bastion.lab.example\n  User jump\n");
  }

  void editSaveReload() {
    const QString db = dir_.filePath("designer.db");
    StoreClient store(db);
    NodeAccess access(nullptr, nullptr);
    access.setSshConfigPath(config_);
    ClusterDesigner d(&store, &access);
    d.show();
    QSignalSpy changed(&d, &ClusterDesigner::clustersChanged), saved(&d, &ClusterDesigner::saved);
    QTRY_COMPARE(changed.count(), 1);  // the (empty) list was loaded
    auto* list = child<QListWidget>(d, "clusterList");
    QCOMPARE(list->count(), 1);
    QCOMPARE(list->item(0)->text(), ClusterList::localName());
    QCOMPARE(d.currentName(), ClusterList::localName());
    QCOMPARE(child<QStackedWidget>(d, "designerPages")->currentIndex(), 0);
    auto* save = child<QPushButton>(d, "saveButton");
    QVERIFY(!save->isEnabled());  // this machine: nothing to save

    QVERIFY(d.newCluster());
    auto* name = child<QLineEdit>(d, "clusterName");
    QTest::keyClicks(name, "lab");
    NodeTableModel* m = d.nodeModel();
    QCOMPARE(m->rowCount(), 1);
    QVERIFY(!save->isEnabled());  // the node has no host yet
    QVERIFY(d.problems().contains("node 1: the host is empty"));
    edit(m, 0, NodeTableModel::Host, "gpu1");
    edit(m, 0, NodeTableModel::Auth, "key");
    edit(m, 0, NodeTableModel::KeyFile, "~/.ssh/id_ed25519");
    edit(m, 0, NodeTableModel::Gpus, 2);
    edit(m, 0, NodeTableModel::WorkDir, "/data/td");
    QCOMPARE(m->resolved(0), QString("gpu1 → ana@10.1.2.3:2200 via bastion"));
    child<QPushButton>(d, "addNodeButton")->click();
    QCOMPARE(m->rowCount(), 2);
    edit(m, 1, NodeTableModel::Name, "cpu box");
    edit(m, 1, NodeTableModel::Host, "10.0.0.7");
    edit(m, 1, NodeTableModel::Port, 2222);
    edit(m, 1, NodeTableModel::User, "bob");
    edit(m, 1, NodeTableModel::Auth, "password");
    QCOMPARE(m->resolved(1), QString("cpu box → bob@10.0.0.7:2222"));
    QCOMPARE(m->data(m->index(1, NodeTableModel::Auth)).toString(), NodeTableModel::authText(td::remote::AuthMethod::Password));

    // Invalid port: Save disabled, validate()'s message shown; fixed: enabled again.
    edit(m, 1, NodeTableModel::Port, 70000);
    QVERIFY(!save->isEnabled());
    auto* problems = child<QLabel>(d, "problemsLabel");
    QVERIFY2(problems->text().contains("node 2: port 70000 is not 1..65535"), qPrintable(problems->text()));
    QVERIFY(!d.save());
    QVERIFY(!m->setData(m->index(1, NodeTableModel::Port), "twenty"));  // not a number: refused
    edit(m, 1, NodeTableModel::Port, 2222);
    QVERIFY(save->isEnabled());
    QVERIFY(problems->text().isEmpty());

    save->click();
    QTRY_COMPARE(saved.count(), 1);
    QCOMPARE(saved.front().at(0).toString(), QString("lab"));
    QVERIFY(!d.isDirty());
    QTRY_COMPARE(list->count(), 2);
    QCOMPARE(list->item(1)->text(), QString("lab"));
    QCOMPARE(changed.back().at(0).toStringList(), QStringList{"lab"});

    // The stored row, read with a connection of our own: exactly the spec, no secret field.
    {
      td::store::Store s(db.toStdString());
      const auto row = s.find_cluster("lab");
      QVERIFY(row.has_value());
      const nlohmann::json expected = nlohmann::json::parse(R"({"name": "lab", "nodes": [
          {"name": "", "host": "gpu1", "auth": "key", "key_file": "~/.ssh/id_ed25519", "gpus": 2, "work_dir": "/data/td"},
          {"name": "cpu box", "host": "10.0.0.7", "port": 2222, "user": "bob", "auth": "password", "gpus": 0,
           "work_dir": "traindeck"}]})");
      QCOMPARE(nlohmann::json::parse(row->spec_json), expected);
      QVERIFY(row->spec_json.find("passphrase") == std::string::npos);
    }

    // A fresh panel on the same store shows it again.
    ClusterDesigner again(&store, &access);
    QSignalSpy loaded(&again, &ClusterDesigner::clustersChanged);
    QTRY_COMPARE(loaded.count(), 1);
    QCOMPARE(again.clusterList()->names(), QStringList{"lab"});
    QVERIFY(again.selectCluster("lab"));
    QCOMPARE(again.currentName(), QString("lab"));
    QCOMPARE(td::remote::to_json(again.spec()), td::remote::to_json(d.spec()));
    QCOMPARE(again.nodeModel()->resolved(0), QString("gpu1 → ana@10.1.2.3:2200 via bastion"));

    // Unsaved edits: switching asks; Discard switches to this machine.
    edit(again.nodeModel(), 0, NodeTableModel::Gpus, 4);
    QVERIFY(again.isDirty());
    QVERIFY(!again.selectCluster(ClusterList::localName()));
    QMessageBox* box = nullptr;
    QTRY_VERIFY((box = again.findChild<QMessageBox*>("unsavedConfirm")) != nullptr);
    QCOMPARE(again.currentName(), QString("lab"));
    box->button(QMessageBox::Discard)->click();
    QCOMPARE(again.currentName(), ClusterList::localName());
    QVERIFY(!again.isDirty());

    // Duplicate and rename: saved under the new name, the old row gone.
    QVERIFY(again.selectCluster("lab"));
    again.nodeModel()->duplicateNode(0);
    QCOMPARE(again.nodeModel()->node(2).name, std::string("gpu1 copy"));
    child<QLineEdit>(again, "clusterName")->setText("lab2");
    QVERIFY(again.save());
    QTRY_COMPARE(again.clusterList()->names(), QStringList{"lab2"});
    td::store::Store s(db.toStdString());
    QVERIFY(!s.find_cluster("lab").has_value());
    QCOMPARE(td::remote::cluster_from_json(nlohmann::json::parse(s.find_cluster("lab2")->spec_json)).nodes.size(), size_t(3));
  }

  // Test connection through the panel against a real sshd (host key accepted by the fake
  // prompter), a second node that cannot be reached; then the screenshot.
  void testConnectionAndScreenshot() {
    td::remote::testing::SshdFixture sshd;
    if (!sshd.start(false)) QSKIP(sshd.skip_reason.c_str());
    StoreClient store(dir_.filePath("shots.db"));
    FakePrompter p;
    NodeAccess access(nullptr, &p);
    access.setSshConfigPath(config_);
    access.setKnownHostsPath(QString::fromStdString(sshd.known_hosts));
    ClusterDesigner d(&store, &access);
    d.tester()->setTimeoutMs(3000);
    d.resize(1250, 720);
    d.show();
    td::remote::ClusterSpec c;
    c.name = "lab";
    td::remote::NodeSpec a;
    a.name = "loopback";
    a.host = "127.0.0.1";
    a.port = sshd.port;
    a.user = sshd.user;
    a.auth = td::remote::AuthMethod::KeyFile;
    a.key_file = sshd.user_key;
    a.work_dir = (sshd.dir / "work").string();
    c.nodes.push_back(a);
    td::remote::NodeSpec b;
    b.host = "gpu1";
    b.gpus = 8;
    b.work_dir = "/scratch/traindeck";
    c.nodes.push_back(b);
    d.setSpec(c);
    QVERIFY(d.isValid());
    QSignalSpy done(d.tester(), &ConnectionTester::finished);
    d.testNode(0);
    QCOMPARE(d.nodeModel()->testState(0), NodeTableModel::TestState::Testing);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 30000);
    QCOMPARE(d.nodeModel()->testState(0), NodeTableModel::TestState::Ok);
    QCOMPARE(p.hostKeys.size(), size_t(1));
    child<QTableView>(d, "nodeTable")->selectRow(0);
    const QString report = child<QPlainTextEdit>(d, "reportView")->toPlainText();
    QVERIFY2(report.contains("loopback: connected") && report.contains("glibc:"), qPrintable(report));
    QVERIFY(!d.isDirty() || d.isValid());

    QDir().mkpath(TD_SCREENSHOT_DIR);
    QApplication::processEvents();
    QTest::qWait(200);
    const QString path = QDir(TD_SCREENSHOT_DIR).filePath("cluster_designer.png");
    const QImage img = d.grab().toImage();
    QVERIFY(img.save(path));
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 7)
      for (int x = 0; x < img.width(); x += 7) colours.insert(img.pixel(x, y));
    QVERIFY(colours.size() > 20);
    qInfo("screenshot: %s", qPrintable(path));
  }
};

int main(int argc, char** argv) {
  qunsetenv("DBUS_SESSION_BUS_ADDRESS");  // no desktop keyring in tests
  QApplication app(argc, argv);
  TestClusterDesigner t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_cluster_designer.moc"
