// remote/container.h without a node: the container setting's JSON form inside a cluster (old
// cluster JSON without it still loads), mount parsing and validation, and the argv that starts a
// rank in a container, written out by hand per runtime (docs/containers.md lists the same flags).
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/common/error.h"
#include "remote/cluster.h"
#include "remote/container.h"

using namespace td::remote;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const td::Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

class TestContainerSpec : public QObject {
  Q_OBJECT
 private slots:
  void cluster_json_round_trip_and_old_json() {
    ClusterSpec c;
    c.name = "lab";
    NodeSpec a;
    a.host = "gpu1";
    a.container.runtime = ContainerRuntime::Docker;
    a.container.image = "registry.lab/td:1";
    a.container.mounts = {"/scratch/corpora:/corpora:ro", "/data:/data"};
    NodeSpec b;
    b.host = "gpu2";
    c.nodes = {a, b};
    const nlohmann::json j = to_json(c);
    QCOMPARE(j["nodes"][0]["container"].dump(),
             std::string(R"({"image":"registry.lab/td:1","mounts":["/scratch/corpora:/corpora:ro","/data:/data"],"runtime":"docker"})"));
    QVERIFY(!j["nodes"][1].contains("container"));  // bare nodes write nothing new
    const ClusterSpec back = cluster_from_json(nlohmann::json::parse(j.dump()));
    QVERIFY(back.nodes[0].container == a.container);
    QVERIFY(!back.nodes[1].container.enabled());
    QVERIFY(validate(back).empty());
    // A cluster saved before containers existed.
    const ClusterSpec old = cluster_from_json(nlohmann::json::parse(
        R"({"name":"old","nodes":[{"name":"n","host":"h","auth":"agent","gpus":0,"work_dir":"traindeck"}]})"));
    QVERIFY(!old.nodes[0].container.enabled());
    QVERIFY(old.nodes[0].container.runtime == ContainerRuntime::Podman);
    // Runtime defaults to podman; apptainer reads back.
    QVERIFY(container_from_json(nlohmann::json::parse(R"({"image":"x"})")).runtime == ContainerRuntime::Podman);
    QVERIFY(container_from_json(nlohmann::json::parse(R"({"runtime":"apptainer","image":"/a.sif"})")).runtime ==
            ContainerRuntime::Apptainer);
  }

  void json_errors_name_the_field() {
    auto load = [](const char* text) {
      return error_of([&] { cluster_from_json(nlohmann::json::parse(text)); });
    };
    QCOMPARE(load(R"({"name":"c","nodes":[{"host":"h","container":{"runtime":"lxc","image":"i"}}]})"),
             std::string("nodes[0].container.runtime: 'lxc' is not a container runtime (podman, docker or apptainer)"));
    QCOMPARE(load(R"({"name":"c","nodes":[{"host":"h","container":{"image":7}}]})"),
             std::string("nodes[0].container.image: wrong type (number)"));
    QCOMPARE(load(R"({"name":"c","nodes":[{"host":"h","container":"podman"}]})"),
             std::string("nodes[0].container: expected an object, got string"));
    const std::string e = load(R"({"name":"c","nodes":[{"host":"h","container":{"image":"i","mounts":["data:/data"]}}]})");
    QVERIFY2(e.rfind("nodes[0].container.mounts[0]: mount 'data:/data': the node path 'data' is not absolute", 0) == 0,
             e.c_str());
  }

