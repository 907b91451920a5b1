// RunView: one run's live page — status line, Stop/Resume, the Dashboard's charts, generated
// samples (with their step) and the engine's log.
//
// Threading rule: GUI thread. Samples and run status come from StoreClient jobs; the log's
// history is read on a pool thread (QtConcurrent) and live text arrives from RunController.
#pragma once

#include <QPointer>
#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;
class QTextBrowser;
class QTimer;

namespace td::gui {

class Dashboard;
class RunController;
class StoreClient;

class RunView : public QWidget {
  Q_OBJECT
 public:
  RunView(StoreClient* store, RunController* runs, QWidget* parent = nullptr);

  void setStoreClient(StoreClient* store);
  /// Shows `run_id` ("" = none).
  void setRun(const QString& run_id);
  QString run() const { return run_; }
  Dashboard* dashboard() const { return dashboard_; }
  QTextBrowser* samplesView() const { return samples_; }
  QPlainTextEdit* logView() const { return log_; }
  QPushButton* stopButton() const { return stop_; }
  QPushButton* resumeButton() const { return resume_; }
  QLabel* statusLabel() const { return status_; }

  /// New rows of `run_id` were ingested (coalesced: charts, status and samples refresh at most
  /// every 250 ms).
  void onIngested(const QString& run_id);
  void appendLog(const QString& run_id, const QString& text);
  /// Re-reads the status line and buttons (after a start, end, resume).
  void updateStatus();

 signals:
  void stopRequested(const QString& run_id);
  void resumeRequested(const QString& run_id);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();
  void loadLog();
  void loadSamples();

  QPointer<StoreClient> store_;
  RunController* runs_;
  QString run_;
  QLabel* status_;
  QPushButton* stop_;
  QPushButton* resume_;
  Dashboard* dashboard_;
  QTabWidget* bottom_;
  QTextBrowser* samples_;
  QPlainTextEdit* log_;
  QTimer* refresh_timer_;
  int samples_shown_ = -1;
  quint64 log_generation_ = 0;
};

}  // namespace td::gui
