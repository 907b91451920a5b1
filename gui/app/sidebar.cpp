#include "gui/app/sidebar.h"

#include <QApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QPlainTextEdit>
#include <QStyleOptionProgressBar>
#include <QSortFilterProxyModel>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>

#include "gui/runs/experiments_model.h"
#include "store/types.h"

namespace td::gui {

bool RunProgressDelegate::barFor(const QModelIndex& index, QStyleOptionProgressBar* bar) {
  if (index.data(ExperimentsModel::KindRole).toString() != QLatin1String("run")) return false;
  const QVariant total = index.data(ExperimentsModel::TotalStepsRole);
  if (!total.isValid() || total.toLongLong() <= 0) return false;
  // QProgressBar's range is int: a run of more than 2^31 steps is drawn in coarser units.
  qlonglong max = total.toLongLong(), step = std::clamp(index.data(ExperimentsModel::StepRole).toLongLong(), 0LL, max);
  while (max > INT_MAX) {
    max /= 2;
    step /= 2;
  }
  bar->minimum = 0;
  bar->maximum = static_cast<int>(max);
  bar->progress = static_cast<int>(step);
  const QString status = index.data(Qt::DisplayRole).toString();
  td::store::RunProgress p;
  p.step = index.data(ExperimentsModel::StepRole).toLongLong();
  p.total_steps = total.toLongLong();
  bar->text = index.data(ExperimentsModel::StatusRole).toString() == QLatin1String("running")
                  ? Sidebar::tr("%1 · %2 %").arg(status).arg(*p.percent())
                  : status;
  bar->textVisible = true;
  bar->textAlignment = Qt::AlignCenter;
  return true;
}

void RunProgressDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
  QStyleOptionProgressBar bar;
  if (!barFor(index, &bar)) return QStyledItemDelegate::paint(painter, option, index);
  // The row's selection and alternate background first, then the bar inset by a pixel.
  QStyleOptionViewItem background = option;
  initStyleOption(&background, index);
  background.text.clear();
  const QWidget* w = option.widget;
  QStyle* style = w ? w->style() : QApplication::style();
  style->drawControl(QStyle::CE_ItemViewItem, &background, painter, w);
  bar.rect = option.rect.adjusted(1, 1, -1, -1);
  bar.state = option.state | QStyle::State_Horizontal;
  bar.direction = option.direction;
  bar.fontMetrics = option.fontMetrics;
  bar.palette = option.palette;
  style->drawControl(QStyle::CE_ProgressBar, &bar, painter, w);
}

QSize RunProgressDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const {
  QSize size = QStyledItemDelegate::sizeHint(option, index);
  QStyleOptionProgressBar bar;
  if (barFor(index, &bar)) size.setWidth(std::max(size.width(), option.fontMetrics.horizontalAdvance(bar.text) + 16));
  return size;
}

