// Detached remote runs against a real sshd whose "node" is this machine: a tiny training run
// launched with setsid, followed by RemoteFollower into a store while the test drops its SSH
// connection mid-run (shutdown of the session's socket, as a dead network would); the follower
// reconnects and the mirror equals the node's events.jsonl byte for byte, every step once.
// kill -9 of the engine → failed with its log tail; stop → run_end "stopped". Runs that must
// outlast a check are a million steps long and stopped by the test; waits have generous limits.
#include <QElapsedTimer>
#include <QtTest>

#include <sys/socket.h>

#include <signal.h>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "remote/bundle.h"
#include "remote/checkpoints.h"
#include "remote/sftp.h"
#include "remote/deploy.h"
#include "remote/remote_run.h"
#include "remote/session.h"
#include "sshd_fixture.h"
#include "store/store.h"

using namespace td::remote;
using td::remote::testing::read_text;
using td::remote::testing::run_cmd;
using td::remote::testing::SshdFixture;
namespace fs = std::filesystem;

class TestRemoteRun : public QObject {
  Q_OBJECT
  SshdFixture sshd_;
  fs::path bundle_, dataset_, local_;
  std::string work_;
  ConnectOptions conn_;
  std::unique_ptr<td::store::Store> store_;

  Session connect() { return Session::open(conn_, Auth::key(sshd_.user_key)); }

