// Helpers for tests that drive run targets through their interface (gui/runs/run_target.h).
#pragma once

#include <QList>
#include <QObject>
#include <QString>
#include <QVariant>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "gui/runs/run_target.h"
#include "remote/cluster.h"

namespace tdguitest {

/// Starts `config` in `experiment` on this machine through `t` (RunTarget::start).
inline QString start_here(td::gui::RunTarget& t, const QString& experiment, const nlohmann::json& config,
                          QString* error, const QString& name = {}) {
  return t.start(td::gui::RunPlacement{}, experiment, config, name, error);
}

/// Starts `config` on `node` alone, as the "Train on" entry of that node of a cluster named
/// `cluster` does.
inline QString start_on_node(td::gui::RunTarget& t, const QString& cluster, const td::remote::NodeSpec& node,
                             const QString& experiment, const nlohmann::json& config, QString* error) {
  td::remote::ClusterSpec c;
  c.name = cluster.toStdString();
  c.nodes.push_back(node);
  return t.start(td::gui::RunPlacement{c, 0}, experiment, config, {}, error);
}

/// Starts `config` across every node of `cluster` (its "all nodes" entry).
inline QString start_on_cluster(td::gui::RunTarget& t, const td::remote::ClusterSpec& cluster,
                                const QString& experiment, const nlohmann::json& config, QString* error) {
  return t.start(td::gui::RunPlacement{cluster, -1}, experiment, config, {}, error);
}

/// Records a target's stateChanged() as rows a test can wait on and read:
///   progress:   (run_id, done, total, phase) each time a run is Deploying;
///   connection: (run_id, detail) each time a running or stopping run's detail changes
///               ("connecting", "connected", "reconnecting (attempt n): ...", "stopping").
class StateLog {
 public:
  explicit StateLog(td::gui::RunTarget* t) : target_(t) {
    QObject::connect(t, &td::gui::RunTarget::stateChanged, &context_, [this](const QString& id) {
      using Phase = td::gui::RunTargetState::Phase;
      const td::gui::RunTargetState st = target_->state(id);
      if (st.phase == Phase::Deploying)
        progress.append(QList<QVariant>{id, st.done, st.total, st.detail});
      if ((st.phase == Phase::Running || st.phase == Phase::Stopping) && !st.detail.isEmpty() &&
          last_detail_.value(id) != st.detail) {
        last_detail_[id] = st.detail;
        connection.append(QList<QVariant>{id, st.detail});
      }
    });
  }
  /// Waits up to `ms` for a new progress row; true when one came.
  bool waitProgress(int ms) {
    const auto n = progress.size();
    return QTest::qWaitFor([&] { return progress.size() > n; }, ms);
  }

  QList<QList<QVariant>> progress;
  QList<QList<QVariant>> connection;

 private:
  td::gui::RunTarget* target_;
  QObject context_;
  QHash<QString, QString> last_detail_;
};

}  // namespace tdguitest
