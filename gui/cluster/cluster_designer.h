// ClusterDesigner: the "Clusters" page. Left: the saved clusters ("This machine" first, not
// editable). Right: the selected cluster's name, its kind ("SSH nodes" or "Slurm cluster") and
// node table (name, host, port, user, auth,
// key file, GPUs, work directory, jump host, "as resolved" through ~/.ssh/config, last test),
// under it the container setting of the selected node (ContainerSettings: runtime, image,
// extra mounts; SSH clusters only, a Slurm cluster's box is hidden),
// add / duplicate / remove node, a key file chooser, "Test connection" for the selected node and
// "Test all" (reports: OS, CPUs, memory, free disk in the work directory, glibc, GPUs), the
// problems td::remote::validate() finds (Save is disabled while there are any), Save / Revert /
// Delete through StoreClient (store errors shown), and a guard against losing unsaved edits.
// A Slurm cluster's table holds its one login node (the GPU, work directory, address and
// interface columns are hidden: the Slurm settings have them) and below it the Slurm settings
// with the batch-script preview (SlurmSettings); its Test connection also asks sinfo about the
// partition (ConnectionTester::testSlurm).
// No secret is ever part of a cluster: passwords and passphrases are asked for by NodeAccess
// when a node is opened (and kept only in the system keyring).
//
// Threading rule: GUI thread only. The store is reached through StoreClient jobs, nodes through
// ConnectionTester workers; nothing here waits on either.
#pragma once

#include <QPointer>
#include <QStringList>
#include <QWidget>

#include <functional>

#include "remote/cluster.h"

class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QListWidgetItem;
class QPlainTextEdit;
class QPushButton;
class QStackedWidget;
class QTableView;

namespace td::gui {

class ClusterList;
class ConnectionTester;
class NodeAccess;
class NodeTableModel;
class ContainerSettings;
class SlurmSettings;
class StoreClient;

class ClusterDesigner : public QWidget {
  Q_OBJECT
 public:
  /// `store` may be nullptr until setStoreClient(); `access` (not owned, must outlive this
  /// panel) opens nodes for "Test connection" and gives the ssh_config for the hints.
  ClusterDesigner(StoreClient* store, NodeAccess* access, QWidget* parent = nullptr);
  ~ClusterDesigner() override;

  /// Switches stores (File > Open): the list is reloaded, unsaved edits are dropped.
  void setStoreClient(StoreClient* store);
  /// The saved clusters as last loaded (shared with whoever wants them, e.g. the Run page).
  ClusterList* clusterList() const { return list_; }

  // ---- programmatic API (what the buttons do; tests and the main window use it) -------------

  /// Selects a saved cluster by name, or ClusterList::localName(). With unsaved edits the
  /// person is asked first (Save / Discard / Cancel, window-modal) unless `discard`; returns
  /// false when the switch waits for that answer or the name is unknown.
  bool selectCluster(const QString& name, bool discard = false);
  /// Starts a new, unsaved cluster with one empty node (guarded like selectCluster()).
  bool newCluster(bool discard = false);
  /// The cluster being edited (name, kind, the table and, for kind "slurm", the Slurm
  /// settings), or the local one.
  td::remote::ClusterSpec spec() const;
  /// Shows `spec` as an unsaved edit of a new cluster (no guard).
  void setSpec(const td::remote::ClusterSpec& spec);
  /// The saved name of the cluster being edited; "" for a new one; localName() for the local.
  QString currentName() const { return current_; }
  /// What must be fixed before saving (validate() plus "no node" and a taken name).
  QStringList problems() const;
  bool isValid() const { return problems().isEmpty(); }
  /// Unsaved edits?
  bool isDirty() const { return dirty_; }
  /// Leaving the edits (e.g. the window closes): with unsaved edits asks "<question>" (Save /
  /// Discard / Cancel, window-modal, the box named "unsavedConfirm") and calls `then` after
  /// Discard, or once Save has stored the cluster; Cancel (or a Save that cannot be stored)
  /// keeps the edits and never calls it. Without edits calls `then` at once and returns true;
  /// else returns false (the answer comes later).
  bool confirmDiscard(const QString& question, std::function<void()> then);
  /// Saves (as the Save button): false, with the problems shown, when invalid; else a store job
  /// starts and saved(name) follows (or the store's error in the status line).
  bool save();
  /// Reloads the saved version (drops edits).
  void revert();
  /// Asks, then removes the selected saved cluster from the store.
  void deleteCluster();

  /// Kind of the cluster being edited: "ssh" or "slurm".
  QString kind() const;
  /// Switches the kind being edited (as the Kind choice does: an edit).
  void setKind(const QString& kind);
  SlurmSettings* slurmSettings() const { return slurm_; }
  /// The container fields of the selected node (disabled while no node is selected).
  ContainerSettings* containerSettings() const { return container_; }

  NodeTableModel* nodeModel() const { return model_; }
  ConnectionTester* tester() const { return tester_; }
  /// "Test connection" for node row `row`, and "Test all".
  void testNode(int row);
  void testAll();
  void cancelTests();

 signals:
  /// The saved clusters changed (saved, renamed or deleted): names without localName().
  void clustersChanged(const QStringList& names);
  /// A save finished: `name` is in the store.
  void saved(const QString& name);

 private:
  void buildUi();
  void fillList();
  void load(const QString& name);
  void markDirty();
  void updateState();
  void setStatus(const QString& text, bool error = false);
  void showReport();
  int selectedRow() const;
  bool guard(std::function<void()> then, const QString& question = {});
  void chooseKeyFile();
  void showKind(const td::remote::ClusterSpec& spec);
  void applyKind();
  void showContainer();

  QPointer<StoreClient> store_;
  NodeAccess* access_ = nullptr;
  ClusterList* list_ = nullptr;
  NodeTableModel* model_ = nullptr;
  ConnectionTester* tester_ = nullptr;
  QString current_;  // saved name being edited; "" new; localName() local
  bool dirty_ = false;
  bool loading_ = false;

  QListWidget* clusters_ = nullptr;
  QPushButton* new_ = nullptr;
  QPushButton* delete_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  QLineEdit* name_ = nullptr;
  QComboBox* kind_ = nullptr;
  QGroupBox* slurm_box_ = nullptr;
  SlurmSettings* slurm_ = nullptr;
  QGroupBox* container_box_ = nullptr;
  ContainerSettings* container_ = nullptr;
  QTableView* table_ = nullptr;
  QPushButton* add_node_ = nullptr;
  QPushButton* duplicate_ = nullptr;
  QPushButton* remove_node_ = nullptr;
  QPushButton* key_file_ = nullptr;
  QPushButton* test_ = nullptr;
  QPushButton* test_all_ = nullptr;
  QPushButton* cancel_tests_ = nullptr;
  QLabel* problems_ = nullptr;
  QPlainTextEdit* report_ = nullptr;
  QLabel* status_ = nullptr;
  QPushButton* revert_ = nullptr;
  QPushButton* save_ = nullptr;
};

}  // namespace td::gui