Sidebar::Sidebar(ExperimentsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  search_ = new QLineEdit(this);
  search_->setObjectName(QStringLiteral("sidebar_search"));
  search_->setPlaceholderText(tr("Search experiments, runs, status…"));
  search_->setClearButtonEnabled(true);
  layout->addWidget(search_);

  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setRecursiveFilteringEnabled(true);  // a matching run keeps its experiment visible
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setFilterKeyColumn(-1);              // any column: name, status, ...
  proxy_->setSortRole(ExperimentsModel::SortRole);
  connect(search_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);

  view_ = new QTreeView(this);
  view_->setObjectName(QStringLiteral("sidebar_tree"));
  view_->setModel(proxy_);
  view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  view_->setUniformRowHeights(true);
  view_->setAlternatingRowColors(true);
  view_->setContextMenuPolicy(Qt::CustomContextMenu);
  // Every column as wide as its contents (run ids are 22 characters): a narrow sidebar
  // scrolls sideways rather than eliding the ids.
  view_->header()->setStretchLastSection(true);
  for (int c = 0; c < ExperimentsModel::ColumnCount; ++c)
    view_->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  // The runs' status over a bar of their steps (train.steps).
  view_->setItemDelegateForColumn(ExperimentsModel::ColStatus, new RunProgressDelegate(view_));
  layout->addWidget(view_, 1);

  auto* buttons = new QHBoxLayout;
  auto add_button = [&](const QString& text, const QString& tip, auto slot) {
    auto* b = new QToolButton(this);
    b->setText(text);
    b->setToolTip(tip);
    connect(b, &QToolButton::clicked, this, slot);
    buttons->addWidget(b);
    return b;
  };
  add_button(tr("New"), tr("New experiment"), [this] { newExperiment(); });
  add_button(tr("Rename"), tr("Rename the selected experiment or run (a run keeps its id)"), [this] { renameCurrent(); });
  add_button(tr("Notes"), tr("Notes and tags of the selected experiment or run"), [this] { editNotes(); });
  add_button(tr("Delete"), tr("Delete the selected runs or experiment"), [this] { deleteSelected(true); });
  buttons->addStretch(1);
  layout->addLayout(buttons);

  connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &Sidebar::onSelection);
  connect(view_, &QTreeView::customContextMenuRequested, this, &Sidebar::showContextMenu);
  connect(view_, &QTreeView::doubleClicked, this, [this](const QModelIndex& i) {
    if (i.data(ExperimentsModel::KindRole).toString() == QLatin1String("run"))
      emit runActivated(i.data(ExperimentsModel::KeyRole).toString());
  });
  // A reload resets the model: restore the selection and expansion afterwards.
  connect(model_, &ExperimentsModel::loaded, this, [this] {
    view_->expandAll();
    if (!pending_select_.isEmpty()) {
      const QStringList ids = pending_select_;
      pending_select_.clear();
      QItemSelection sel;
      for (const auto& id : ids) {
        const QModelIndex i = proxy_->mapFromSource(model_->runIndex(id));
        if (i.isValid()) sel.select(i, i.siblingAtColumn(ExperimentsModel::ColumnCount - 1));
      }
      if (!sel.isEmpty()) {
        view_->selectionModel()->select(sel, QItemSelectionModel::ClearAndSelect);
        view_->setCurrentIndex(sel.indexes().first());
        return;
      }
    }
    if (!pending_experiment_.isEmpty()) {
      const QModelIndex i = proxy_->mapFromSource(model_->experimentIndex(pending_experiment_));
      pending_experiment_.clear();
      if (i.isValid()) view_->setCurrentIndex(i);
    }
  });
  connect(model_, &QAbstractItemModel::modelAboutToBeReset, this, [this] {
    if (pending_select_.isEmpty()) pending_select_ = selectedRuns();
    if (pending_experiment_.isEmpty() && currentKind() == QLatin1String("experiment"))
      pending_experiment_ = currentKey();
  });
}

QStringList Sidebar::selectedRuns() const {
  QStringList ids;
  for (const QModelIndex& i : view_->selectionModel()->selectedRows())
    if (i.data(ExperimentsModel::KindRole).toString() == QLatin1String("run"))
      ids << i.data(ExperimentsModel::KeyRole).toString();
  return ids;
}

QString Sidebar::currentKind() const { return view_->currentIndex().data(ExperimentsModel::KindRole).toString(); }
QString Sidebar::currentKey() const { return view_->currentIndex().data(ExperimentsModel::KeyRole).toString(); }

QString Sidebar::currentExperiment() const {
  const QModelIndex i = view_->currentIndex();
  if (!i.isValid()) return {};
  if (currentKind() == QLatin1String("experiment")) return currentKey();
  return model_->experimentOfRun(currentKey());
}

