// MainWindow: wires the panels together — sidebar (experiments and runs), Design (model
// designer with live estimates), Data (prepare), Run (live dashboard, samples, log), Compare
// (overlaid curves, summary, config diff) — and owns the store connection, the run targets
// (make_targets: the router is all it holds of them) and the settings (recent stores,
// geometry, theme, language).
//
// Threading rule: GUI thread only; it holds no SQL and no process handling itself: StoreClient,
// the run targets and the panels' models do that work on their threads.
#pragma once

#include <QElapsedTimer>
#include <QHash>
#include <QMainWindow>
#include <QPointer>

#include "gui/app/first_start.h"

#include <memory>

class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QTabWidget;

namespace td::gui {

class ClusterDesigner;
class CompareView;
class Dashboard;
class NodeAccess;
class WidgetPrompter;
class DataPanel;
class ExperimentsModel;
class ModelDesigner;
class RunTargets;
class TrainOnModel;
class RunView;
class Sidebar;
class StoreClient;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  /// What closing the window does while runs are going.
  enum class CloseAction { Ask, StopRuns, LeaveRunning };

  /// Opens `store_path` (created when missing). `demo_dataset`: a prepared dataset the demo
  /// experiment of a first start uses (registered in the store), "" = none.
  explicit MainWindow(const QString& store_path, const QString& demo_dataset = {}, QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Switches to the store at `path` (created when missing) once it opened on its own thread
  /// (storeOpened() then); runs of the old store keep going. A file that is not a TrainDeck
  /// store leaves the current store open and shows why.
  void openStore(const QString& path);
  QString storePath() const;

  /// Starts a run of the designer's config in the current experiment (the sidebar's, else
  /// "default") on the target chosen beside Start run (this machine, or a node of a saved
  /// cluster: deployed over SSH, shown once it trains) and shows it on the Run page. Returns the
  /// run id, or "" with *error.
  QString startRun(QString* error = nullptr);
  /// Start run (button, menu): for a Slurm cluster the batch script is shown first
  /// (SlurmSubmitDialog) and Cancel starts nothing; then startRun(), its refusal shown.
  void startRunAsked();
  void stopCurrentRun();
  void resumeCurrentRun();
  /// Shows runs on the Compare page (2+), or one run on the Run page.
  void showRuns(const QStringList& run_ids);

  void setCloseAction(CloseAction a) { close_action_ = a; }

  /// Help > User guide: opens docs/guide.md (userGuidePath(), gui/core/paths.h) with the
  /// desktop's viewer (QDesktopServices::openUrl). Returns the file opened, or "" after saying
  /// in the status bar and a message box where it looked (not found) or that nothing opens it.
  QString openUserGuide();

  // Panels, for tests and screenshots.
  Sidebar* sidebar() const { return sidebar_; }
  ModelDesigner* designer() const { return designer_; }
  /// The window's size on a first start (no saved geometry), in pixels: 1280 x 800, the size
  /// every page is laid out to be readable at.
  static QSize defaultSize() { return {1280, 800}; }
  DataPanel* dataPanel() const { return data_; }
  RunView* runView() const { return run_view_; }
  CompareView* compareView() const { return compare_; }
  Dashboard* compareDashboard() const { return compare_dashboard_; }
  QTabWidget* pages() const { return pages_; }
  /// Every run target (this machine, SSH nodes and clusters): Start run, Stop and Resume go
  /// through it.
  RunTargets* runTargets() const { return targets_; }
  ClusterDesigner* clusterDesigner() const { return clusters_; }
  NodeAccess* nodeAccess() const { return access_; }
  /// "Train on" beside Start run (rows: TrainOnModel): item 0 is this machine, then each saved
  /// cluster's entries.
  QComboBox* trainOn() const { return train_on_; }
  /// The run name field beside Start run (empty: the suggestion in its placeholder is used).
  QLineEdit* runNameField() const { return run_name_; }
  QString suggestedRunName() const { return suggested_name_; }
  /// Whether the store is open and its experiments loaded (the first start's demo design in
  /// place): Start run is disabled, and startRun() refused, until then.
  bool isReady() const { return first_start_ && first_start_->isReady(); }
  /// The last Start run's warning that it shares this machine's CPU with other runs ("" none).
  QString contentionNoteShown() const { return contention_note_; }
  ExperimentsModel* experiments() const { return experiments_; }
  StoreClient* storeClient() const { return store_.get(); }

  enum Page { DesignPage = 0, DataPage, RunPage, ComparePage, ClustersPage };

 signals:
  void storeOpened(const QString& path);
  /// An error was shown to the user (status bar and a non-modal message box).
  void errorShown(const QString& message);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void buildMenus();
  void buildPanels();
  void retranslate();
  void wireStore();
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void showError(const QString& message);
  void updateMeasuredMfu();
  void newStoreDialog();
  /// Refills "Train on" from the saved clusters, keeping the current choice where it still exists.
  void rebuildTargets();
  /// Runs training on this machine now (the local target's).
  QStringList localRuns() const;
  void openStoreDialog();

  std::unique_ptr<StoreClient> store_;
  ExperimentsModel* experiments_ = nullptr;
  RunTargets* targets_ = nullptr;  // every run target (make_targets)
  std::unique_ptr<WidgetPrompter> prompter_;  // before access_: NodeAccess asks through it
  NodeAccess* access_ = nullptr;
  ClusterDesigner* clusters_ = nullptr;
  QComboBox* train_on_ = nullptr;
  TrainOnModel* train_on_model_ = nullptr;  // train_on_'s rows
  QLineEdit* run_name_ = nullptr;   // beside Start run; empty: suggested_name_
  FirstStart* first_start_ = nullptr;  // the demo set-up and the wait behind isReady()
  QString suggested_name_;          // Store::suggest_run_name for the design and experiment
  void suggestRunName();
  void updateStartEnabled();  // Start run: store ready and the design valid
  /// The experiment Start run trains in: the sidebar's, else the last run's, else the only one,
  /// else "default".
  QString targetExperiment() const;
  /// What a local CPU run started beside `busy` (runs already training here) should say: both
  /// slow down, by how much (the planner's tokens/s at the calibrated peak, shared); "" when
  /// nothing else trains here or the run is not on the CPU.
  QString contentionNote(const QStringList& busy) const;
  QString contention_note_;
  Sidebar* sidebar_ = nullptr;
  QTabWidget* pages_ = nullptr;
  ModelDesigner* designer_ = nullptr;
  DataPanel* data_ = nullptr;
  RunView* run_view_ = nullptr;
  CompareView* compare_ = nullptr;
  Dashboard* compare_dashboard_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QLabel* store_label_ = nullptr;
  CloseAction close_action_ = CloseAction::Ask;
  QString last_error_;
  QElapsedTimer last_error_time_;
};

}  // namespace td::gui
