#include "engine/metrics/prometheus.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "engine/common/error.h"

namespace td {

namespace {

std::string metric_name(const std::string& name) {
  std::string out = "traindeck_";
  for (char c : name) out += ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
  return out;
}

std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The numbers among an event's top-level fields (bools and strings are not figures).
void numbers_of(const nlohmann::json& j, std::map<std::string, double>& out) {
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it->is_number()) out[it.key()] = it->get<double>();
}

}  // namespace

std::string prometheus_text(const std::vector<PromSample>& samples) {
  std::vector<std::string> order;
  std::map<std::string, std::string> body;
  for (const PromSample& s : samples) {
    const std::string name = metric_name(s.name);
    if (!body.count(name)) order.push_back(name);
    std::string& b = body[name];
    b += name;
    if (!s.labels.empty()) {
      b += '{';
      for (size_t i = 0; i < s.labels.size(); ++i)
        b += (i ? "," : "") + s.labels[i].first + "=\"" + label_value(s.labels[i].second) + '"';
      b += '}';
    }
    b += ' ' + number(s.value) + '\n';
  }
  std::string out;
  for (const std::string& name : order) out += "# TYPE " + name + " gauge\n" + body[name];
  return out;
}

MetricsServer::MetricsServer(const std::string& address, int port, std::vector<std::pair<std::string, std::string>> labels)
    : address_(address), labels_(std::move(labels)), server_(std::make_unique<httplib::Server>()) {
  TD_CHECK(port >= 0 && port <= 65535, "--metrics-port " + std::to_string(port) + " is not a port (0-65535; 0 picks a free one)");
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second run on the same
  // port would bind too and scrapes would reach either run.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  port_ = port == 0 ? server_->bind_to_any_port(address) : (server_->bind_to_port(address, port) ? port : -1);
  if (port_ <= 0)
    throw Error("cannot serve Prometheus metrics on " + address + ":" + std::to_string(port) +
                ": the address is not this machine's or the port is in use; choose another --metrics-port (0 picks a free one) or --metrics-address");
  auto listening = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::thread([this, listening] {
    server_->listen_after_bind();
    *listening = true;  // returned: it will never run
  });
  // stop() is ignored until the accept loop runs, so wait for it (or for its failure).
  while (!server_->is_running() && !*listening) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

MetricsServer::~MetricsServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string MetricsServer::url() const { return "http://" + address_ + ":" + std::to_string(port_) + "/metrics"; }

void MetricsServer::observe(const std::string& type, const nlohmann::json& fields) {
  if (type != "step" && type != "eval") return;
  std::lock_guard<std::mutex> lock(mu_);
  numbers_of(fields, global_);
  if (type == "step" && fields.contains("ranks") && fields["ranks"].is_array()) {
    for (const auto& r : fields["ranks"]) {
      if (!r.is_object() || !r.contains("rank") || !r["rank"].is_number_integer()) continue;
      auto& [host, figures] = ranks_[r["rank"].get<int>()];
      if (r.contains("host") && r["host"].is_string()) host = r["host"].get<std::string>();
      numbers_of(r, figures);
      figures.erase("rank");
    }
  }
}

std::string MetricsServer::text() const {
  std::vector<PromSample> s;
  auto with = [this](std::vector<std::pair<std::string, std::string>> extra, const std::string& host) {
    std::vector<std::pair<std::string, std::string>> l;
    for (const auto& kv : labels_)
      if (kv.first != "host" || host.empty()) l.push_back(kv);
    for (auto& kv : extra) l.push_back(std::move(kv));
    if (!host.empty()) l.emplace_back("host", host);
    return l;
  };
  std::lock_guard<std::mutex> lock(mu_);
  s.push_back({"up", with({{"rank", "0"}}, ""), 1.0});
  for (const auto& [name, v] : global_) s.push_back({name, with({{"rank", "0"}}, ""), v});
  for (const auto& [rank, hf] : ranks_)
    for (const auto& [name, v] : hf.second) s.push_back({"rank_" + name, with({{"rank", std::to_string(rank)}}, hf.first), v});
  return prometheus_text(s);
}

}  // namespace td
