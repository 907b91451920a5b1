#include "gui/plan/planner.h"

#include <QProcess>
#include <QTimer>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/metrics/calibrate.h"
#include "engine/metrics/sysinfo.h"
#include "engine/model/tensor_parallel.h"
#include "engine/plan/compare.h"
#include "gui/core/paths.h"

namespace td::gui {

// Plan-vs-measured (engine/plan/compare.h) plans CPU runs at the MFU this designer assumes.
static_assert(Planner::kDefaultCpuMfu == td::kPlanCpuMfu);

namespace {

using json = nlohmann::json;

// A placeholder dataset path: the plan does not depend on the data, and data.path is checked
// on its own.
const char* const kPlaceholderDataPath = "(dataset)";

QString messageOf(const td::ConfigError& e) {
  std::string w = e.what();
  const std::string prefix = e.path() + ": ";
  if (w.rfind(prefix, 0) == 0) w = w.substr(prefix.size());
  return QString::fromStdString(w);
}

const std::vector<std::string>& fieldPaths() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> v;
    for (const auto& d : td::config_field_docs()) v.push_back(d.path);
    return v;
  }();
  return paths;
}

bool isIntegral(const json& v) {
  return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
}

// The other side of each cross-field rule of td::parse_config (engine/config.cpp), set so that
// the rule cannot fail while one field is checked alone: its own range and type decide.
json neutralContext(const std::string& path, const json& value) {
  json ctx = json::object();
  // A family's own field is checked in that family (else it is an error of the family rule,
  // which the whole-document check reports).
  for (const auto& d : td::config_field_docs())
    if (d.path == path && !d.families.empty()) ctx["model"]["family"] = d.families.front();
  if (path == "model.n_kv_head") {
    // n_head = n_kv_head (and d_model = 2 n_kv_head, an even head size): every count divides itself.
    if (isIntegral(value) && value.get<double>() >= 1 && value.get<double>() <= 1024) {
      ctx["model"]["n_head"] = value;
      ctx["model"]["d_model"] = 2 * value.get<int>();
    }
  } else if (path == "model.d_model") {
    ctx["model"]["n_head"] = 1;  // every d_model is a multiple of 1
  } else if (path == "model.n_head") {
    if (isIntegral(value) && value.get<double>() >= 1 && value.get<double>() <= 65536)
      ctx["model"]["d_model"] = value;  // n_head divides itself
  } else if (path == "train.lr") {
    ctx["train"]["min_lr"] = 0.0;  // min_lr <= lr for every allowed lr (lr > 0)
  } else if (path == "train.min_lr") {
    ctx["train"]["lr"] = 10.0;  // the largest lr allowed
  } else if (path == "train.precision") {
    ctx["train"]["device"] = "cuda";  // bf16 needs a CUDA device
  }
  return ctx;
}

