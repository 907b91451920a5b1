// ClusterDesigner (cluster_designer.h).
#include "gui/cluster/cluster_designer.h"

#include <algorithm>

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QStackedWidget>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QVBoxLayout>

#include "gui/cluster/cluster_list.h"
#include "gui/cluster/connection_tester.h"
#include "gui/cluster/container_settings.h"
#include "gui/cluster/node_access.h"
#include "gui/cluster/node_table_model.h"
#include "gui/cluster/slurm_settings.h"
#include "gui/core/store_client.h"
#include "gui/look/icons.h"
#include "store/store.h"

namespace td::gui {

namespace {

// The auth column's editor: a combo of the three methods (model values "agent", "key", "password").
class AuthDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    if (index.column() != NodeTableModel::Auth) return QStyledItemDelegate::createEditor(parent, option, index);
    auto* combo = new QComboBox(parent);
    combo->addItem(NodeTableModel::authText(td::remote::AuthMethod::Agent), QStringLiteral("agent"));
    combo->addItem(NodeTableModel::authText(td::remote::AuthMethod::KeyFile), QStringLiteral("key"));
    combo->addItem(NodeTableModel::authText(td::remote::AuthMethod::Password), QStringLiteral("password"));
    return combo;
  }
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    if (auto* combo = qobject_cast<QComboBox*>(editor); combo && index.column() == NodeTableModel::Auth)
      combo->setCurrentIndex(combo->findData(index.data(Qt::EditRole)));
    else
      QStyledItemDelegate::setEditorData(editor, index);
  }
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override {
    if (auto* combo = qobject_cast<QComboBox*>(editor); combo && index.column() == NodeTableModel::Auth)
      model->setData(index, combo->currentData(), Qt::EditRole);
    else
      QStyledItemDelegate::setModelData(editor, model, index);
  }
};

}  // namespace

ClusterDesigner::ClusterDesigner(StoreClient* store, NodeAccess* access, QWidget* parent)
    : QWidget(parent), access_(access) {
  model_ = new NodeTableModel(this);
  if (access_) model_->setSshConfigPath(access_->sshConfigPath());
  tester_ = new ConnectionTester(access_, this);
  list_ = new ClusterList(nullptr, this);
  buildUi();
  connect(list_, &ClusterList::changed, this, [this] {
    fillList();
    emit clustersChanged(list_->names());
  });
  connect(list_, &ClusterList::error, this, [this](const QString& m) { setStatus(m, true); });
  connect(model_, &NodeTableModel::nodesEdited, this, &ClusterDesigner::markDirty);
  connect(tester_, &ConnectionTester::finished, this, [this](const QString& id, const QString& text) {
    model_->setTestState(id, NodeTableModel::TestState::Ok, text);
    table_->resizeColumnToContents(NodeTableModel::Status);
    showReport();
    updateState();
  });
  connect(tester_, &ConnectionTester::failed, this, [this](const QString& id, const QString& message) {
    model_->setTestState(id, NodeTableModel::TestState::Failed, message);
    table_->resizeColumnToContents(NodeTableModel::Status);
    showReport();
    updateState();
  });
  connect(tester_, &ConnectionTester::cancelled, this, [this](const QString& id) {
    model_->setTestState(id, NodeTableModel::TestState::None, tr("Test cancelled."));
    showReport();
    updateState();
  });
  load(ClusterList::localName());
  setStoreClient(store);
}

ClusterDesigner::~ClusterDesigner() = default;

