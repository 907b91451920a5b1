#include "gui/runs/alert_watch.h"

#include <QCoreApplication>
#include <QRegularExpression>
#include <QSettings>

#include <algorithm>
#include <cmath>

#include "engine/common/error.h"
#include "engine/config.h"
#include "gui/core/store_client.h"
#include "gui/runs/run_target.h"
#include "store/store.h"

namespace td::gui {

namespace {

using td::store::RunAlert;

RunAlert to_row(const td::alerts::Alert& a) {
  RunAlert r;
  r.source = "workbench";
  r.kind = std::string(td::alerts::kind_name(a.kind));
  r.severity = std::string(td::alerts::severity_name(a.severity));
  r.message = a.message;
  r.step = a.step;
  if (std::isfinite(a.value)) r.value = a.value;
  if (std::isfinite(a.threshold)) r.threshold = a.threshold;
  return r;
}

// The thresholds of the run's own config (train.alert_*), else the defaults: a config a newer
// engine wrote, or none, must not stop the watch.
td::alerts::AlertRules rules_of(const std::string& config_json) {
  if (config_json.empty()) return {};
  try {
    return td::alert_rules(td::parse_config(nlohmann::json::parse(config_json)).train);
  } catch (const std::exception&) {
    return {};
  }
}

// A failed run whose end names a lost rank or node: the engine's failed collective ("<op> on
// rank N failed after S s: rank M (host) ...", engine/dist/gloo_communicator.cpp) or a Slurm
// node failure (remote/slurm.cpp: "NODE_FAIL").
bool names_lost_rank(const std::string& reason) {
  return reason.find("NODE_FAIL") != std::string::npos ||
         (reason.find(" on rank ") != std::string::npos && reason.find(" failed after ") != std::string::npos);
}

// Who such a reason names: the failed collective's "rank N (host H)" after its " failed after
// S s: ", else "a node" (Slurm's NODE_FAIL), else "a rank".
std::string lost_rank_of(const std::string& reason) {
  static const QRegularExpression kRank(QStringLiteral(" failed after [0-9.]+ s: (rank [0-9]+ \\(host [^)]*\\))"));
  const auto m = kRank.match(QString::fromStdString(reason));
  if (m.hasMatch()) return m.captured(1).toStdString();
  return reason.find("NODE_FAIL") != std::string::npos ? "a node" : "a rank";
}

// Whether the run's newest attempt has a rank_lost alert already (the engine's, written by rank
// 0 when a collective failed, or the workbench's from a target's report): one loss, one alert.
bool has_rank_lost(td::store::Store& s, const std::string& run_id) {
  const auto info = s.find_run(run_id);
  if (!info) return false;
  for (const auto& a : s.alerts(run_id))
    if (a.kind == "rank_lost" && a.attempt >= info->attempts - 1) return true;
  return false;
}

}  // namespace

bool AlertNotifier::notifies(const QString& kind) {
  return QSettings().value(QStringLiteral("alerts/notify/") + kind, true).toBool();
}

void AlertNotifier::setNotifies(const QString& kind, bool on) { QSettings().setValue(QStringLiteral("alerts/notify/") + kind, on); }

QString AlertNotifier::kindLabel(const QString& kind) {
  static const char* const kLabels[][2] = {
      {"nonfinite", QT_TRANSLATE_NOOP("td::gui::AlertNotifier", "Non-finite loss or gradient")},
      {"loss_spike", QT_TRANSLATE_NOOP("td::gui::AlertNotifier", "Loss spike")},
      {"throughput_drop", QT_TRANSLATE_NOOP("td::gui::AlertNotifier", "Throughput drop")},
      {"stall", QT_TRANSLATE_NOOP("td::gui::AlertNotifier", "Stall (no step)")},
      {"disk_low", QT_TRANSLATE_NOOP("td::gui::AlertNotifier", "Disk nearly full")},
      {"rank_lost", QT_TRANSLATE_NOOP("td::gui::AlertNotifier", "Rank or node lost")},
      {"connection_lost", QT_TRANSLATE_NOOP("td::gui::AlertNotifier", "Connection lost")},
      {"run_end", QT_TRANSLATE_NOOP("td::gui::AlertNotifier", "Run ended")},
  };
  for (const auto& l : kLabels)
    if (kind == QLatin1String(l[0])) return QCoreApplication::translate("td::gui::AlertNotifier", l[1]);
  return kind;
}

bool AlertNotifier::notify(const QString& run_label, const RunAlert& a) {
  const QString kind = QString::fromStdString(a.kind);
  if (!backend_ || !notifies(kind)) return false;
  const QString title = tr("TrainDeck: %1 — %2").arg(run_label, kindLabel(kind));
  const QString body = QString::fromStdString(a.message);
  const QString severity = QString::fromStdString(a.severity);
  bool ok = false;
  try {
    ok = backend_(title, body, severity);
  } catch (...) {
    ok = false;  // a desktop without notifications is never an error
  }
  if (ok) emit shown(title, body, severity);
  return ok;
}

int AlertNotifier::coalesce(const QString& run_id, const QString& run_label, const std::vector<RunAlert>& alerts) {
  if (!now_ms_) {
    auto clock = std::make_shared<QElapsedTimer>();
    clock->start();
    now_ms_ = [clock] { return clock->elapsed(); };
  }
  // Newest alert and count per kind, in the order kinds first appear.
  std::vector<std::pair<QString, std::pair<const RunAlert*, int>>> kinds;
  for (const auto& a : alerts) {
    const QString kind = QString::fromStdString(a.kind);
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == kind; });
    if (it == kinds.end()) kinds.push_back({kind, {&a, 1}});
    else it->second = {&a, it->second.second + 1};
  }
  const qint64 now = now_ms_();
  int shown = 0;
  for (const auto& [kind, newest] : kinds) {
    Recent& r = recent_[run_id + QLatin1Char('\n') + kind];
    const int count = newest.second + r.held;
    if (r.shown_ms >= 0 && now - r.shown_ms < kCoalesceS * 1000) {
      r.held = count;  // told with the next one
      continue;
    }
    RunAlert a = *newest.first;
    if (count > 1) a.message += " " + tr("(+%1 more alerts of this kind)").arg(count - 1).toStdString();
    if (notify(run_label, a)) {
      ++shown;
      r.shown_ms = now;
      r.held = 0;
    }
  }
  return shown;
}

