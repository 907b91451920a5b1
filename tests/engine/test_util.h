// Helpers shared by the engine tests: running processes, reading events files.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QtTest>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tdtest {

struct ProcResult {
  int exit_code = -1;
  QString out, err;
};

/// Runs program with args (cwd: dir when non-empty), waiting up to timeout_ms (a limit for a
/// program that hangs, generous for a loaded machine: never a measure of speed).
inline ProcResult run(const QString& program, const QStringList& args, int timeout_ms = 300000,
                      const QString& dir = {}) {
  QProcess p;
  if (!dir.isEmpty()) p.setWorkingDirectory(dir);
  p.start(program, args);
  ProcResult r;
  if (!p.waitForStarted(10000)) {
    r.err = "could not start " + program;
    return r;
  }
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out: " + program + " " + args.join(' ');
  }
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err += QString::fromUtf8(p.readAllStandardError());
  return r;
}

/// Reads p's stdout until it contains `needle` (or p ends, or timeout_ms passes); returns what
/// was read. For waiting on a running engine's first "step" event.
inline QByteArray wait_for_stdout(QProcess& p, const QByteArray& needle, int timeout_ms = 300000) {
  QByteArray seen;
  QElapsedTimer timer;
  timer.start();
  while (!seen.contains(needle) && timer.elapsed() < timeout_ms && p.state() == QProcess::Running) {
    p.waitForReadyRead(500);
    seen += p.readAllStandardOutput();
  }
  return seen;
}

inline ProcResult engine(const QStringList& args, int timeout_ms = 300000) { return run(TD_ENGINE_EXE, args, timeout_ms); }

/// All events of an events.jsonl file (each line parsed).
inline std::vector<nlohmann::json> read_events(const QString& path) {
  std::vector<nlohmann::json> ev;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return ev;
  while (!f.atEnd()) {
    QByteArray line = f.readLine().trimmed();
    if (!line.isEmpty()) ev.push_back(nlohmann::json::parse(line.toStdString()));
  }
  return ev;
}

inline std::vector<nlohmann::json> events_of_type(const std::vector<nlohmann::json>& ev, const std::string& type) {
  std::vector<nlohmann::json> out;
  for (const auto& e : ev)
    if (e.value("type", "") == type) out.push_back(e);
  return out;
}

/// The loss of every step of `ev`'s step events, index step - 1 (NaN for a step without one);
/// a later attempt's value replaces an earlier one (a resumed run repeats steps).
inline std::vector<double> step_losses(const std::vector<nlohmann::json>& ev) {
  std::vector<double> out;
  for (const auto& e : events_of_type(ev, "step")) {
    const size_t s = e["step"].get<size_t>();
    if (out.size() < s) out.resize(s, NAN);
    out[s - 1] = e["loss"].get<double>();
  }
  return out;
}
/// The same for a run directory's events.jsonl.
inline std::vector<double> step_losses(const QString& run_dir) { return step_losses(read_events(run_dir + "/events.jsonl")); }

/// A safetensors file (the engine's checkpoints are F32): its header (names, dtypes, shapes,
/// data_offsets; __metadata__) and each tensor's floats by name. Empty when it cannot be read.
struct SafeFile {
  nlohmann::json header;
  std::map<std::string, std::vector<float>> tensors;
};
inline SafeFile read_safetensors(const QString& path) {
  SafeFile s;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return s;
  const QByteArray all = f.readAll();
  uint64_t hlen = 0;
  if (all.size() < 8) return s;
  std::memcpy(&hlen, all.constData(), 8);
  s.header = nlohmann::json::parse(all.mid(8, (int)hlen).toStdString());
  const char* data = all.constData() + 8 + hlen;
  for (auto it = s.header.begin(); it != s.header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const size_t a = it.value()["data_offsets"][0], b = it.value()["data_offsets"][1];
    std::vector<float> v((b - a) / 4);
    std::memcpy(v.data(), data + a, b - a);
    s.tensors[it.key()] = std::move(v);
  }
  return s;
}

