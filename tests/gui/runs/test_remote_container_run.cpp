// RemoteRunController running the engine in a podman container on an SSH "node" (this machine
// through the real sshd fixture): the image is built FROM scratch from this test's engine bundle
// (remote/image.h, what `./traindeck.sh image` does), the node's NodeSpec::container names it,
// and a plain start on the node of a tiny config runs to "completed" inside the container: every step's
// loss in the store, a checkpoint folder in the node's run folder (outside the container), and
// the container gone afterwards (--rm). A node whose image does not exist fails to start with a
// message naming the image, before anything runs.
//
// The node's podman settings come from the node's environment, as on a real node: sshd gives
// every session CONTAINERS_CONF=<runc, no default ulimits> (docs/containers.md;
// tests/remote/test_container.cpp does the same). Needs root, podman and runc, else it skips.
#include <QElapsedTimer>
#include <QtTest>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "../gui_test_util.h"
#include "../target_test_util.h"
#include "remote_node_fixture.h"
#include "gui/core/store_client.h"
#include "gui/runs/remote_run_controller.h"
#include "remote/bundle.h"
#include "remote/container.h"
#include "remote/image.h"

using namespace td::gui;
using td::remote::testing::random_token;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
namespace fs = std::filesystem;

class TestRemoteContainerRun : public QObject {
  Q_OBJECT
  tdguitest::RemoteNode fx_;
  std::string image_;
  std::vector<QString> run_ids_;  // containers to remove at the end, should a check fail

  RemoteRunController::Connector connector() {
    return [this](const td::remote::NodeSpec& n) { return fx_.open(n); };
  }

  std::string node_run_dir(const QString& id) const { return fx_.node.work_dir + "/runs/" + id.toStdString(); }

  td::remote::NodeSpec container_node(const std::string& image) const {
    td::remote::NodeSpec n = fx_.node;
    n.container.runtime = td::remote::ContainerRuntime::Podman;
    n.container.image = image;
    return n;
  }

  // The names of podman's containers (running or not) of run `id`: `podman ps -a --filter name=td-<id>`.
  static QStringList containers_of(const QString& id) {
    std::string out;
    run_cmd({"podman", "ps", "-a", "--filter", "name=td-" + id.toStdString(), "--format", "{{.Names}}"}, &out);
    QStringList names;
    for (const QString& line : QString::fromStdString(out).split(QLatin1Char('\n'), Qt::SkipEmptyParts))
      if (line.trimmed().startsWith(QStringLiteral("td-") + id)) names << line.trimmed();
    return names;
  }

  static QString errors(const QSignalSpy& spy, int at = 0) {
    QStringList l;
    for (const auto& a : spy) l << a.at(at).toString();
    return l.join(" | ");
  }

 private slots:
  void initTestCase() {
    if (geteuid() != 0) QSKIP("needs root: the test runs rootful podman as the node's container runtime");
    std::string out;
    if (run_cmd({"podman", "--version"}, &out) != 0) QSKIP("podman is missing: install the Debian package podman");
    if (run_cmd({"sh", "-c", "command -v runc"}, &out) != 0) QSKIP("runc is missing: install the Debian package runc");
    if (!fx_.start("container-node", "node work")) {
      if (!fx_.sshd.skip_reason.empty()) QSKIP(fx_.sshd.skip_reason.c_str());
      QFAIL("the tiny dataset could not be prepared");
    }
    // What this machine's podman needs (docs/containers.md): runc, no default ulimits; every SSH
    // session of the node gets it through sshd's SetEnv, the checks here through our environment.
    const fs::path conf = fx_.sshd.dir / "containers.conf";
    std::ofstream(conf) << "[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = \"runc\"\n";
    setenv("CONTAINERS_CONF", conf.c_str(), 1);
    if (!fx_.sshd.launch({}, "PasswordAuthentication yes\nKbdInteractiveAuthentication no\nUsePAM no\n",
                         "CONTAINERS_CONF=" + conf.string()))
      QSKIP(fx_.sshd.skip_reason.c_str());
    fx_.node.port = fx_.sshd.port;  // the relaunched sshd listens on a new port

    // The image from this test's engine bundle, as `./traindeck.sh image` builds it.
    const fs::path local = fx_.sshd.dir / "local";
    const fs::path bundle = local / "bundle", context = local / "image";
    image_ = "localhost/td-gui-test-" + random_token(8) + ":1";
    std::transform(image_.begin(), image_.end(), image_.begin(), [](char c) { return char(std::tolower(c)); });
    QElapsedTimer t;
    t.start();
    try {
      td::remote::make_bundle(TD_ENGINE_EXE, bundle);
      td::remote::write_image_context(bundle, context);
      td::remote::build_image("podman", context, image_);
    } catch (const std::exception& e) {
      const std::string why = std::string("the engine image cannot be built here with podman: ") + e.what();
      image_.clear();
      QSKIP(why.c_str());
    }
    QCOMPARE(run_cmd({"podman", "image", "exists", image_}), 0);
    qInfo("image %s built in %.1f s", image_.c_str(), t.elapsed() / 1000.0);
  }