// Checks one field alone; returns its message, or "" when its value is valid.
std::optional<QString> checkAlone(const std::string& section, const std::string& name, const json* value) {
  const std::string path = section + "." + name;
  json doc = value ? neutralContext(path, *value) : json::object();
  if (!doc.contains(section)) doc[section] = json::object();
  if (value) doc[section][name] = *value;
  if (path != "data.path") doc["data"]["path"] = kPlaceholderDataPath;
  try {
    td::parse_config(doc);
  } catch (const td::ConfigError& e) {
    if (e.path() == path) return messageOf(e);
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// Field paths a message names ("... must be a multiple of model.n_head = 6").
std::vector<std::string> pathsNamedIn(const std::string& message) {
  std::vector<std::string> out;
  for (const auto& p : fieldPaths()) {
    size_t at = message.find(p);
    while (at != std::string::npos) {
      const size_t end = at + p.size();
      const bool word_end = end == message.size() || !(std::isalnum((unsigned char)message[end]) || message[end] == '_');
      if (word_end) {
        out.push_back(p);
        break;
      }
      at = message.find(p, at + 1);
    }
  }
  return out;
}

bool eraseField(json& doc, const std::string& path) {
  const auto dot = path.find('.');
  if (dot == std::string::npos) return doc.is_object() && doc.erase(path) > 0;
  const std::string sec = path.substr(0, dot), name = path.substr(dot + 1);
  if (!doc.is_object() || !doc.contains(sec) || !doc[sec].is_object()) return false;
  return doc[sec].erase(name) > 0;
}

struct Checked {
  QMap<QString, QString> errors;
  std::optional<td::RunConfig> config;  // the document with the invalid fields at their defaults
};

Checked checkDocument(const json& doc) {
  Checked out;
  if (!doc.is_object()) {
    try {
      td::parse_config(doc);
    } catch (const td::ConfigError& e) {
      out.errors.insert(QString::fromStdString(e.path()), messageOf(e));
    }
    return out;
  }
  // 1. Each field alone: type and range, and the rules that concern only itself.
  json work = doc;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& sec = it.key();
    if (!it.value().is_object() || (sec != "model" && sec != "train" && sec != "data")) {
      try {
        td::parse_config(json{{sec, it.value()}});
      } catch (const td::ConfigError& e) {
        out.errors.insert(QString::fromStdString(e.path()), messageOf(e));
      }
      work.erase(sec);
      continue;
    }
    for (auto f = it.value().begin(); f != it.value().end(); ++f) {
      if (auto msg = checkAlone(sec, f.key(), &f.value())) {
        out.errors.insert(QString::fromStdString(sec + "." + f.key()), *msg);
        eraseField(work, sec + "." + f.key());
      }
    }
  }
  const bool has_path = doc.contains("data") && doc["data"].is_object() && doc["data"].contains("path");
  if (!has_path && !out.errors.contains("data")) {
    if (auto msg = checkAlone("data", "path", nullptr)) out.errors.insert("data.path", *msg);
  }
  // 2. The whole document (invalid fields left at their defaults): the cross-field rules.
  if (!work.contains("data") || !work["data"].is_object()) work["data"] = json::object();
  work["data"]["path"] = kPlaceholderDataPath;
  for (int round = 0; round < 16; ++round) {
    try {
      out.config = td::parse_config(work);
      break;
    } catch (const td::ConfigError& e) {
      const QString msg = messageOf(e);
      std::vector<std::string> involved = pathsNamedIn(msg.toStdString());
      involved.insert(involved.begin(), e.path());
      bool progress = false;
      for (const auto& p : involved) {
        if (!out.errors.contains(QString::fromStdString(p))) out.errors.insert(QString::fromStdString(p), msg);
        progress |= eraseField(work, p);
      }
      if (!progress) break;
    } catch (const std::exception&) {
      break;
    }
  }
  // Tensor parallelism's rules on the model (n_head, n_kv_head, d_ff multiples of the degree)
  // and precision, as the trainer checks them (the config parser does not: tp_config_problem).
  if (out.config && !out.errors.contains("train.tensor_parallel")) {
    const std::string why = td::tp_config_problem(out.config->model, out.config->train.tensor_parallel, out.config->train.precision);
    if (!why.empty()) out.errors.insert("train.tensor_parallel", QString::fromStdString(why));
  }
  return out;
}

}  // namespace

Planner::Planner(QObject* parent) : QObject(parent), engine_(engineExecutable()) {}

Planner::~Planner() {
  for (QProcess* p : {proc_.data(), devices_proc_.data()}) {
    if (!p) continue;
    p->disconnect(this);
    p->kill();
    p->waitForFinished(1000);
  }
}

