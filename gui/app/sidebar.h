// Sidebar: experiments and their runs (ExperimentsModel), with search, new, rename, notes and
// tags, delete (confirmed; running runs refused by the model).
//
// Threading rule: GUI thread; every store access goes through ExperimentsModel's jobs.
#pragma once

#include <QStyledItemDelegate>
#include <QWidget>

class QStyleOptionProgressBar;

class QLineEdit;
class QSortFilterProxyModel;
class QToolButton;
class QTreeView;
class QPlainTextEdit;

namespace td::gui {

class ExperimentsModel;

/// The runs' Status column: the status over a progress bar of the run's steps (last step of
/// train.steps, ExperimentsModel::StepRole / TotalStepsRole), "running · 9 %". Rows without a
/// known train.steps (experiments, runs not started) are drawn as plain text.
class RunProgressDelegate : public QStyledItemDelegate {
  Q_OBJECT
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  /// Fills `bar` (range 0..train.steps, progress the last step, the text shown) for `index`;
  /// false when the row has no bar.
  static bool barFor(const QModelIndex& index, QStyleOptionProgressBar* bar);
  void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
  /// Wide enough for the bar's text ("running · 99 %"), so the column never clips it.
  QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};

class Sidebar : public QWidget {
  Q_OBJECT
 public:
  Sidebar(ExperimentsModel* model, QWidget* parent = nullptr);

  /// Selected run ids (in view order) and the experiment of the current item ("" when none).
  QStringList selectedRuns() const;
  QString currentExperiment() const;
  void selectRun(const QString& run_id);
  void selectExperiment(const QString& name);
  QTreeView* view() const { return view_; }
  QLineEdit* searchField() const { return search_; }

  // Actions (also buttons and the context menu). `ask` = false skips dialogs (tests, scripts).
  void newExperiment(const QString& name = {});
  void renameCurrent(const QString& to = {});
  void editNotes();
  void deleteSelected(bool ask = true);

 signals:
  void selectionChanged(const QStringList& run_ids, const QString& experiment);
  void runActivated(const QString& run_id);  // double-click: open its dashboard

 private:
  void onSelection();
  void showContextMenu(const QPoint& pos);
  QString currentKind() const;
  QString currentKey() const;

  ExperimentsModel* model_;
  QSortFilterProxyModel* proxy_;
  QTreeView* view_;
  QLineEdit* search_;
  QStringList pending_select_;  // runs to select once the model reloads
  QString pending_experiment_;
};

}  // namespace td::gui
