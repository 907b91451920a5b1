// remote/cluster.h: the cluster spec's JSON form, its validation, resolving a node through an
// ssh_config (explicit fields win, ProxyJump hops), and the Auth built for each method. No
// network; expected values written out by hand from ssh_config(5).
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "engine/common/error.h"
#include "remote/cluster.h"

using namespace td::remote;

class TestCluster : public QObject {
  Q_OBJECT
 private slots:
  void json_round_trip() {
    ClusterSpec c;
    c.name = "lab";
    NodeSpec a;
    a.name = "gpu 1";
    a.host = "gpu1.lab";
    a.port = 2222;
    a.user = "ana";
    a.auth = AuthMethod::KeyFile;
    a.key_file = "~/.ssh/id_ed25519";
    a.gpus = 8;
    a.work_dir = "/scratch/ana/td";
    a.jump = "bastion.lab";
    a.connect_timeout_s = 120;
    NodeSpec b;
    b.host = "10.0.0.2";
    b.auth = AuthMethod::Password;
    c.nodes = {a, b};
    const nlohmann::json j = to_json(c);
    QCOMPARE(j["nodes"][0]["auth"].get<std::string>(), std::string("key"));
    QCOMPARE(j["nodes"][1]["auth"].get<std::string>(), std::string("password"));
    QVERIFY(!j["nodes"][1].contains("port"));  // 0 = from the config: not written
    QVERIFY(!j["nodes"][1].contains("connect_timeout_s"));
    // No secret field exists in the JSON form at all.
    for (const auto& node : j["nodes"]) QVERIFY(!node.contains("password") && !node.contains("passphrase"));
    QVERIFY(!j["nodes"][1].contains("passphrase"));
    const ClusterSpec back = cluster_from_json(nlohmann::json::parse(j.dump()));
    QCOMPARE(back.name, std::string("lab"));
    QCOMPARE(int(back.nodes.size()), 2);
    QCOMPARE(back.nodes[0].port, 2222);
    QCOMPARE(back.nodes[0].gpus, 8);
    QCOMPARE(back.nodes[0].jump, std::string("bastion.lab"));
    QCOMPARE(back.nodes[0].connect_timeout_s, 120);
    QCOMPARE(back.nodes[1].connect_timeout_s, 0);
    QCOMPARE(back.nodes[0].work_dir, std::string("/scratch/ana/td"));
    QVERIFY(back.nodes[1].auth == AuthMethod::Password);
    QCOMPARE(back.nodes[1].display_name(), std::string("10.0.0.2"));
    QCOMPARE(back.nodes[1].work_dir, std::string("traindeck"));
    QVERIFY(back.nodes[1].jump.empty());
  }