QList<EngineDevice> parseEngineDevices(const QByteArray& json_text, QString* error, QString* cuda_error) {
  QList<EngineDevice> out;
  const json j = json::parse(json_text.constData(), json_text.constData() + json_text.size(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("devices") || !j["devices"].is_array()) {
    if (error) *error = Planner::tr("the engine's device list is not the JSON `traindeck-engine devices` prints: %1")
                            .arg(QString::fromUtf8(json_text.left(200)));
    return out;
  }
  for (const json& d : j["devices"]) {
    if (!d.is_object() || !d.contains("device") || !d["device"].is_string()) continue;
    EngineDevice e;
    e.device = QString::fromStdString(d["device"].get<std::string>());
    e.name = QString::fromStdString(d.value("name", std::string()));
    if (d.contains("memory_bytes") && d["memory_bytes"].is_number_unsigned()) e.memory_bytes = d["memory_bytes"].get<quint64>();
    if (d.contains("compute_capability") && d["compute_capability"].is_number_integer())
      e.compute_capability = d["compute_capability"].get<int>();
    out.append(e);
  }
  if (cuda_error) *cuda_error = QString::fromStdString(j.value("cuda_error", std::string()));
  if (error) error->clear();
  return out;
}

void Planner::probeDevices() {
  if (devices_proc_) return;
  const EngineDevice cpu{QStringLiteral("cpu"), QString::fromStdString(td::cpu_model()), 0, 0};
  if (engine_.isEmpty()) {
    QTimer::singleShot(0, this, [this, cpu] {
      emit devicesFound({cpu}, tr("The engine (traindeck-engine) was not found, so no GPU is listed: build it, or set TRAINDECK_ENGINE."));
    });
    return;
  }
  devices_proc_ = new QProcess(this);
  devices_proc_->setProgram(engine_);
  devices_proc_->setArguments({QStringLiteral("devices")});
  connect(devices_proc_, &QProcess::errorOccurred, this, [this, cpu](QProcess::ProcessError err) {
    if (err != QProcess::FailedToStart || !devices_proc_) return;
    const QString why = devices_proc_->errorString();
    devices_proc_->deleteLater();
    devices_proc_ = nullptr;
    emit devicesFound({cpu}, tr("Could not start the engine '%1' to list its GPUs: %2").arg(engine_, why));
  });
  connect(devices_proc_, &QProcess::finished, this, [this, cpu](int code, QProcess::ExitStatus status) {
    if (!devices_proc_) return;
    const QByteArray out = devices_proc_->readAllStandardOutput();
    const QString err = QString::fromLocal8Bit(devices_proc_->readAllStandardError()).trimmed();
    devices_proc_->deleteLater();
    devices_proc_ = nullptr;
    QString parse_error, cuda_error;
    QList<EngineDevice> list = status == QProcess::NormalExit && code == 0 ? parseEngineDevices(out, &parse_error, &cuda_error)
                                                                           : QList<EngineDevice>{};
    if (list.isEmpty()) {
      emit devicesFound({cpu}, status != QProcess::NormalExit || code != 0
                                   ? tr("`traindeck-engine devices` failed (exit code %1): %2").arg(code).arg(err)
                                   : parse_error);
      return;
    }
    emit devicesFound(list, cuda_error);
  });
  devices_proc_->start();
}

const QList<FieldInfo>& Planner::fieldDocs() {
  static const QList<FieldInfo> docs = [] {
    auto families = [](const std::vector<std::string>& names) {
      QStringList out;
      for (const std::string& n : names) out << QString::fromStdString(n);
      return out;
    };
    QList<FieldInfo> v;
    for (const auto& d : td::config_field_docs())
      v.append({QString::fromStdString(d.path), QString::fromStdString(d.default_value),
                QString::fromStdString(d.range), QString::fromStdString(d.meaning), families(d.families)});
    return v;
  }();
  return docs;
}

FieldInfo Planner::fieldDoc(const QString& path) {
  for (const auto& d : fieldDocs())
    if (d.path == path) return d;
  return {};
}

QMap<QString, QString> Planner::fieldErrors(const nlohmann::json& doc) { return checkDocument(doc).errors; }

PlanCheck Planner::check(const nlohmann::json& doc) const {
  PlanCheck r;
  Checked c = checkDocument(doc);
  r.errors = std::move(c.errors);
  r.valid = r.errors.isEmpty() && c.config.has_value();
  r.has_plan = c.config.has_value();
  for (auto it = r.errors.constBegin(); it != r.errors.constEnd() && r.has_plan; ++it)
    if (it.key() != QLatin1String("data.path")) r.has_plan = false;
  r.threads = resolveThreads(c.config ? c.config->train.threads : 0);
  r.peak_flops = peakFlops(r.threads);
  // Runs measured here beat the calibration, which beats the assumption.
  const std::optional<double> engine = engineMfu(r.threads);
  r.mfu = measured_mfu_ ? *measured_mfu_ : engine.value_or(kDefaultCpuMfu);
  r.mfu_basis = measured_mfu_ ? MfuBasis::Runs : engine ? MfuBasis::Calibration : MfuBasis::Assumed;
  if (!r.has_plan) return r;
  r.config = *c.config;
  r.plan = td::make_plan(r.config, 1);
  if (r.peak_flops && r.plan.flops_per_token > 0) {
    r.tokens_per_s = *r.peak_flops * r.mfu / r.plan.flops_per_token;
    r.run_seconds = (double)r.config.train.steps * (double)r.plan.tokens_per_step / r.tokens_per_s;
  }
  return r;
}

void Planner::setMeasuredMfu(double mfu) {
  std::optional<double> v;
  if (std::isfinite(mfu) && mfu > 0 && mfu <= 1) v = mfu;
  if (v == measured_mfu_) return;
  measured_mfu_ = v;
  emit estimatesChanged();
}

double Planner::mfu() const {
  if (measured_mfu_) return *measured_mfu_;
  return engineMfu(0).value_or(kDefaultCpuMfu);
}

std::optional<double> Planner::engineMfu(int threads) const {
  threads = resolveThreads(threads);
  auto it = engine_mfu_memo_.constFind(threads);
  if (it != engine_mfu_memo_.constEnd()) return *it;
  std::optional<double> v = td::cached_engine_mfu(threads);
  engine_mfu_memo_.insert(threads, v);
  return v;
}

int Planner::resolveThreads(int threads) { return threads > 0 ? threads : td::cpu_cores(); }

std::optional<double> Planner::peakFlops(int threads) const {
  threads = resolveThreads(threads);
  auto it = peak_memo_.constFind(threads);
  if (it != peak_memo_.constEnd()) return *it;
  std::optional<double> peak = td::cached_peak_flops(threads);
  peak_memo_.insert(threads, peak);
  return peak;
}

void Planner::reloadCalibration() {
  peak_memo_.clear();
  engine_mfu_memo_.clear();
  devices_.reset();  // the "cpu" entry's peak comes from the calibration cache
  emit estimatesChanged();
}

const td::DeviceCatalogue& Planner::devices() const {
  if (!devices_) {
    devices_error_.clear();
    try {
      devices_ = td::load_device_catalogue();
    } catch (const std::exception& e) {
      devices_error_ = tr("Your device catalogue was not read (%1); the built-in devices are shown.")
                           .arg(QString::fromUtf8(e.what()));
      devices_ = td::load_device_catalogue(std::string());
    }
  }
  return *devices_;
}

QString Planner::devicesError() const {
  devices();
  return devices_error_;
}

void Planner::reloadDevices() {
  devices_.reset();
  emit estimatesChanged();
}

ClusterCheck Planner::planCluster(const PlanCheck& check, const td::ClusterOptions& o) const {
  ClusterCheck r;
  if (!check.has_plan) return r;
  try {
    r.plan = td::make_cluster_plan(check.config, devices(), o);
  } catch (const std::exception& e) {
    r.error = QString::fromUtf8(e.what());
  }
  return r;
}

bool Planner::isCalibrating() const { return proc_ != nullptr; }

void Planner::calibrate(int threads) {
  if (proc_) return;
  threads = resolveThreads(threads);
  if (engine_.isEmpty()) {
    QTimer::singleShot(0, this, [this] {
      emit calibrationFailed(tr("The engine (traindeck-engine) was not found: build it, or set "
                                "TRAINDECK_ENGINE to its path, then calibrate again."));
    });
    return;
  }
  cancelled_ = false;
  proc_threads_ = threads;
  proc_ = new QProcess(this);
  proc_->setProgram(engine_);
  proc_->setArguments({QStringLiteral("calibrate"), QStringLiteral("--threads"), QString::number(threads)});
  connect(proc_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError err) {
    if (err != QProcess::FailedToStart || !proc_) return;
    const QString why = proc_->errorString();
    proc_->deleteLater();
    proc_ = nullptr;
    emit calibrationFailed(tr("Could not start the engine '%1' to calibrate: %2. Check that "
                              "traindeck-engine is built, or set TRAINDECK_ENGINE.").arg(engine_, why));
  });
  connect(proc_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
    finishCalibration(code, status == QProcess::CrashExit);
  });
  proc_->start();
}

