// The container setting of a node on the Clusters page, driven through its widgets: runtime,
// image and extra mounts (one a line and comma-separated) of the selected node go into that
// node (the table's Container column shows "docker: registry.lab/td:1"), the stored JSON holds
// each field, a fresh panel shows them again, an invalid mount shows validate()'s message with
// Save disabled, a second node keeps its own (empty) setting, an image cleared back to empty
// leaves no "container" field, and a Slurm cluster hides the box.
#include <QApplication>
#include <QComboBox>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/cluster/cluster_designer.h"
#include "gui/cluster/container_settings.h"
#include "gui/cluster/node_access.h"
#include "gui/cluster/node_table_model.h"
#include "gui/core/store_client.h"
#include "store/store.h"

using namespace td::gui;

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

nlohmann::json stored(const QString& db, const std::string& name) {
  td::store::Store s(db.toStdString());
  const auto row = s.find_cluster(name);
  if (!row) return nullptr;
  return nlohmann::json::parse(row->spec_json);
}

}  // namespace

class TestContainerDesigner : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void splitMountsForms() {
    QCOMPARE(splitMounts(" /a:/a, /b:/b:ro\n\n/c:/c ,\r\n"),
             (std::vector<std::string>{"/a:/a", "/b:/b:ro", "/c:/c"}));
    QVERIFY(splitMounts("  \n , ").empty());
    td::remote::ContainerSpec c;
    QCOMPARE(containerSummary(c), QString());
    c.runtime = td::remote::ContainerRuntime::Apptainer;
    c.image = "/opt/td.sif";
    QCOMPARE(containerSummary(c), QString("apptainer: /opt/td.sif"));
  }

  void setSaveReload() {
    const QString db = dir_.filePath("container.db");
    StoreClient store(db);
    NodeAccess access(nullptr, nullptr);
    ClusterDesigner d(&store, &access);
    d.show();
    QSignalSpy changed(&d, &ClusterDesigner::clustersChanged), saved(&d, &ClusterDesigner::saved);
    QTRY_COMPARE(changed.count(), 1);
    QVERIFY(d.newCluster());
    QTest::keyClicks(child<QLineEdit>(d, "clusterName"), "boxes");
    NodeTableModel* m = d.nodeModel();
    edit(m, 0, NodeTableModel::Host, "gpu1");
    edit(m, 0, NodeTableModel::WorkDir, "/data/td");
    child<QPushButton>(d, "addNodeButton")->click();
    edit(m, 1, NodeTableModel::Host, "gpu2");

    auto* table = child<QTableView>(d, "nodeTable");
    auto* box = child<QGroupBox>(d, "containerBox");
    auto* runtime = child<QComboBox>(d, "containerRuntime");
    auto* image = child<QLineEdit>(d, "containerImage");
    auto* mounts = child<QPlainTextEdit>(d, "containerMounts");
    auto* save = child<QPushButton>(d, "saveButton");
    auto* problems = child<QLabel>(d, "problemsLabel");
    QVERIFY(box->isVisible());
    QCOMPARE(runtime->count(), 3);

    // Node 1: docker, an image, two mounts (a line and a comma).
    table->selectRow(0);
    QVERIFY(d.containerSettings()->isEnabled());
    QCOMPARE(image->text(), QString());
    runtime->setCurrentIndex(runtime->findText("docker"));
    QTest::keyClicks(image, " registry.lab/td:1 ");
    mounts->setPlainText("/scratch/corpora:/corpora:ro, /models:/models\n/tmp/x:/x:rw");
    QCOMPARE(m->node(0).container.runtime, td::remote::ContainerRuntime::Docker);
    QCOMPARE(m->node(0).container.image, std::string("registry.lab/td:1"));
    QCOMPARE(m->node(0).container.mounts,
             (std::vector<std::string>{"/scratch/corpora:/corpora:ro", "/models:/models", "/tmp/x:/x:rw"}));
    QCOMPARE(m->data(m->index(0, NodeTableModel::Container)).toString(), QString("docker: registry.lab/td:1"));
    QVERIFY(!m->flags(m->index(0, NodeTableModel::Container)).testFlag(Qt::ItemIsEditable));
    QVERIFY(d.isDirty());

    // Node 2 keeps its own, empty setting; node 1's comes back when it is selected again.
    table->selectRow(1);
    QCOMPARE(image->text(), QString());
    QCOMPARE(mounts->toPlainText(), QString());
    QCOMPARE(runtime->currentText(), QString("podman"));
    QVERIFY(!m->node(1).container.enabled());
    QCOMPARE(m->data(m->index(1, NodeTableModel::Container)).toString(), QString());
    table->selectRow(0);
    QCOMPARE(image->text(), QString("registry.lab/td:1"));
    QCOMPARE(runtime->currentText(), QString("docker"));
    QCOMPARE(mounts->toPlainText(), QString("/scratch/corpora:/corpora:ro\n/models:/models\n/tmp/x:/x:rw"));

    // An invalid mount: validate()'s message, Save disabled; fixed: enabled again.
    QVERIFY(save->isEnabled());
    mounts->setPlainText("/scratch/corpora:/corpora:ro\ncorpora");
    QVERIFY(!save->isEnabled());
    QVERIFY2(problems->text().contains("node 1: mount 'corpora' is not host:container[:ro]"), qPrintable(problems->text()));
    QVERIFY(!d.save());
    mounts->setPlainText("/scratch/corpora:/corpora:ro\n/models:/corpora");
    QVERIFY2(problems->text().contains("node 1: two mounts go to /corpora in the container; keep one"),
             qPrintable(problems->text()));
    QVERIFY(!save->isEnabled());
    // Node 2: mounts without an image.
    mounts->setPlainText("/scratch/corpora:/corpora:ro, /models:/models");
    table->selectRow(1);
    mounts->setPlainText("/a:/a");
    QVERIFY2(problems->text().contains("node 2: container mounts are set but no image"), qPrintable(problems->text()));
    QVERIFY(!save->isEnabled());
    mounts->clear();
    QVERIFY(problems->text().isEmpty());
    QVERIFY(save->isEnabled());

    save->click();
    QTRY_COMPARE(saved.count(), 1);
    {
      const nlohmann::json j = stored(db, "boxes");
      QVERIFY(j.is_object());
      const nlohmann::json expected = nlohmann::json::parse(R"({"runtime": "docker", "image": "registry.lab/td:1",
          "mounts": ["/scratch/corpora:/corpora:ro", "/models:/models"]})");
      QCOMPARE(j["nodes"][0]["container"], expected);
      QVERIFY2(!j["nodes"][1].contains("container"), j.dump().c_str());
    }

    // A fresh panel shows it again: in the fields and the column.
    ClusterDesigner again(&store, &access);
    again.show();
    QSignalSpy loaded(&again, &ClusterDesigner::clustersChanged);
    QTRY_COMPARE(loaded.count(), 1);
    QVERIFY(again.selectCluster("boxes"));
    QCOMPARE(again.nodeModel()->node(0).container, d.nodeModel()->node(0).container);
    child<QTableView>(again, "nodeTable")->selectRow(0);
    QCOMPARE(child<QComboBox>(again, "containerRuntime")->currentText(), QString("docker"));
    QCOMPARE(child<QLineEdit>(again, "containerImage")->text(), QString("registry.lab/td:1"));
    QCOMPARE(child<QPlainTextEdit>(again, "containerMounts")->toPlainText(),
             QString("/scratch/corpora:/corpora:ro\n/models:/models"));
    QVERIFY(!again.isDirty());

    // Apptainer with a .sif, then back to the bare bundle: no "container" field left.
    auto* image2 = child<QLineEdit>(again, "containerImage");
    auto* runtime2 = child<QComboBox>(again, "containerRuntime");
    runtime2->setCurrentIndex(runtime2->findText("apptainer"));
    image2->setText("/opt/traindeck.sif");
    QVERIFY(again.isDirty());
    QVERIFY(again.save());
    QTRY_VERIFY(!again.isDirty());
    QCOMPARE(stored(db, "boxes")["nodes"][0]["container"]["runtime"], nlohmann::json("apptainer"));
    QCOMPARE(stored(db, "boxes")["nodes"][0]["container"]["image"], nlohmann::json("/opt/traindeck.sif"));
    image2->clear();
    child<QPlainTextEdit>(again, "containerMounts")->clear();
    QCOMPARE(again.nodeModel()->data(again.nodeModel()->index(0, NodeTableModel::Container)).toString(), QString());
    QVERIFY(again.save());
    QTRY_VERIFY(!again.isDirty());
    QVERIFY2(!stored(db, "boxes")["nodes"][0].contains("container"), stored(db, "boxes").dump().c_str());

    // No node selected: the fields are off. A Slurm cluster: the box and column are hidden.
    child<QTableView>(again, "nodeTable")->clearSelection();
    QVERIFY(!again.containerSettings()->isEnabled());
    QVERIFY(d.newCluster(true));
    d.setKind("slurm");
    QVERIFY(!box->isVisible());
    QVERIFY(table->isColumnHidden(NodeTableModel::Container));
    d.setKind("ssh");
    QVERIFY(box->isVisible());
    QVERIFY(!table->isColumnHidden(NodeTableModel::Container));
  }
};

int main(int argc, char** argv) {
  qunsetenv("DBUS_SESSION_BUS_ADDRESS");  // no desktop keyring in tests
  QApplication app(argc, argv);
  TestContainerDesigner t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_container_designer.moc"