void ClusterDesigner::buildUi() {
  setObjectName(QStringLiteral("clusterDesigner"));
  auto* top = new QVBoxLayout(this);

  // -- saved clusters
  auto* list_box = new QGroupBox(tr("Clusters"), this);
  auto* list_layout = new QVBoxLayout(list_box);
  clusters_ = new QListWidget(list_box);
  clusters_->setObjectName(QStringLiteral("clusterList"));
  clusters_->setSelectionMode(QAbstractItemView::SingleSelection);
  new_ = new QPushButton(tr("New cluster"), list_box);
  new_->setObjectName(QStringLiteral("newClusterButton"));
  delete_ = new QPushButton(icon(QStringLiteral("delete")), tr("Delete…"), list_box);
  delete_->setObjectName(QStringLiteral("deleteClusterButton"));
  delete_->setToolTip(tr("Remove this cluster from the store (runs made on it stay)"));
  auto* list_buttons = new QHBoxLayout;
  list_buttons->addWidget(new_);
  list_buttons->addWidget(delete_);
  list_layout->addWidget(clusters_, 1);
  list_layout->addLayout(list_buttons);

  // -- the local cluster: nothing to edit
  stack_ = new QStackedWidget(this);
  stack_->setObjectName(QStringLiteral("designerPages"));  // 0: this machine, 1: the editor
  auto* local_page = new QLabel(tr("<b>This machine</b><br>Runs train on this computer, on its GPUs where the engine "
                                   "has CUDA, else on its CPU. There is nothing to configure.<br><br>To train on "
                                   "servers over SSH, press <i>New cluster</i>."),
                                stack_);
  local_page->setObjectName(QStringLiteral("localPage"));
  local_page->setWordWrap(true);
  local_page->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  local_page->setMargin(12);
  stack_->addWidget(local_page);

  // -- the cluster editor
  auto* editor = new QWidget(stack_);
  auto* ed = new QVBoxLayout(editor);
  auto* form = new QFormLayout;
  name_ = new QLineEdit(editor);
  name_->setObjectName(QStringLiteral("clusterName"));
  name_->setPlaceholderText(tr("a name for this cluster, e.g. lab"));
  form->addRow(tr("Name:"), name_);
  kind_ = new QComboBox(editor);
  kind_->setObjectName(QStringLiteral("clusterKind"));
  kind_->addItem(tr("SSH nodes"), QStringLiteral("ssh"));
  kind_->addItem(tr("Slurm cluster"), QStringLiteral("slurm"));
  kind_->setToolTip(tr("SSH nodes: runs start on the nodes themselves. Slurm cluster: runs are submitted with sbatch "
                       "through its login node"));
  form->addRow(tr("Kind:"), kind_);
  ed->addLayout(form);
  table_ = new QTableView(editor);
  table_->setObjectName(QStringLiteral("nodeTable"));
  table_->setModel(model_);
  table_->setItemDelegate(new AuthDelegate(table_));
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                          QAbstractItemView::AnyKeyPressed);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setWordWrap(false);
  ed->addWidget(table_, 3);
  auto* node_buttons = new QHBoxLayout;
  add_node_ = new QPushButton(tr("Add node"), editor);
  add_node_->setObjectName(QStringLiteral("addNodeButton"));
  duplicate_ = new QPushButton(tr("Duplicate"), editor);
  duplicate_->setObjectName(QStringLiteral("duplicateNodeButton"));
  remove_node_ = new QPushButton(tr("Remove"), editor);
  remove_node_->setObjectName(QStringLiteral("removeNodeButton"));
  key_file_ = new QPushButton(tr("Key file…"), editor);
  key_file_->setObjectName(QStringLiteral("keyFileButton"));
  key_file_->setToolTip(tr("Choose the private key of the selected node (its auth becomes \"key file\")"));
  test_ = new QPushButton(icon(QStringLiteral("remote")), tr("Test connection"), editor);
  test_->setObjectName(QStringLiteral("testButton"));
  test_->setToolTip(tr("Connect to the selected node, check its host key and report what it offers"));
  test_all_ = new QPushButton(tr("Test all"), editor);
  test_all_->setObjectName(QStringLiteral("testAllButton"));
  cancel_tests_ = new QPushButton(icon(QStringLiteral("stop")), tr("Cancel tests"), editor);
  cancel_tests_->setObjectName(QStringLiteral("cancelTestsButton"));
  for (QPushButton* b : {add_node_, duplicate_, remove_node_, key_file_}) node_buttons->addWidget(b);
  node_buttons->addStretch(1);
  for (QPushButton* b : {test_, test_all_, cancel_tests_}) node_buttons->addWidget(b);
  ed->addLayout(node_buttons);
  container_box_ = new QGroupBox(tr("Container of the selected node"), editor);
  container_box_->setObjectName(QStringLiteral("containerBox"));
  auto* container_layout = new QVBoxLayout(container_box_);
  container_ = new ContainerSettings(container_box_);
  container_layout->addWidget(container_);
  ed->addWidget(container_box_);
  slurm_box_ = new QGroupBox(tr("Slurm"), editor);
  slurm_box_->setObjectName(QStringLiteral("slurmBox"));
  auto* slurm_layout = new QVBoxLayout(slurm_box_);
  slurm_ = new SlurmSettings(slurm_box_);
  slurm_layout->addWidget(slurm_);
  ed->addWidget(slurm_box_, 4);
  problems_ = new QLabel(editor);
  problems_->setObjectName(QStringLiteral("problemsLabel"));
  problems_->setWordWrap(true);
  problems_->setStyleSheet(QStringLiteral("color: #c62828;"));
  ed->addWidget(problems_);
  report_ = new QPlainTextEdit(editor);
  report_->setObjectName(QStringLiteral("reportView"));
  report_->setReadOnly(true);
  ed->addWidget(report_, 1);
  stack_->addWidget(editor);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(list_box);
  split->addWidget(stack_);
  split->setStretchFactor(1, 1);
  split->setSizes({220, 900});
  top->addWidget(split, 1);

  auto* bottom = new QHBoxLayout;
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("statusLabel"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  revert_ = new QPushButton(tr("Revert"), this);
  revert_->setObjectName(QStringLiteral("revertButton"));
  save_ = new QPushButton(tr("Save"), this);
  save_->setObjectName(QStringLiteral("saveButton"));
  save_->setDefault(true);
  bottom->addWidget(status_, 1);
  bottom->addWidget(revert_);
  bottom->addWidget(save_);
  top->addLayout(bottom);

  // -- wiring
  connect(clusters_, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
    if (loading_ || !item) return;
    const QString name = item->data(Qt::UserRole).toString();
    if (name != current_) selectCluster(name);
  });
  connect(new_, &QPushButton::clicked, this, [this] { newCluster(); });
  connect(delete_, &QPushButton::clicked, this, &ClusterDesigner::deleteCluster);
  connect(name_, &QLineEdit::textEdited, this, &ClusterDesigner::markDirty);
  connect(kind_, &QComboBox::currentIndexChanged, this, [this] {
    applyKind();
    markDirty();
  });
  connect(slurm_, &SlurmSettings::edited, this, &ClusterDesigner::markDirty);
  connect(container_, &ContainerSettings::edited, this, [this] {
    const int row = selectedRow();
    if (row < 0) return;
    td::remote::NodeSpec n = model_->node(row);
    n.container = container_->spec();
    model_->setNode(row, n);  // nodesEdited(): markDirty()
    table_->resizeColumnToContents(NodeTableModel::Container);
  });
  connect(add_node_, &QPushButton::clicked, this, [this] {
    const int row = model_->addNode();
    table_->selectRow(row);
    table_->edit(model_->index(row, NodeTableModel::Host));
  });
  connect(duplicate_, &QPushButton::clicked, this, [this] {
    const int row = model_->duplicateNode(selectedRow());
    if (row >= 0) table_->selectRow(row);
  });
  connect(remove_node_, &QPushButton::clicked, this, [this] {
    const int row = selectedRow();
    if (row < 0) return;
    tester_->cancel(model_->rowId(row));
    model_->removeNode(row);
  });
  connect(key_file_, &QPushButton::clicked, this, &ClusterDesigner::chooseKeyFile);
  connect(test_, &QPushButton::clicked, this, [this] { testNode(selectedRow()); });
  connect(test_all_, &QPushButton::clicked, this, &ClusterDesigner::testAll);
  connect(cancel_tests_, &QPushButton::clicked, this, &ClusterDesigner::cancelTests);
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    showReport();
    showContainer();
    updateState();
  });
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    table_->resizeColumnsToContents();
    showContainer();
    updateState();
  });
  connect(model_, &QAbstractItemModel::rowsInserted, table_, &QTableView::resizeColumnsToContents);
  connect(revert_, &QPushButton::clicked, this, &ClusterDesigner::revert);
  connect(save_, &QPushButton::clicked, this, &ClusterDesigner::save);
}

