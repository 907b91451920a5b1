// RunAgain: "Run again" from a run's card (store/types.h RunCard, Store::run_card; docs/store.md
// "Run card"). load() reads the card and checks, on this machine, the dataset the run read: the
// SHA-256 of its manifest.json now against the one the run's run_start recorded. start() then
// starts a new run with the card's config (the same train.seed, so on the CPU with the same
// threads the losses repeat bit for bit) in the card's experiment, at the card's place — this
// machine, or the same cluster and node (Store::run_target / remote_run) — through RunTargets,
// so it goes where a Start run of that placement goes.
//
// Threading rule: a GUI-thread QObject (Qt Core only: testable without widgets). load()'s store
// query and manifest read run on the StoreClient's thread and report by loaded()/failed();
// start() returns at once (as RunTarget::start).
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>

#include <functional>
#include <optional>
#include <vector>

#include "gui/runs/run_target.h"
#include "remote/cluster.h"
#include "store/types.h"

namespace td::gui {

class RunTargets;
class StoreClient;

/// What the dataset of a card is on this machine now (RunAgain::checkDataset).
struct DatasetCheck {
  enum class State {
    Same,     ///< manifest.json's SHA-256 equals the card's
    Changed,  ///< it differs: the data is not what the run read
    Missing,  ///< no dataset there (gone, or a remote run's not registered here): cannot start
    Unknown,  ///< the card has no hash (recorded before schema version 9): cannot be checked
  };
  State state = State::Unknown;
  QString local_path;  ///< the dataset directory a new run would read here ("" when Missing)
  QString sha256_now;  ///< SHA-256 (hex) of its manifest.json now; "" when unreadable
  QString message;     ///< what to tell the person before starting; "" when Same
  bool canStart() const { return state != State::Missing; }
};

class RunAgain : public QObject {
  Q_OBJECT
 public:
  /// Finds a saved cluster by name (the Clusters page's ClusterList); nullopt when none.
  using ClusterLookup = std::function<std::optional<td::remote::ClusterSpec>(const QString& name)>;

  RunAgain(StoreClient* store, RunTargets* targets, QObject* parent = nullptr);

  void setStoreClient(StoreClient* store);
  void setRunTargets(RunTargets* targets);
  void setClusterLookup(ClusterLookup lookup) { lookup_ = std::move(lookup); }

  /// Reads `run_id`'s card and checks its dataset; loaded(run_id) or failed(run_id, message)
  /// follows. A newer load() wins: an older one's answer is dropped.
  void load(const QString& run_id);
  bool isLoaded() const { return loaded_; }
  QString runId() const { return run_id_; }
  const td::store::RunCard& card() const { return card_; }
  const DatasetCheck& check() const { return check_; }

  /// Starts the loaded card again (see the top). Returns the new run id, or "" with *error set:
  /// no card loaded, a Missing dataset (check().message), a config that is not JSON, a cluster
  /// or node no longer saved, or the target's own refusal. Emits started(new, old).
  QString start(QString* error);

  /// The dataset check (reads at most one manifest.json per candidate, 64 MiB at most, never
  /// through a symlink; run it off the GUI thread). A local run's dataset is card.dataset_path;
  /// a remote run's is on its node (<work>/datasets/<name>-<12 hex>), so the one here is a
  /// `registered` dataset of that <name>, the one whose hash matches when several do.
  static DatasetCheck checkDataset(const td::store::RunCard& card, const std::vector<td::store::Dataset>& registered);
  /// SHA-256 (64 lowercase hex) of <dataset_dir>/manifest.json, or "" with *why set when it is
  /// missing, a symlink, larger than 64 MiB or unreadable.
  static QString manifestSha256(const QString& dataset_dir, QString* why = nullptr);
  /// Where the card's run went, as a placement for RunTargets::start. false with *error when the
  /// cluster is no longer saved (or changed kind) or the node is no longer in it.
  static bool placementOf(const td::store::RunCard& card, const ClusterLookup& lookup, RunPlacement* placement,
                          QString* error);
  /// The new run's name: "<name or id> again", at most 120 bytes.
  static QString againName(const td::store::RunCard& card);

 signals:
  void loaded(const QString& run_id);
  void failed(const QString& run_id, const QString& message);
  void started(const QString& new_run_id, const QString& from_run_id);

 private:
  QPointer<StoreClient> store_;
  QPointer<RunTargets> targets_;
  ClusterLookup lookup_;
  QString run_id_;
  bool loaded_ = false;
  quint64 generation_ = 0;
  td::store::RunCard card_;
  DatasetCheck check_;
};

}  // namespace td::gui
