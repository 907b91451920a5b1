// DataPanel: prepare a corpus into a dataset and reuse registered datasets.
//
// The person picks files and folders, the tokenizer (byte, or BPE with vocab_size), the
// val_fraction and the output folder (by default <store folder>/datasets/<name>), presses
// Prepare and watches a progress bar (Cancel stops the engine and removes the partial output).
// The finished dataset's manifest (files, skipped files with reasons, train/val tokens,
// tokenizer, vocab_size) is shown and the dataset is registered in the store; the list of
// registered datasets (from the store) shows any of them, and Forget (after a confirmation)
// removes one from the store, never its files. "Use in design" (or a double-click) hands a
// registered dataset to the designer with its vocab_size.
//
// Threading rule: GUI thread only. The engine runs in a PrepareJob (a child process), the store
// through StoreClient jobs; nothing here waits on either.
#pragma once

#include <QJsonObject>
#include <QPointer>
#include <QStringList>
#include <QWidget>

#include <vector>

#include "store/types.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTreeWidget;

namespace td::gui {

class ManifestView;
class PrepareJob;
class StoreClient;

class DataPanel : public QWidget {
  Q_OBJECT
 public:
  /// `store` may be nullptr (no default output folder, nothing registered) until setStoreClient.
  explicit DataPanel(StoreClient* store, QWidget* parent = nullptr);
  ~DataPanel() override;

  /// Switches stores (File > Open): the registered list is reloaded from `store`.
  void setStoreClient(StoreClient* store);

  // ---- programmatic API (what the buttons do; tests and the main window use it) -------------

  /// Adds a file or folder to the sources (ignored when it is listed already).
  void addSource(const QString& path);
  QStringList sources() const;
  /// "byte" (vocab ignored: 257 ids) or "bpe" with `vocab` ids (300..1048576).
  void setTokenizer(const QString& kind, int vocab = 8000);
  void setValFraction(double f);
  /// The dataset folder to write; from then on it no longer follows the sources' name.
  void setOutputDir(const QString& path);
  QString outputDir() const;
  /// Starts preparing (as the Prepare button). Returns false, with a message in the status
  /// line, when there is no source or output folder or a job is running.
  bool startPrepare();
  /// Cancels the running prepare (as the Cancel button); cancelled output is removed.
  void cancelPrepare();
  bool isPreparing() const;
  /// Absolute paths of the registered datasets, as last loaded from the store (newest first).
  QStringList datasets() const;
  /// Re-reads the registered datasets from the store (asynchronous; datasetsChanged follows).
  void reloadDatasets();
  /// Registers the prepared dataset in folder `path` (its manifest.json; Store::register_dataset,
  /// an upsert) on the store's thread, then reloads the list. A folder without a readable
  /// manifest registers nothing. Errors go to the status line.
  void registerDataset(const QString& path);
  /// Selects registered dataset `path` in the list (its manifest is shown). False if unknown.
  bool selectDataset(const QString& path);
  /// Asks for confirmation, then removes dataset `path` from the store (files stay).
  void forgetDataset(const QString& path);
  /// The registered dataset `path`'s tokenizer vocab_size (ids), 0 when it is not registered.
  int datasetVocabSize(const QString& path) const;
  /// Its tokenizer kind ("byte", "bpe"), "" when it is not registered.
  QString datasetTokenizer(const QString& path) const;
  /// As the "Use in design" button: emits datasetChosen for registered dataset `path`. False
  /// (nothing emitted) when it is not registered.
  bool useDataset(const QString& path);

 signals:
  /// A prepare finished (or reused an identical dataset) and is registered in the store:
  /// `path` is the absolute dataset folder, ready for a config's data.path; `vocab_size` is its
  /// tokenizer's (manifest tokenizer.vocab_size), the model.vocab_size a run on it needs.
  void datasetReady(const QString& path, int vocab_size);
  /// The person chose registered dataset `path` for the design ("Use in design", or a
  /// double-click in the list); `vocab_size` as for datasetReady.
  void datasetChosen(const QString& path, int vocab_size);
  /// The registered list was (re)loaded from the store: absolute paths, newest first.
  void datasetsChanged(const QStringList& paths);

 private:
  void buildUi();
  void updateEnabled();
  void updateDefaultOutput();
  void setStatus(const QString& text, bool error = false);
  void onProgress(qint64 done, qint64 total);
  void onFinished(const QJsonObject& manifest, const QString& out);
  void onFailed(const QString& message);
  void onCancelled();
  void onDatasetSelected();
  void showDatasets(std::vector<td::store::Dataset> rows, const QString& select);
  QString tokenizerKind() const;

  QPointer<StoreClient> store_;
  PrepareJob* job_ = nullptr;
  std::vector<td::store::Dataset> datasets_;
  bool output_custom_ = false;

  QListWidget* sources_ = nullptr;
  QPushButton* add_files_ = nullptr;
  QPushButton* add_folder_ = nullptr;
  QPushButton* remove_ = nullptr;
  QComboBox* tokenizer_ = nullptr;
  QSpinBox* vocab_ = nullptr;
  QDoubleSpinBox* val_fraction_ = nullptr;
  QLineEdit* output_ = nullptr;
  QPushButton* browse_ = nullptr;
  QPushButton* prepare_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QTreeWidget* dataset_list_ = nullptr;
  QPushButton* forget_ = nullptr;
  QPushButton* use_ = nullptr;
  ManifestView* manifest_ = nullptr;
};

}  // namespace td::gui