void ClusterDesigner::setStoreClient(StoreClient* store) {
  store_ = store;
  dirty_ = false;
  load(ClusterList::localName());
  list_->setStoreClient(store);
}

// ---- the list ----------------------------------------------------------------------------------

void ClusterDesigner::fillList() {
  loading_ = true;
  clusters_->clear();
  auto* local = new QListWidgetItem(ClusterList::localName(), clusters_);
  local->setData(Qt::UserRole, ClusterList::localName());
  QFont italic = local->font();
  italic.setItalic(true);
  local->setFont(italic);
  local->setToolTip(tr("Train on this computer (not editable)"));
  for (const QString& name : list_->names()) {
    auto* it = new QListWidgetItem(icon(QStringLiteral("remote")), name, clusters_);
    it->setData(Qt::UserRole, name);
    const auto spec = list_->cluster(name);
    if (spec && spec->is_slurm() && !spec->nodes.empty())
      it->setToolTip(tr("Slurm cluster through the login node %1").arg(QString::fromStdString(spec->nodes.front().display_name())));
    else
      it->setToolTip(tr("%n node(s)", nullptr, spec ? static_cast<int>(spec->nodes.size()) : 0));
  }
  for (int i = 0; i < clusters_->count(); ++i)
    if (clusters_->item(i)->data(Qt::UserRole).toString() == current_) clusters_->setCurrentRow(i);
  if (!list_->problems().isEmpty())
    setStatus(tr("Some saved clusters cannot be read: %1").arg(list_->problems().join(QStringLiteral("; "))), true);
  loading_ = false;
  updateState();
}

