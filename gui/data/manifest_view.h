// ManifestView: a prepared dataset's manifest.json (docs/formats.md) as a two-column tree:
// folder, tokenizer, vocab_size, train/val tokens, val_fraction, input bytes, the files read
// and the files skipped with their reasons.
//
// Threading rule: GUI thread only; it shows what it is given and reads no file.
#pragma once

#include <QJsonObject>
#include <QTreeWidget>

namespace td::gui {

class ManifestView : public QTreeWidget {
  Q_OBJECT
 public:
  explicit ManifestView(QWidget* parent = nullptr);

  /// Shows `manifest` of the dataset folder `path`. Fields the manifest lacks are left out.
  void showManifest(const QJsonObject& manifest, const QString& path);
  /// Shows nothing (with a hint line).
  void clearManifest();

  /// The value column of the top-level row whose field column is `field` (e.g. tr("Train
  /// tokens")), "" when there is none. Numbers are in QLocale()'s format. For tests and tooltips.
  QString value(const QString& field) const;
  /// The child rows of top-level row `field` ("Files", "Skipped files"), as "<path>: <detail>".
  QStringList children(const QString& field) const;

  /// The label of the top-level row `field`: the translated field names used above.
  static QString trainTokensLabel() { return tr("Train tokens"); }
  static QString valTokensLabel() { return tr("Val tokens"); }
  static QString filesLabel() { return tr("Files"); }
  static QString skippedLabel() { return tr("Skipped files"); }
  static QString tokenizerLabel() { return tr("Tokenizer"); }
  static QString vocabLabel() { return tr("vocab_size"); }

 private:
  QTreeWidgetItem* row(const QString& field, const QString& value);
  QTreeWidgetItem* find(const QString& field) const;
};

}  // namespace td::gui
