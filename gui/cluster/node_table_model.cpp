// NodeTableModel (node_table_model.h).
#include "gui/cluster/node_table_model.h"

#include <QApplication>
#include <QStyle>

#include "gui/cluster/container_settings.h"
#include "remote/ssh_config.h"

namespace td::gui {

using td::remote::AuthMethod;
using td::remote::NodeSpec;

namespace {

QStringList splitHops(const std::string& jump) {
  QStringList out;
  for (const QString& h : QString::fromStdString(jump).split(QLatin1Char(','), Qt::SkipEmptyParts))
    if (!h.trimmed().isEmpty()) out << h.trimmed();
  return out;
}

}  // namespace

QString resolvedHint(const NodeSpec& node, const QString& ssh_config) {
  if (QString::fromStdString(node.host).trimmed().isEmpty()) return {};
  try {
    const std::filesystem::path cfg = ssh_config.toStdString();
    const td::remote::ResolvedNode r = td::remote::resolve_node(node, cfg);
    QString text = QStringLiteral("%1 → %2@%3:%4")
                       .arg(QString::fromStdString(node.display_name()), QString::fromStdString(r.target.user),
                            QString::fromStdString(r.target.host))
                       .arg(r.target.port);
    QStringList hops = splitHops(node.jump);
    if (node.jump.empty())
      for (const std::string& h : td::remote::resolve_host(node.host, cfg).proxy_jump)
        if (h != "none") hops << QString::fromStdString(h);
    if (!hops.isEmpty()) text += NodeTableModel::tr(" via %1").arg(hops.join(QStringLiteral(" → ")));
    return text;
  } catch (const std::exception& e) {
    return QStringLiteral("⚠ ") + QString::fromUtf8(e.what());
  }
}

NodeTableModel::NodeTableModel(QObject* parent)
    : QAbstractTableModel(parent),
      ssh_config_(QString::fromStdString(td::remote::default_ssh_config_path().string())) {}

QString NodeTableModel::authText(AuthMethod m) {
  switch (m) {
    case AuthMethod::Agent: return tr("ssh-agent");
    case AuthMethod::KeyFile: return tr("key file");
    case AuthMethod::Password: return tr("password");
  }
  return {};
}

void NodeTableModel::setSshConfigPath(const QString& path) {
  ssh_config_ = path;
  for (int i = 0; i < rowCount(); ++i) rehint(i);
}

NodeTableModel::Row NodeTableModel::makeRow(const NodeSpec& n) {
  Row r;
  r.spec = n;
  r.id = next_id_++;
  r.hint = resolvedHint(n, ssh_config_);
  return r;
}

void NodeTableModel::rehint(int row) {
  Row& r = rows_.at(static_cast<size_t>(row));
  const QString hint = resolvedHint(r.spec, ssh_config_);
  if (hint == r.hint) return;
  r.hint = hint;
  emit dataChanged(index(row, Resolved), index(row, Resolved));
}

void NodeTableModel::setNodes(const std::vector<NodeSpec>& nodes) {
  beginResetModel();
  rows_.clear();
  for (const NodeSpec& n : nodes) rows_.push_back(makeRow(n));
  endResetModel();
}

std::vector<NodeSpec> NodeTableModel::nodes() const {
  std::vector<NodeSpec> out;
  for (const Row& r : rows_) out.push_back(r.spec);
  return out;
}

void NodeTableModel::setNode(int row, const NodeSpec& node) {
  if (row < 0 || row >= rowCount()) return;
  rows_[static_cast<size_t>(row)].spec = node;
  emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
  rehint(row);
  emit nodesEdited();
}

int NodeTableModel::addNode(const NodeSpec& node) {
  const int row = rowCount();
  beginInsertRows({}, row, row);
  rows_.push_back(makeRow(node));
  endInsertRows();
  emit nodesEdited();
  return row;
}

int NodeTableModel::duplicateNode(int row) {
  if (row < 0 || row >= rowCount()) return -1;
  NodeSpec copy = node(row);
  copy.name = tr("%1 copy").arg(QString::fromStdString(copy.display_name())).toStdString();
  return addNode(copy);
}

void NodeTableModel::removeNode(int row) {
  if (row < 0 || row >= rowCount()) return;
  beginRemoveRows({}, row, row);
  rows_.erase(rows_.begin() + row);
  endRemoveRows();
  emit nodesEdited();
}

QString NodeTableModel::rowId(int row) const {
  if (row < 0 || row >= rowCount()) return {};
  return QString::number(rows_[static_cast<size_t>(row)].id);
}

int NodeTableModel::rowOf(const QString& id) const {
  for (int i = 0; i < rowCount(); ++i)
    if (QString::number(rows_[static_cast<size_t>(i)].id) == id) return i;
  return -1;
}

void NodeTableModel::setTestState(const QString& id, TestState state, const QString& text) {
  const int row = rowOf(id);
  if (row < 0) return;
  rows_[static_cast<size_t>(row)].state = state;
  rows_[static_cast<size_t>(row)].text = text;
  emit dataChanged(index(row, Status), index(row, Status));
}

int NodeTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int NodeTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant NodeTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  const NodeSpec& n = r.spec;
  const bool edit = role == Qt::EditRole;
  if (role == Qt::DisplayRole || edit) {
    switch (index.column()) {
      case Name: return QString::fromStdString(n.name);
      case Host: return QString::fromStdString(n.host);
      case Port: return edit ? QVariant(n.port) : (n.port ? QVariant(n.port) : QVariant(QString()));
      case User: return QString::fromStdString(n.user);
      case Auth: return edit ? QString::fromLatin1(td::remote::auth_method_name(n.auth)) : authText(n.auth);
      case KeyFile: return QString::fromStdString(n.key_file);
      case Gpus: return n.gpus;
      case WorkDir: return QString::fromStdString(n.work_dir);
      case Jump: return QString::fromStdString(n.jump);
      case Address: return QString::fromStdString(n.address);
      case IfName: return QString::fromStdString(n.ifname);
      case Container: return containerSummary(n.container);
      case Resolved: return r.hint;
      case Status:
        switch (r.state) {
          case TestState::None: return QString();
          case TestState::Testing: return tr("testing…");
          case TestState::Ok: return tr("connected");
          case TestState::Failed: return tr("failed");
        }
    }
  }
  if (role == Qt::ToolTipRole) {
    if (index.column() == Status) return r.text;
    if (index.column() == Resolved) return r.hint;
    if (index.column() == Port) return tr("Empty: the Port of ~/.ssh/config, else 22");
    if (index.column() == User) return tr("Empty: the User of ~/.ssh/config, else your local user name");
    if (index.column() == KeyFile) return tr("Key authentication: the private key; empty: the IdentityFile of ~/.ssh/config");
    if (index.column() == Gpus) return tr("GPUs to use on the node; 0: train on its CPU");
    if (index.column() == WorkDir) return tr("Folder on the node for the engine, data and runs (relative: under the home folder)");
    if (index.column() == Jump) return tr("Jump host(s) \"[user@]host[:port]\", comma-separated; empty: the ProxyJump of ~/.ssh/config");
    if (index.column() == Address)
      return tr("Runs on several nodes: the address the other nodes reach this node at, used for the rendezvous "
                "when it is the first node; empty: its host as SSH reaches it");
    if (index.column() == IfName)
      return tr("Runs on several nodes: the network interface for collectives (e.g. eth0, ib0); empty: the "
                "interface toward the first node");
    if (index.column() == Container)
      return tr("The image the engine runs in on this node; empty: the engine bundle, no container. Set it under "
                "the table for the selected node");
  }
  if (role == Qt::DecorationRole && index.column() == Status && QApplication::style()) {
    switch (r.state) {
      case TestState::None: return {};
      case TestState::Testing: return QApplication::style()->standardIcon(QStyle::SP_BrowserReload);
      case TestState::Ok: return QApplication::style()->standardIcon(QStyle::SP_DialogApplyButton);
      case TestState::Failed: return QApplication::style()->standardIcon(QStyle::SP_MessageBoxCritical);
    }
  }
  if (role == Qt::TextAlignmentRole && (index.column() == Port || index.column() == Gpus))
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

bool NodeTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::EditRole || index.row() >= rowCount()) return false;
  NodeSpec n = rows_[static_cast<size_t>(index.row())].spec;
  const std::string text = value.toString().trimmed().toStdString();
  bool ok = true;
  switch (index.column()) {
    case Name: n.name = text; break;
    case Host: n.host = text; break;
    case Port: n.port = text.empty() ? 0 : value.toString().trimmed().toInt(&ok); break;
    case User: n.user = text; break;
    case Auth:
      if (text == "agent") n.auth = AuthMethod::Agent;
      else if (text == "key") n.auth = AuthMethod::KeyFile;
      else if (text == "password") n.auth = AuthMethod::Password;
      else ok = false;
      break;
    case KeyFile: n.key_file = text; break;
    case Gpus: n.gpus = text.empty() ? 0 : value.toString().trimmed().toInt(&ok); break;
    case WorkDir: n.work_dir = text; break;
    case Jump: n.jump = text; break;
    case Address: n.address = text; break;
    case IfName: n.ifname = text; break;
    default: ok = false;
  }
  if (!ok) return false;
  setNode(index.row(), n);
  return true;
}

Qt::ItemFlags NodeTableModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.column() <= IfName) f |= Qt::ItemIsEditable;
  return f;
}

QVariant NodeTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case Name: return tr("Name");
    case Host: return tr("Host");
    case Port: return tr("Port");
    case User: return tr("User");
    case Auth: return tr("Auth");
    case KeyFile: return tr("Key file");
    case Gpus: return tr("GPUs");
    case WorkDir: return tr("Work directory");
    case Jump: return tr("Jump host");
    case Address: return tr("Cluster address");
    case IfName: return tr("Interface");
    case Container: return tr("Container");
    case Resolved: return tr("As resolved");
    case Status: return tr("Test");
  }
  return {};
}

}  // namespace td::gui
