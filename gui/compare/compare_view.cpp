// The Compare page (compare_view.h).
#include "gui/compare/compare_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include "gui/compare/compare_model.h"

namespace td::gui {

CompareView::CompareView(StoreClient* store, QWidget* parent)
    : QWidget(parent), model_(new CompareModel(store, this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  splitter_ = new QSplitter(Qt::Vertical, this);
  splitter_->setObjectName(QStringLiteral("compareSplitter"));
  layout->addWidget(splitter_);

  charts_slot_ = new QWidget(splitter_);
  charts_layout_ = new QVBoxLayout(charts_slot_);
  charts_layout_->setContentsMargins(0, 0, 0, 0);
  placeholder_ = new QLabel(tr("Charts of the compared runs appear here."), charts_slot_);
  placeholder_->setAlignment(Qt::AlignCenter);
  charts_layout_->addWidget(placeholder_);
  splitter_->addWidget(charts_slot_);

  tabs_ = new QTabWidget(splitter_);
  tabs_->setObjectName(QStringLiteral("compareTabs"));
  summary_view_ = new QTableView(tabs_);
  summary_view_->setObjectName(QStringLiteral("summaryTable"));
  summary_proxy_ = new QSortFilterProxyModel(this);
  summary_proxy_->setSourceModel(model_->summaryModel());
  summary_proxy_->setSortRole(Qt::UserRole);  // raw numbers, not their text
  summary_view_->setModel(summary_proxy_);
  summary_view_->setSortingEnabled(true);
  summary_view_->sortByColumn(-1, Qt::AscendingOrder);  // the order the runs were given
  summary_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  summary_view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  summary_view_->verticalHeader()->hide();
  summary_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  tabs_->addTab(summary_view_, tr("Summary"));

  auto* diff_page = new QWidget(tabs_);
  auto* diff_layout = new QVBoxLayout(diff_page);
  diff_status_ = new QLabel(diff_page);
  diff_status_->setObjectName(QStringLiteral("diffStatus"));
  diff_status_->setWordWrap(true);
  diff_view_ = new QTableView(diff_page);
  diff_view_->setObjectName(QStringLiteral("diffTable"));
  diff_view_->setModel(model_->diffModel());
  diff_view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  diff_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  diff_view_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  diff_layout->addWidget(diff_status_);
  diff_layout->addWidget(diff_view_, 1);
  tabs_->addTab(diff_page, tr("Config diff"));
  splitter_->addWidget(tabs_);
  splitter_->setStretchFactor(0, 3);
  splitter_->setStretchFactor(1, 2);

  connect(model_, &CompareModel::loaded, this, [this] { updateStatus(); });
  connect(model_, &CompareModel::loadingChanged, this, [this] { updateStatus(); });
  connect(model_, &CompareModel::error, this, [this](const QString& m) {
    error_ = m;
    updateStatus();
  });
  updateStatus();
}

void CompareView::setStoreClient(StoreClient* store) {
  error_.clear();
  model_->setStoreClient(store);
}

void CompareView::setRuns(const QStringList& run_ids) {
  error_.clear();
  model_->setRuns(run_ids);
  updateStatus();
}

QStringList CompareView::runs() const { return model_->runs(); }

void CompareView::refresh() {
  error_.clear();
  model_->refresh();
}

void CompareView::setChartsWidget(QWidget* charts) {
  if (charts == charts_) return;
  if (charts_) charts_->deleteLater();
  charts_ = charts;
  placeholder_->setVisible(charts_ == nullptr);
  if (charts_) {
    charts_->setParent(charts_slot_);
    charts_layout_->addWidget(charts_);
    charts_->show();
  }
}

QAbstractItemModel* CompareView::summaryModel() { return model_->summaryModel(); }
QAbstractItemModel* CompareView::diffModel() { return model_->diffModel(); }

QString CompareView::diffStatusText() const { return diff_status_->text(); }

void CompareView::updateStatus() {
  QString text;
  const int shown = model_->diffModel()->columnCount();
  if (model_->runs().size() < 2) {
    text = tr("Select two or more runs to compare");
  } else if (model_->isLoading()) {
    text = tr("Loading\u2026");
  } else if (shown >= 2) {
    const int equal = model_->diffModel()->equalCount();
    text = equal == 1 ? tr("1 field is equal (hidden)") : tr("%1 fields are equal (hidden)").arg(equal);
    if (model_->diffModel()->rowCount() == 0) text = tr("The configs are identical. ") + text;
  } else {
    text = tr("Select two or more runs to compare");  // fewer than two of them were found
  }
  if (!error_.isEmpty()) text = error_ + QLatin1Char('\n') + text;
  diff_status_->setText(text);
  diff_view_->setVisible(shown >= 2 && model_->runs().size() >= 2);
}

}  // namespace td::gui