  void mounts_parsed_and_refused() {
    ContainerMount m = parse_mount("/scratch/a b:/in/c:ro");
    QCOMPARE(m.host, std::string("/scratch/a b"));
    QCOMPARE(m.container, std::string("/in/c"));
    QVERIFY(m.read_only);
    m = parse_mount("/x:/y:rw");
    QVERIFY(!m.read_only);
    QVERIFY(!parse_mount("/x:/y").read_only);
    QVERIFY(error_of([] { parse_mount("/x"); }).find("is not host:container[:ro]") != std::string::npos);
    QVERIFY(error_of([] { parse_mount("/x:/y:ro:z"); }).find("is not host:container[:ro]") != std::string::npos);
    QVERIFY(error_of([] { parse_mount("/x:/y:rx"); }).find("'rx' is not a mount option (ro or rw)") != std::string::npos);
    QVERIFY(error_of([] { parse_mount("/x:y"); }).find("the container path 'y' is not absolute") != std::string::npos);
    QVERIFY(error_of([] { parse_mount("/x:/"); }).find("root '/' cannot be a mount target") != std::string::npos);
    // Issue 35: the root by another name.
    for (const char* root : {"/x:/mnt/..", "/x:/./", "/x:/a/b/../..", "/x:/mnt/../:ro"})
      QVERIFY2(error_of([root] { parse_mount(root); }).find("root '/' cannot be a mount target") != std::string::npos, root);
    QVERIFY(!parse_mount("/x:/mnt/../data").read_only);  // another folder: fine
    QVERIFY(error_of([] { parse_mount("/a,b:/c"); }).find("a ',' or control character") != std::string::npos);
    QVERIFY(error_of([] { parse_mount("/a\nb:/c"); }).find("a ',' or control character") != std::string::npos);
  }

  void validate_lists_problems() {
    ClusterSpec c;
    c.name = "c";
    NodeSpec n;
    n.host = "h";
    n.container.mounts = {"/a:/b"};
    c.nodes = {n};
    QCOMPARE(validate(c), std::vector<std::string>{
                              "node 1: container mounts are set but no image: enter the image, or remove the mounts"});
    c.nodes[0].container.image = "--privileged";
    QCOMPARE(validate(c), std::vector<std::string>{
                              "node 1: the container image '--privileged' starts with '-' (it would read as an option)"});
    c.nodes[0].container.image = "a b";
    QCOMPARE(validate(c), std::vector<std::string>{"node 1: the container image 'a b' holds whitespace; enter one image name"});
    c.nodes[0].container.image = "img";
    c.nodes[0].container.mounts = {"/a:/b", "/c:/b:ro", "rel:/d"};
    const auto p = validate(c);
    QCOMPARE(int(p.size()), 2);
    QCOMPARE(p[0], std::string("node 1: two mounts go to /b in the container; keep one"));
    QVERIFY2(p[1].rfind("node 1: mount 'rel:/d': the node path 'rel' is not absolute", 0) == 0, p[1].c_str());
  }

  // Issue 35: the wrapper and the clean script against a runtime that logs what it is asked (its
  // `run` is a long sleep standing for the client). Before `run` a stale container of the rank's
  // name is removed; the client keeps the wrapper's pid (signals reach it); SIGKILLed, its
  // container is removed by the watcher; the clean script removes exactly the run's containers.
  void wrapper_removes_the_container_when_its_client_dies() {
    QTemporaryDir dir;
    const QString log = dir.filePath("calls.log"), rt = dir.filePath("fakert");
    {
      QFile f(rt);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(("#!/bin/sh\necho \"$*\" >> '" + log + "'\n"
               "case $1 in run) exec sleep 300 ;; ps) printf 'td-r1-r0\\ntd-r1-r1\\ntd-r10-r0\\nother\\n' ;; esac\nexit 0\n").toUtf8());
      f.close();
      QVERIFY(f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    }
    auto calls = [&] {
      QFile f(log);
      return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts) : QStringList();
    };
    auto wait_for = [&](const QString& line, int n) {
      for (int waited = 0; waited < 30000; waited += 50) {
        if (calls().count(line) >= n) return true;
        QTest::qWait(50);
      }
      return false;
    };
    QProcess client;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("TRAINDECK_RANK", "1");
    client.setProcessEnvironment(env);
    client.start("sh", {"-c", td::remote::detail::kContainerRunWrapper, "sh", rt, "r1", "--rm", "img", "train"});
    QVERIFY(client.waitForStarted());
    QVERIFY2(wait_for("run --name td-r1-r1 --rm img train", 1), qPrintable(calls().join(" | ")));
    QCOMPARE(calls().first(), QString("rm -f td-r1-r1"));  // the stale one first
    QFile cmdline(QString("/proc/%1/cmdline").arg(client.processId()));
    QVERIFY(cmdline.open(QIODevice::ReadOnly));
    QVERIFY2(cmdline.readAll().startsWith("sleep"), "the client does not keep the wrapper's pid");
    client.kill();  // SIGKILL: the client dies without a word
    QVERIFY(client.waitForFinished(30000));
    QVERIFY2(wait_for("rm -f td-r1-r1", 2), qPrintable("awaited the watcher's rm: " + calls().join(" | ")));
    QFile::remove(log);
    QProcess clean;
    clean.start("sh", {"-c", td::remote::detail::kContainerCleanScript, "sh", rt, "r1"});
    QVERIFY(clean.waitForFinished(30000));
    QCOMPARE(clean.exitCode(), 0);
    QCOMPARE(calls(), (QStringList{"ps -a --format {{.Names}}", "rm -f td-r1-r0", "rm -f td-r1-r1"}));
  }