  void cleanupTestCase() {
    for (const QString& id : run_ids_)
      for (const QString& name : containers_of(id)) run_cmd({"podman", "rm", "-f", name.toStdString()});
    if (!image_.empty()) run_cmd({"podman", "rmi", "-f", image_});
    fx_.kill_engines();
  }

  void runs_in_the_container_to_completion() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy started(&c, &RemoteRunController::runStarted), ended(&c, &RemoteRunController::runEnded),
        failed(&c, &RemoteRunController::startFailed), errs(&c, &RemoteRunController::error);
    const int steps = 30;
    QString err;
    const QString id = tdguitest::start_on_node(c, "boxes", container_node(image_), "container-exp",
                                  tdguitest::tiny_config(fx_.data, steps, /*checkpoint_interval=*/10), &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    run_ids_.push_back(id);
    const QString status = tdguitest::wait_ended(ended, id);
    if (status != QLatin1String("completed")) {
      std::string log = read_text(node_run_dir(id) + "/engine.log");
      if (log.size() > 2000) log = log.substr(log.size() - 2000);
      QFAIL(qPrintable(QStringLiteral("run %1 ended '%2', expected 'completed'; start failures: %3; errors: %4; "
                                      "engine.log ends: %5")
                           .arg(id, status, errors(failed, 1), errors(errs), QString::fromStdString(log))));
    }
    QCOMPARE(started.count(), 1);
    QCOMPARE(started.front().at(0).toString(), id);
    QVERIFY2(failed.isEmpty(), qPrintable(errors(failed, 1)));
    QVERIFY2(errs.isEmpty(), qPrintable(errors(errs)));

    // Every step's loss, once each, followed from the container's events.jsonl.
    const auto rows = tdguitest::loss_rows(fx_.db, id);
    QCOMPARE(rows.first, int64_t(1));
    QCOMPARE(rows.last, int64_t(steps));
    QCOMPARE(rows.count, int64_t(steps));

    // The run folder is on the node, outside the container: events, log and a checkpoint folder.
    const fs::path run_dir = node_run_dir(id);
    QVERIFY2(fs::is_regular_file(run_dir / "events.jsonl"), run_dir.c_str());
    QVERIFY2(read_text((run_dir / "events.jsonl").string()).find("\"run_end\"") != std::string::npos, run_dir.c_str());
    int checkpoints = 0;
    for (const auto& e : fs::directory_iterator(run_dir / "checkpoints"))
      if (e.is_directory() && e.path().filename().string().rfind("step_", 0) == 0) ++checkpoints;
    QVERIFY2(checkpoints >= 1, (run_dir / "checkpoints").c_str());
    QVERIFY2(fs::is_regular_file(run_dir / "checkpoints/step_00000030/model.safetensors"), run_dir.c_str());
    // The bundle never went to the node: the engine came from the image.
    QVERIFY(!fs::exists(fs::path(fx_.node.work_dir) / "engine"));

    // --rm: podman's client removes the ended container (after the engine's exit, which can
    // follow the run_end seen by the follower); waits up to 120 s.
    QElapsedTimer t;
    t.start();
    while (!containers_of(id).isEmpty() && t.elapsed() < 120000) QTest::qWait(200);
    QVERIFY2(containers_of(id).isEmpty(),
             qPrintable("waited 120 s for podman to remove the container(s) " + containers_of(id).join(", ")));
  }

  void missing_image_fails_to_start_naming_it() {
    StoreClient client(fx_.db);
    RemoteRunController c(&client, connector());
    QSignalSpy started(&c, &RemoteRunController::runStarted), failed(&c, &RemoteRunController::startFailed);
    const std::string missing = "localhost/td-no-such-image-" + random_token(6) + ":9";
    std::string lower = missing;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](char ch) { return char(std::tolower(ch)); });
    QString err;
    const QString id = tdguitest::start_on_node(c, "boxes", container_node(lower), "container-exp",
                                  tdguitest::tiny_config(fx_.data, 5), &err);
    QVERIFY2(!id.isEmpty(), qPrintable(err));
    run_ids_.push_back(id);
    QVERIFY2(failed.wait(tdguitest::kSlowMs) || !failed.isEmpty(), "waited for startFailed of the missing image");
    QCOMPARE(failed.front().at(0).toString(), id);
    const QString message = failed.front().at(1).toString();
    QVERIFY2(message.contains(QString::fromStdString(lower)), qPrintable(message));
    QVERIFY2(message.contains("podman"), qPrintable(message));
    QVERIFY(started.isEmpty());
    QVERIFY(!c.isActive(id));
    QVERIFY(containers_of(id).isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestRemoteContainerRun)

#include "test_remote_container_run.moc"