  static nlohmann::json tiny_config(int steps) {
    return {{"model", {{"vocab_size", 257}, {"seq_len", 32}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 32}}},
            {"train",
             {{"steps", steps}, {"micro_batch", 4}, {"lr", 1e-3}, {"warmup", 2}, {"min_lr", 1e-4}, {"threads", 1},
              {"eval_interval", 50}, {"eval_batches", 1}, {"sample_interval", 0}, {"checkpoint_interval", 0},
              {"keep_checkpoints", 1}}},
            {"data", {{"path", "replaced by deploy"}}}};
  }

  // Deploys, launches run `id` and returns a follower of it (launch noted in the store).
  std::unique_ptr<RemoteFollower> start(const std::string& id, int steps, DeployResult* out = nullptr) {
    Session s = connect();
    DeployResult d = deploy(s, bundle_, dataset_, tiny_config(steps).dump(), work_, id);
    const int64_t pid = launch_detached(s, d, id);
    if (out) *out = d;
    const std::string mirror = (local_ / "mirror" / id / "events.jsonl").string();
    store_->note_launch(id, "remote", mirror, pid, "127.0.0.1", 0);
    FollowOptions fo;
    fo.backoff_initial_ms = 100;
    return std::make_unique<RemoteFollower>([this] { return connect(); }, *store_, d.run_dir, id, pid, mirror,
                                            "remote", fo);
  }

  // Polls every 50 ms until `until` holds or the run ends, for at most timeout_ms of wall time
  // (generous: a loaded machine trains and answers slowly); returns the last state. Callers
  // check what they waited for and say it in their message.
  static FollowState poll_until(RemoteFollower& f, const std::function<bool(const FollowState&)>& until,
                                int timeout_ms = 180000) {
    FollowState st;
    QElapsedTimer t;
    t.start();
    while (true) {
      st = f.poll();
      if (st.finished || until(st) || t.elapsed() > timeout_ms) return st;
      QTest::qWait(50);
    }
  }

  // SIGKILLs the sshd processes serving connections (children of the listening sshd, found
  // through its PidFile): every open connection drops as if the node's sshd side died. The
  // engine is not among them (setsid, reparented when its launching shell exited).

  int64_t steps_in_store(const std::string& id) { return int64_t(store_->metric_series(id, "loss").size()); }

 private slots:
  void initTestCase() {
    if (!sshd_.start(/*with_password_user=*/false)) QSKIP(sshd_.skip_reason.c_str());
    local_ = sshd_.dir / "local";
    bundle_ = local_ / "bundle";
    make_bundle(TD_ENGINE_EXE, bundle_);
    const fs::path corpus = local_ / "corpus";
    fs::create_directories(corpus);
    {
      std::ofstream f(corpus / "text.txt");
      for (int i = 0; i < 600; ++i) f << "Line " << i << ": the quick brown fox jumps over the lazy dog; pack my box.\n";
    }
    dataset_ = local_ / "dataset";
    std::string out;
    QCOMPARE(run_cmd({TD_ENGINE_EXE, "prepare", "--input", corpus.string(), "--out", dataset_.string(), "--tokenizer",
                      "byte", "--quiet"}, &out), 0);
    // Every remote command gets this path as a quoted argument: nothing in it may run.
    work_ = (sshd_.dir / "node work; $(touch td-pwned) `touch td-pwned` 'q\" & x").string();
    conn_.host = "127.0.0.1";
    conn_.port = sshd_.port;
    conn_.user = sshd_.user;
    conn_.known_hosts = sshd_.known_hosts;
    conn_.timeout_ms = 5000;
    Session::connect(conn_).accept_host_key();
    store_ = std::make_unique<td::store::Store>((local_ / "store.db").string());
  }
  void cleanupTestCase() {
    // A failed check may leave a million-step engine behind: its command line holds the fixture's folder.
    if (!sshd_.dir.empty()) run_cmd({"pkill", "-KILL", "-f", "traindeck-engine.*" + sshd_.dir.string()});
    if (!store_) return;
    const char* home = getenv("HOME");
    QVERIFY(!fs::exists(fs::path(home ? home : "/") / "td-pwned"));
    QVERIFY(!fs::exists("td-pwned"));
    QVERIFY(fs::exists(work_ + "/runs/drop-run/events.jsonl"));
    store_.reset();
    sshd_.stop();
  }

  // The run is long (a million steps) and stopped by the test after both drops, so no drop can
  // come too late on a slow machine or after the end on a fast one.
  void dropped_connection_every_event_once() {
    DeployResult d;
    auto f = start("drop-run", 1000000, &d);
    // Wait for some steps, then cut the connection under the follower while the engine runs.
    FollowState st = poll_until(*f, [&](const FollowState&) { return steps_in_store("drop-run") >= 20; });
    QVERIFY2(!st.finished && steps_in_store("drop-run") >= 20,
             qPrintable(QString("waited for step 20 before the first drop: %1 steps, %2")
                            .arg(steps_in_store("drop-run")).arg(QString::fromStdString(st.status))));
    QVERIFY(f->session());
    QVERIFY(f->remote_alive());
    ::shutdown(f->session()->socket_fd(), SHUT_RDWR);  // the local side of the link goes
    const int64_t before = steps_in_store("drop-run");
    st = poll_until(*f, [&](const FollowState&) { return steps_in_store("drop-run") >= before + 20; });
    QVERIFY2(!st.finished && steps_in_store("drop-run") >= before + 20,
             qPrintable(QString("waited for 20 steps after the local drop at %1: %2 steps, %3")
                            .arg(before).arg(steps_in_store("drop-run")).arg(QString::fromStdString(st.status))));
    QCOMPARE(f->reconnects(), 1);
    const int64_t node_drop = steps_in_store("drop-run");
    QVERIFY(sshd_.kill_connections() >= 1);  // the node's side of the link goes
    st = poll_until(*f, [&](const FollowState&) { return f->reconnects() == 2 && steps_in_store("drop-run") >= node_drop + 20; });
    QVERIFY2(!st.finished && steps_in_store("drop-run") >= node_drop + 20,
             qPrintable(QString("waited for 20 steps after the node's drop at %1: %2 steps, %3 reconnects, %4")
                            .arg(node_drop).arg(steps_in_store("drop-run")).arg(f->reconnects())
                            .arg(QString::fromStdString(st.status))));
    QCOMPARE(f->reconnects(), 2);
    qInfo("connection dropped at step %lld (local side) and %lld (node side)", static_cast<long long>(before),
          static_cast<long long>(node_drop));
    QVERIFY(f->stop(60000));  // SIGTERM: the engine ends its step and writes run_end "stopped"
    st = poll_until(*f, [](const FollowState&) { return false; });
    QVERIFY2(st.finished, "waited for the run_end after the stop");
    QCOMPARE(st.status, std::string("stopped"));
    QCOMPARE(f->reconnects(), 2);
    // The mirror is the node's file byte for byte, and each step up to the stop is in the store once.
    QCOMPARE(read_text(f->mirror_path()), read_text(d.run_dir + "/events.jsonl"));
    td::store::MetricSeries loss = store_->metric_series("drop-run", "loss");
    const int64_t last = store_->get_run("drop-run").last_step.value_or(-1);
    QVERIFY(last >= node_drop + 20);
    QCOMPARE(int64_t(loss.size()), last);
    QCOMPARE(loss.step.front(), int64_t(1));
    QCOMPARE(loss.step.back(), last);
    int64_t step_lines = 0;
    std::istringstream in(read_text(f->mirror_path()));
    std::string line;
    while (std::getline(in, line))
      if (line.find("\"type\":\"step\"") != std::string::npos) ++step_lines;
    QCOMPARE(step_lines, last);
  }

  void killed_engine_marked_failed_with_log_tail() {
    DeployResult d;
    auto f = start("kill-run", 1000000, &d);
    FollowState st = poll_until(*f, [&](const FollowState&) { return steps_in_store("kill-run") >= 5; });
    QVERIFY2(!st.finished && steps_in_store("kill-run") >= 5, "waited for step 5 of the million-step run");
    const td::store::RunInfo info = store_->get_run("kill-run");
    QVERIFY(info.pid.has_value());
    QVERIFY(f->remote_alive());
    QCOMPARE(::kill(pid_t(*info.pid), SIGKILL), 0);  // the node is this machine
    st = poll_until(*f, [](const FollowState&) { return false; });
    QVERIFY2(st.finished, "waited for the follower to notice the killed engine");
    QVERIFY(st.marked_failed);
    QCOMPARE(st.status, std::string("failed"));
    QVERIFY(!f->remote_alive());
    std::string log = read_text(d.run_dir + "/engine.log");
    while (!log.empty() && log.back() == '\n') log.pop_back();
    QVERIFY2(!log.empty(), "the engine wrote nothing to engine.log");
    const std::string last_line = log.substr(log.rfind('\n') + 1);
    QVERIFY2(st.end_reason.find("ended without a run_end") != std::string::npos, st.end_reason.c_str());
    QVERIFY2(st.end_reason.find(last_line) != std::string::npos, st.end_reason.c_str());
    QCOMPARE(store_->get_run("kill-run").status, std::string("failed"));

    // A mirror longer than the node's file (the run folder there was replaced): a clear error.
    const fs::path longer = local_ / "mirror" / "longer.jsonl";
    fs::copy_file(f->mirror_path(), longer);
    std::ofstream(longer, std::ios::app) << "{\"type\":\"extra\"}\n";
    RemoteFollower g([this] { return connect(); }, *store_, d.run_dir, "kill-run", *info.pid, longer.string(), "remote");
    try {
      g.poll();
      QFAIL("no error for a node file shorter than the mirror");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("is shorter than the local mirror") != std::string::npos, e.what());
    }
    QCOMPARE(g.reconnects(), 0);
  }

  void reattach_then_stop_ends_with_run_end_stopped() {
    DeployResult d;
    auto f = start("stop-run", 1000000, &d);
    FollowState st = poll_until(*f, [&](const FollowState&) { return steps_in_store("stop-run") >= 5; });
    QVERIFY2(!st.finished && steps_in_store("stop-run") >= 5, "waited for step 5 of the million-step run");
    // The GUI goes away (follower and store closed) while the run goes on, then reattaches from
    // what the store knows: the pid, the mirror path; the mirror and the offset continue.
    const std::string mirror = f->mirror_path();
    f.reset();
    store_.reset();
    store_ = std::make_unique<td::store::Store>((local_ / "store.db").string());
    const td::store::RunInfo info = store_->get_run("stop-run");
    QCOMPARE(info.status, std::string("running"));
    QCOMPARE(info.events_path, mirror);
    QVERIFY(info.pid.has_value());
    const int64_t before = steps_in_store("stop-run");
    f = std::make_unique<RemoteFollower>([this] { return connect(); }, *store_, d.run_dir, "stop-run", *info.pid,
                                         info.events_path, "remote");
    st = poll_until(*f, [&](const FollowState&) { return steps_in_store("stop-run") >= before + 10; });
    QVERIFY2(!st.finished && steps_in_store("stop-run") >= before + 10, "waited for 10 steps after the reattach");
    QVERIFY(f->stop(60000));  // ended after SIGTERM, no SIGKILL needed
    st = poll_until(*f, [](const FollowState&) { return false; });
    QVERIFY2(st.finished, "waited for the run_end after the stop");
    QVERIFY(!st.marked_failed);
    QCOMPARE(st.status, std::string("stopped"));
    QVERIFY(!f->remote_alive());
    QVERIFY(!f->stop(1000));  // nothing left to stop
    QCOMPARE(read_text(f->mirror_path()), read_text(d.run_dir + "/events.jsonl"));
    td::store::MetricSeries loss = store_->metric_series("stop-run", "loss");
    QCOMPARE(loss.step.front(), int64_t(1));
    QCOMPARE(int64_t(loss.size()), loss.step.back());
    QVERIFY(loss.step.back() >= before + 10);
  }

  void checkpoints_listed_downloaded_and_sampled() {
    Session s = connect();
    nlohmann::json cfg = tiny_config(30);
    cfg["train"]["checkpoint_interval"] = 10;
    cfg["train"]["keep_checkpoints"] = 2;
    DeployResult d = deploy(s, bundle_, dataset_, cfg.dump(), work_, "ckpt-run");
    QVERIFY2(list_checkpoints(s, d.run_dir).empty(), "a run that has not trained has no checkpoint");
    // Train in the foreground over SSH (a second or two).
    ExecOptions eo;
    eo.timeout_ms = 300000;  // 30 steps and 3 checkpoints: seconds, minutes on a loaded machine
    ExecResult t = s.exec({d.engine, "train", "--config", d.config_path, "--out", d.run_dir, "--run-id", "ckpt-run",
                           "--no-events-stdout", "--quiet"}, eo);
    QVERIFY2(t.exit_status == 0, t.err.c_str());
    // What the node's folder holds (the node is this machine): complete step_* folders.
    std::vector<std::string> on_disk;
    for (const auto& e : fs::directory_iterator(d.run_dir + "/checkpoints"))
      if (e.is_directory() && e.path().extension() != ".tmp") on_disk.push_back(e.path().filename().string());
    std::sort(on_disk.begin(), on_disk.end());
    const std::vector<RemoteCheckpoint> list = list_checkpoints(s, d.run_dir);
    QCOMPARE(int(list.size()), int(on_disk.size()));
    QCOMPARE(int(list.size()), int(cfg["train"]["keep_checkpoints"]));
    for (size_t i = 0; i < list.size(); ++i) {
      QCOMPARE(list[i].name, on_disk[i]);
      QCOMPARE(list[i].step, int64_t(std::stoll(on_disk[i].substr(5))));
      uint64_t sum = 0;
      for (const auto& [file, size] : list[i].files) {
        QCOMPARE(size, uint64_t(fs::file_size(fs::path(d.run_dir) / "checkpoints" / list[i].name / file)));
        sum += size;
      }
      QCOMPARE(list[i].size_bytes, sum);
      QCOMPARE(list[i].files.size(), size_t(std::distance(
          fs::directory_iterator(fs::path(d.run_dir) / "checkpoints" / list[i].name), fs::directory_iterator{})));
    }
    QCOMPARE(list.back().step, int64_t(cfg["train"]["steps"]));  // the final checkpoint
    // Download the newest with progress; each file's sha256 equals sha256sum's on the node.
    const RemoteCheckpoint& newest = list.back();
    const fs::path local = local_ / "downloaded checkpoints";
    uint64_t last = 0, total_seen = 0;
    bool monotonic = true;
    CheckpointDownload dl = download_checkpoint(s, d.run_dir, newest.name, local, [&](uint64_t done, uint64_t total) {
      monotonic = monotonic && done >= last;
      last = done;
      total_seen = total;
    });
    QVERIFY(monotonic);
    QCOMPARE(total_seen, newest.size_bytes);
    QCOMPARE(last, newest.size_bytes);
    QCOMPARE(dl.bytes_sent, newest.size_bytes);
    QCOMPARE(dl.files_sent, int(newest.files.size()));
    QCOMPARE(dl.local_path, local / newest.name);
    QVERIFY(!fs::exists(local / (newest.name + ".tmp")));
    for (const auto& [file, size] : newest.files)
      QCOMPARE(sha256_file(dl.local_path / file), remote_sha256(s, d.run_dir + "/checkpoints/" + newest.name + "/" + file));
    // Again: nothing moves.
    CheckpointDownload again = download_checkpoint(s, d.run_dir, newest.name, local);
    QCOMPARE(again.bytes_sent, uint64_t(0));
    QCOMPARE(again.files_skipped, int(newest.files.size()));
    // The engine reads the local copy: greedy text from it equals that from the node's original.
    std::string from_local, from_node;
    QCOMPARE(run_cmd({TD_ENGINE_EXE, "sample", "--checkpoint", dl.local_path.string(), "--prompt", "Line 7: the",
                      "--tokens", "24", "--temperature", "0"}, &from_local), 0);
    QCOMPARE(run_cmd({TD_ENGINE_EXE, "sample", "--checkpoint", d.run_dir + "/checkpoints/" + newest.name, "--prompt",
                      "Line 7: the", "--tokens", "24", "--temperature", "0"}, &from_node), 0);
    QVERIFY(!from_local.empty());
    QCOMPARE(from_local, from_node);
    // Names are checked before anything is sent; a missing one lists those there.
    std::string err;
    try {
      download_checkpoint(s, d.run_dir, "../../etc", local);
    } catch (const td::Error& e) {
      err = e.what();
    }
    QVERIFY2(err.find("is not a checkpoint name") != std::string::npos, err.c_str());
    try {
      download_checkpoint(s, d.run_dir, "step_00000099", local);
    } catch (const td::Error& e) {
      err = e.what();
    }
    QVERIFY2(err.find("there: " + list.front().name) != std::string::npos, err.c_str());
  }

  void a_checkpoint_damaged_on_the_node_is_refused_after_download() {
    // The node's copy of step 20 has 16 flipped weight bytes: the transfer copies it faithfully
    // (download() checks both sides), so only the checkpoint's SHA256SUMS can tell.
    Session s = connect();
    nlohmann::json cfg = tiny_config(20);
    cfg["train"]["checkpoint_interval"] = 10;
    cfg["train"]["keep_checkpoints"] = 2;
    DeployResult d = deploy(s, bundle_, dataset_, cfg.dump(), work_, "ckpt-damaged");
    ExecOptions eo;
    eo.timeout_ms = 300000;  // 20 steps and 2 checkpoints: seconds, minutes on a loaded machine
    ExecResult t = s.exec({d.engine, "train", "--config", d.config_path, "--out", d.run_dir, "--no-events-stdout", "--quiet"}, eo);
    QVERIFY2(t.exit_status == 0, t.err.c_str());
    const fs::path node_model = fs::path(d.run_dir) / "checkpoints/step_00000020/model.safetensors";
    {
      std::fstream f(node_model, std::ios::in | std::ios::out | std::ios::binary);
      uint64_t header = 0;
      f.read(reinterpret_cast<char*>(&header), 8);
      char b[16];
      f.seekg(std::streamoff(8 + header + 64));
      f.read(b, 16);
      for (char& c : b) c = char(c ^ 0x01);
      f.seekp(std::streamoff(8 + header + 64));
      f.write(b, 16);
      QVERIFY(f.good());
    }
    const fs::path local = local_ / "damaged downloads";
    std::string err;
    try {
      download_checkpoint(s, d.run_dir, "step_00000020", local);
    } catch (const td::Error& e) {
      err = e.what();
    }
    QVERIFY2(err.find("step_00000020: model.safetensors does not match its SHA-256 in SHA256SUMS") != std::string::npos, err.c_str());
    QVERIFY(!fs::exists(local / "step_00000020"));
    QVERIFY(!fs::exists(local / "step_00000020.tmp"));
    // The older one matches; a checkpoint written before checksums (no SHA256SUMS) still downloads.
    CheckpointDownload ok = download_checkpoint(s, d.run_dir, "step_00000010", local);
    QVERIFY(ok.checksums_verified);
    QVERIFY(fs::exists(local / "step_00000010/SHA256SUMS"));
    fs::remove(fs::path(d.run_dir) / "checkpoints/step_00000010/SHA256SUMS");
    CheckpointDownload old = download_checkpoint(s, d.run_dir, "step_00000010", local_ / "legacy downloads");
    QVERIFY(!old.checksums_verified);
    QVERIFY(fs::exists(local_ / "legacy downloads/step_00000010/model.safetensors"));
  }
};

QTEST_GUILESS_MAIN(TestRemoteRun)
#include "test_remote_run.moc"