bool ClusterDesigner::confirmDiscard(const QString& question, std::function<void()> then) {
  return guard(std::move(then), question);
}

bool ClusterDesigner::guard(std::function<void()> then, const QString& question) {
  if (!dirty_) {
    then();
    return true;
  }
  auto* box = new QMessageBox(QMessageBox::Question, tr("Unsaved changes"),
                              tr("The cluster \"%1\" has unsaved changes.").arg(name_->text()),
                              QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, this);
  box->setObjectName(QStringLiteral("unsavedConfirm"));
  box->setInformativeText(question.isEmpty() ? tr("Save them before you switch?") : question);
  box->setDefaultButton(QMessageBox::Save);
  box->setAttribute(Qt::WA_DeleteOnClose);
  connect(box, &QMessageBox::buttonClicked, this, [this, box, then](QAbstractButton* b) {
    const auto which = box->standardButton(b);
    if (which == QMessageBox::Discard) {
      dirty_ = false;
      then();
    } else if (which == QMessageBox::Save && save()) {
      auto* once = new QObject(this);
      connect(this, &ClusterDesigner::saved, once, [once, then] {
        then();
        once->deleteLater();
      });
    } else {
      fillList();  // back to the cluster being edited
    }
  });
  box->open();  // window-modal, no nested event loop
  fillList();     // the list shows the edited cluster until the person decides
  return false;
}

bool ClusterDesigner::selectCluster(const QString& name, bool discard) {
  if (name != ClusterList::localName() && !list_->cluster(name)) return false;
  if (discard) dirty_ = false;
  return guard([this, name] { load(name); });
}

