// RunView (gui/app/run_view.h) showing a remote run against a real OpenSSH sshd on 127.0.0.1
// (tests/remote/sshd_fixture.h; the node is this machine): deploy progress with its phase, the
// node and its connection state, Stop and Resume routed to the RemoteRunController, and
// "Download checkpoint" once the run has one.
#include <QtTest>

#include <QLabel>
#include <QProgressBar>
#include <QPushButton>

#include <filesystem>

#include "../gui_test_util.h"
#include "../target_test_util.h"
#include "remote_node_fixture.h"
#include "gui/app/run_view.h"
#include "gui/core/store_client.h"
#include "gui/runs/remote_run_controller.h"
#include "gui/runs/run_targets.h"
#include "gui/runs/run_controller.h"
#include "remote/cluster.h"
#include "store/store.h"

using namespace td::gui;
using td::remote::testing::run_cmd;
using td::remote::testing::SshdFixture;
namespace fs = std::filesystem;

class TestRemoteRunView : public QObject {
  Q_OBJECT
  tdguitest::RemoteNode fx_;  // sshd as the node, the dataset, the store path, the NodeSpec

  RemoteRunController::Connector connector() {
    return [this](const td::remote::NodeSpec& n) {
      return fx_.open(n);
    };
  }

 private slots:
  void initTestCase() {
    // The fixture's folder is unique: it marks this test's engines (cleanup) and holds a space.
    if (!fx_.start("gpu-node-b", "node work")) {
      if (!fx_.sshd.skip_reason.empty()) QSKIP(fx_.sshd.skip_reason.c_str());
      QFAIL("the tiny dataset could not be prepared");
    }
  }

  void cleanupTestCase() {
    fx_.kill_engines();
  }

  void remote_run_page() {
    StoreClient client(fx_.db);
    // The page holds the router only, as the window's does.
    RunTargets targets;
    targets.add(new RunController(nullptr));
    auto* remote_target = new RemoteRunController(nullptr, connector());
    targets.add(remote_target);
    targets.setStoreClient(&client);  // as the window wires it
    RemoteRunController& remote = *remote_target;
    RunView view(&client, &targets);
    tdguitest::StateLog log(&targets);
    const auto& progress = log.progress;  // (run_id, done, total, phase) while deploying
    QSignalSpy started(&targets, &RunTarget::runStarted), ingested(&targets, &RunTarget::runIngested),
        ended(&targets, &RunTarget::runEnded), errs(&targets, &RunTarget::error),
        downloaded(&targets, &RunTarget::checkpointFetched);
    QSignalSpy stop_asked(&view, &RunView::stopAsked), resume_asked(&view, &RunView::resumeAsked);

    QString err;
    const QString id = tdguitest::start_on_node(targets, "lab", fx_.node, "view-exp", tdguitest::tiny_config(fx_.data, 1000000), &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    view.setRun(id);
    // The deploy shows in the progress bar with its phase, under the node's name.
    QVERIFY2(log.waitProgress(tdguitest::kSlowMs) || !progress.isEmpty(), "waited for the deploy's first progress");
    QVERIFY(!view.remoteBar()->isHidden());
    QVERIFY(!view.progressBar()->isHidden());
    QVERIFY(view.progressBar()->format().contains(progress.last().at(3).toString()));
    QVERIFY(view.nodeLabel()->text().contains("gpu-node-b"));

    QVERIFY2(started.wait(tdguitest::kSlowMs) || !started.isEmpty(), "waited for the run to start");
    QVERIFY2(tdguitest::wait_step(ingested, id, 5) >= 5, "waited for step 5");
    QVERIFY(view.isRemoteRun() || QTest::qWaitFor([&] { return view.isRemoteRun(); }, 60000));
    QTRY_VERIFY_WITH_TIMEOUT(view.nodeLabel()->text().contains("connected"), 60000);
    QVERIFY(view.progressBar()->isHidden());
    QTRY_VERIFY_WITH_TIMEOUT(view.stopButton()->isEnabled(), 60000);
    QVERIFY(!view.downloadButton()->isHidden());

    // Stop goes to the SSH target, which follows the run.
    QCOMPARE(targets.owner(id), static_cast<RunTarget*>(&remote));
    view.stopButton()->click();
    QCOMPARE(tdguitest::wait_ended(ended, id), QStringLiteral("stopped"));
    QCOMPARE(stop_asked.count(), 1);
    QTRY_VERIFY_WITH_TIMEOUT(view.resumeButton()->isEnabled() && view.downloadButton()->isEnabled(), 60000);
    QVERIFY(view.statusLabel()->text().contains("stopped"));

    // Download: the checkpoint of the last step lands in the folder and the page says where.
    td::store::Store s(fx_.db.toStdString());
    const int64_t last = s.get_run(id.toStdString()).last_step.value_or(-1);
    view.downloadCheckpointTo(fx_.dir.filePath("dl"));
    QVERIFY2(downloaded.wait(tdguitest::kSlowMs) || !downloaded.isEmpty(), "waited for the download");
    char name[32];
    std::snprintf(name, sizeof name, "step_%08lld", static_cast<long long>(last));
    QCOMPARE(fs::path(downloaded.first().at(1).toString().toStdString()).filename().string(), std::string(name));
    QVERIFY(fs::exists(fs::path(downloaded.first().at(1).toString().toStdString()) / "model.safetensors"));
    QVERIFY(view.nodeLabel()->text().contains(downloaded.first().at(1).toString()));

    // Resume goes to the SSH target too (the store says where the run trained), and the run
    // trains on from its checkpoint.
    started.clear();
    ended.clear();
    view.resumeButton()->click();
    QCOMPARE(resume_asked.count(), 1);
    QVERIFY2(started.wait(tdguitest::kSlowMs) || !started.isEmpty(), "waited for the resumed run to start");
    QVERIFY2(tdguitest::wait_step(ingested, id, last + 5) >= last + 5, "waited for 5 steps after the resume");
    view.requestStop();
    QCOMPARE(tdguitest::wait_ended(ended, id), QStringLiteral("stopped"));
    QVERIFY2(errs.isEmpty(), qPrintable(errs.isEmpty() ? QString() : errs.first().at(0).toString()));
    QCOMPARE(s.get_run(id.toStdString()).attempts, 2);
  }
};

QTEST_MAIN(TestRemoteRunView)
#include "test_remote_run_view.moc"
