// train --metrics-port (engine/metrics/prometheus.h): the exposition text checked by hand, then
// a real Prometheus (Debian's prometheus, started here on loopback) scraping a training run: its
// HTTP API must return the loss and tokens/s of the step it reports, as the events file has them.
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <limits>

#include "engine/common/error.h"
#include "engine/metrics/prometheus.h"
#include "test_util.h"

using nlohmann::json;

namespace {

// Runs an HTTP GET on 127.0.0.1:port; "" when it fails.
std::string http_get(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(5);
  c.set_read_timeout(10);
  auto r = c.Get(path);
  return r && r->status == 200 ? r->body : std::string();
}

// A TCP connection to 127.0.0.1:port, or -1.
int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    if (std::isalnum(ch) || ch == '_' || ch == '-' || ch == '.') out += char(ch);
    else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", ch);
      out += b;
    }
  }
  return out;
}

}  // namespace

class TestPrometheus : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void exposition_text_by_hand() {
    const std::string text = td::prometheus_text({
        {"loss", {{"run_id", "r1"}, {"rank", "0"}}, 2.5},
        {"rank_tokens_per_s", {{"run_id", "r1"}, {"rank", "1"}, {"host", "we\"ird\\ho\nst"}}, 1024},
        {"loss", {{"run_id", "r2"}, {"rank", "0"}}, std::numeric_limits<double>::quiet_NaN()},
        {"grad-norm", {}, std::numeric_limits<double>::infinity()},
        {"lr", {}, 0.1},
    });
    QCOMPARE(text, std::string("# TYPE traindeck_loss gauge\n"
                               "traindeck_loss{run_id=\"r1\",rank=\"0\"} 2.5\n"
                               "traindeck_loss{run_id=\"r2\",rank=\"0\"} NaN\n"
                               "# TYPE traindeck_rank_tokens_per_s gauge\n"
                               "traindeck_rank_tokens_per_s{run_id=\"r1\",rank=\"1\",host=\"we\\\"ird\\\\ho\\nst\"} 1024\n"
                               "# TYPE traindeck_grad_norm gauge\n"
                               "traindeck_grad_norm +Inf\n"
                               "# TYPE traindeck_lr gauge\n"
                               "traindeck_lr 0.10000000000000001\n"));
  }

  void server_serves_the_newest_step_per_rank() {
    td::MetricsServer srv("127.0.0.1", 0, {{"run_id", "r1"}, {"host", "a"}});
    QVERIFY(srv.port() > 0);
    QCOMPARE(srv.url(), "http://127.0.0.1:" + std::to_string(srv.port()) + "/metrics");
    QCOMPARE(http_get(srv.port(), "/metrics"), std::string("# TYPE traindeck_up gauge\ntraindeck_up{run_id=\"r1\",host=\"a\",rank=\"0\"} 1\n"));
    srv.observe("step", {{"step", 7}, {"loss", 2.25}, {"name", "not a number"}, {"mfu", nullptr},
                         {"ranks", {{{"rank", 0}, {"host", "a"}, {"tokens_per_s", 10.5}}, {{"rank", 1}, {"host", "b"}, {"tokens_per_s", 9.5}}}}});
    srv.observe("sample", {{"step", 99}});  // not a figure event: ignored
    srv.observe("step", {{"step", 8}, {"loss", 2.0}});
    const std::string t = http_get(srv.port(), "/metrics");
    QCOMPARE(t, std::string("# TYPE traindeck_up gauge\ntraindeck_up{run_id=\"r1\",host=\"a\",rank=\"0\"} 1\n"
                            "# TYPE traindeck_loss gauge\ntraindeck_loss{run_id=\"r1\",host=\"a\",rank=\"0\"} 2\n"
                            "# TYPE traindeck_step gauge\ntraindeck_step{run_id=\"r1\",host=\"a\",rank=\"0\"} 8\n"
                            "# TYPE traindeck_rank_tokens_per_s gauge\n"
                            "traindeck_rank_tokens_per_s{run_id=\"r1\",rank=\"0\",host=\"a\"} 10.5\n"
                            "traindeck_rank_tokens_per_s{run_id=\"r1\",rank=\"1\",host=\"b\"} 9.5\n"));
    // The port taken: a second server on it is refused, naming what to do.
    try {
      td::MetricsServer again("127.0.0.1", srv.port(), {});
      QFAIL("a second server on a port in use must be refused");
    } catch (const td::Error& e) {
      QVERIFY2(std::string(e.what()).find("choose another --metrics-port") != std::string::npos, e.what());
    }
  }

  // Issue 35: 8 (here 70, past the connection cap) clients that dribble a header byte every
  // 200 ms — each byte would reset a per-read timeout — never stop a scrape: it is answered while
  // they dribble, and each of them is closed by the whole-request deadline (or, past the cap,
  // to make room), not kept for as long as it keeps sending.
  void slow_clients_never_stop_a_scrape() {
    td::MetricsServer srv("127.0.0.1", 0, {{"run_id", "r1"}});
    srv.observe("step", {{"step", 3}, {"loss", 1.5}});
    std::vector<int> slow;
    for (int i = 0; i < 70; ++i) {
      const int fd = connect_loopback(srv.port());
      QVERIFY(fd >= 0);
      QVERIFY(::send(fd, "GET /metrics HTTP/1.1\r\nX-Slow: ", 32, MSG_NOSIGNAL) == 32);
      slow.push_back(fd);
    }
    QElapsedTimer t;
    t.start();
    std::string scraped;
    std::vector<bool> closed(slow.size(), false);
    // Dribble for up to 60 s (a generous limit: the deadline is 5 s); scrape meanwhile.
    while (t.elapsed() < 60000 && (scraped.empty() || std::count(closed.begin(), closed.end(), false) > 0)) {
      for (size_t i = 0; i < slow.size(); ++i) {
        if (closed[i]) continue;
        char buf[256];
        const ssize_t n = ::recv(slow[i], buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) closed[i] = true;
        else if (::send(slow[i], "x", 1, MSG_NOSIGNAL) != 1) closed[i] = true;
      }
      if (scraped.empty()) scraped = http_get(srv.port(), "/metrics");
      QTest::qWait(200);
    }
    QVERIFY2(scraped.find("traindeck_loss{run_id=\"r1\",rank=\"0\"} 1.5\n") != std::string::npos,
             ("no scrape got through: '" + scraped + "'").c_str());
    QCOMPARE(std::count(closed.begin(), closed.end(), true), std::ptrdiff_t(slow.size()));  // none kept forever
    for (int fd : slow) ::close(fd);
    // A head larger than the limit is answered 431, not read on.
    const int fd = connect_loopback(srv.port());
    QVERIFY(fd >= 0);
    const std::string big = "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'y');
    (void)::send(fd, big.data(), big.size(), MSG_NOSIGNAL);
    std::string reply;
    char buf[512];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, size_t(n));
    ::close(fd);
    QVERIFY2(reply.rfind("HTTP/1.1 431", 0) == 0, reply.c_str());
    QCOMPARE(http_get(srv.port(), "/nothing"), std::string());  // 404
  }

  void a_real_prometheus_scrapes_a_run() {
    const QString prometheus = QStandardPaths::findExecutable("prometheus");
    if (prometheus.isEmpty()) QSKIP("prometheus is not installed (Debian's prometheus; traindeck.sh test installs it)");
    const auto tiny = tdtest::write_tiny_run(dir_.path(), tdtest::generated_text(400));
    QVERIFY2(tiny.prepare.exit_code == 0, qPrintable(tiny.prepare.err));
    // A run long enough to outlast the check; the test stops it.
    QProcess engine;
    engine.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    const QString run_dir = dir_.filePath("run");
    engine.start(TD_ENGINE_EXE, {"train", "--config", tiny.cfg, "--out", run_dir, "--set", "train.steps=100000000",
                                 "--set", "train.checkpoint_interval=0", "--metrics-port", "0", "--quiet"});
    QVERIFY(engine.waitForStarted());
    auto cleanup = qScopeGuard([&] {
      engine.terminate();
      if (!engine.waitForFinished(60000)) engine.kill();
    });
    const QString events = run_dir + "/events.jsonl";
    std::string url, run_id;
    QTRY_VERIFY2_WITH_TIMEOUT(
        [&] {
          if (!QFile::exists(events)) return false;
          const auto ev = tdtest::read_events(events);
          const auto starts = tdtest::events_of_type(ev, "run_start");
          if (starts.empty() || tdtest::events_of_type(ev, "step").size() < 3) return false;
          url = starts[0].value("metrics_url", "");
          run_id = starts[0].value("run_id", "");
          return true;
        }(),
        "waited for run_start and three steps in events.jsonl", 300000);
    QVERIFY2(url.rfind("http://127.0.0.1:", 0) == 0 && url.size() > 25, url.c_str());
    const std::string target = url.substr(7, url.find("/metrics") - 7);

    const int web = tdtest::free_tcp_port();
    QVERIFY(web > 0);
    const QString cfg = dir_.filePath("prometheus.yml");
    tdtest::write_file(cfg, QByteArray::fromStdString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                                                      "scrape_configs:\n  - job_name: traindeck\n    static_configs:\n"
                                                      "      - targets: ['" + target + "']\n"));
    QProcess prom;
    prom.setProcessChannelMode(QProcess::MergedChannels);
    prom.start(prometheus, {"--config.file=" + cfg, "--storage.tsdb.path=" + dir_.filePath("tsdb"),
                            QString("--web.listen-address=127.0.0.1:%1").arg(web)});
    QVERIFY(prom.waitForStarted());
    auto stop_prom = qScopeGuard([&] {
      prom.terminate();
      if (!prom.waitForFinished(60000)) prom.kill();
    });

    // One instant query for the three series, so they come from the same scrape.
    const std::string query = "/api/v1/query?query=" +
                              url_encode("{__name__=~\"traindeck_(step|loss|tokens_per_s)\",run_id=\"" + run_id + "\"}");
    std::map<std::string, std::string> got;  // series name -> value text
    json labels;
    QTRY_VERIFY2_WITH_TIMEOUT(
        [&] {
          const json r = json::parse(http_get(web, query), nullptr, false);
          if (r.is_discarded() || r.value("status", "") != "success") return false;
          got.clear();
          for (const auto& s : r["data"]["result"]) {
            labels = s["metric"];
            got[s["metric"].value("__name__", "")] = s["value"][1].get<std::string>();
          }
          return got.size() == 3;
        }(),
        qPrintable("waited for Prometheus to scrape the run's step, loss and tokens/s" + QString::fromLatin1(prom.readAll())),
        300000);
    QCOMPARE(labels.value("rank", ""), std::string("0"));
    QVERIFY(!labels.value("host", "").empty());
    QCOMPARE(labels.value("job", ""), std::string("traindeck"));
    const int step = std::stoi(got["traindeck_step"]);
    QVERIFY(step >= 1);
    // The events file has that step (it is written before the next one's figures are served).
    const auto steps = tdtest::events_of_type(tdtest::read_events(events), "step");
    const json* row = nullptr;
    for (const auto& s : steps)
      if (s["step"].get<int>() == step) row = &s;
    QVERIFY2(row, ("step " + std::to_string(step) + " is not in events.jsonl").c_str());
    // Prometheus keeps float64 and prints the shortest text that reads back: equal doubles.
    QCOMPARE(std::stod(got["traindeck_loss"]), (*row)["loss"].get<double>());
    QCOMPARE(std::stod(got["traindeck_tokens_per_s"]), (*row)["tokens_per_s"].get<double>());
  }
};

QTEST_GUILESS_MAIN(TestPrometheus)
#include "test_prometheus.moc"
