// RunCardTab: the run page's Card tab (issue 16 part 5, docs/store.md "Run card"): what
// reproduces the run — seed, dataset (path, manifest SHA-256, train/val tokens), engine version
// and build, host and device, world size, where it ran, and the whole config — with "Run again",
// which starts a new run with exactly that card (gui/runs/run_again.h) where the run went. Before
// anything starts, the tab says when the dataset changed since the run (its manifest's SHA-256
// differs: the button reads "Run again anyway") or is gone (the button is off).
//
// Threading rule: GUI thread. The card and the dataset check come from RunAgain (a StoreClient
// job); Run again returns at once (RunTargets::start).
#pragma once

#include <QPointer>
#include <QWidget>

#include "gui/runs/run_again.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace td::gui {

class RunTargets;
class StoreClient;

class RunCardTab : public QWidget {
  Q_OBJECT
 public:
  explicit RunCardTab(StoreClient* store, QWidget* parent = nullptr);
  void setStoreClient(StoreClient* store);
  /// Where Run again starts (the main window's RunTargets); nullptr: the button stays off.
  void setRunTargets(RunTargets* targets);
  /// Finds the saved cluster a remote run went to (the Clusters page's list).
  void setClusterLookup(RunAgain::ClusterLookup lookup);
  /// Shows `run_id`'s card ("" = none): read again, with the dataset checked now.
  void setRun(const QString& run_id);
  QString run() const { return run_; }

  RunAgain* runAgain() const { return again_; }
  QPushButton* runAgainButton() const { return run_again_; }
  /// The dataset warning (changed, gone, unverifiable) or Run again's error; hidden when none.
  QLabel* warningLabel() const { return warning_; }
  /// The value shown for a field: "seed", "dataset", "manifest", "tokens", "engine", "host",
  /// "device", "world_size", "place".
  QString fieldText(const QString& field) const;
  QPlainTextEdit* configView() const { return config_; }

  /// Starts the shown card again (the button). Returns the new run id, or "" with the reason
  /// shown under the card.
  QString runAgainNow();

 signals:
  /// Run again started `new_run_id` from the card of `from_run_id`.
  void againStarted(const QString& new_run_id, const QString& from_run_id);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();
  void fill();  // fills the fields from again_'s card and check
  void clear(const QString& note);

  RunAgain* again_;
  QString run_;
  QPointer<RunTargets> targets_;
  QLabel* names_[9];
  QLabel* values_[9];
  QLabel* warning_;
  QPlainTextEdit* config_;
  QPushButton* run_again_;
};

}  // namespace td::gui
