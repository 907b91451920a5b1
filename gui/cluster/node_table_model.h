// NodeTableModel: the nodes of the cluster being edited, one row each, for the designer's table.
//
// Columns: name, host, port, user, auth (agent / key / password), key file, GPUs, work
// directory, jump host, cluster address, interface (editable; EditRole gives the NodeSpec value:
// port and GPUs as int, auth as "agent"/"key"/"password"), then, read-only, the container
// ("podman: localhost/traindeck-engine:0.1.0", empty for the bare bundle; edited with
// ContainerSettings under the table, through setNode()), the last "Test connection" status (icon, one
// word; tooltip: the whole report or error) and "as resolved" (where ~/.ssh/config takes the
// node, e.g. "gpu1 → ana@10.1.2.3:2200 via bastion"). Port 0 shows empty (= the config's Port,
// else 22). Values are stored as typed: a port of 70000 is kept and reported by
// td::remote::validate(), not refused, so the person sees the message.
//
// Each row has a stable id (rowId) that survives inserts and removals, for ConnectionTester.
// Threading rule: GUI thread only. Resolving reads the small ssh_config file on the GUI thread.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <vector>

#include "remote/cluster.h"

namespace td::gui {

/// "gpu1 → ana@10.1.2.3:2200 via bastion": where `node` connects after the ssh_config at
/// `ssh_config` (hops as written in the node or the config's ProxyJump); "⚠ <message>" when it
/// cannot be resolved.
QString resolvedHint(const td::remote::NodeSpec& node, const QString& ssh_config);

class NodeTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // Address and IfName: multi-node runs (remote/cluster.h NodeSpec::address, ifname).
  enum Column { Name, Host, Port, User, Auth, KeyFile, Gpus, WorkDir, Jump, Address, IfName, Container, Status, Resolved, ColumnCount };
  enum class TestState { None, Testing, Ok, Failed };

  explicit NodeTableModel(QObject* parent = nullptr);

  /// The ssh_config the "as resolved" column uses (hints are recomputed).
  void setSshConfigPath(const QString& path);

  /// Replaces all rows (test states cleared); no nodesEdited().
  void setNodes(const std::vector<td::remote::NodeSpec>& nodes);
  std::vector<td::remote::NodeSpec> nodes() const;
  const td::remote::NodeSpec& node(int row) const { return rows_.at(static_cast<size_t>(row)).spec; }
  /// Replaces row `row`'s node (as an edit: nodesEdited()).
  void setNode(int row, const td::remote::NodeSpec& node);

  /// Appends `node` (default: an empty node with agent auth); returns its row.
  int addNode(const td::remote::NodeSpec& node = {});
  /// Appends a copy of row `row` named "<name> copy"; returns the new row (-1 for a bad row).
  int duplicateNode(int row);
  void removeNode(int row);

  QString rowId(int row) const;
  int rowOf(const QString& id) const;  ///< -1 when gone
  void setTestState(const QString& id, TestState state, const QString& text);
  TestState testState(int row) const { return rows_.at(static_cast<size_t>(row)).state; }
  QString testText(int row) const { return rows_.at(static_cast<size_t>(row)).text; }
  QString resolved(int row) const { return rows_.at(static_cast<size_t>(row)).hint; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  /// Display text of an auth method ("ssh-agent", "key file", "password"), translated.
  static QString authText(td::remote::AuthMethod m);

 signals:
  /// The person changed the nodes (an edit, add, duplicate or remove).
  void nodesEdited();

 private:
  struct Row {
    td::remote::NodeSpec spec;
    quint64 id = 0;
    QString hint;
    TestState state = TestState::None;
    QString text;
  };
  Row makeRow(const td::remote::NodeSpec& n);
  void rehint(int row);

  std::vector<Row> rows_;
  quint64 next_id_ = 1;
  QString ssh_config_;
};

}  // namespace td::gui
