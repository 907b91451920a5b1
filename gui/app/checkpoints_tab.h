// CheckpointsTab: the run page's Checkpoints tab. A table of the run's checkpoints (step, size,
// time written, kept, on disk) and Keep / Unkeep, Delete…, Generate…, Export for Hugging Face….
//
// Local runs: the rows are the store's checkpoint events (Store::checkpoints, one per step, the
// newest write of a step), each checked on disk: a checkpoint pruned by the engine (or deleted)
// stays in the list as "pruned" (greyed, only its history), so the table shows every checkpoint
// the run wrote. Kept = the marker <run>/checkpoints/step_NNNNNNNN.keep (engine/checkpoint/keep.h:
// prune_checkpoints never deletes it).
// Remote runs (the store has their remote_runs row): the rows are the node's listing
// (RunTarget::listCheckpoints, asked of the run targets); Generate and Export first fetch the
// chosen checkpoint into a local cache folder (<cache>/checkpoints/<run>/step_NNNNNNNN, reused when there) and run on
// that copy. Keep and Delete are for local checkpoints only.
//
// Threading rule: GUI thread. Store reads and the disk checks run as one StoreClient job; a delete
// runs on a pool thread (QtConcurrent); the engine runs in the dialogs' QProcess jobs.
#pragma once

#include <QElapsedTimer>
#include <QPointer>

#include <functional>
#include <QWidget>

class QLabel;
class QPushButton;
class QTableWidget;

namespace td::gui {

class ExportDialog;
class GenerateDialog;
class RunTargets;
struct RemoteCheckpointEntry;
class StoreClient;

class CheckpointsTab : public QWidget {
  Q_OBJECT
 public:
  struct Row {
    int step = 0;
    QString name;        ///< step_NNNNNNNN
    QString path;        ///< local: the directory; remote: the name on the node
    qint64 bytes = -1;   ///< -1 unknown
    double t = 0;        ///< unix seconds written (0: unknown, a remote listing)
    bool on_disk = true; ///< false: pruned or deleted
    bool kept = false;
    bool remote = false;
  };

  explicit CheckpointsTab(StoreClient* store, QWidget* parent = nullptr);
  void setStoreClient(StoreClient* store);
  /// Lists and fetches the checkpoints of runs that trained away from this machine (the
  /// router: RunTargets). nullptr: such runs show a note instead of rows.
  void setRunTargets(RunTargets* targets);
  /// Shows `run_id` ("" = none) and loads its rows.
  void setRun(const QString& run_id);
  /// Reads the rows again (RunView calls this on its coalesced ingest refresh).
  void reload();

  QTableWidget* table() const { return table_; }
  /// The line under the buttons ("No checkpoint yet: ...", errors of Keep or Delete).
  QString noteText() const;
  QList<Row> rows() const { return rows_; }
  /// <run dir>/checkpoints of a local run ("" before the run is read or for a remote run).
  QString checkpointRoot() const { return root_; }
  /// Keep (true) or unkeep the row's checkpoint; false with *error when it is remote, gone, or
  /// the marker cannot be written. Reloads.
  bool setKept(int row, bool keep, QString* error = nullptr);
  /// Deletes the row's checkpoint directory on a pool thread (removeCheckpointDir's checks);
  /// deleteFinished() says how it went. Delete… asks first (specifically for the newest checkpoint
  /// of a run that is still training).
  void deleteRow(int row);
  /// Opens (non-modal) the Generate / Export dialog for the row's checkpoint; a remote one is
  /// downloaded first. nullptr for a row that is not there or pruned.
  GenerateDialog* openGenerate(int row);
  ExportDialog* openExport(int row);
  /// The local cache folder of remote runs' downloaded checkpoints.
  static QString remoteCacheRoot();

 signals:
  /// The rows were (re)loaded.
  void reloaded();
  void deleteFinished(const QString& path, const QString& error);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();
  void showRows();
  void updateButtons();
  int selectedRow() const;
  void confirmDelete();
  /// Calls `ready(local_dir, "")` once the row's checkpoint is local (at once for a local run or
  /// one downloaded before), or `ready("", why)` when the download failed.
  using Ready = std::function<void(const QString& local_dir, const QString& error)>;
  void withLocalCheckpoint(const Row& row, Ready ready);
  template <class Dialog>
  void giveCheckpoint(Dialog* d, const Row& r);  // GenerateDialog or ExportDialog

  QPointer<StoreClient> store_;
  QPointer<RunTargets> remote_;  // lists and fetches the checkpoints of runs that trained away from here
  QString run_, root_, run_dir_, data_dir_;
  bool remote_run_ = false;
  bool training_ = false;
  QList<Row> rows_;
  quint64 generation_ = 0;
  QElapsedTimer listed_;  // since the last remote listing
  QTableWidget* table_;
  QLabel* note_;
  QPushButton* keep_;
  QPushButton* delete_;
  QPushButton* generate_;
  QPushButton* export_;
  QPushButton* refresh_;
  // Remote downloads waiting: step name -> what to do with the local copy.
  QList<std::pair<QString, Ready>> pending_;
};

}  // namespace td::gui
