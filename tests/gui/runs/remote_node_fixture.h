// The node of the remote-run GUI tests: a real OpenSSH sshd on 127.0.0.1
// (tests/remote/sshd_fixture.h) whose "node" is this machine, a tiny prepared dataset, a store
// path, and a NodeSpec with key authentication. Engines started on the node carry the fixture's
// unique folder in their command line, so kill_engines() stops only this test's.
#pragma once

#include <QTemporaryDir>

#include <string>

#include "../../remote/sshd_fixture.h"
#include "../gui_test_util.h"
#include "remote/cluster.h"

namespace tdguitest {

struct RemoteNode {
  td::remote::testing::SshdFixture sshd;
  QTemporaryDir dir;
  QString data;  ///< the tiny dataset (gui_test_util.h prepare_tiny_dataset)
  QString db;    ///< <dir>/store.db
  td::remote::NodeSpec node;

  /// Starts sshd (false: see sshd.skip_reason), points TRAINDECK_ENGINE and TRAINDECK_RUNS_DIR
  /// at this build and <dir>/runs, prepares the dataset (false with data empty when it failed),
  /// and fills `node`: `name`, key auth as the test user, work directory <sshd dir>/<work_dir>.
  bool start(const std::string& name, const std::string& work_dir) {
    if (!sshd.start(/*with_password_user=*/false) || !dir.isValid()) return false;
    qputenv("TRAINDECK_ENGINE", TD_ENGINE_EXE);
    qputenv("TRAINDECK_RUNS_DIR", dir.filePath("runs").toUtf8());
    data = prepare_tiny_dataset(dir.path());
    db = dir.filePath("store.db");
    node.name = name;
    node.host = "127.0.0.1";
    node.port = sshd.port;
    node.user = sshd.user;
    node.auth = td::remote::AuthMethod::KeyFile;
    node.key_file = sshd.user_key;
    node.work_dir = (sshd.dir / work_dir).string();
    return !data.isEmpty();
  }

  /// Opens node `n` the way NodeAccess does (resolve_node + node_auth + open_node), with the
  /// fixture's key and known_hosts, accepting its host key. Throws td::Error like a real node.
  td::remote::Session open(const td::remote::NodeSpec& n, int timeout_ms = 15000) const {
    const auto r = td::remote::resolve_node(n, sshd.dir / "no_ssh_config");
    td::remote::OpenOptions o;
    o.known_hosts = sshd.known_hosts;
    o.timeout_ms = timeout_ms;
    o.accept_unknown_host = [](const td::remote::HostKeyInfo&, const std::string&) { return true; };
    return td::remote::open_node(r, td::remote::node_auth(n, r, {}), o);
  }

  /// SIGKILLs every engine this test started on the node.
  void kill_engines() const {
    if (!sshd.dir.empty()) td::remote::testing::run_cmd({"pkill", "-KILL", "-f", "traindeck-engine.*" + sshd.dir.string()});
  }
};

}  // namespace tdguitest