void Planner::cancelCalibration() {
  if (!proc_) return;
  cancelled_ = true;
  proc_->kill();
}

void Planner::finishCalibration(int exit_code, bool crashed) {
  if (!proc_) return;
  QString err = QString::fromLocal8Bit(proc_->readAllStandardError()).trimmed();
  proc_->deleteLater();
  proc_ = nullptr;
  if (cancelled_) {
    emit calibrationFailed(tr("Calibration cancelled."));
    return;
  }
  if (crashed || exit_code != 0) {
    const QStringList lines = err.split('\n', Qt::SkipEmptyParts);
    const QString tail = lines.mid(std::max<qsizetype>(0, lines.size() - 5)).join('\n');
    emit calibrationFailed(crashed ? tr("The engine crashed while calibrating. %1").arg(tail)
                                   : tr("Calibration failed (engine exit code %1): %2").arg(exit_code).arg(tail));
    return;
  }
  peak_memo_.clear();
  engine_mfu_memo_.clear();
  devices_.reset();
  std::optional<double> peak = peakFlops(proc_threads_);
  if (!peak) {
    emit calibrationFailed(tr("The engine finished, but its calibration cache %1 holds no peak for %2 "
                              "threads on this CPU.")
                               .arg(QString::fromStdString(td::calibration_cache_path()))
                               .arg(proc_threads_));
    return;
  }
  emit calibrationFinished(*peak, proc_threads_);
  emit estimatesChanged();
}

}  // namespace td::gui
