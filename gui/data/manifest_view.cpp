// ManifestView: a dataset's manifest.json as a tree (manifest_view.h).
#include "gui/data/manifest_view.h"

#include <QHeaderView>
#include <QJsonArray>
#include <QLocale>

namespace td::gui {

namespace {

QString number(const QJsonValue& v) { return QLocale().toString(static_cast<qlonglong>(v.toDouble())); }

QString bytesText(qlonglong b) {
  return QLocale().formattedDataSize(b) + QStringLiteral(" (") + QLocale().toString(b) + QStringLiteral(" B)");
}

}  // namespace

ManifestView::ManifestView(QWidget* parent) : QTreeWidget(parent) {
  setObjectName(QStringLiteral("manifestView"));
  setColumnCount(2);
  setHeaderLabels({tr("Field"), tr("Value")});
  header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  setRootIsDecorated(true);
  setAlternatingRowColors(true);
  setSelectionMode(QAbstractItemView::NoSelection);
  clearManifest();
}

QTreeWidgetItem* ManifestView::row(const QString& field, const QString& value) {
  auto* it = new QTreeWidgetItem(this, {field, value});
  it->setToolTip(1, value);
  return it;
}

void ManifestView::clearManifest() {
  clear();
  auto* hint = new QTreeWidgetItem(this, {tr("No dataset"), tr("prepare one, or select a registered dataset")});
  hint->setDisabled(true);
}

void ManifestView::showManifest(const QJsonObject& m, const QString& path) {
  clear();
  row(tr("Folder"), path);
  const QJsonObject tok = m.value(QStringLiteral("tokenizer")).toObject();
  if (tok.contains(QStringLiteral("kind"))) row(tokenizerLabel(), tok.value(QStringLiteral("kind")).toString());
  if (tok.contains(QStringLiteral("vocab_size"))) row(vocabLabel(), number(tok.value(QStringLiteral("vocab_size"))));
  const QJsonObject splits = m.value(QStringLiteral("splits")).toObject();
  for (const auto& [key, label] : {std::pair{QStringLiteral("train"), trainTokensLabel()},
                                   std::pair{QStringLiteral("val"), valTokensLabel()}}) {
    const QJsonObject s = splits.value(key).toObject();
    if (!s.contains(QStringLiteral("tokens"))) continue;
    const int shards = s.value(QStringLiteral("shards")).toArray().size();
    QTreeWidgetItem* it = row(label, number(s.value(QStringLiteral("tokens"))));
    it->setToolTip(1, tr("%n shard file(s)", nullptr, shards));
  }
  if (m.contains(QStringLiteral("val_fraction")))
    row(tr("val_fraction"), QLocale().toString(m.value(QStringLiteral("val_fraction")).toDouble(), 'g', 6));
  if (m.contains(QStringLiteral("bytes_read")))
    row(tr("Input bytes"), bytesText(static_cast<qlonglong>(m.value(QStringLiteral("bytes_read")).toDouble())));
  if (m.contains(QStringLiteral("token_dtype"))) row(tr("Token dtype"), m.value(QStringLiteral("token_dtype")).toString());

  const QJsonArray sources = m.value(QStringLiteral("sources")).toArray();
  QTreeWidgetItem* files = row(filesLabel(), QLocale().toString(sources.size()));
  for (const QJsonValue& v : sources) {
    const QJsonObject s = v.toObject();
    auto* c = new QTreeWidgetItem(files, {s.value(QStringLiteral("path")).toString(),
                                          bytesText(static_cast<qlonglong>(s.value(QStringLiteral("bytes")).toDouble()))});
    c->setToolTip(0, c->text(0));
  }
  const QJsonArray skipped = m.value(QStringLiteral("skipped")).toArray();
  QTreeWidgetItem* sk = row(skippedLabel(), QLocale().toString(skipped.size()));
  for (const QJsonValue& v : skipped) {
    const QJsonObject s = v.toObject();
    auto* c = new QTreeWidgetItem(sk, {s.value(QStringLiteral("path")).toString(), s.value(QStringLiteral("reason")).toString()});
    c->setToolTip(0, c->text(0));
    c->setToolTip(1, c->text(1));
  }
  if (!skipped.isEmpty()) sk->setExpanded(true);
  if (m.contains(QStringLiteral("created_by"))) row(tr("Created by"), m.value(QStringLiteral("created_by")).toString());
}

QTreeWidgetItem* ManifestView::find(const QString& field) const {
  for (int i = 0; i < topLevelItemCount(); ++i)
    if (topLevelItem(i)->text(0) == field) return topLevelItem(i);
  return nullptr;
}

QString ManifestView::value(const QString& field) const {
  const QTreeWidgetItem* it = find(field);
  return it ? it->text(1) : QString();
}

QStringList ManifestView::children(const QString& field) const {
  QStringList out;
  if (const QTreeWidgetItem* it = find(field))
    for (int i = 0; i < it->childCount(); ++i) out << it->child(i)->text(0) + QStringLiteral(": ") + it->child(i)->text(1);
  return out;
}

}  // namespace td::gui