void Sidebar::selectRun(const QString& run_id) {
  const QModelIndex i = proxy_->mapFromSource(model_->runIndex(run_id));
  if (!i.isValid()) {
    pending_select_ = {run_id};  // not loaded yet: select it after the next reload
    return;
  }
  view_->selectionModel()->select(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  view_->setCurrentIndex(i);
}

void Sidebar::selectExperiment(const QString& name) {
  const QModelIndex i = proxy_->mapFromSource(model_->experimentIndex(name));
  if (!i.isValid()) {
    pending_experiment_ = name;
    return;
  }
  view_->selectionModel()->select(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  view_->setCurrentIndex(i);
}

void Sidebar::onSelection() { emit selectionChanged(selectedRuns(), currentExperiment()); }

void Sidebar::newExperiment(const QString& name) {
  QString n = name;
  if (n.isEmpty()) {
    bool ok = false;
    n = QInputDialog::getText(this, tr("New experiment"), tr("Name:"), QLineEdit::Normal, QString(), &ok);
    if (!ok) return;
  }
  pending_experiment_ = n.trimmed();
  model_->createExperiment(n);
}

void Sidebar::renameCurrent(const QString& to) {
  if (currentKind() == QLatin1String("run")) {
    // A run keeps its id (the key); its name is what people see.
    const QString id = currentKey();
    const QString from = view_->currentIndex().siblingAtColumn(0).data(ExperimentsModel::RunNameRole).toString();
    QString t = to;
    if (t.isEmpty()) {
      bool ok = false;
      t = QInputDialog::getText(this, tr("Rename run %1").arg(id), tr("Name (empty: show the run id):"),
                                QLineEdit::Normal, from, &ok);
      if (!ok) return;
    }
    model_->renameRun(id, t);
    return;
  }
  if (currentKind() != QLatin1String("experiment")) return;
  const QString from = currentKey();
  QString t = to;
  if (t.isEmpty()) {
    bool ok = false;
    t = QInputDialog::getText(this, tr("Rename experiment"), tr("New name:"), QLineEdit::Normal, from, &ok);
    if (!ok) return;
  }
  pending_experiment_ = t.trimmed();
  model_->renameExperiment(from, t);
}

void Sidebar::editNotes() {
  const QModelIndex i = view_->currentIndex();
  if (!i.isValid()) return;
  const bool is_exp = currentKind() == QLatin1String("experiment");
  const QString key = currentKey();
  QDialog dialog(this);
  dialog.setWindowTitle(is_exp ? tr("Experiment %1").arg(key) : tr("Run %1").arg(key));
  auto* form = new QFormLayout(&dialog);
  auto* notes = new QPlainTextEdit(&dialog);
  const QModelIndex src = proxy_->mapToSource(i);
  notes->setPlainText(src.data(ExperimentsModel::NotesRole).toString());
  form->addRow(tr("Notes:"), notes);
  QLineEdit* tags = nullptr;
  if (is_exp) {
    tags = new QLineEdit(src.data(ExperimentsModel::TagsRole).toStringList().join(QStringLiteral(", ")), &dialog);
    tags->setPlaceholderText(tr("comma-separated, e.g. baseline, lr-sweep"));
    form->addRow(tr("Tags:"), tags);
  }
  auto* box = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  connect(box, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  connect(box, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  form->addRow(box);
  if (dialog.exec() != QDialog::Accepted) return;
  if (is_exp) {
    model_->setExperimentNotes(key, notes->toPlainText());
    model_->setExperimentTags(key, tags->text().split(QLatin1Char(',')));
  } else {
    model_->setRunNotes(key, notes->toPlainText());
  }
}

void Sidebar::deleteSelected(bool ask) {
  const QStringList runs = selectedRuns();
  for (const QString& id : runs)
    if (model_->isRunActive(id)) {
      // Refused before asking: a running run's numbers are still being written.
      QMessageBox::information(this, tr("Delete runs"), tr("Run %1 is training: stop it before deleting it.").arg(id));
      return;
    }
  if (!runs.isEmpty()) {
    if (ask && QMessageBox::question(this, tr("Delete runs"),
                                     tr("Delete %n run(s) and every number stored for them? Their run folders "
                                        "on disk are kept.", "", runs.size())) != QMessageBox::Yes)
      return;
    for (const auto& id : runs) model_->deleteRun(id);
    return;
  }
  if (currentKind() != QLatin1String("experiment")) return;
  const QString name = currentKey();
  if (ask && QMessageBox::question(this, tr("Delete experiment"),
                                   tr("Delete experiment %1 with all its runs and their stored numbers? Run folders "
                                      "on disk are kept.")
                                       .arg(name)) != QMessageBox::Yes)
    return;
  model_->deleteExperiment(name);
}

void Sidebar::showContextMenu(const QPoint& pos) {
  QMenu menu(this);
  const bool is_exp = currentKind() == QLatin1String("experiment");
  menu.addAction(tr("New experiment…"), this, [this] { newExperiment(); });
  if (is_exp || currentKind() == QLatin1String("run")) menu.addAction(tr("Rename…"), this, [this] { renameCurrent(); });
  if (view_->currentIndex().isValid()) {
    menu.addAction(tr("Notes and tags…"), this, [this] { editNotes(); });
    menu.addAction(tr("Delete…"), this, [this] { deleteSelected(true); });
  }
  menu.exec(view_->viewport()->mapToGlobal(pos));
}

}  // namespace td::gui