AlertWatch::AlertWatch(RunTarget* targets, AlertNotifier* notifier, QObject* parent)
    : QObject(parent), targets_(targets), notifier_(notifier) {
  timer_.setInterval(5000);
  connect(&timer_, &QTimer::timeout, this, &AlertWatch::checkStalls);
  if (targets) {
    connect(targets, &RunTarget::runStarted, this, &AlertWatch::watch);
    connect(targets, &RunTarget::runAttached, this, &AlertWatch::watch);
    connect(targets, &RunTarget::runIngested, this, &AlertWatch::onIngested);
    connect(targets, &RunTarget::runEnded, this, &AlertWatch::onEnded);
    connect(targets, &RunTarget::stateChanged, this, &AlertWatch::onState);
  }
}

AlertWatch::~AlertWatch() = default;

void AlertWatch::setStoreClient(StoreClient* store) {
  store_ = store;
  runs_.clear();
}

void AlertWatch::setCheckIntervalMs(int ms) { timer_.setInterval(ms); }

void AlertWatch::watch(const QString& run_id) {
  Watched& w = runs_[run_id];
  w.ended = false;
  w.since_step.start();
  if (!timer_.isActive()) timer_.start();
  if (!store_) return;
  // The run's thresholds, and whatever alerts it has that were never shown (written while no
  // workbench followed it: they appear now, at reattach).
  store_->run<std::string>(
      this,
      [id = run_id.toStdString()](td::store::Store& s) {
        const auto info = s.find_run(id);
        return info ? info->config_json : std::string();
      },
      [this, run_id](std::string config) {
        auto it = runs_.find(run_id);
        if (it == runs_.end()) return;
        it->eval = std::make_shared<td::alerts::AlertEvaluator>(rules_of(config));
        storeAndNotify(run_id, std::nullopt);
      },
      [](const QString&) {});
}

void AlertWatch::onIngested(const QString& run_id, qint64 last_step) {
  if (!runs_.contains(run_id)) watch(run_id);
  Watched& w = runs_[run_id];
  if (last_step > w.last_step) {
    w.last_step = last_step;
    w.since_step.restart();
    if (store_)
      store_->run<std::vector<double>>(
          this, [id = run_id.toStdString()](td::store::Store& s) { return s.recent_metric_values(id, "step_ms", 0, 50); },
          [this, run_id, last_step](std::vector<double> ms) {
            auto it = runs_.find(run_id);
            if (it == runs_.end() || !it->eval) return;
            for (double& x : ms) x *= 1e-3;
            it->eval->note_steps(last_step, ms);
          },
          [](const QString&) {});
  }
  storeAndNotify(run_id, std::nullopt);  // the engine's alerts that came with these rows
}

