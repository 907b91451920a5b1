// download_checkpoint against a hostile node: the file names of a checkpoint come from the
// node's `stat` listing, and a node may answer anything. A fake `stat` first on the node's PATH
// (sshd's SetEnv) answers with names that climb out of the checkpoint folder ('../'), absolute
// paths, names with a '/', and a name with a newline (which splits the listing's lines); the
// download must refuse each with a clear error naming the line, and write nothing at all: not
// outside the download folder, not in it. A real stat afterwards: the same checkpoint comes down.
// (The scp class of bug CVE-2019-6111: a client that trusts names the server sends.)
#include <QtTest>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "engine/common/error.h"
#include "remote/checkpoints.h"
#include "remote/session.h"
#include "remote/sftp.h"
#include "sshd_fixture.h"
#include "user_session.h"

using namespace td::remote;
using td::remote::testing::error_message;
using td::remote::testing::read_text;
using td::remote::testing::SshdFixture;
namespace fs = std::filesystem;

class TestCheckpointNames : public QObject {
  Q_OBJECT
  SshdFixture sshd_;
  fs::path fake_bin_, answer_, node_run_, local_root_, abs_target_;
  const std::string ckpt_ = "step_00000010";

  // Every file under `root` (recursively), as paths relative to it.
  static std::vector<std::string> files_under(const fs::path& root) {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); ++it)
      out.push_back(fs::relative(it->path(), root).string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private slots:
  void initTestCase() {
    if (!sshd_.start(/*with_password_user=*/false)) QSKIP(sshd_.skip_reason.c_str());
    // The fake stat prints the answer file when it exists, else it is the real stat.
    fake_bin_ = sshd_.dir / "fakebin";
    answer_ = sshd_.dir / "stat.answer";
    fs::create_directories(fake_bin_);
    std::ofstream(fake_bin_ / "stat") << "#!/bin/sh\n"
                                      << "if [ -f '" << answer_.string() << "' ]; then cat '" << answer_.string()
                                      << "'; exit 0; fi\nexec /usr/bin/stat \"$@\"\n";
    fs::permissions(fake_bin_ / "stat", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                            fs::perms::others_read | fs::perms::others_exec);
    // sshd sets PATH for every session, then the admin's SetEnv (this one) replaces it.
    QVERIFY2(sshd_.launch({}, "PasswordAuthentication yes\nKbdInteractiveAuthentication no\nUsePAM no\n",
                          "PATH=" + fake_bin_.string() + ":/usr/local/bin:/usr/bin:/bin"),
             sshd_.skip_reason.c_str());
    // The node's run folder (the node is this machine): one complete checkpoint with one file,
    // so that the listing script calls stat once.
    node_run_ = sshd_.dir / "node" / "runs" / "r1";
    fs::create_directories(node_run_ / "checkpoints" / ckpt_);
    std::ofstream(node_run_ / "checkpoints" / ckpt_ / "model.safetensors") << "weights!";
    // Files on the node where the hostile names lead from the checkpoint folder, so that a
    // download that followed them would find something to fetch: <ckpt>/../../../../evil.txt,
    // <ckpt>/sub/model.safetensors, and <ckpt>/<an absolute local path> (the remote path joins
    // it under the checkpoint; the local one would be that absolute path: a file of ours).
    const fs::path ckpt_dir = node_run_ / "checkpoints" / ckpt_;
    std::ofstream(sshd_.dir / "node" / "evil.txt") << "evil";
    fs::create_directories(ckpt_dir / "sub");
    std::ofstream(ckpt_dir / "sub" / "model.safetensors") << "evil";
    local_root_ = sshd_.dir / "local";
    abs_target_ = local_root_ / "abs-target.txt";
    fs::create_directories(local_root_);
    std::ofstream(abs_target_) << "mine";
    fs::create_directories((ckpt_dir / abs_target_.relative_path()).parent_path());
    std::ofstream(ckpt_dir / abs_target_.relative_path()) << "evil";
  }
  void cleanupTestCase() { sshd_.stop(); }

  void hostile_names_are_refused_and_nothing_is_written_data() {
    QTest::addColumn<QString>("answer");
    QTest::addColumn<QString>("expect");  // in the error
    const QString c = QString::fromStdString(ckpt_);
    QTest::newRow("dot-dot") << QString("4 %1/../../../../evil.txt\n").arg(c) << QString("%1/../../../../evil.txt").arg(c);
    const QString abs = QString::fromStdString(abs_target_.string());
    QTest::newRow("absolute") << QString("4 %1/%2\n").arg(c, abs) << QString("%1/%2").arg(c, abs);
    QTest::newRow("absolute-whole") << QString("4 %1\n").arg(abs) << QString("'4 %1'").arg(abs);
    QTest::newRow("slash") << QString("8 %1/sub/model.safetensors\n").arg(c) << QString("%1/sub/model.safetensors").arg(c);
    QTest::newRow("dot-dot-alone") << QString("8 %1/..\n").arg(c) << QString("%1/..").arg(c);
    // "model.safetensors\nevil.txt" as one name: its second half is a line of its own.
    QTest::newRow("newline") << QString("8 %1/model.safetensors\nevil.txt\n").arg(c) << QString("'evil.txt'");
    QTest::newRow("control") << QString("8 %1/model.safetensors\t\n").arg(c) << QString("model.safetensors\\t");
    QTest::newRow("not a size") << QString("x8 %1/model.safetensors\n").arg(c) << QString("x8 ");
  }
  void hostile_names_are_refused_and_nothing_is_written() {
    QFETCH(QString, answer);
    QFETCH(QString, expect);
    std::ofstream(answer_, std::ios::binary) << answer.toStdString();
    const fs::path local = local_root_ / QTest::currentDataTag() / "a" / "b" / "c" / "downloads";
    fs::create_directories(local);
    Session s = td::remote::testing::user_session(sshd_);
    const std::string err =
        error_message([&] { download_checkpoint(s, node_run_.string(), ckpt_, local); });
    fs::remove(answer_);
    QVERIFY2(err.find("refused") != std::string::npos, err.c_str());
    QVERIFY2(err.find(expect.toStdString()) != std::string::npos, err.c_str());
    QVERIFY2(err.find("nothing was downloaded") != std::string::npos, err.c_str());
    // Nothing anywhere under the local tree, the download folder stays empty, the local file
    // an absolute name points at is unchanged.
    const std::vector<std::string> left = files_under(local_root_ / QTest::currentDataTag());
    QCOMPARE(left, (std::vector<std::string>{"a", "a/b", "a/b/c", "a/b/c/downloads"}));
    QCOMPARE(read_text(abs_target_), std::string("mine"));
  }

  // A name the engine does not write, but a plain one (a note someone left there): not
  // downloaded, the checkpoint's own files are.
  void unknown_plain_name_is_left_on_the_node() {
    std::ofstream(node_run_ / "checkpoints" / ckpt_ / "notes.txt") << "mine";
    Session s = td::remote::testing::user_session(sshd_);
    const std::vector<RemoteCheckpoint> list = list_checkpoints(s, node_run_.string());
    QCOMPARE(list.size(), size_t(1));
    QCOMPARE(list[0].files, (std::vector<std::pair<std::string, uint64_t>>{{"model.safetensors", 8}}));
    const fs::path local = local_root_ / "plain";
    const CheckpointDownload dl = download_checkpoint(s, node_run_.string(), ckpt_, local);
    QCOMPARE(dl.files_sent, 1);
    QCOMPARE(files_under(local), (std::vector<std::string>{ckpt_, ckpt_ + "/model.safetensors"}));
    QCOMPARE(read_text(local / ckpt_ / "model.safetensors"), std::string("weights!"));
    fs::remove(node_run_ / "checkpoints" / ckpt_ / "notes.txt");
  }

  // A listing longer than the cap is an error, never a silently shorter list.
  void overlong_listing_is_refused() {
    Session s = td::remote::testing::user_session(sshd_);
    const size_t before = list_checkpoints(s, node_run_.string()).size();
    for (int i = 1; i <= 40; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "step_%08d", 1000 + i);
      fs::create_directories(node_run_ / "checkpoints" / name);
      std::ofstream(node_run_ / "checkpoints" / name / "model.safetensors") << "weights!";
    }
    QCOMPARE(list_checkpoints(s, node_run_.string()).size(), before + 40);  // the default cap holds them
    const std::string err = error_message([&] { list_checkpoints(s, node_run_.string(), 1024); });
    QVERIFY2(err.find("longer than 1 KiB") != std::string::npos, err.c_str());
    QVERIFY2(err.find("keep_checkpoints") != std::string::npos, err.c_str());
    for (int i = 1; i <= 40; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "step_%08d", 1000 + i);
      fs::remove_all(node_run_ / "checkpoints" / name);
    }
  }

  void known_names_are_the_engines() {
    // What engine/checkpoint/checkpoint.cpp writes, with the checksums file SHA256SUMS.
    QCOMPARE(std::vector<std::string>(kCheckpointFileNames.begin(), kCheckpointFileNames.end()),
             (std::vector<std::string>{"SHA256SUMS", "model.safetensors", "optimizer.safetensors", "trainer.json"}));
  }
};

QTEST_GUILESS_MAIN(TestCheckpointNames)
#include "test_checkpoint_names.moc"