/// The newest checkpoint directory of a run ("" when none).
inline QString newest_checkpoint(const QString& run) {
  const auto dirs = QDir(run + "/checkpoints").entryList({"step_*"}, QDir::Dirs, QDir::Name);
  return dirs.isEmpty() ? QString() : run + "/checkpoints/" + dirs.last();
}

/// Largest |a - b| over every parameter of two runs' newest checkpoints (INFINITY when either
/// has none or their tensors differ in names or sizes).
inline double max_param_diff(const QString& a, const QString& b) {
  const auto pa = read_safetensors(newest_checkpoint(a) + "/model.safetensors").tensors;
  auto pb = read_safetensors(newest_checkpoint(b) + "/model.safetensors").tensors;
  if (pa.empty() || pa.size() != pb.size()) return INFINITY;
  double m = 0;
  for (const auto& [k, v] : pa) {
    const auto& w = pb[k];
    if (w.size() != v.size()) return INFINITY;
    for (size_t i = 0; i < v.size(); i++) m = std::max(m, (double)std::fabs(v[i] - w[i]));
  }
  return m;
}

/// Largest |a[i] - b[i]| / |a[i]| for i >= from (INFINITY when the lengths differ or a is empty).
inline double max_rel_loss_diff(const std::vector<double>& a, const std::vector<double>& b, size_t from = 0) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double m = 0;
  for (size_t i = from; i < a.size(); i++) m = std::max(m, std::fabs(a[i] - b[i]) / std::fabs(a[i]));
  return m;
}

inline void write_file(const QString& path, const QByteArray& data) {
  QFile f(path);
  QVERIFY2(f.open(QIODevice::WriteOnly), qPrintable(path));
  f.write(data);
}

// A small text corpus: long enough for windows of 32 tokens, varied enough to learn from.
inline QByteArray generated_text(int lines) {
  QByteArray t;
  const char* words[] = {"the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "and", "runs", "far"};
  uint64_t x = 12345;
  for (int i = 0; i < lines; i++) {
    for (int w = 0; w < 8; w++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      t += words[(x >> 33) % 12];
      t += w == 7 ? ".\n" : " ";
    }
  }
  return t;
}

/// The small run most CLI tests train. Writes `text` to <dir>/corpus.txt, prepares it byte-level
/// into <dir>/ds and writes <dir>/cfg.json on it: vocab 257, seq_len 16, 1 layer, 2 heads,
/// d_model 16; 20 steps of micro batch 4 on one thread, no evaluation or samples, a checkpoint
/// every 10 steps, 3 kept. The caller checks `prepare` (exit code 0, else its stderr says why).
struct TinyRun {
  QString data, cfg;
  ProcResult prepare;
};
inline TinyRun write_tiny_run(const QString& dir, const QByteArray& text) {
  TinyRun t;
  write_file(dir + "/corpus.txt", text);
  t.data = dir + "/ds";
  t.prepare = engine({"prepare", "--input", dir + "/corpus.txt", "--out", t.data, "--quiet"});
  const nlohmann::json c = {
      {"model", {{"vocab_size", 257}, {"seq_len", 16}, {"n_layer", 1}, {"n_head", 2}, {"d_model", 16}}},
      {"train", {{"threads", 1}, {"steps", 20}, {"micro_batch", 4}, {"eval_interval", 0}, {"sample_interval", 0},
                 {"checkpoint_interval", 10}, {"keep_checkpoints", 3}}},
      {"data", {{"path", t.data.toStdString()}}}};
  t.cfg = dir + "/cfg.json";
  write_file(t.cfg, QByteArray::fromStdString(c.dump()));
  return t;
}

// A TCP port free on 127.0.0.1 now (the kernel's choice for port 0, released at once); 0 when
// the socket calls fail.
inline int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

}  // namespace tdtest