void AlertWatch::onEnded(const QString& run_id, const QString& status) {
  runs_[run_id].ended = true;
  if (!store_) return;
  // The end (and a lost rank) from the store's view of the run: its last step and reason.
  store_->run<std::vector<RunAlert>>(
      this,
      [id = run_id.toStdString(), st = status.toStdString()](td::store::Store& s) {
        std::vector<RunAlert> out;
        const auto info = s.find_run(id);
        if (!info) return out;
        const int64_t step = info->last_step.value_or(0);
        if (st == "failed" && names_lost_rank(info->end_reason) && !has_rank_lost(s, id))
          out.push_back(to_row(td::alerts::rank_lost(step, lost_rank_of(info->end_reason), info->end_reason)));
        out.push_back(to_row(td::alerts::run_ended(step, st, info->end_reason)));
        for (const auto& a : out) s.add_alert(id, a);
        return out;
      },
      [this, run_id](std::vector<RunAlert>) {
        storeAndNotify(run_id, std::nullopt);
        runs_.remove(run_id);
        if (runs_.isEmpty()) timer_.stop();
      },
      [](const QString&) {});
}

// A remote target's state while Running (RunTargetState: the SSH and Slurm targets set
// connection and lost_ranks): the connection's loss starts the connection_lost clock (no stall
// is judged meanwhile), its return restarts the stall clock and re-arms the rule; each rank the
// target newly reports gone is a rank_lost alert.
void AlertWatch::onState(const QString& run_id) {
  auto it = runs_.find(run_id);
  if (it == runs_.end() || !targets_) return;
  const RunTargetState st = targets_->state(run_id);
  if (st.phase != RunTargetState::Phase::Running) return;
  using Connection = RunTargetState::Connection;
  if (st.connection == Connection::Connected) {
    if (it->lost.isValid()) it->since_step.restart();  // steps come again from now on
    it->lost.invalidate();
    if (it->eval) it->eval->check_connection(0);  // re-arms
  } else if (st.connection == Connection::Reconnecting && !it->lost.isValid()) {
    it->lost.start();
  }
  for (const QString& who : st.lost_ranks) {
    if (it->lost_ranks.contains(who)) continue;
    it->lost_ranks.insert(who);
    const qint64 step = std::max<qint64>(it->last_step, 0);
    storeAndNotify(run_id, to_row(td::alerts::rank_lost(step, who.toStdString(),
                                                        "its engine process is gone from the node while rank 0 goes on")));
  }
}

void AlertWatch::checkStalls() {
  for (auto it = runs_.begin(); it != runs_.end(); ++it) {
    Watched& w = it.value();
    if (w.ended || !w.eval) continue;
    if (targets_) {
      const auto phase = targets_->state(it.key()).phase;
      if (phase != RunTargetState::Phase::Running && phase != RunTargetState::Phase::Unknown) continue;
    }
    if (w.lost.isValid()) {  // the connection is down: that, not a stall
      if (auto a = w.eval->check_connection(w.lost.elapsed() / 1000.0)) storeAndNotify(it.key(), to_row(*a));
      continue;
    }
    if (auto a = w.eval->check_stall(w.since_step.elapsed() / 1000.0)) storeAndNotify(it.key(), to_row(*a));
  }
}

void AlertWatch::storeAndNotify(const QString& run_id, std::optional<RunAlert> a) {
  if (!store_) return;
  struct Out {
    std::vector<RunAlert> fresh;
    std::string label;
    bool added = false;
  };
  store_->run<Out>(
      this,
      [id = run_id.toStdString(), a](td::store::Store& s) {
        Out o;
        if (a && !(a->kind == "rank_lost" && has_rank_lost(s, id))) o.added = s.add_alert(id, *a);
        o.fresh = s.take_unnotified_alerts(id);
        if (const auto info = s.find_run(id)) o.label = info->display_name();
        return o;
      },
      [this, run_id](Out o) {
        if (o.fresh.empty() && !o.added) return;
        if (notifier_) notifier_->coalesce(run_id, o.label.empty() ? run_id : QString::fromStdString(o.label), o.fresh);
        emit alertsChanged(run_id);
      },
      [](const QString&) {});
}

}  // namespace td::gui
