// ExperimentsModel: the tree from the store, edits through the store thread, refusal to delete
// a running run.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/core/store_client.h"
#include "gui/runs/experiments_model.h"
#include "store/store.h"

using namespace td::gui;

class TestExperimentsModel : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString db_;

 private slots:
  void init() {
    db_ = dir_.filePath(QString("td-%1.db").arg(QTest::currentTestFunction()));
    td::store::Store s(db_.toStdString());
    s.note_launch("r1", "alpha", "/x/r1/events.jsonl", 0, "host", 1000);
    s.note_launch("r2", "alpha", "/x/r2/events.jsonl", 0, "host", 2000);
    s.note_launch("r3", "beta", "/x/r3/events.jsonl", 0, "host", 3000);
    s.mark_run_ended("r1", "completed", "done", 1500);
  }

  void treeFromTheStore() {
    StoreClient client(db_);
    ExperimentsModel m(&client);
    QSignalSpy loaded(&m, &ExperimentsModel::loaded);
    QVERIFY(loaded.wait());
    QCOMPARE(m.rowCount(), 2);
    QCOMPARE(m.experimentNames(), QStringList({"alpha", "beta"}));
    const QModelIndex alpha = m.experimentIndex("alpha");
    QCOMPARE(m.rowCount(alpha), 2);
    QCOMPARE(m.index(0, 0, alpha).data().toString(), QString("r2"));  // newest first
    QCOMPARE(m.index(1, ExperimentsModel::ColStatus, alpha).data().toString(), QString("completed"));
    QCOMPARE(m.index(0, ExperimentsModel::ColStatus, alpha).data().toString(), QString("running"));
    QCOMPARE(m.data(m.runIndex("r3"), ExperimentsModel::KindRole).toString(), QString("run"));
    QCOMPARE(m.parent(m.runIndex("r3")), m.experimentIndex("beta"));
    QCOMPARE(m.experimentOfRun("r3"), QString("beta"));
    QCOMPARE(m.index(0, ExperimentsModel::ColStatus).data().toString(), QString("2 run(s)"));
  }

  void editsGoThroughTheStore() {
    StoreClient client(db_);
    ExperimentsModel m(&client);
    QSignalSpy loaded(&m, &ExperimentsModel::loaded);
    QVERIFY(loaded.wait());
    m.renameExperiment("beta", "gamma");
    QVERIFY(loaded.wait());
    QCOMPARE(m.experimentNames(), QStringList({"alpha", "gamma"}));
    m.setExperimentTags("alpha", {"baseline", " lr-sweep ", ""});
    m.setExperimentNotes("alpha", "first tries");
    QTRY_COMPARE(m.data(m.experimentIndex("alpha"), ExperimentsModel::TagsRole).toStringList(),
                 QStringList({"baseline", "lr-sweep"}));
    QTRY_COMPARE(m.data(m.experimentIndex("alpha"), ExperimentsModel::NotesRole).toString(), QString("first tries"));
    m.createExperiment("delta");
    QTRY_COMPARE(m.experimentNames(), QStringList({"alpha", "delta", "gamma"}));
    QSignalSpy errors(&m, &ExperimentsModel::error);
    m.renameExperiment("alpha", "gamma");  // taken
    QTRY_COMPARE(errors.count(), 1);
    QVERIFY2(errors.at(0).at(0).toString().contains("gamma"), qPrintable(errors.at(0).at(0).toString()));
  }

  // Run names (issue 14): shown instead of the id (which stays the key, in the tooltip);
  // Rename goes through the store; a refused name comes back as an error.
  void runNamesShownAndRenamed() {
    StoreClient client(db_);
    ExperimentsModel m(&client);
    QSignalSpy loaded(&m, &ExperimentsModel::loaded);
    QVERIFY(loaded.wait());
    m.renameRun("r2", " lr=3e-4 ");
    QTRY_COMPARE(m.runIndex("r2").data().toString(), QString("lr=3e-4"));
    QCOMPARE(m.data(m.runIndex("r2"), ExperimentsModel::KeyRole).toString(), QString("r2"));
    QCOMPARE(m.data(m.runIndex("r2"), ExperimentsModel::RunNameRole).toString(), QString("lr=3e-4"));
    QVERIFY(m.data(m.runIndex("r2"), Qt::ToolTipRole).toString().startsWith("Run r2"));
    QCOMPARE(m.runIndex("r1").data().toString(), QString("r1"));  // unnamed: its id
    QSignalSpy errors(&m, &ExperimentsModel::error);
    m.renameRun("r2", "two\nlines");
    QTRY_COMPARE(errors.count(), 1);
    QVERIFY2(errors.at(0).at(0).toString().contains("control characters"), qPrintable(errors.at(0).at(0).toString()));
    QCOMPARE(m.runIndex("r2").data().toString(), QString("lr=3e-4"));
    m.renameRun("r2", "");
    QTRY_COMPARE(m.runIndex("r2").data().toString(), QString("r2"));
  }

  void runningRunsAreNotDeleted() {
    StoreClient client(db_);
    ExperimentsModel m(&client);
    m.setRunActivePredicate([](const QString& id) { return id == "r2"; });
    QSignalSpy loaded(&m, &ExperimentsModel::loaded);
    QVERIFY(loaded.wait());
    QSignalSpy errors(&m, &ExperimentsModel::error);
    m.deleteRun("r2");
    QCOMPARE(errors.count(), 1);
    m.deleteExperiment("alpha");
    QCOMPARE(errors.count(), 2);
    QVERIFY(errors.at(1).at(0).toString().contains("r2"));
    m.deleteRun("r1");
    QVERIFY(loaded.wait());
    QCOMPARE(m.rowCount(m.experimentIndex("alpha")), 1);
    QVERIFY(!m.runIndex("r1").isValid());
    m.deleteExperiment("beta");
    QVERIFY(loaded.wait());
    QCOMPARE(m.experimentNames(), QStringList({"alpha"}));
  }
};

QTEST_GUILESS_MAIN(TestExperimentsModel)
#include "test_experiments_model.moc"