bool ClusterDesigner::newCluster(bool discard) {
  if (discard) dirty_ = false;
  return guard([this] {
    tester_->cancelAll();
    loading_ = true;
    current_.clear();
    name_->clear();
    model_->setNodes({td::remote::NodeSpec{}});
    showKind({});
    stack_->setCurrentIndex(1);
    clusters_->clearSelection();
    clusters_->setCurrentRow(-1);
    loading_ = false;
    dirty_ = true;
    report_->clear();
    setStatus(tr("New cluster: name it, fill in its nodes, then Save."));
    updateState();
    name_->setFocus();
  });
}

void ClusterDesigner::load(const QString& name) {
  tester_->cancelAll();
  loading_ = true;
  current_ = name;
  const bool local = name == ClusterList::localName();
  const std::optional<td::remote::ClusterSpec> spec = list_->cluster(name);
  name_->setText(local ? QString() : name);
  model_->setNodes(spec && !local ? spec->nodes : std::vector<td::remote::NodeSpec>{});
  showKind(spec && !local ? *spec : td::remote::ClusterSpec{});
  stack_->setCurrentIndex(local ? 0 : 1);
  for (int i = 0; i < clusters_->count(); ++i)
    if (clusters_->item(i)->data(Qt::UserRole).toString() == name) clusters_->setCurrentRow(i);
  loading_ = false;
  dirty_ = false;
  report_->clear();
  if (model_->rowCount() > 0) table_->selectRow(0);
  updateState();
}

void ClusterDesigner::setSpec(const td::remote::ClusterSpec& spec) {
  tester_->cancelAll();
  loading_ = true;
  current_.clear();
  name_->setText(QString::fromStdString(spec.name));
  model_->setNodes(spec.nodes);
  showKind(spec);
  stack_->setCurrentIndex(1);
  clusters_->setCurrentRow(-1);
  loading_ = false;
  dirty_ = true;
  updateState();
}

td::remote::ClusterSpec ClusterDesigner::spec() const {
  td::remote::ClusterSpec c;
  if (current_ == ClusterList::localName()) {
    c.name = current_.toStdString();
    return c;
  }
  c.name = name_->text().trimmed().toStdString();
  c.nodes = model_->nodes();
  c.kind = kind().toStdString();
  if (c.is_slurm()) c.slurm = slurm_->spec();
  return c;
}

QString ClusterDesigner::kind() const { return kind_->currentData().toString(); }

void ClusterDesigner::setKind(const QString& kind) {
  const int i = kind_->findData(kind);
  if (i >= 0) kind_->setCurrentIndex(i);  // currentIndexChanged: applyKind(), markDirty()
}

// Shows `spec`'s kind and Slurm settings (while loading_: no edit).
void ClusterDesigner::showKind(const td::remote::ClusterSpec& spec) {
  const bool was = loading_;
  loading_ = true;
  kind_->setCurrentIndex(std::max(0, kind_->findData(QString::fromStdString(spec.kind))));
  slurm_->setSpec(spec.slurm);
  loading_ = was;
  applyKind();
}

// What the kind changes in the layout: the Slurm settings, the columns a login node does not use.
void ClusterDesigner::applyKind() {
  const bool slurm = kind() == QLatin1String("slurm");
  slurm_box_->setVisible(slurm);
  container_box_->setVisible(!slurm);  // a Slurm cluster's container is in its Slurm settings
  for (int column : {NodeTableModel::Gpus, NodeTableModel::WorkDir, NodeTableModel::Address, NodeTableModel::IfName,
                     NodeTableModel::Container})
    table_->setColumnHidden(column, slurm);
  if (auto* l = qobject_cast<QBoxLayout*>(table_->parentWidget()->layout())) l->setStretchFactor(table_, slurm ? 1 : 3);
  report_->setPlaceholderText(
      slurm ? tr("Press Test connection: the login node's OS, CPUs, memory, free disk in the shared work directory "
                 "and glibc, and what sinfo says about the partition appear here.")
            : tr("Select a node and press Test connection: its OS, CPUs, memory, free disk in the work directory, "
                 "glibc and GPUs appear here."));
}

