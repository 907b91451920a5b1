// RunView: one run's live page — status line, Stop/Resume, the Dashboard's charts, generated
// samples (with their step), the engine's log and the plan beside what the run measured. For a
// run away from this machine (an SSH node, a Slurm cluster: the store has its remote_runs row)
// also where it runs and how it is reached, the deploy (or checkpoint download) progress with
// its phase and Cancel, and "Download checkpoint". Everything live comes from the run targets'
// router (gui/runs/run_targets.h), whatever the target.
//
// Threading rule: GUI thread. Samples and run status come from StoreClient jobs; the log's
// history is read on a pool thread (QtConcurrent) and live text arrives from the run targets.
#pragma once

#include <QElapsedTimer>
#include <QPointer>
#include <QWidget>

#include <optional>

#include "gui/runs/run_target.h"
#include "store/types.h"

namespace td::store {
struct Straggler;
}

namespace td::store {
struct InputPipeline;
}

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTabWidget;
class QTextBrowser;
class QTimer;

namespace td::gui {

class CheckpointsTab;
class RunCardTab;
class Dashboard;
class RankLogs;
class RunTargets;
class StoreClient;

class RunView : public QWidget {
  Q_OBJECT
 public:
  /// `targets`: every run target (gui/runs/run_targets.h), the one way this page reaches a run:
  /// its state (deploying with progress, queued with its reason, running on which nodes and
  /// how they are reached), rows, log, end, Stop, Resume, Cancel and checkpoint downloads.
  /// nullptr: runs are shown from the store only.
  RunView(StoreClient* store, RunTargets* targets, QWidget* parent = nullptr);

  void setStoreClient(StoreClient* store);
  /// Shows `run_id` ("" = none).
  void setRun(const QString& run_id);
  QString run() const { return run_; }
  Dashboard* dashboard() const { return dashboard_; }
  QTextBrowser* samplesView() const { return samples_; }
  QPlainTextEdit* logView() const { return log_; }
  /// The Log tab's rank chooser (visible for a run of more than one rank): rank 0 is the live
  /// engine.log; another rank's log is read where it trained through setRankLogs()'s RankLogs.
  QComboBox* logRankBox() const { return log_rank_; }
  QPushButton* logRefreshButton() const { return log_refresh_; }
  /// Where the shown rank's log was read ("gpu2:/work/runs/<id>/engine.rank3.log"), or why not.
  QLabel* logWhereLabel() const { return log_where_; }
  /// Reads the logs of ranks > 0 (gui/runs/rank_logs.h). nullptr: only rank 0's log is shown.
  void setRankLogs(RankLogs* logs);
  QPushButton* stopButton() const { return stop_; }
  QPushButton* resumeButton() const { return resume_; }
  QLabel* statusLabel() const { return status_; }
  /// The line that names a data-parallel run's straggler (store/straggler.h: the rank with the
  /// largest median compute time over the last 100 steps, against the other ranks' median);
  /// hidden for a run of one rank and for one without per-rank compute times. Read off the GUI
  /// thread (a StoreClient job) with the status.
  QLabel* stragglerLabel() const { return straggler_; }
  /// That line's text: "Slowest rank: 1 (node-b), 12 % slower than rank 0 over the last 100
  /// steps (the slowest in 97 of them)"; with more than 2 ranks "... than the median of the
  /// other ranks ...".
  static QString stragglerText(const td::store::Straggler& s);
  /// The line under the status that marks an input-bound run (store/input_pipeline.h: its steps
  /// waited for the data loader >= 5 % of their time over the last 100 steps), with the wait's
  /// share and the read speed; hidden for any other run. Read off the GUI thread (a StoreClient
  /// job) with the status.
  QLabel* inputBoundLabel() const { return input_; }
  /// That line's text for `p` ("Input-bound: the steps waited for data 12.5 % of their time
  /// (steps 4–100) · reads 85.3 MB/s"), "" when `p` is not input-bound.
  static QString inputBoundText(const td::store::InputPipeline& p);
  /// "Plan vs measured" tab: rows memory per rank, tokens/s and, for data-parallel runs,
  /// collective bytes and bus bandwidth; columns quantity, planned, measured, error
  /// (gui/plan/run_plan.h). Refreshed with the status. planBasisLabel() says the MFU assumed.
  QTableWidget* planTable() const { return plan_table_; }
  QLabel* planBasisLabel() const { return plan_basis_; }
  /// "Checkpoints" tab (gui/app/checkpoints_tab.h): reloaded with the status.
  CheckpointsTab* checkpointsTab() const { return checkpoints_; }
  /// "Card" tab (gui/app/run_card_tab.h): the run's card and Run again; follows setRun().
  RunCardTab* cardTab() const { return card_; }