  void run_argv_per_runtime() {
    const ContainerPaths paths{"/home/ana", "/scratch/ana/td", "1000:1000"};
    const std::vector<std::string> engine{"train", "--config", "/scratch/ana/td/runs/r1/config.json"};
    ContainerSpec c;
    c.image = "localhost/traindeck-engine:0.1.0";
    c.mounts = {"/corpora:/corpora:ro"};
    const std::string wrapper = td::remote::detail::kContainerRunWrapper;
    std::vector<std::string> want{"sh", "-c", wrapper, "sh", "podman", "r1", "--rm", "--pull=never", "--network", "host",
                                  "--pid", "host", "--entrypoint", "traindeck-engine", "-v", "/scratch/ana/td:/scratch/ana/td", "-w",
                                  "/scratch/ana/td", "--env", "HOME=/scratch/ana/td", "--security-opt", "label=disable",
                                  "--device", "nvidia.com/gpu=all", "--ipc", "host", "--env", "TRAINDECK_RANK",
                                  "-v", "/corpora:/corpora:ro", "localhost/traindeck-engine:0.1.0", "train",
                                  "--config", "/scratch/ana/td/runs/r1/config.json"};
    QCOMPARE(container_command(c, paths, "r1", true, {"TRAINDECK_RANK"}, engine), want);

    c.runtime = ContainerRuntime::Docker;
    c.mounts.clear();
    want = {"sh", "-c", wrapper, "sh", "docker", "r1", "--rm", "--pull=never", "--network", "host", "--pid", "host", "--entrypoint",
            "traindeck-engine", "-v", "/scratch/ana/td:/scratch/ana/td", "-w", "/scratch/ana/td", "--env",
            "HOME=/scratch/ana/td", "--user", "1000:1000", "--gpus", "all", "--ipc", "host",
            "localhost/traindeck-engine:0.1.0", "train", "--config", "/scratch/ana/td/runs/r1/config.json"};
    QCOMPARE(container_command(c, paths, "r1", true, {}, engine), want);

    c.runtime = ContainerRuntime::Apptainer;
    c.image = "/scratch/td.sif";
    c.mounts = {"/corpora:/corpora:ro"};
    want = {"apptainer", "exec", "--bind", "/scratch/ana/td:/scratch/ana/td", "--pwd", "/scratch/ana/td", "--bind",
            "/corpora:/corpora:ro", "/scratch/td.sif", "traindeck-engine", "train", "--config",
            "/scratch/ana/td/runs/r1/config.json"};
    QCOMPARE(container_command(c, paths, "r1", false, {"TRAINDECK_RANK"}, engine), want);
    want.insert(want.begin() + 2, "--nv");
    QCOMPARE(container_command(c, paths, "r1", true, {}, engine), want);

    QCOMPARE(paths.absolute("td/runs/r1"), std::string("/home/ana/td/runs/r1"));
    QCOMPARE(paths.absolute("/abs"), std::string("/abs"));
    QCOMPARE(container_name("20250101-120000-abcdef", 3), std::string("td-20250101-120000-abcdef-r3"));
    ContainerSpec bad;
    bad.image = "-x";
    QVERIFY(error_of([&] { container_command(bad, paths, "r1", false, {}, engine); }).find("starts with '-'") !=
            std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestContainerSpec)
#include "test_container_spec.moc"