  void json_errors_name_the_field() {
    auto err = [](const char* text) {
      try {
        cluster_from_json(nlohmann::json::parse(text));
      } catch (const td::Error& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    QVERIFY(err(R"({"name":"x","nodes":[{"host":"a"},{"host":"b","port":70000}]})").find("nodes[1].port: 70000") == 0);
    QVERIFY(err(R"({"name":"x","nodes":[{"host":"a","auth":"kerberos"}]})").find("nodes[0].auth: 'kerberos'") == 0);
    QVERIFY(err(R"({"name":"x","nodes":[{"host":"  "}]})").find("nodes[0].host: empty") == 0);
    QVERIFY(err(R"({"name":"x","nodes":[{"host":"a","gpus":"eight"}]})").find("nodes[0].gpus: wrong type") == 0);
    QVERIFY(err(R"({"nodes":[]})").find("cluster.name: empty") == 0);
    QVERIFY(err(R"({"name":"x","nodes":[{"host":"a","connect_timeout_s":-5}]})").find("nodes[0].connect_timeout_s: -5") == 0);
  }

  void validation() {
    ClusterSpec c;
    QCOMPARE(validate(c), std::vector<std::string>{"the cluster has no name"});
    c.name = "lab";
    QVERIFY(validate(c).empty());  // this machine
    NodeSpec a, b;
    a.host = "gpu1";
    b.host = "gpu1";
    b.gpus = -1;
    c.nodes = {a, b};
    const auto p = validate(c);
    QCOMPARE(int(p.size()), 2);
    QCOMPARE(p[0], std::string("node 2: GPUs must be 0 (CPU) or more"));
    QCOMPARE(p[1], std::string("node 2: another node is already called 'gpu1'"));
  }

  void resolve_through_config() {
    QTemporaryDir dir;
    const std::string cfg = dir.filePath("config").toStdString();
    std::ofstream(cfg) << "Host gpu1\n  HostName 10.1.2.3\n  User ana\n  Port 2200\n"
                          "  IdentityFile ~/.ssh/lab_key\n  ProxyJump jumper@bastion:2022,gate\n"
                          "Host bastion\n  HostName 192.0.2.10\n  IdentityFile ~/.ssh/bastion_key\n"
                          "  ConnectTimeout 45\n"
                          "Host *\n  User fallback\n";
    const LocalEnv env{"me", "/home/me"};
    NodeSpec n;
    n.host = "gpu1";
    ResolvedNode r = resolve_node(n, cfg, env);
    QCOMPARE(r.target.host, std::string("10.1.2.3"));
    QCOMPARE(r.target.port, 2200);
    QCOMPARE(r.target.user, std::string("ana"));
    QCOMPARE(r.identity_files, std::vector<std::string>{"/home/me/.ssh/lab_key"});
    QCOMPARE(int(r.jumps.size()), 2);
    QCOMPARE(r.jumps[0].connect.host, std::string("192.0.2.10"));  // alias through the config
    QCOMPARE(r.jumps[0].connect.user, std::string("jumper"));       // user@ wins over the config
    QCOMPARE(r.jumps[0].connect.port, 2022);
    QCOMPARE(r.jumps[0].identity_files, std::vector<std::string>{"/home/me/.ssh/bastion_key"});
    QCOMPARE(r.jumps[1].connect.host, std::string("gate"));
    QCOMPARE(r.jumps[1].connect.user, std::string("fallback"));
    QCOMPARE(r.jumps[1].connect.port, 22);
    // Connect timeouts: the bastion's ConnectTimeout; none for the target and "gate" (the
    // caller's default applies: 0).
    QCOMPARE(r.jumps[0].timeout_ms, 45000);
    QCOMPARE(r.jumps[0].connect.timeout_ms, 45000);
    QCOMPARE(r.jumps[1].timeout_ms, 0);
    QCOMPARE(r.timeout_ms, 0);
    n.connect_timeout_s = 300;  // the node's own setting
    QCOMPARE(resolve_node(n, cfg, env).timeout_ms, 300000);
    QCOMPARE(resolve_node(n, cfg, env).target.timeout_ms, 300000);
    n.connect_timeout_s = 0;

    // Explicit fields win; an explicit jump replaces the config's ProxyJump; "none" disables it.
    n.port = 22;
    n.user = "bob";
    n.jump = "none";
    r = resolve_node(n, cfg, env);
    QCOMPARE(r.target.port, 22);
    QCOMPARE(r.target.user, std::string("bob"));
    QVERIFY(r.jumps.empty());
    n.jump = "gate:70000";
    QVERIFY_THROWS_EXCEPTION(td::Error, resolve_node(n, cfg, env));
  }

  void auth_per_method() {
    QTemporaryDir dir;
    const std::string key = dir.filePath("id_test").toStdString();
    std::ofstream(key) << "not really a key\n";
    NodeSpec n;
    n.host = "h";
    ResolvedNode r;
    r.target.host = "h";
    r.target.user = "u";
    r.identity_files = {dir.filePath("missing").toStdString(), key};
    QVERIFY(node_auth(n, r, {}).method == Auth::Method::Agent);
    n.auth = AuthMethod::Password;
    const Auth p = node_auth(n, r, {"", "s3cret"});
    QVERIFY(p.method == Auth::Method::Password);
    QCOMPARE(p.password, std::string("s3cret"));
    n.auth = AuthMethod::KeyFile;
    const Auth k = node_auth(n, r, {"phrase", ""});
    QCOMPARE(k.key_file, key);  // the first IdentityFile that exists
    QCOMPARE(k.passphrase, std::string("phrase"));
    r.identity_files.clear();
    QVERIFY_THROWS_EXCEPTION(td::Error, node_auth(n, r, {}));
  }

  // A person types paths as in a shell: "~/.ssh/id_ed25519" (the example of cluster.h) is the
  // key under $HOME, as `ssh -i` reads it; a work directory "~/td" would be taken literally on
  // the node (a folder named "~"), so validate() refuses it with the relative form to use.
  void slurm_cluster_json_and_validation() {
    // A Slurm cluster round-trips; JSON without "kind" (every cluster saved before) is "ssh".
    ClusterSpec c;
    c.name = "hpc";
    c.kind = "slurm";
    NodeSpec login;
    login.name = "login";
    login.host = "login.hpc.example";
    c.nodes = {login};
    c.slurm.partition = "gpu";
    c.slurm.account = "proj-7";
    c.slurm.time_limit = "04:00:00";
    c.slurm.nodes = 4;
    c.slurm.gpus_per_node = 8;
    c.slurm.extra_sbatch = {"#SBATCH --mem=0"};
    c.slurm.setup = {"module load cuda/12.4"};
    c.slurm.work_dir = "/scratch/ana/traindeck";
    c.slurm.requeue = true;
    c.slurm.signal_lead_s = 300;
    const ClusterSpec back = cluster_from_json(nlohmann::json::parse(to_json(c).dump()));
    QCOMPARE(to_json(back), to_json(c));
    QCOMPARE(back.kind, std::string("slurm"));
    QCOMPARE(back.slurm.nodes, 4);
    QCOMPARE(back.slurm.setup, std::vector<std::string>{"module load cuda/12.4"});
    QVERIFY(validate(back).empty());
    const ClusterSpec old = cluster_from_json(nlohmann::json::parse(R"({"name":"lab","nodes":[{"host":"gpu1"}]})"));
    QCOMPARE(old.kind, std::string("ssh"));
    QVERIFY(!to_json(old).contains("kind"));
    // Errors name the field.
    auto err = [](const char* text) {
      try {
        cluster_from_json(nlohmann::json::parse(text));
      } catch (const td::Error& e) {
        return std::string(e.what());
      }
      return std::string("(no error)");
    };
    QCOMPARE(err(R"({"name":"x","kind":"k8s"})"), std::string("cluster.kind: 'k8s' is not a cluster kind (ssh or slurm)"));
    QCOMPARE(err(R"({"name":"x","kind":"slurm","slurm":{"nodes":"2"}})"), std::string("cluster.slurm.nodes: wrong type (string)"));
    QCOMPARE(err(R"({"name":"x","kind":"slurm","slurm":{"setup":"module load x"}})"),
             std::string("cluster.slurm.setup: expected a list of lines (strings)"));
    // validate(): one line per problem, the login node counted.
    ClusterSpec bad = c;
    bad.nodes.push_back(login);
    bad.nodes[1].name = "second";
    bad.slurm.partition = "gpu;rm";
    bad.slurm.time_limit = "4 hours";
    bad.slurm.nodes = 0;
    bad.slurm.extra_sbatch = {"--mem=0"};
    bad.slurm.work_dir = "scratch/x";
    const auto p = validate(bad);
    QCOMPARE(p.size(), size_t(6));
    QCOMPARE(p[0], std::string("a Slurm cluster has exactly one SSH node, its login node (it has 2)"));
    QCOMPARE(p[1], std::string("Slurm: the partition 'gpu;rm' may hold only letters, digits and . _ - +"));
    QCOMPARE(p[2], std::string("Slurm: nodes must be 1 or more (got 0)"));
    QVERIFY2(p[3].find("time limit '4 hours' is not in Slurm's format") != std::string::npos, p[3].c_str());
    QVERIFY2(p[4].find("extra sbatch line 1 must be one line starting with '#SBATCH '") != std::string::npos, p[4].c_str());
    QVERIFY2(p[5].find("must be an absolute path") != std::string::npos, p[5].c_str());
    // The checkpoint signal must come before the limit.
    ClusterSpec lead = c;
    lead.slurm.time_limit = "2";
    lead.slurm.signal_lead_s = 120;
    QCOMPARE(validate(lead).size(), size_t(1));
    QVERIFY2(validate(lead)[0].find("not longer than the signal lead (120 s)") != std::string::npos, validate(lead)[0].c_str());
  }

  void tilde_paths() {
    QTemporaryDir home;
    const QByteArray old_home = qgetenv("HOME");
    qputenv("HOME", home.path().toUtf8());
    NodeSpec n;
    n.host = "h";
    n.auth = AuthMethod::KeyFile;
    n.key_file = "~/.ssh/id_ed25519";
    ResolvedNode r;
    QCOMPARE(node_auth(n, r, {}).key_file, home.path().toStdString() + "/.ssh/id_ed25519");
    n.key_file = "~other/key";  // another user's home is not guessed
    QCOMPARE(node_auth(n, r, {}).key_file, std::string("~other/key"));
    qputenv("HOME", old_home);

    ClusterSpec c;
    c.name = "lab";
    n.work_dir = "~/td runs";
    c.nodes = {n};
    auto p = validate(c);
    QCOMPARE(int(p.size()), 1);
    QVERIFY2(p[0].find("node 1: the work directory '~/td runs' starts with ~") == 0, p[0].c_str());
    QVERIFY2(p[0].find("('td runs')") != std::string::npos, p[0].c_str());
    c.nodes[0].work_dir = "td runs";
    QVERIFY(validate(c).empty());
    c.nodes[0].work_dir = "/scratch/~x";  // a ~ inside a path is an ordinary character
    QVERIFY(validate(c).empty());
  }
};

QTEST_GUILESS_MAIN(TestCluster)
#include "test_cluster.moc"
