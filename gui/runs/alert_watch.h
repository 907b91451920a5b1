// AlertWatch: the workbench's side of the alerts (issue 16 section 3, docs/events.md "Alerts"),
// the ONE place where followed runs are watched for them. Fed by the RunTargets router's signals
// (every target's runs: this machine, SSH nodes and clusters, Slurm), it
//  * evaluates the rules only a follower can see (engine/metrics/alerts.h AlertEvaluator, with
//    the thresholds of the run's own config): a stall (no new step for max(m x the median step
//    time, floor)), a remote run's connection down for longer than train.alert_connection_lost_s
//    (the target's RunTargetState::connection is Reconnecting; no stall is judged meanwhile), a
//    rank or node lost (a rank the target reports gone while the run goes on,
//    RunTargetState::lost_ranks, or a failed run whose end names one; none is added to an attempt
//    that already has one, e.g. the engine's own when a collective failed), the run's end
//    (completed, stopped, failed), and writes each into the store (Store::add_alert, kept once);
//  * hands every alert of the run not notified yet (the engine's, ingested from its events, and
//    its own; Store::take_unnotified_alerts: once each, also for those written while no
//    workbench followed the run, at reattach) to the AlertNotifier, which shows the kinds the
//    person chose (Settings) through the desktop;
//  * emits alertsChanged() so that the sidebar's badges and the run page's line refresh.
//
// Threading rule: a GUI-thread QObject (Qt Core only); store work goes through StoreClient jobs,
// so no call blocks. The stall check runs on a timer (checkIntervalMs, default 5 s) and measures
// time with a monotonic clock since the step count last advanced.
#pragma once

#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <QString>
#include <QTimer>

#include <functional>
#include <memory>

#include "engine/metrics/alerts.h"
#include "store/types.h"

namespace td::gui {

class RunTarget;
class StoreClient;

/// Shows alerts on the desktop, the kinds the person enabled (QSettings "alerts/notify/<kind>",
/// default on for every kind). The backend is injectable: the workbench's shows a tray balloon
/// or a freedesktop notification (gui/app/desktop_notify.h); tests record what was sent.
class AlertNotifier : public QObject {
  Q_OBJECT
 public:
  /// title: "TrainDeck: <run>", body: the alert's message, severity: "info", "warning",
  /// "critical". Returns whether something was shown (false: no desktop service; never an error).
  using Backend = std::function<bool(const QString& title, const QString& body, const QString& severity)>;
  explicit AlertNotifier(QObject* parent = nullptr) : QObject(parent) {}
  void setBackend(Backend b) { backend_ = std::move(b); }
  bool hasBackend() const { return bool(backend_); }
  /// Whether alerts of `kind` (alerts::kind_name) notify: QSettings alerts/notify/<kind>.
  static bool notifies(const QString& kind);
  static void setNotifies(const QString& kind, bool on);
  /// The English name people read for a kind ("Loss spike"), translated.
  static QString kindLabel(const QString& kind);
  /// Shows `a` of run `run_label` when its kind notifies and a backend is set; returns whether shown.
  bool notify(const QString& run_label, const td::store::RunAlert& a);

  /// Seconds between two notifications of one kind for one run (coalesce()).
  static constexpr qint64 kCoalesceS = 60;
  /// Shows the alerts of run `run_id` (named `run_label`) coalesced, so that a rule that fires
  /// often never floods the desktop: one notification per kind (the newest alert's message, with
  /// "(+N more)" for the others), and at most one per run and kind per kCoalesceS seconds; the
  /// alerts held back meanwhile are counted into the next one of that kind. Every alert stays in
  /// the store and the run's badge either way. Returns how many notifications were shown.
  int coalesce(const QString& run_id, const QString& run_label, const std::vector<td::store::RunAlert>& alerts);
  /// The clock coalesce() reads (milliseconds, monotonic); tests set their own.
  void setClock(std::function<qint64()> now_ms) { now_ms_ = std::move(now_ms); }

 signals:
  /// Every alert notify() showed (for the log and tests).
  void shown(const QString& title, const QString& body, const QString& severity);

 private:
  Backend backend_;
  std::function<qint64()> now_ms_;
  struct Recent {
    qint64 shown_ms = -1;  // when the last notification of this run and kind was shown (-1: never)
    int held = 0;         // alerts of this run and kind not shown since
  };
  QHash<QString, Recent> recent_;  // by run id + '\n' + kind
};

class AlertWatch : public QObject {
  Q_OBJECT
 public:
  /// Watches the runs of `targets` (normally the RunTargets router). The notifier may be null
  /// (alerts are then stored, not shown).
  AlertWatch(RunTarget* targets, AlertNotifier* notifier, QObject* parent = nullptr);
  ~AlertWatch() override;
  void setStoreClient(StoreClient* store);
  /// Milliseconds between stall checks (default 5000).
  void setCheckIntervalMs(int ms);
  /// Runs watched now (followed and not ended).
  QStringList watchedRuns() const { return runs_.keys(); }

 signals:
  /// The run's alerts in the store changed (a new one; the badge and run page re-read them).
  void alertsChanged(const QString& run_id);

 private:
  struct Watched {
    std::shared_ptr<td::alerts::AlertEvaluator> eval;  // null until the run's config is read
    qint64 last_step = -1;
    QElapsedTimer since_step;  // restarted whenever last_step advances (or watching begins)
    QElapsedTimer lost;        // valid while a remote target reports the connection down
    QSet<QString> lost_ranks;  // the target's lost ranks already alerted ("rank 1 on node-b")
    bool ended = false;
  };
  void watch(const QString& run_id);
  void onIngested(const QString& run_id, qint64 last_step);
  void onEnded(const QString& run_id, const QString& status);
  void onState(const QString& run_id);
  void checkStalls();
  /// Stores `a` (when set) and then notifies every alert of the run not notified yet.
  void storeAndNotify(const QString& run_id, std::optional<td::store::RunAlert> a);

  QPointer<RunTarget> targets_;
  QPointer<AlertNotifier> notifier_;
  QPointer<StoreClient> store_;
  QHash<QString, Watched> runs_;
  QTimer timer_;
};

}  // namespace td::gui