  /// Replaces the run targets (see the constructor).
  void setRunTargets(RunTargets* targets);
  /// True when the shown run ran away from this machine (an SSH node, a Slurm cluster; known
  /// once its status was read).
  bool isRemoteRun() const { return remote_run_; }
  /// Stop / Resume of the shown run, through the run targets (refusals come from their
  /// error()); stopAsked / resumeAsked once a target took it.
  void requestStop();
  void requestResume();
  /// Downloads the shown run's newest checkpoint into `dir` from where it trained (the button
  /// asks for the folder; shown for targets that fetch checkpoints).
  void downloadCheckpointTo(const QString& dir);
  QWidget* remoteBar() const { return remote_bar_; }
  QLabel* nodeLabel() const { return node_label_; }
  QProgressBar* progressBar() const { return progress_; }
  QPushButton* downloadButton() const { return download_; }

  /// New rows of `run_id` were ingested (coalesced: charts, status and samples refresh at most
  /// every 250 ms).
  void onIngested(const QString& run_id);
  void appendLog(const QString& run_id, const QString& text);
  /// Re-reads the status line and buttons (after a start, end, resume).
  void updateStatus();

  /// The status line's progress: "step 89 / 1000 (9 %) · 2 min elapsed · ~18 min left" while
  /// running (the percentage and time left need train.steps and, for the time, two stored
  /// steps); "step 1000 / 1000 · 20 min" once completed, stopped or failed (no time left).
  /// Durations below an hour in whole minutes (docs: store.h run_progress for the figures).
  static QString progressText(const td::store::RunProgress& progress);
  /// "11748 tokens/s (median of last 100 steps)": the run's one tokens/s (Store::run_throughput,
  /// store::format_tokens_per_s), labelled.
  static QString tokensPerSText(std::optional<double> tokens_per_s);
  /// The line under the status with the run's alerts (Store::alerts, oldest first; docs/events.md
  /// "Alerts"): "⚠ 3 alert(s), newest: Rank or node lost: rank 1 (host b) lost: ..." (the newest
  /// alert's kind as Run > Alert notifications names it, and its message); "" for none.
  static QString alertsText(const std::vector<td::store::RunAlert>& alerts);
  /// The Log tab's text while the run's engine.log (at `log_path`) has nothing to show: the
  /// file is empty (`exists`), or missing and the run is started or followed by TrainDeck
  /// (`followed`: its output arrives here), or missing for a run TrainDeck does not follow (then,
  /// and only then, "runs started outside TrainDeck log to their own terminal").
  static QString logMissingText(const QString& log_path, bool exists, bool followed);

 signals:
  /// A target took the Stop / Resume of `run_id` (requestStop(), requestResume()).
  void stopAsked(const QString& run_id);
  void resumeAsked(const QString& run_id);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();
  void loadLog();
  void showRankLog();  // the chosen rank's log: rank 0 through loadLog(), others fetched
  void setWorldSize(int world);
  void loadSamples();
  void loadPlan();
  void loadStraggler();  // the straggler line
  void loadInputPipeline();  // the input-bound line
  void showProgress(const QString& run_id, qint64 done, qint64 total, const QString& phase);
  void updateRemoteBar();
  bool runActive(const QString& run_id) const;

  QPointer<StoreClient> store_;
  QPointer<RunTargets> targets_;
  RunTargetState::Phase shown_phase_ = RunTargetState::Phase::Unknown;  // the run's phase at the last status read
  bool remote_run_ = false;
  QString remote_kind_;  // the target the store says the run went to ("ssh", "slurm"), "" for this machine
  QString remote_node_;  // where it went, from the store: the node's display name, a Slurm cluster's name
  bool remote_has_checkpoint_ = false;
  QWidget* remote_bar_;
  QLabel* node_label_;
  QProgressBar* progress_;
  QPushButton* cancel_progress_;
  QPushButton* download_;
  QString run_;
  QLabel* status_;
  QLabel* straggler_;
  QLabel* input_;
  QPushButton* stop_;
  QPushButton* resume_;
  Dashboard* dashboard_;
  QTabWidget* bottom_;
  QTextBrowser* samples_;
  QPlainTextEdit* log_;
  QComboBox* log_rank_;
  QPushButton* log_refresh_;
  QLabel* log_where_;
  QWidget* log_bar_;
  QPointer<RankLogs> rank_logs_;
  int world_size_ = 1;
  QTableWidget* plan_table_;
  QLabel* plan_basis_;
  CheckpointsTab* checkpoints_;
  RunCardTab* card_;
  QElapsedTimer plan_loaded_;  // since the last loadPlan()
  QTimer* refresh_timer_;
  int samples_shown_ = -1;
  quint64 log_generation_ = 0;
};

}  // namespace td::gui