// The selected node's container in the container fields (none selected: empty and disabled).
void ClusterDesigner::showContainer() {
  const int row = selectedRow();
  container_->setSpec(row >= 0 ? model_->node(row).container : td::remote::ContainerSpec{});
  container_->setEnabled(row >= 0);
}

// ---- editing state -----------------------------------------------------------------------------

void ClusterDesigner::markDirty() {
  if (loading_) return;
  dirty_ = true;
  updateState();
}

QStringList ClusterDesigner::problems() const {
  if (current_ == ClusterList::localName()) return {};
  const td::remote::ClusterSpec c = spec();
  QStringList out;
  for (const std::string& p : td::remote::validate(c)) out << QString::fromStdString(p);
  if (c.nodes.empty() && !c.is_slurm())  // a Slurm cluster: validate() asks for its login node
    out << tr("the cluster has no node: add one (a cluster without nodes is this machine)");
  const QString name = QString::fromStdString(c.name);
  if (!name.isEmpty() && name != current_ && (list_->names().contains(name) || name == ClusterList::localName()))
    out << tr("a cluster called \"%1\" exists already: choose another name").arg(name);
  return out;
}

void ClusterDesigner::updateState() {
  const bool local = current_ == ClusterList::localName();
  const QStringList p = problems();
  problems_->setText(p.isEmpty() ? QString() : QStringLiteral("• ") + p.join(QStringLiteral("\n• ")));
  problems_->setVisible(!p.isEmpty());
  const int row = selectedRow();
  const bool slurm = kind() == QLatin1String("slurm");  // one login node, no more
  save_->setEnabled(!local && store_ && p.isEmpty() && (dirty_ || current_.isEmpty()));
  save_->setToolTip(p.isEmpty() ? tr("Save this cluster in the store (never any password or passphrase)")
                                : tr("Fix the problems listed above first"));
  revert_->setEnabled(!local && dirty_ && !current_.isEmpty());
  delete_->setEnabled(!local && !current_.isEmpty() && store_);
  add_node_->setEnabled(!slurm || model_->rowCount() == 0);
  add_node_->setToolTip(slurm && model_->rowCount() > 0 ? tr("A Slurm cluster has one node: its login node") : QString());
  duplicate_->setEnabled(row >= 0 && !slurm);
  remove_node_->setEnabled(row >= 0);
  key_file_->setEnabled(row >= 0);
  test_->setEnabled(row >= 0 && !model_->node(row).host.empty() &&
                    model_->testState(row) != NodeTableModel::TestState::Testing);
  test_all_->setEnabled(model_->rowCount() > 0);
  cancel_tests_->setEnabled(tester_->running() > 0);
}

void ClusterDesigner::setStatus(const QString& text, bool error) {
  status_->setText(text);
  status_->setStyleSheet(error ? QStringLiteral("color: #c62828;") : QString());
}

int ClusterDesigner::selectedRow() const {
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  return rows.isEmpty() ? -1 : rows.front().row();
}

void ClusterDesigner::chooseKeyFile() {
  const int row = selectedRow();
  if (row < 0) return;
  const QString file = QFileDialog::getOpenFileName(this, tr("Private key file"), QDir::home().filePath(".ssh"),
                                                    tr("Private keys (id_* *.pem *.key);;All files (*)"));
  if (file.isEmpty()) return;
  td::remote::NodeSpec n = model_->node(row);
  n.key_file = file.toStdString();
  n.auth = td::remote::AuthMethod::KeyFile;
  model_->setNode(row, n);
}

// ---- store -------------------------------------------------------------------------------------

bool ClusterDesigner::save() {
  const QStringList p = problems();
  if (current_ == ClusterList::localName() || !store_) return false;
  if (!p.isEmpty()) {
    setStatus(tr("Not saved: %1").arg(p.join(QStringLiteral("; "))), true);
    return false;
  }
  const td::remote::ClusterSpec c = spec();
  const std::string name = c.name, json = td::remote::to_json(c).dump(), old = current_.toStdString();
  store_->exec(
      this,
      [name, json, old](td::store::Store& s) {
        s.save_cluster(name, json);
        if (!old.empty() && old != name) s.forget_cluster(old);  // a rename
      },
      [this, name] {
        const QString n = QString::fromStdString(name);
        current_ = n;
        dirty_ = false;
        setStatus(tr("Saved %1.").arg(n));
        list_->reload();
        updateState();
        emit saved(n);
      },
      [this](const QString& m) { setStatus(tr("Not saved: %1").arg(m), true); });
  setStatus(tr("Saving…"));
  return true;
}

void ClusterDesigner::revert() {
  if (current_.isEmpty() || current_ == ClusterList::localName()) return;
  dirty_ = false;
  load(current_);
  setStatus(tr("Reverted to the saved %1.").arg(current_));
}

void ClusterDesigner::deleteCluster() {
  if (!store_ || current_.isEmpty() || current_ == ClusterList::localName()) return;
  const QString name = current_;
  auto* box = new QMessageBox(QMessageBox::Question, tr("Delete cluster"),
                              tr("Remove the cluster \"%1\" from this store?\n\nRuns made on it stay; nothing on its "
                                 "nodes is touched.").arg(name),
                              QMessageBox::Yes | QMessageBox::Cancel, this);
  box->setObjectName(QStringLiteral("deleteConfirm"));
  box->setDefaultButton(QMessageBox::Cancel);
  box->setAttribute(Qt::WA_DeleteOnClose);
  connect(box, &QMessageBox::buttonClicked, this, [this, box, name](QAbstractButton* b) {
    if (box->standardButton(b) != QMessageBox::Yes || !store_) return;
    const std::string n = name.toStdString();
    store_->exec(
        this, [n](td::store::Store& s) { s.forget_cluster(n); },
        [this, name] {
          dirty_ = false;
          load(ClusterList::localName());
          setStatus(tr("Deleted %1.").arg(name));
          list_->reload();
        },
        [this](const QString& m) { setStatus(m, true); });
  });
  box->open();
}

// ---- Test connection ---------------------------------------------------------------------------

void ClusterDesigner::testNode(int row) {
  if (row < 0 || row >= model_->rowCount() || model_->node(row).host.empty()) return;
  const QString id = model_->rowId(row);
  model_->setTestState(id, NodeTableModel::TestState::Testing, tr("Connecting to %1…").arg(model_->resolved(row)));
  if (kind() == QLatin1String("slurm")) tester_->testSlurm(id, model_->node(row), slurm_->spec());
  else tester_->test(id, model_->node(row));
  showReport();
  updateState();
}

void ClusterDesigner::testAll() {
  for (int row = 0; row < model_->rowCount(); ++row) testNode(row);
}

void ClusterDesigner::cancelTests() {
  tester_->cancelAll();
  updateState();
}

void ClusterDesigner::showReport() {
  const int row = selectedRow();
  if (row < 0) {
    report_->clear();
    return;
  }
  const QString name = QString::fromStdString(model_->node(row).display_name());
  switch (model_->testState(row)) {
    case NodeTableModel::TestState::None: report_->setPlainText(model_->testText(row)); break;
    case NodeTableModel::TestState::Testing: report_->setPlainText(model_->testText(row)); break;
    case NodeTableModel::TestState::Ok:
      report_->setPlainText(tr("%1: connected\n%2").arg(name, model_->testText(row)));
      break;
    case NodeTableModel::TestState::Failed:
      report_->setPlainText(tr("%1: FAILED\n%2").arg(name, model_->testText(row)));
      break;
  }
}

}  // namespace td::gui
